"""The per-paper configurations (configs/fairfd.yaml, benchmark_paper.yaml, assessment.yaml,
exposure.yaml), planned as docs/papers.md tells a user to run them.

Each file validates as shipped. docs/papers.md walks through each paper on a copy under
``/mnt``: a ``my_paths.yaml`` and the commands. Here ``/mnt`` is a folder of fixture trees in
the datasets' released layouts (tests/helpers/paper_walkthroughs.py), and each walk-through's
plan runs as written from the root of a copy of the repository (its ``config.yaml`` there, as
in a clone): the plan (``snakemake all -n``) must hold exactly the paper's datasets and
detectors, every detector trained once and tested on every dataset under every variant, and
nothing of the demo's. The laptop walk-throughs run for real in test_paper_run_*.py, one file
per paper so that they spread over the test workers.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from fairforge.config import validate_config
from fairforge.tables import split_variants
from fairforge.workflow import all_variants, detector_settings
from paper_walkthroughs import (
    FF_METHODS,
    PAPER_CONFIGS,
    RANDOM_TYPES,
    assessment_weights,
    command,
    config_files,
    job_counts,
    planned,
    prepare,
    resolved,
    walkthroughs,
)

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
    """Each paper's walk-throughs prepared (:func:`paper_walkthroughs.prepare`) and their
    plans run side by side: per paper the copy, /mnt, the doc's walk-throughs, and each
    plan's output and exit code."""
    started = {}
    for paper in PAPER_CONFIGS:
        walk = prepare(repo_root, paper, tmp_path_factory.mktemp(paper))
        plans = [line for w in walk["docs"][paper] for line in w["commands"] if " -n " in line]
        procs = [
            subprocess.Popen(
                command(line),
                cwd=walk["copy"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for line in plans
        ]
        started[paper] = (walk, dict(zip(plans, procs)))
    out = {}
    for paper, (walk, procs) in started.items():
        outputs = {line: proc.communicate(timeout=900)[0] for line, proc in procs.items()}
        codes = {line: proc.returncode for line, proc in procs.items()}
        out[paper] = {**walk, "plans": outputs, "codes": codes}
    return out


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


BENCHMARK_LAPTOP = (
    "snakemake all -n --configfile configs/benchmark_paper.yaml my_paths.yaml my_laptop.yaml"
)


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
