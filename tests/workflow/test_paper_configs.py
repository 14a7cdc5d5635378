"""The per-paper configurations (configs/fairfd.yaml, benchmark_paper.yaml, assessment.yaml,
exposure.yaml), run as docs/papers.md tells a user to run them.

Each file validates as shipped. docs/papers.md walks through each paper on a copy under
``/mnt``: a ``my_paths.yaml`` and the commands. Here ``/mnt`` is a folder of fixture trees in
the datasets' released layouts, and each walk-through runs as written from the root of a copy
of the repository (its ``config.yaml`` there, as in a clone; its results stay in the copy):
the plan (``snakemake all -n``) must hold exactly the paper's datasets and detectors, every
detector trained once and tested on every dataset under every variant, and nothing of the
demo's. FairFD's one-detector walk-through (``select:``) plans one detector, and runs for
real through ``all`` on faces rendered into FaceForensics++ videos and RFW photos, with a race
annotation and random-weight ImageNet files in the released layouts. The Assessment's and
Exposure's laptop walk-throughs run for real too, to their own tables and figures.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from fairforge.config import validate_config
from fairforge.images import write_image
from fairforge.runtime import read_checkpoint
from fairforge.sources.synthetic import render_face, sample_subject, sample_view
from fairforge.sources.vggface2 import VGGFACE2_GENDER
from fairforge.tables import split_variants
from fairforge.workflow import all_variants, detector_settings, select_config
from snakemake_run import SNAKEMAKE, repository_copy
from video_trees import dftimit_tree, face_video, forgerynet_tree, identity, noise_video, uadfv_tree
from workflow_trees import face

PAPER_CONFIGS = ("fairfd", "benchmark_paper", "assessment", "exposure")
FF_METHODS = ("Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures", "FaceShifter")
FF_PAIRS = {"train": [["000", "001"]], "val": [["002", "003"]], "test": [["004", "005"]]}
RFW_RACES = {"African": "dark", "Asian": "light", "Caucasian": "light", "Indian": "dark"}
# Where the walk-throughs put the user's copies; the tests put the fixture trees there.
MNT = "/mnt/"


# ----------------------------------------------------------------- the walk-throughs


def walkthroughs(doc: str) -> dict[str, list[dict]]:
    """Paper -> its walk-throughs in docs/papers.md (the ``### ...`` sections of "Run a paper
    on your copy" and "Run a part of a paper" that name ``configs/<paper>.yaml``): the files
    (``# name.yaml`` yaml blocks) and the ``snakemake`` command lines of each."""
    parts = re.split(r"^## ", doc, flags=re.MULTILINE)
    sections = [p for p in parts if p.startswith(("Run a paper on your copy", "Run a part of"))]
    out: dict[str, list[dict]] = {}
    for section in sections:
        for sub in re.split(r"^### ", section, flags=re.MULTILINE)[1:]:
            paper = re.search(r"`configs/(\w+)\.yaml`", sub.splitlines()[0])
            if paper is None:
                continue
            files = dict(re.findall(r"```yaml\n# (\S+\.yaml)\n(.*?)```", sub, re.DOTALL))
            commands = [
                line.strip()
                for block in re.findall(r"```bash\n(.*?)```", sub, re.DOTALL)
                for line in block.splitlines()
                if line.strip().startswith("snakemake ")
            ]
            out.setdefault(paper.group(1), []).append({"files": files, "commands": commands})
    return out


def command(line: str) -> list[str]:
    """A documented command line, with this interpreter's Snakemake."""
    words = shlex.split(line)
    assert words[0] == "snakemake"
    return [*SNAKEMAKE, *words[1:]]


def job_counts(output: str) -> dict[str, int]:
    rows = (line.split() for line in output.splitlines())
    return {r[0]: int(r[1]) for r in rows if len(r) == 2 and r[1].isdigit()}


def planned(output: str, wildcard: str) -> set[str]:
    """The values of one wildcard over the jobs a dry run lists."""
    return set(re.findall(rf"^\s+wildcards:.*\b{wildcard}=([^,\s]+)", output, re.MULTILINE))


def merged(base: dict, over: dict) -> dict:
    """``over`` deep-merged into ``base``, as Snakemake merges its config files."""
    out = dict(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(base.get(key), dict)
        out[key] = merged(base[key], value) if both else value
    return out


def resolved(copy: Path, files: list[str]) -> dict:
    """The config a run of ``files`` (in the copy) uses: merged, validated and selected."""
    config: dict = {}
    for name in files:
        config = merged(config, yaml.safe_load((copy / name).read_text()))
    return select_config(validate_config(config))


# ----------------------------------------------------------------- fixture trees


def ff_splits(mnt: Path) -> None:
    """The split files of the FaceForensics GitHub repository, cloned at /mnt/FaceForensics."""
    splits = mnt / "FaceForensics" / "dataset" / "splits"
    splits.mkdir(parents=True, exist_ok=True)
    for split, pairs in FF_PAIRS.items():
        (splits / f"{split}.json").write_text(json.dumps(pairs))


def faceforensics(mnt: Path) -> None:
    """The download script's videos at every quality and of every method (noise: for plans)."""
    root = mnt / "FaceForensics++"
    for c in ("raw", "c23", "c40"):
        for k, pair in enumerate(p for v in FF_PAIRS.values() for p in v):
            for a, b in (pair, pair[::-1]):
                noise_video(root / f"original_sequences/youtube/{c}/videos/{a}.mp4", int(a), 2, 16)
                for m, method in enumerate(FF_METHODS):
                    fake = root / f"manipulated_sequences/{method}/{c}/videos/{a}_{b}.mp4"
                    noise_video(fake, 100 * m + k, 2, 16)
    ff_splits(mnt)


def faceforensics_faces(
    mnt: Path, qualities: tuple[str, ...] = ("c23",), methods: tuple[str, ...] = FF_METHODS[:4]
) -> None:
    """FairFD's FaceForensics++: c23 videos (or ``qualities``) of rendered faces talking; a
    fake of each of ``methods`` carries its source's face (every method the same blend: what
    matters is the layout)."""
    root = mnt / "FaceForensics++"
    ids = [v for pairs in FF_PAIRS.values() for pair in pairs for v in pair]
    people = {vid: identity(f"ff{vid}", int(vid)) for vid in ids}
    for c in qualities:
        for vid in ids:
            real = root / f"original_sequences/youtube/{c}/videos/{vid}.mp4"
            face_video(real, people[vid], vid)
        for pair in (p for v in FF_PAIRS.values() for p in v):
            for a, b in (pair, pair[::-1]):
                for method in methods:
                    fake = root / f"manipulated_sequences/{method}/{c}/videos/{a}_{b}.mp4"
                    face_video(fake, people[a], a, donor=people[b])
    ff_splits(mnt)


# The race of each fixture video (FairFD's Table 4 balances by it), as the csv names it.
FF_RACES = {"000": "Caucasian", "001": "Asian", "002": "African", "003": "Indian"}
FF_RACES |= {"004": "Caucasian", "005": "Others"}


def ff_races(mnt: Path) -> None:
    """The race annotation of FaceForensics++ that FairFD's walk-through names."""
    path = mnt / "annotations" / "ffpp_race.csv"
    path.parent.mkdir(parents=True)
    path.write_text("id,race\n" + "".join(f"{v},{r}\n" for v, r in FF_RACES.items()))


def imagenet_weights(mnt: Path) -> None:
    """Random-weight files in the layouts of the ImageNet files FairFD's detectors start
    from: timm's legacy_xception with its 1000-class head (Cadene's names), and torchvision's
    VGG-19 ``features`` up to the layers Capsule takes."""
    import timm
    import torch
    import torchvision

    weights = mnt / "weights"
    weights.mkdir()
    xception = timm.create_model("legacy_xception", pretrained=False, num_classes=1000)
    torch.save(xception.state_dict(), weights / "xception-b5690688.pth")
    vgg = torchvision.models.vgg19(weights=None).features[:19]
    torch.save(
        {f"features.{k}": v for k, v in vgg.state_dict().items()}, weights / "vgg19-dcbb9e9d.pth"
    )


def assessment_ffpp(mnt: Path) -> None:
    """The Assessment's FaceForensics++: every quality for the plans, and rendered faces at
    raw and c23, which its laptop walk-through trains and tests on."""
    faceforensics(mnt)
    shutil.rmtree(mnt / "FaceForensics")  # written again with the faces
    faceforensics_faces(mnt, ("raw", "c23"))


def rfw(mnt: Path) -> None:
    """RFW as its archive unpacks: test/data/<Race>/m.0xxx/m.0xxx_000N.jpg and test/txts/,
    rendered faces, two identities per race (a face swap's target is the other one)."""
    root = mnt / "RFW" / "test"
    for r, (race, group) in enumerate(RFW_RACES.items()):
        people = [f"m.0{race[:2].lower()}{k}" for k in range(2)]
        for k, person in enumerate(people):
            for j in range(2):
                path = root / "data" / race / person / f"{person}_{j + 1:04d}.jpg"
                write_image(path, face(r, f"{race}{k}", group, j))
        txts = root / "txts" / race
        txts.mkdir(parents=True)
        (txts / f"{race}_people.txt").write_text("".join(f"{p}\t2\n" for p in people))
        (txts / f"{race}_pairs.txt").write_text(f"{people[0]}\t1\t2\n")


def celebdf(mnt: Path, release: str = "Celeb-DF-v2") -> None:
    root = mnt / release
    for i, name in enumerate(("Celeb-real/id0_0000", "Celeb-real/id1_0000", "YouTube-real/00000")):
        noise_video(root / f"{name}.mp4", i, 2, 16)
    for i, name in enumerate(("id0_id1_0000", "id1_id0_0000")):
        noise_video(root / "Celeb-synthesis" / f"{name}.mp4", 10 + i, 2, 16)
    (root / "List_of_testing_videos.txt").write_text(
        "1 Celeb-real/id1_0000.mp4\n0 Celeb-synthesis/id1_id0_0000.mp4\n"
    )


def celebdf_v1(mnt: Path) -> None:
    """Celeb-DF v1 as its archive is distributed now: v2's folder names, its own test list."""
    celebdf(mnt, "Celeb-DF-v1")


# The Assessment's start files (configs/assessment.yaml's header): file name -> its layout,
# the network whose state dict the file holds (built on the meta device: shapes only).
def _xception_file() -> dict:
    import timm

    with torch.device("meta"):
        state = timm.create_model("legacy_xception", pretrained=False).state_dict()
    # Cadene's file stores the pointwise convolutions as (out, in) matrices
    return {k: v[..., 0, 0] if "pointwise" in k else v for k, v in state.items()}


def _vgg19_file() -> dict:
    import torchvision

    with torch.device("meta"):
        return torchvision.models.vgg19().state_dict()


def _adv_efficientnet_b4_file() -> dict:
    import deepfakebench_reference as dfb

    with torch.device("meta"):
        net = dfb._EfficientNet(380, dfb._B4, stem=48, head=1792, unpadded_stem=False)
        net._fc = torch.nn.Linear(1792, 1000)
        return net.state_dict()


def _vit_300px_file() -> dict:
    import timm

    with torch.device("meta"):
        return timm.create_model(
            "vit_base_patch16_224", pretrained=False, img_size=300
        ).state_dict()


def _dncnn_file() -> dict:
    """KAIR's colour blind DnCNN: 20 convolutions of 64 channels, ReLUs between."""
    layers = [torch.nn.Conv2d(3, 64, 3, padding=1)]
    for _ in range(18):
        layers += [torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3, padding=1)]
    layers += [torch.nn.ReLU(), torch.nn.Conv2d(64, 3, 3, padding=1)]
    with torch.device("meta"):
        return {f"model.{k}": v for k, v in torch.nn.Sequential(*layers).state_dict().items()}


def _bmshj2018_file(quality: int) -> dict:
    from fairforge.perturb.learned_ops import FactorizedPriorCodec, compressai_state_dict

    n, m = (128, 192) if quality <= 5 else (192, 320)  # CompressAI's zoo
    return compressai_state_dict(FactorizedPriorCodec(n, m))


ASSESSMENT_WEIGHTS = {
    "xception-b5690688.pth": _xception_file,
    "vgg19-dcbb9e9d.pth": _vgg19_file,
    "adv-efficientnet-b4-44fb3a87.pth": _adv_efficientnet_b4_file,
    "vit_base_patch16_224_300px.pth": _vit_300px_file,
    "dncnn/dncnn_color_blind.pth": _dncnn_file,
    **{
        f"compressai/bmshj2018-factorized-q{q}.pth.tar": (lambda q=q: _bmshj2018_file(q))
        for q in range(1, 9)
    },
}


def random_state(layout: dict, seed: int) -> dict:
    """Random weights in ``layout``'s keys and shapes, every tensor a view of one small random
    storage (torch.save writes a storage once), so that the file stays a few MB however large
    the network: a tensor larger than the storage repeats its last dimension's values."""
    size = 1 << 20
    base = torch.rand(size, generator=torch.Generator().manual_seed(seed))
    out = {}
    for key, value in layout.items():
        shape = tuple(value.shape)
        if value.numel() <= size:
            out[key] = base[: value.numel()].view(shape).to(value.dtype)
        else:
            out[key] = base[: shape[-1]].expand(shape)
    return out


def assessment_weights(mnt: Path) -> None:
    """The files configs/assessment.yaml starts from, with random weights in their layouts."""
    for seed, (name, layout) in enumerate(ASSESSMENT_WEIGHTS.items()):
        path = mnt / "weights" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(random_state(layout(), seed), path)


def dfdc(mnt: Path) -> None:
    part = mnt / "DFDC" / "dfdc_train_part_0"
    meta = {
        "r0.mp4": {"label": "REAL", "split": "train", "original": None},
        "f0.mp4": {"label": "FAKE", "split": "train", "original": "r0.mp4"},
    }
    for i, name in enumerate(meta):
        noise_video(part / name, 20 + i, 2, 16)
    (part / "metadata.json").write_text(json.dumps(meta))


def deeperforensics(mnt: Path) -> None:
    root = mnt / "DeeperForensics-1.0"
    for i, (target, actor) in enumerate((("000", "M004"), ("001", "W101"), ("002", "M005"))):
        noise_video(root / f"manipulated_videos/end_to_end/{target}_{actor}.mp4", 30 + i, 2, 16)
    (root / "lists" / "splits").mkdir(parents=True)
    for split, name in (("train", "000_M004"), ("val", "001_W101"), ("test", "002_M005")):
        (root / "lists" / "splits" / f"{split}.txt").write_text(f"{name}.mp4\n")


def benchmark_ffpp(mnt: Path) -> None:
    """The Benchmark's FaceForensics++: every quality (noise, for plans; c23's originals are
    DeeperForensics-1.0's reals), then the raw videos of faces talking, FaceShifter's too,
    for the laptop walk-through's run."""
    faceforensics(mnt)
    faceforensics_faces(mnt, ("raw",), FF_METHODS)


def benchmark_more(mnt: Path) -> None:
    """The Benchmark's other standard datasets as released: UADFV, DF-TIMIT with its VidTIMIT
    reals, ForgeryNet (noise: for plans)."""
    uadfv_tree(mnt / "UADFV", pairs=3)
    dftimit_tree(mnt / "DeepfakeTIMIT", mnt / "VidTIMIT", lower=False)
    forgerynet_tree(mnt / "ForgeryNet")


# DiveFace's group folders (H/M: men, women) and the number of identities and images of
# each: the 70/30 split leaves one test identity per group, six to rank.
DIVEFACE_GROUPS = ("HA4K_120", "HB4K_120", "HN4K_120", "MA4K_120", "MB4K_120", "MN4K_120")
PEOPLE_PER_GROUP, IMAGES_PER_PERSON, VGG_TEST_PEOPLE = 3, 5, 6


def person(folder: Path, name: str, k: int, gender: str, n: int, size: int = 160) -> None:
    """``n`` rendered photos of one identity in ``folder``."""
    subject = sample_subject(5, name, f"tone{1 + k % 4}", gender)
    for j in range(n):
        write_image(
            folder / f"{j:04d}_01.jpg", render_face(subject, sample_view(5, f"{name}_{j}"), size)
        )


def exposure_data(mnt: Path) -> None:
    """DiveFace's six group folders and VGGFace2's test set (the only part the paper uses)
    with identity_meta.csv, of rendered faces, enough to rank; the generator's two folders:
    close-range faces and 16-pixel far ones."""
    for g, group in enumerate(DIVEFACE_GROUPS):
        gender = "male" if group.startswith("H") else "female"
        for s in range(PEOPLE_PER_GROUP):
            name = f"{group}_s{s}"
            person(mnt / "DiveFace" / group / name, name, g + s, gender, IMAGES_PER_PERSON)
    vgg = mnt / "VGGFace2"
    meta = ["Class_ID, Name, Sample_Num, Flag, Gender"]
    for k in range(VGG_TEST_PEOPLE):
        identity, gender = f"n00010{k}", "m" if k % 2 else "f"
        person(vgg / "test" / identity, identity, k, VGGFACE2_GENDER[gender], IMAGES_PER_PERSON)
        meta.append(f'{identity}, "Name_{k}", {IMAGES_PER_PERSON}, 0, {gender}')
    (vgg / "identity_meta.csv").write_text("\n".join(meta) + "\n")
    person(mnt / "degradation" / "high", "near", 0, "female", 8, 64)
    person(mnt / "degradation" / "low", "far", 1, "male", 8, 16)


FIXTURES = {
    "fairfd": (faceforensics_faces, ff_races, rfw, imagenet_weights),
    "benchmark_paper": (benchmark_ffpp, celebdf, dfdc, deeperforensics, benchmark_more),
    "assessment": (assessment_ffpp, celebdf, celebdf_v1, assessment_weights),
    "exposure": (exposure_data,),
}


def lay_out(paper: str, mnt: Path) -> None:
    for write in FIXTURES[paper]:
        write(mnt)


def write_files(files: dict[str, str], copy: Path, mnt: Path) -> None:
    """The walk-through's files in the copy's root, its /mnt paths at the fixture trees."""
    for name, text in files.items():
        (copy / name).write_text(text.replace(MNT, f"{mnt}/"))
        for path in re.findall(rf"{MNT}[^\s,}}\"']+", text):
            local = Path(path.replace(MNT, f"{mnt}/"))
            if "{" not in path:  # a pattern such as CompressAI's q{quality} may be absent
                assert local.exists(), f"{name}: {path} is not in the fixture layout"


# ----------------------------------------------------------------- tests


@pytest.mark.parametrize("paper", PAPER_CONFIGS)
def test_paper_config_validates_as_shipped(repo_root, paper):
    text = (repo_root / "configs" / f"{paper}.yaml").read_text()
    config = validate_config(yaml.safe_load(text))
    header = text.split("\nseed:")[0]
    assert "/data/" in header, "the header documents the /data paths"
    # the header's command puts its target before --configfile, which takes every later word
    assert f"snakemake all --profile profiles/slurm --configfile configs/{paper}.yaml" in header
    for block in config["datasets"].values():
        assert str(block.get("root", "/data/")).startswith("/data/")
        splits = block["options"].get("splits")
        # FaceForensics++'s split files come from its GitHub repository, not its download
        assert block["adapter"] != "faceforensics" or splits.startswith("/data/FaceForensics/")


def test_every_paper_has_a_walkthrough(repo_root):
    docs = walkthroughs((repo_root / "docs" / "papers.md").read_text())
    for paper in PAPER_CONFIGS:
        first = docs[paper][0]
        assert set(first["files"]) == {"my_paths.yaml"}, paper
        plan, run = first["commands"]
        assert plan == f"snakemake all -n --configfile configs/{paper}.yaml my_paths.yaml"
        assert run.startswith("snakemake all --profile profiles/slurm --configfile")
    # the paths file holds paths only: a part of a paper is a third file
    for paper in ("fairfd", "assessment"):
        laptop = docs[paper][1]
        assert "select" in yaml.safe_load(laptop["files"]["my_laptop.yaml"])


@pytest.fixture(scope="module")
def walked(repo_root, tmp_path_factory) -> dict[str, dict]:
    """Each paper's walk-through on a copy of the repository (its own, so the four plans run
    side by side) with /mnt at fixture trees: the copy, /mnt, and each plan's output."""
    docs = walkthroughs((repo_root / "docs" / "papers.md").read_text())
    started = {}
    for paper in PAPER_CONFIGS:
        base = tmp_path_factory.mktemp(paper)
        copy, mnt = repository_copy(repo_root, base / "fairforge"), base / "mnt"
        lay_out(paper, mnt)
        plans = []
        for walk in docs[paper]:
            write_files(walk["files"], copy, mnt)
            plans += [line for line in walk["commands"] if " -n " in line]
        procs = [
            subprocess.Popen(
                command(line), cwd=copy, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            for line in plans
        ]
        started[paper] = (copy, mnt, dict(zip(plans, procs)))
    out = {}
    for paper, (copy, mnt, procs) in started.items():
        outputs = {line: proc.communicate(timeout=900)[0] for line, proc in procs.items()}
        codes = {line: proc.returncode for line, proc in procs.items()}
        out[paper] = {"copy": copy, "mnt": mnt, "plans": outputs, "codes": codes, "docs": docs}
    return out


def config_files(line: str) -> list[str]:
    words = shlex.split(line)
    return words[words.index("--configfile") + 1 :]


@pytest.mark.parametrize("paper", PAPER_CONFIGS)
def test_the_documented_command_plans_only_the_paper(walked, paper):
    """The paths-only walk-through, from the repository root: the paper's datasets and
    detectors and nothing of the demo's (config.yaml is not read)."""
    run = walked[paper]
    line = f"snakemake all -n --configfile configs/{paper}.yaml my_paths.yaml"
    out = run["plans"][line]
    assert run["codes"][line] == 0, out[-6000:]
    assert "config.yaml is extended" not in out
    config = resolved(run["copy"], config_files(line))
    detectors, datasets = config["detectors"], config["datasets"]
    assert planned(out, "dataset") == set(datasets)
    assert planned(out, "detector") == set(detectors)
    jobs = job_counts(out)
    assert jobs["train"] == len(detectors)
    assert jobs["sources_listing"] == len(datasets)
    if paper == "fairfd":  # §5.1's nine and Table 4's four twins; A.6 and A.7's analyses
        assert len(detectors) == 13
        assert jobs["features"] == 1 and planned(out, "detector") >= {"xception"}
        assert jobs["subject_rates"] == jobs["feature_analysis"] == jobs["thresholds_table"] == 1
    # every variant whose weights exist at planning (exposure's far_learned@1 is not among
    # them: docs/papers.md; the Assessment's learned operations are, in the fixture)
    variants, _ = split_variants(all_variants(config), config["variant_options"])
    assert jobs["predictions"] == len(detectors) * len(datasets) * len(variants)
    assert planned(out, "variant") <= set(variants)
    assert jobs["detector_studies"] == jobs["method_tables"] == jobs["report_html"] == 1
    if paper == "exposure":
        ranking = config["ranking"]
        trained = [e for e, opts in ranking["encoders"].items() if "train" in opts]
        # the six encoders, each near and far, trained once on DiveFace for both datasets
        assert jobs["train_encoder"] == len(trained) == len(ranking["encoders"]) == 12
        assert {e for e in planned(out, "encoder") if e.endswith("_far")} == {
            f"{e}_far" for e in planned(out, "encoder") if not e.endswith("_far")
        }
        assert jobs["train_degradation"] == jobs["exposure"] == 1
        assert jobs["ranking_study"] == len(ranking["datasets"]) == 2
        # one shard of each dataset, at each distance, per encoder
        assert planned(out, "distance") == {"learned", "3"}
        assert jobs["embed_shard"] == 12 * 2 * 2


LAPTOP = "snakemake all -n --configfile configs/fairfd.yaml my_paths.yaml my_laptop.yaml"


def plan_of(walked: dict, paper: str, line: str) -> tuple[str, dict[str, int]]:
    """The output of a walk-through's plan that succeeded, and its job counts."""
    run = walked[paper]
    out = run["plans"][line]
    assert run["codes"][line] == 0, out[-6000:]
    return out, job_counts(out)


def test_the_fairfd_subset_plans_one_detector(walked):
    out, jobs = plan_of(walked, "fairfd", LAPTOP)
    assert jobs["train"] == 1 and planned(out, "detector") == {"xception"}
    assert planned(out, "dataset") == {"ffpp", "rfw"}
    assert planned(out, "variant") == {"clean"}
    assert jobs["predictions"] == 2  # xception on ffpp and rfw, clean
    assert jobs["features"] == 1  # Figs. 6 and 7: Xception's features on RFW
    # FairFD's five test approaches on RFW, nothing generated on FF++
    assert planned(out, "method") == {
        "crops",
        "faceswap",
        "simswap",
        "fastreen",
        "dualreen",
        "maskgan",
    }


EXPOSURE_LAPTOP = "snakemake all -n --configfile configs/exposure.yaml my_paths.yaml my_laptop.yaml"


def test_the_exposure_subset_plans_one_encoder_for_both_datasets_and_distances(walked):
    out, jobs = plan_of(walked, "exposure", EXPOSURE_LAPTOP)
    assert jobs["train_encoder"] == 1 and planned(out, "encoder") == {"mobilefacenet_far"}
    assert jobs["train_degradation"] == 1  # the far encoder and the learned distance read it
    assert jobs["ranking_study"] == 2 and jobs["embed_shard"] == 2 * 2
    assert planned(out, "distance") == {"learned", "3"}


@pytest.mark.workflow
def test_fairfd_runs_one_detector_through_all(walked):
    """The laptop walk-through for real, as written: FF++'s c23 videos, split files and race
    annotation and RFW's archive layout, Xception from its ImageNet file, CPU, through
    ``all``; the results stay in the copy."""
    run = walked["fairfd"]
    (line,) = [c for c in run["docs"]["fairfd"][1]["commands"] if " -n " not in c]
    assert shlex.split(line)[1] == "all"
    copy, results = run["copy"], run["copy"] / "results"
    proc = subprocess.run(command(line), cwd=copy, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
    assert sorted(p.name for p in (results / "models").iterdir()) == ["xception"]
    table = pd.read_csv(results / "fairness_table.csv")
    assert set(table["dataset"]) == {"ffpp", "rfw"}
    assert set(table.columns) - {"dataset", "metric", "reason"} == {"xception"}
    # FF++ through its official split files and race annotation, every method's videos read
    ff = pd.read_parquet(results / "ffpp" / "sources.parquet")
    usable = ff[ff["ok"]]
    assert set(usable["method"]) == {"real", *FF_METHODS[:4]}
    assert set(usable["split"]) == {"train", "val", "test"}
    assert set(usable["group"]) == set(FF_RACES.values())
    # RFW's four races, real and FairFD's approaches (a forgery that fails for a face stays in
    # its manifest with the reason, so not every approach need reach the predictions)
    preds = pd.read_parquet(results / "predictions" / "xception" / "rfw" / "clean.parquet")
    assert set(preds["group"]) == set(RFW_RACES) and set(preds["split"]) == {"test"}
    approaches = {"faceswap", "simswap", "fastreen", "dualreen", "maskgan"}
    assert "real" in set(preds["method"]) and set(preds["method"]) - {"real"} <= approaches
    assert set(preds["method"]) & approaches
    # trained as the paper's file says (its recipe, from the ImageNet file), with the laptop
    # file's epochs and input size: nothing of the demo's
    config = resolved(copy, config_files(line))
    trained = read_checkpoint(results / "models" / "xception" / "model.pt", mmap=True)
    settings = detector_settings(config, "xception")
    assert trained["input_size"] == 64 and trained["train_config"]["model"] == {}
    keys = ("epochs", "lr", "batch_size", "weight_decay", "train_methods", "recipe", "augment")
    for key in (*keys, "pretrained"):
        assert trained["train_config"][key] == settings[key], key
    assert settings["recipe"] == "fairfd" and settings["augment"] == "fairfd"
    assert settings["epochs"] == 1 and settings["lr"] == 0.0002
    assert settings["pretrained"] == str(run["mnt"] / "weights" / "xception-b5690688.pth")
    # Table 5 on the test-only RFW: each race's threshold fitted on the evaluated set, named so
    thresholds = pd.read_csv(results / "thresholds_table.csv")
    on_rfw = thresholds.loc[thresholds["dataset"] == "rfw"].set_index("metric")
    assert set(on_rfw["fitted_on"]) == {"test (the evaluated set)"}
    assert {f"threshold[{race}]" for race in RFW_RACES} <= set(on_rfw.index)
    assert {f"accuracy[faceswap][{race}]" for race in RFW_RACES} <= set(on_rfw.index)
    assert on_rfw["per_group"].notna().all()
    # Figs. 5-7: per-subject rates, Xception's features on RFW, their t-SNE and MMD
    rates = pd.read_csv(results / "subject_rates.csv")
    assert set(rates["dataset"]) == {"ffpp", "rfw"} and set(rates["detector"]) == {"xception"}
    features = pd.read_parquet(results / "features" / "xception" / "rfw.parquet")
    assert set(features["method"]) <= {"real", "faceswap", "fastreen"}
    assert set(features["group"]) == set(RFW_RACES)
    assert len({len(v) for v in features["feature"]}) == 1  # one width: the penultimate layer
    mmd = pd.read_csv(results / "feature_mmd.csv")
    assert set(mmd["reference_group"]) == {"Caucasian"}
    assert set(mmd["group"]) <= set(RFW_RACES) - {"Caucasian"}
    for name in ("subject_rates", "feature_tsne", "feature_mmd"):
        assert (results / "figures" / f"{name}.png").stat().st_size > 1000, name
    report = (results / "report.html").read_text()
    assert "Subjects and feature space" in report and "fitted on test (the evaluated set)" in report
    # the run's record of its rule graph, from the same config files
    assert "digraph" in (results / "pipeline_info" / "rulegraph.dot").read_text()

    out, jobs = plan_of(walked, "fairfd", LAPTOP)
    assert jobs["train"] == 1 and planned(out, "detector") == {"xception"}


BENCHMARK_LAPTOP = (
    "snakemake all -n --configfile configs/benchmark_paper.yaml my_paths.yaml my_laptop.yaml"
)
RANDOM_TYPES = ["df_contrast", "df_saturation", "df_blur", "jpeg", "df_noise"]


def test_the_benchmark_subset_plans_two_detectors_and_the_paper_s_outputs(walked):
    out, jobs = plan_of(walked, "benchmark_paper", BENCHMARK_LAPTOP)
    assert jobs["train"] == 2 and planned(out, "detector") == {"meso4", "meso4_ffpp_df"}
    assert planned(out, "dataset") == {"ffpp"}
    assert jobs["predictions"] == 2 * 6  # clean and the five types at random intensity
    assert planned(out, "variant") == {"clean", *(f"{t}@random" for t in RANDOM_TYPES)}
    for rule in ("random_intensity_table", "in_domain_table", "efficiency_average_figure"):
        assert jobs[rule] == 1, rule
    # FWA's and Face X-ray's training fakes go with their detectors
    assert planned(out, "method") == {"crops"}


@pytest.mark.workflow
def test_benchmark_runs_its_protocol_through_all(walked):
    """The Benchmark's laptop walk-through for real: MesoNet-4 on FF++ raw and on its
    Deepfakes alone, tested under the five perturbations at random intensity, through
    Table 4, the robustness std of §4.3, Figs. 3-6 and the report."""
    run = walked["benchmark_paper"]
    (line,) = [c for c in run["docs"]["benchmark_paper"][1]["commands"] if " -n " not in c]
    copy, results = run["copy"], run["copy"] / "results"
    proc = subprocess.run(command(line), cwd=copy, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
    assert sorted(p.name for p in (results / "models").iterdir()) == ["meso4", "meso4_ffpp_df"]
    one = read_checkpoint(results / "models" / "meso4_ffpp_df" / "model.pt", mmap=True)
    assert one["train_config"]["train_methods"] == ["Deepfakes"]
    card = pd.read_csv(results / "protocol.csv").set_index(["name", "key"])
    assert card.loc[("meso4_ffpp_df", "init"), "value"] == "random"  # as MesoNet starts
    # §4.3: per detector and per average over its training sets, the population std of the
    # AUCs over the five perturbation types
    table = pd.read_csv(results / "random_intensity_table.csv")
    spread = table.loc[table["operation"] == "(std)"]
    groups = {(r.detector, r.train_dataset) for r in spread.itertuples()}
    assert groups == {
        ("meso4", "ffpp"),
        ("meso4_ffpp_df", "ffpp"),
        ("meso4", "(mean)"),
        ("meso4", "(mean, common)"),
    }
    for row in spread.itertuples():
        types = table.loc[
            (table["detector"] == row.detector)
            & (table["train_dataset"] == row.train_dataset)
            & (table["operation"] != "(std)")
        ]
        assert sorted(types["operation"]) == sorted(RANDOM_TYPES)
        assert row.AUC == pytest.approx(types["AUC"].std(ddof=0), abs=1e-5)
        assert row.n_operations == 5
    # Table 4: each detector on what it trained on, FF++ counted by its manipulation
    in_domain = pd.read_csv(results / "in_domain_table.csv").set_index("family")
    assert list(in_domain.columns) == [
        "arch",
        "ffpp",
        "ffpp/Deepfakes",
        "average",
        "average_common",
    ]
    detection = pd.read_csv(results / "detection_table.csv")
    clean = detection.loc[(detection["variant"] == "clean") & (detection["unit"] == "frame")]
    per_method = pd.read_csv(results / "detection_per_method.csv")
    df_only = per_method.loc[
        (per_method["variant"] == "clean") & (per_method["method"] == "Deepfakes")
    ].set_index("detector")
    assert in_domain.loc["meso4", "ffpp"] == pytest.approx(
        clean.set_index("detector").loc["meso4", "AUC"], abs=1e-5
    )
    assert in_domain.loc["meso4", "ffpp/Deepfakes"] == pytest.approx(
        df_only.loc["meso4_ffpp_df", "AUC"], abs=1e-5
    )
    assert in_domain.loc["meso4", "average"] == in_domain.loc["meso4", "ffpp/Deepfakes"]
    for name in ("random_intensity", "efficiency", "efficiency_average"):
        assert (results / "figures" / f"{name}.png").stat().st_size > 1000, name
    report = (results / "report.html").read_text()
    assert "Benchmark Table 4" in report and "Benchmark Fig. 3" in report


@pytest.mark.workflow
def test_exposure_ranks_vggface2_with_an_encoder_trained_on_diveface(walked):
    """The Exposure laptop walk-through for real, as written: the generator and one
    far-trained encoder trained once, on DiveFace's train identities through that
    generator, then DiveFace's and VGGFace2's test identities ranked at two distances in
    one run, to the exposure tables and Fig. 2's averaged exposure."""
    run = walked["exposure"]
    (line,) = [c for c in run["docs"]["exposure"][1]["commands"] if " -n " not in c]
    copy, results = run["copy"], run["copy"] / "results"
    proc = subprocess.run(command(line), cwd=copy, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
    jobs = job_counts(proc.stdout + proc.stderr)
    assert jobs["train_encoder"] == jobs["train_degradation"] == 1
    assert jobs["embed_shard"] == 2 * 2
    table = pd.read_csv(results / "exposure_table.csv")
    assert list(table.columns[:3]) == ["dataset", "encoder", "setting"]
    assert set(table["encoder"]) == {"mobilefacenet_far"}
    assert set(table["dataset"]) == {"diveface", "vggface2"}
    assert set(table["distance"].astype(str)) == {"learned", "3"}
    assert len(table) == 2 * 2 * 2 * 2  # datasets, distances, settings, conventions
    vgg = table[table["dataset"] == "vggface2"]
    assert (vgg["n_identities"] == VGG_TEST_PEOPLE).all()
    assert vgg[["exposure_female", "exposure_male"]].notna().all().all()
    assert vgg.filter(like="exposure_asian").isna().all().all()  # DiveFace's groups only
    # trained once, on DiveFace's train identities: none of them ranked, none of VGGFace2's
    trained = read_checkpoint(results / "encoders" / "mobilefacenet_far" / "model.pt", mmap=True)
    learned = set(trained["classes"])
    diveface = pd.read_parquet(results / "diveface" / "sources.parquet")
    train_ids = set(diveface.loc[diveface["split"] == "train", "subject_id"])
    assert len(learned) >= 2 and learned <= train_ids
    for dataset in ("diveface", "vggface2"):
        study = pd.read_parquet(results / "ranking" / dataset / "study.parquet")
        assert not learned & set(study["subject_id"])
    # the far crops and probes went through the generator this run trained first
    generator = results / "degradation" / "high_to_low.pt"
    model = results / "encoders" / "mobilefacenet_far" / "model.pt"
    assert generator.stat().st_mtime <= model.stat().st_mtime
    embedded = {
        d: pd.read_parquet(
            next((results / "ranking" / "vggface2" / f"distance_{d}").rglob("*.parquet"))
        )
        for d in ("learned", "3")
    }
    probes = [e.loc[e["role"] == "probe", "embedding"].tolist() for e in embedded.values()]
    assert not np.allclose(np.stack(probes[0]), np.stack(probes[1]))
    # Fig. 2: the exposure averaged across the encoders of each view, with KS tests
    averaged = pd.read_csv(results / "exposure_averaged_ks.csv")
    assert set(averaged["dataset"]) == {"diveface", "vggface2"}
    assert set(averaged["trained"]) == {"far"} and (averaged["n_encoders"] == 1).all()
    assert {"mean_a", "mean_b", "delta", "pvalue", "pvalue_holm"} <= set(averaged.columns)
    assert (results / "figures" / "exposure_averaged.png").stat().st_size > 1000


# ----------------------------------------------------------------- the Assessment


ASSESSMENT_PLAN = "snakemake all -n --configfile configs/assessment.yaml my_paths.yaml"


def assessment_config(repo_root) -> dict:
    return validate_config(yaml.safe_load((repo_root / "configs/assessment.yaml").read_text()))


def test_the_assessment_plan_holds_its_tables_and_figures(walked):
    """Tables 2-6 and Figs. 4-8: every detector of §5.1.2 on every dataset under every
    operation, the codecs' rates measured per dataset, the augmentation, compression-rate and
    training-data studies; the learned operations planned from their configured weights."""
    run = walked["assessment"]
    out = run["plans"][ASSESSMENT_PLAN]
    assert run["codes"][ASSESSMENT_PLAN] == 0, out[-6000:]
    config = resolved(run["copy"], config_files(ASSESSMENT_PLAN))
    jobs = job_counts(out)
    assert jobs["train"] == len(config["detectors"]) == 29
    assert jobs["augmentation_study"] == jobs["compression_rate"] == 1
    assert jobs["training_data_figure"] == 1
    codecs = [f"jpeg@{q}" for q in (95, 80, 60, 45, 30)]
    codecs += [f"learned_compression@{q}" for q in range(1, 9)]
    assert jobs["compression_bpp"] == len(config["datasets"]) * len(codecs)
    variants = planned(out, "variant")
    assert set(codecs) | {f"denoise@{k}" for k in range(1, 6)} | {"vid_h264@40"} <= variants
    assert not {"grayscale@1", "df_video_compression@30"} & variants  # not the Assessment's
    # HiFiC's converted files are not in the fixture: its variants are reported unavailable
    # and the plan, Fig. 5's curves included, goes on without them (as bmshj2018's would)
    assert not {f"hific@{k}" for k in (1, 2, 3)} & variants
    assert planned(out, "dataset") == {"ffpp_raw", "ffpp_c23", "ffpp_c40", "celebdf", "celebdf_v1"}


def test_the_assessment_config_is_the_paper(repo_root):
    """The values the paper states, where fairforge reads them (configs/assessment.yaml)."""
    config = assessment_config(repo_root)
    datasets = config["datasets"]
    for name, quality in (("ffpp_raw", "raw"), ("ffpp_c23", "c23"), ("ffpp_c40", "c40")):
        block = datasets[name]
        assert block["split"] == "official" and block["options"]["compression"] == quality
        assert block["options"]["methods"] == list(FF_METHODS[:4])  # §5.1.1
        assert block["options"]["frames_per_video"] == {"train": 100, "val": 32, "test": 32}
    assert next(iter(datasets)) == "ffpp_raw"  # detectors train on FFpp-Raw by default
    assert datasets["celebdf"]["split"] == {"official": True, "val_from_train": 0.2}  # §5.1.1
    assert datasets["celebdf_v1"]["adapter"] == "celebdf_v1"  # Table 6
    assert config["faces"]["detector"] == "hog" and config["faces"]["crop_size"] == 300
    # §5.1.3: per detector, the baselines without augmentation (§3.3)
    expected = {
        "capsule": ("adam", False, 25, 5e-4),
        "xception": ("adam", False, 10, 1e-3),
        "uia_vit": ("adam", False, 8, 3e-5),
        "efficientnet_b4": ("sgd", True, 100, 1e-3),
    }
    archs = set()
    for name in config["detectors"]:
        s = detector_settings(config, name)
        archs.add(s["arch"])
        assert (s["optimizer"], s["sam"], s["epochs"], s["lr"]) == expected[s["arch"]], name
        assert (s["input_size"], s["frames_train"], s["frames_test"], s["batch_size"]) == (
            300,
            100,
            32,
            32,
        ), name
        assert s["pretrained"].startswith("/data/weights/"), name
        augment = name.rsplit("_", 1)[-1]
        assert s["augment"] == (augment if augment in ("sdaug", "daug", "augmix") else "none")
        # SBI trains on real faces only, its fakes self-blended afresh (§5.1.3)
        assert (s["online_forgery"] == "sbi") == (s["arch"] == "efficientnet_b4"), name
        if s["arch"] == "efficientnet_b4":
            assert s["train_methods"] == []
    assert archs == set(expected)
    # §3.1's bicubic resize, the learned codec and DnCNN; §3.3's categories
    options = config["variant_options"]
    assert options["resize"] == {"down": "cubic", "up": "cubic"}
    assert options["denoise"]["mode"] == "dncnn"
    # §5.4's Fig. 5: HiFiC's three regimes beside JPEG and bmshj2018
    assert config["variants"] == ["clean", "hific@1", "hific@2", "hific@3"]
    assert options["hific"]["weights"].endswith("/hific/hific-{regime}.pth")
    assert config["variant_suites"] == ["assessment", "assessment_video"]
    assert config["metrics"]["robustness_categories"] == "assessment"


def test_every_assessment_value_names_its_section(repo_root):
    """Each setting of configs/assessment.yaml outside the detector list says where it comes
    from: a section, table or figure of the paper, "unstated" (a fairforge default) or not
    the Assessment's (another paper's study, off): on
    its line, in the comment lines right above it or on the line of the block it is in."""
    lines = (repo_root / "configs" / "assessment.yaml").read_text().splitlines()
    cited = re.compile(r"#.*(§\d|Table \d|Fig\. \d|unstated|not the Assessment's)")
    missing = []
    parents: list[tuple[int, str]] = []
    in_detectors = False
    for i, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        parents = [(d, text) for d, text in parents if d < indent]
        if indent == 0:
            in_detectors = line.startswith("detectors:")
        above = []
        j = i - 1
        while j >= 0 and lines[j].lstrip().startswith("#"):
            above.append(lines[j])
            j -= 1
        value = line.split("#")[0].split(":", 1)[-1].strip()
        context = [line, *above, *(text for _, text in parents)]
        if value and not in_detectors and not any(cited.search(c) for c in context):
            missing.append(f"{i + 1}: {line.strip()}")
        parents.append((indent, " ".join([line, *above])))
    assert not missing, "values without their section:\n" + "\n".join(missing)


def test_the_assessment_start_files_load_onto_their_detectors(repo_root, tmp_path):
    """Each ImageNet file of the header, written with random weights in its layout, loads
    onto every detector that names it, built as the train rule builds it (300 px: UIA-ViT's
    ViT takes the position embedding of a 300 px file)."""
    from fairforge.training.detector import TrainConfig, build_model

    assessment_weights(tmp_path)
    config = assessment_config(repo_root)
    done = set()
    for name in config["detectors"]:
        settings = detector_settings(config, name)
        start = Path(settings["pretrained"]).name
        if (settings["arch"], start) in done:
            continue
        done.add((settings["arch"], start))
        model, _, size = build_model(
            TrainConfig(**{**settings, "pretrained": str(tmp_path / "weights" / start)})
        )
        assert size == 300
        if settings["arch"] == "uia_vit":
            assert tuple(model.vit.patch_embed.grid_size) == (18, 18)
        del model
    assert {a for a, _ in done} == {"capsule", "xception", "efficientnet_b4", "uia_vit"}


ASSESSMENT_LAPTOP = (
    "snakemake all -n --configfile configs/assessment.yaml my_paths.yaml my_laptop.yaml"
)


def test_the_assessment_subset_plans_its_studies(walked):
    run = walked["assessment"]
    out = run["plans"][ASSESSMENT_LAPTOP]
    assert run["codes"][ASSESSMENT_LAPTOP] == 0, out[-6000:]
    jobs = job_counts(out)
    assert planned(out, "detector") == {"capsule_raw", "capsule_raw_sdaug", "capsule_c23"}
    assert planned(out, "dataset") == {"ffpp_raw", "ffpp_c23"}
    assert jobs["train"] == 3 and jobs["compression_bpp"] == 2 * 3
    assert jobs["augmentation_study"] == jobs["compression_rate"] == 1
    assert jobs["training_data_figure"] == 1


@pytest.mark.workflow
def test_the_assessment_laptop_run_makes_its_tables_and_figures(walked):
    """The Assessment's laptop walk-through for real, as written: Capsule-Forensics from the
    fixture's VGG-19 file on rendered FF++ faces at raw and c23, its SDAug twin, one epoch on
    the CPU, to the augmentation table, the codecs' rates and the report."""
    run = walked["assessment"]
    (line,) = [c for c in run["docs"]["assessment"][1]["commands"] if " -n " not in c]
    copy, results = run["copy"], run["copy"] / "results"
    # an hour: the efficiency job times three Capsule-Forensics at 300 px, batch 32, on one
    # thread (over 20 minutes on two loaded cores)
    proc = subprocess.run(command(line), cwd=copy, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
    config = resolved(copy, config_files(line))
    for name in ("capsule_raw", "capsule_raw_sdaug", "capsule_c23"):
        trained = read_checkpoint(results / "models" / name / "model.pt", mmap=True)
        settings = detector_settings(config, name)
        assert trained["input_size"] == 300
        for key in ("lr", "optimizer", "augment", "frames_train", "pretrained", "recipe"):
            assert trained["train_config"][key] == settings[key], (name, key)
    assert settings["lr"] == 5e-4 and settings["pretrained"].endswith("vgg19-dcbb9e9d.pth")
    # robustness by the paper's categories
    robustness = pd.read_csv(results / "robustness_table.csv")
    categories = set(robustness.loc[robustness["scope"] == "category", "category"])
    assert {"image/compression", "image/combination"} <= categories
    assert {"image", "all"} <= set(robustness.loc[robustness["scope"] == "overall", "category"])
    # each detector beside its SDAug twin, on both datasets
    augmentation = pd.read_csv(results / "augmentation_table.csv")
    assert set(zip(augmentation["detector"], augmentation["twin"])) == {
        ("capsule_raw", "capsule_raw_sdaug")
    }
    assert set(augmentation["dataset"]) == {"ffpp_raw", "ffpp_c23"}
    assert "overall" in set(augmentation["scope"])
    # codecs by their rates: JPEG's falls with its quality, the learned codec has one
    rates = pd.read_csv(results / "compression_rate.csv")
    one = rates.loc[(rates["detector"] == "capsule_raw") & (rates["dataset"] == "ffpp_raw")]
    bpp = one.set_index("variant")["bpp"]
    assert set(bpp.index) == {"jpeg@95", "jpeg@30", "learned_compression@1"}
    assert bpp["jpeg@95"] > bpp["jpeg@30"] > 0 and bpp["learned_compression@1"] > 0
    per_sample = pd.read_csv(results / "ffpp_raw" / "compression_bpp" / "jpeg@30.csv")
    assert (per_sample["bpp"] > 0).all() and int(one["n_samples"].iloc[0]) == len(per_sample)
    for figure in ("compression_rate", "augmentation", "cross_manipulation"):
        assert (results / "figures" / f"{figure}.png").read_bytes()[:4] == b"\x89PNG"
    assert (results / "figures" / "robustness_by_training_data.png").is_file()
    page = (results / "report.html").read_text()
    for title in ("Codecs by bitrate", "Augmented twins", "Training data and robustness"):
        assert title in page, title
