"""The papers' walk-throughs of docs/papers.md, as tests run them: the walk-throughs read
from the doc, fixture trees in the datasets' released layouts under a stand-in ``/mnt``, and a
copy of the repository with the walk-through's files in its root
(:func:`prepare`), from which the documented commands run (:func:`command`)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import torch
import yaml

from fairforge.config import validate_config
from fairforge.images import write_image
from fairforge.sources.synthetic import render_face, sample_subject, sample_view
from fairforge.sources.vggface2 import VGGFACE2_GENDER
from fairforge.workflow import select_config
from snakemake_run import SNAKEMAKE, repository_copy
from video_trees import dftimit_tree, face_video, forgerynet_tree, identity, noise_video, uadfv_tree
from workflow_trees import face

PAPER_CONFIGS = ("fairfd", "benchmark_paper", "assessment", "exposure")
FF_METHODS = ("Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures", "FaceShifter")
FF_PAIRS = {"train": [["000", "001"]], "val": [["002", "003"]], "test": [["004", "005"]]}
# The Benchmark protocol's five perturbation types, each at random intensity (its §3.2).
RANDOM_TYPES = ["df_contrast", "df_saturation", "df_blur", "jpeg", "df_noise"]
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

    # The zoo's widths (128 and 192 channels up to q5, 192 and 320 above) cost the laptop run
    # seconds a job; the loader takes the widths from the file, so a narrow codec in the
    # zoo's layout runs the same code.
    n, m = (16, 24) if quality <= 5 else (24, 40)
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


def config_files(line: str) -> list[str]:
    words = shlex.split(line)
    return words[words.index("--configfile") + 1 :]


def prepare(repo_root: Path, paper: str, base: Path) -> dict:
    """``paper``'s walk-throughs set up under ``base``: a copy of the repository (its own, so
    that runs of several papers go side by side) holding every walk-through's files, with
    their /mnt paths at fixture trees in ``base / "mnt"``; the copy, /mnt and the doc's
    walk-throughs (:func:`walkthroughs`)."""
    docs = walkthroughs((repo_root / "docs" / "papers.md").read_text())
    copy, mnt = repository_copy(repo_root, base / "fairforge"), base / "mnt"
    lay_out(paper, mnt)
    for walk in docs[paper]:
        write_files(walk["files"], copy, mnt)
    return {"copy": copy, "mnt": mnt, "docs": docs}


def run_laptop(walk: dict, paper: str, timeout: int) -> tuple[str, subprocess.CompletedProcess]:
    """The second walk-through's run (the part of the paper a laptop runs), as written, from
    the copy's root: its command line and the finished process, which must have succeeded."""
    (line,) = [c for c in walk["docs"][paper][1]["commands"] if " -n " not in c]
    proc = subprocess.run(
        command(line), cwd=walk["copy"], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
    return line, proc
