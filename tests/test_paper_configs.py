"""The per-paper configurations (configs/fairfd.yaml, benchmark_paper.yaml, assessment.yaml,
exposure.yaml), run as docs/papers.md tells a user to run them.

Each file validates as shipped. docs/papers.md walks through each paper on a copy under
``/mnt``: a ``my_paths.yaml`` and the commands. Here ``/mnt`` is a folder of fixture trees in
the datasets' released layouts, and each walk-through runs as written from the root of a copy
of the repository (its ``config.yaml`` there, as in a clone; its results stay in the copy):
the plan (``snakemake all -n``) must hold exactly the paper's datasets and detectors, every
detector trained once and tested on every dataset under every variant, and nothing of the
demo's. FairFD's one-detector walk-through (``select:``) plans one detector, and runs for
real to the fairness table on faces rendered into FaceForensics++ videos and RFW photos.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fairforge.config import validate_config
from fairforge.images import write_image
from fairforge.runtime import read_checkpoint
from fairforge.sources.adapters import VGGFACE2_GENDER
from fairforge.sources.synthetic import render_face, sample_subject, sample_view
from fairforge.tables import split_variants
from fairforge.workflow import all_variants, detector_settings, select_config
from snakemake_run import SNAKEMAKE, repository_copy
from test_adapters_workflow import face
from test_video_datasets import face_video, identity, noise_video

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
    splits.mkdir(parents=True)
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


def faceforensics_faces(mnt: Path) -> None:
    """FairFD's FaceForensics++: c23 videos of rendered faces talking; a fake carries its
    source's face (every method the same blend: what matters is the layout)."""
    root = mnt / "FaceForensics++"
    ids = [v for pairs in FF_PAIRS.values() for pair in pairs for v in pair]
    people = {vid: identity(f"ff{vid}", int(vid)) for vid in ids}
    for vid in ids:
        face_video(root / f"original_sequences/youtube/c23/videos/{vid}.mp4", people[vid], vid)
    for pair in (p for v in FF_PAIRS.values() for p in v):
        for a, b in (pair, pair[::-1]):
            for method in FF_METHODS[:4]:
                fake = root / f"manipulated_sequences/{method}/c23/videos/{a}_{b}.mp4"
                face_video(fake, people[a], a, donor=people[b])
    ff_splits(mnt)


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


def celebdf(mnt: Path) -> None:
    root = mnt / "Celeb-DF-v2"
    for i, name in enumerate(("Celeb-real/id0_0000", "Celeb-real/id1_0000", "YouTube-real/00000")):
        noise_video(root / f"{name}.mp4", i, 2, 16)
    for i, name in enumerate(("id0_id1_0000", "id1_id0_0000")):
        noise_video(root / "Celeb-synthesis" / f"{name}.mp4", 10 + i, 2, 16)
    (root / "List_of_testing_videos.txt").write_text(
        "1 Celeb-real/id1_0000.mp4\n0 Celeb-synthesis/id1_id0_0000.mp4\n"
    )


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
    "fairfd": (faceforensics_faces, rfw),
    "benchmark_paper": (faceforensics, celebdf, dfdc, deeperforensics),
    "assessment": (faceforensics, celebdf),
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
    laptop = docs["fairfd"][1]
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
    # every variant whose weights exist at planning (exposure's far_learned@1 is not among
    # them: docs/papers.md)
    variants, _ = split_variants(all_variants(config))
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
    assert jobs["train"] == 1 and planned(out, "detector") == {"meso4"}
    assert planned(out, "dataset") == {"ffpp", "rfw"}
    assert planned(out, "variant") == {"clean"}
    assert jobs["predictions"] == 2  # meso4 on ffpp and rfw, clean
    # the sbi blends on FF++ were only the sbi detector's training fakes
    methods = planned(out, "method")
    assert "sbi" not in methods
    assert {"faceswap", "simswap", "fastreen", "dualreen", "maskgan"} <= methods


EXPOSURE_LAPTOP = "snakemake all -n --configfile configs/exposure.yaml my_paths.yaml my_laptop.yaml"


def test_the_exposure_subset_plans_one_encoder_for_both_datasets_and_distances(walked):
    out, jobs = plan_of(walked, "exposure", EXPOSURE_LAPTOP)
    assert jobs["train_encoder"] == 1 and planned(out, "encoder") == {"mobilefacenet_far"}
    assert jobs["train_degradation"] == 1  # the far encoder and the learned distance read it
    assert jobs["ranking_study"] == 2 and jobs["embed_shard"] == 2 * 2
    assert planned(out, "distance") == {"learned", "3"}


@pytest.mark.workflow
def test_fairfd_runs_one_detector_to_the_fairness_table(walked):
    """The laptop walk-through for real, as written: FF++'s c23 videos and split files and
    RFW's archive layout, one detector, CPU, to the fairness table; the results stay in the
    copy."""
    run = walked["fairfd"]
    (line,) = [c for c in run["docs"]["fairfd"][1]["commands"] if " -n " not in c]
    copy, results = run["copy"], run["copy"] / "results"
    proc = subprocess.run(command(line), cwd=copy, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
    assert sorted(p.name for p in (results / "models").iterdir()) == ["meso4"]
    table = pd.read_csv(results / "fairness_table.csv")
    assert set(table["dataset"]) == {"ffpp", "rfw"}
    assert set(table.columns) - {"dataset", "metric", "reason"} == {"meso4"}
    # FF++ through its official split files, every method's videos read
    ff = pd.read_parquet(results / "ffpp" / "sources.parquet")
    usable = ff[ff["ok"]]
    assert set(usable["method"]) == {"real", *FF_METHODS[:4]}
    assert set(usable["split"]) == {"train", "val", "test"}
    # RFW's four races, real and FairFD's approaches (a forgery that fails for a face stays in
    # its manifest with the reason, so not every approach need reach the predictions)
    preds = pd.read_parquet(results / "predictions" / "meso4" / "rfw" / "clean.parquet")
    assert set(preds["group"]) == set(RFW_RACES) and set(preds["split"]) == {"test"}
    approaches = {"faceswap", "simswap", "fastreen", "dualreen", "maskgan"}
    assert "real" in set(preds["method"]) and set(preds["method"]) - {"real"} <= approaches
    assert set(preds["method"]) & approaches
    # trained as the paper's file says, with the laptop file's epochs: nothing of the demo's
    # (its meso4 is 64 px without dropout, at lr 1e-3)
    config = resolved(copy, config_files(line))
    trained = read_checkpoint(results / "models" / "meso4" / "model.pt", mmap=True)
    settings = detector_settings(config, "meso4")
    assert trained["input_size"] == 256 and trained["train_config"]["model"] == {}
    for key in ("epochs", "lr", "batch_size", "weight_decay", "train_methods", "recipe"):
        assert trained["train_config"][key] == settings[key], key
    assert settings["epochs"] == 1 and settings["lr"] == 0.0002
    # the run's record of its rule graph, from the same config files
    assert "digraph" in (results / "pipeline_info" / "rulegraph.dot").read_text()


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
