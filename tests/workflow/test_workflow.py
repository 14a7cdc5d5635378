"""The workflow, run for real by Snakemake on the tiny config."""

import html
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from fairforge.forgery.quality import SEPARATION_COLUMNS
from fairforge.manifest import CONTRACTS
from forgery_acceptance import check_forgery_card
from snakemake_run import snakemake

pytestmark = pytest.mark.workflow


def test_outputs_follow_the_contracts(tiny_run):
    results = tiny_run / "results"
    for path, contract in [
        ("synthetic/sources.parquet", "sources"),
        ("synthetic/faces.parquet", "faces"),
        ("synthetic/pairs.parquet", "pairs"),
        ("synthetic/forgeries/faceswap.parquet", "forgery"),
        ("synthetic/samples.parquet", "samples"),
        ("predictions/meso4/synthetic/clean.parquet", "predictions"),
    ]:
        frame = pd.read_parquet(results / path)
        missing = set(CONTRACTS[contract]) - set(frame.columns)
        assert not missing, f"{path} lacks {missing}"
        assert len(frame) > 0, path
    table = pd.read_csv(results / "fairness_table.csv")
    assert {"dataset", "metric", "meso4"} <= set(table.columns)
    for metric in ("DPD", "AADPD", "URDPD_one_plus_acc", "AASTD", "URDEOdds_one_plus_acc"):
        assert metric in set(table["metric"]), metric
    rate = pd.read_csv(results / "synthetic" / "face_detection_rate.csv")
    assert set(rate["group"]) == {"tone1", "tone2", "tone3", "tone4", "(all)"}
    assert (rate.set_index("group")["rate"] >= 0.5).all()
    preds = pd.read_parquet(results / "predictions/meso4/synthetic/clean.parquet")
    assert preds["score"].between(0, 1).all()
    assert set(preds["split"]) <= {"val", "test"}


def test_the_run_writes_its_protocol_card(tiny_run):
    """results/protocol.csv is the card of the run's config, the one the CLI prints; the
    detectors table says how each detector started."""
    from fairforge.protocol import card_frame, layered_config, protocol_card

    results = tiny_run / "results"
    written = pd.read_csv(results / "protocol.csv", dtype=str, keep_default_na=False)
    card = card_frame(protocol_card(layered_config([tiny_run / "config.yaml"])))
    pd.testing.assert_frame_equal(written, card.astype(str), check_dtype=False)
    meso4 = written.loc[written["name"] == "meso4"].set_index("key")
    assert meso4.loc["init", "value"] == "random"
    assert meso4.loc["init", "source"].startswith("paper:MesoNet")
    assert (meso4.loc["epochs", "value"], meso4.loc["epochs", "source"]) == ("1", "config")
    assert set(written.loc[written["section"] == "dataset", "name"]) == {"synthetic", "clips"}
    detectors = pd.read_csv(results / "detectors.csv").set_index("detector")
    assert detectors.loc["meso4", "init"] == "random"


def test_the_run_records_its_rule_graph(tiny_run):
    """pipeline_info/rulegraph.dot: every rule the run resolved, once, joined as they depend
    on each other (the graph `snakemake --rulegraph all` prints)."""
    dot = (tiny_run / "results" / "pipeline_info" / "rulegraph.dot").read_text()
    assert dot.startswith("digraph snakemake_dag {")
    nodes = dict(re.findall(r'\t(\d+)\[label = "(\w+)"', dot))
    edges = {(nodes[a], nodes[b]) for a, b in re.findall(r"\t(\d+) -> (\d+)", dot)}
    assert len(set(nodes.values())) == len(nodes)
    assert {"all", "train", "predict", "fairness_table", "train_encoder"} <= set(nodes.values())
    assert {("train", "predict"), ("predict", "predictions")} <= edges
    assert {("predictions", "fairness_table"), ("fairness_table", "all")} <= edges


def test_forgery_quality_card_carries_the_acceptance_numbers(tiny_run):
    """The acceptance numbers of the forgeries, read from the run's own quality card: a row
    per method × group, near-invisible fakes under 1% per method, maskgan's skin colour
    within 1 LAB unit, every method apart from its nearest sibling, and reenactment's pose
    gap closure where the tiny crops let the poses be measured."""
    import yaml

    from fairforge.workflow import dataset_methods

    results = tiny_run / "results"
    config = yaml.safe_load((tiny_run / "config.yaml").read_text())
    card = pd.read_csv(results / "forgery_quality.csv")
    assert set(card["dataset"]) == set(config["datasets"])
    for dataset, rows in card.groupby("dataset"):
        methods = dataset_methods(config, dataset)  # each dataset's own (the clips forge two)
        sources = pd.read_parquet(results / dataset / "sources.parquet")
        groups = sources.loc[sources["ok"].astype(bool), "group"].astype(str).unique()
        separation = pd.read_parquet(results / dataset / "forgery_separation.parquet")
        assert list(separation.columns) == SEPARATION_COLUMNS
        if dataset == "clips":
            # The clips' two methods composite into different images (the source frame and
            # the target frame), so no two fakes share a kept image to be compared on.
            assert separation.empty and set(rows["method"]) == set(methods)
            continue
        numbers = check_forgery_card(rows, methods, groups)
        print(dataset, numbers)
        assert len(separation) > 0
        fakes = pd.read_parquet(results / dataset / "forgery_quality" / "maskgan.parquet")
        assert fakes["skin_colour_shift"].notna().all()


def test_exposure_study_ranks_with_a_trained_encoder(tiny_run):
    results = tiny_run / "results"
    for name in ("exposure_table.csv", "exposure_per_probe_group.csv", "exposure_ks.csv"):
        assert len(pd.read_csv(results / name)) > 0, name
    log = pd.read_csv(results / "encoders/mobilefacenet_far/training_log.csv")
    assert len(log) >= 1 and np.isfinite(log["loss"]).all()
    table = pd.read_csv(results / "exposure_table.csv")
    assert set(table["encoder"]) == {"dlib_resnet", "mobilefacenet_far"}
    # val and test identities only: the encoder learned the train ones
    sources = pd.read_parquet(results / "synthetic/sources.parquet")
    ranked = sources.loc[sources["split"].isin(["val", "test"]), "subject_id"].nunique()
    assert (table["n_identities"] <= ranked).all()
    dlib = table[table["encoder"] == "dlib_resnet"]
    assert dlib["fallback_share_probes"].between(0, 1).all()
    assert table.loc[table["encoder"] == "mobilefacenet_far", "fallback_share_probes"].isna().all()


def test_frame_variant_reruns_face_detection(tiny_run):
    """gaussian_blur@7~frame blurs whole frames; faces are detected again and counted."""
    results = tiny_run / "results"
    for dataset in ("synthetic", "clips"):
        table = pd.read_csv(results / dataset / "face_detection_under_perturbation.csv")
        assert set(table["variant"]) == {"gaussian_blur@7~frame"}
        assert {"tone1", "(all)"} <= set(table["group"]) and table["rate"].between(0, 1).all()
        assert (results / dataset / "face_detection_under_perturbation.png").stat().st_size > 0
        crops = pd.read_parquet(
            results / dataset / "frame_variants/gaussian_blur@7~frame/samples.parquet"
        )
        assert set(crops["split"]) <= {"val", "test"} and crops["ok"].any()
        everything = table.set_index("group").loc["(all)"]
        assert everything["n"] == len(crops) and everything["n_detected"] == crops["ok"].sum()
        preds = pd.read_parquet(
            results / f"predictions/meso4/{dataset}/gaussian_blur@7~frame.parquet"
        )
        assert set(preds["sample_id"]) == set(crops.loc[crops["ok"], "sample_id"])
        assert (preds["variant"] == "gaussian_blur@7~frame").all()
    assert "Face detection on degraded frames" in (results / "report.html").read_text()


def test_an_untrained_detector_is_not_presented_as_fair(tiny_run):
    """One epoch leaves the tiny run's meso4 near chance (its own training log says so): its
    gaps keep their values but every one names why it cannot be judged, and the verdict
    ranks no detector. The failure table carries intervals and tests, and a forgery method
    that made fakes for under 90% of a group's images is named with its counts."""
    from fairforge.tables.failures import RATE_COLUMNS
    from fairforge.tables.standing import NOT_JUDGED_ROWS

    results = tiny_run / "results"
    best = pd.read_csv(results / "models/meso4/training_log.csv")["val_auc"].max()
    assert best < 0.7, "the premise: one epoch on a few dozen crops learns nothing"
    why = f"not trained enough to judge: validation AUC {best:.3g}, under metrics.min_val_auc 0.7"
    standing = pd.read_csv(results / "fairness_standing.csv")
    assert set(standing["dataset"]) == {"synthetic", "clips"}
    assert not standing["judged"].any() and standing["reason"].str.startswith(why).all()
    table = pd.read_csv(results / "fairness_table.csv", keep_default_na=False)
    gaps = table["metric"].map(lambda m: m not in NOT_JUDGED_ROWS)
    assert table.loc[gaps, "reason"].str.contains(f"meso4: {why}", regex=False).all()
    assert (table.loc[~gaps, "reason"] == "").all()
    ci = pd.read_csv(results / "fairness_ci.csv", keep_default_na=False)
    ci_gaps = ci["metric"].map(lambda m: m not in NOT_JUDGED_ROWS)
    assert ci.loc[ci_gaps, "reason"].str.startswith(why).all()
    page = (results / "report.html").read_text()
    verdict = page[page.index('<section id="verdict">') : page.index('<section id="run">')]
    assert "No detector can be judged on fairness, so none is ranked: meso4" in verdict
    assert "Only one detector" not in verdict

    failures = pd.read_csv(results / "failures_per_group.csv")
    assert list(failures.columns[-len(RATE_COLUMNS) :]) == RATE_COLUMNS
    assert (failures["ci_low"] <= failures["failure_rate"]).all()
    assert (failures["failure_rate"] <= failures["ci_high"]).all()
    per_stage = failures.groupby(["dataset", "stage"])[["p_value", "p_holm"]].nunique()
    assert (per_stage <= 1).all().all()  # one test per dataset and stage
    forged = failures.loc[failures["stage"].str.startswith("forgery:")]
    for row in forged.loc[(forged["n"] - forged["n_failed"]) < 0.9 * forged["n"]].itertuples():
        made = row.n - row.n_failed
        said = f"{row.stage[8:]} made fakes for {made} of {row.n} {row.group} images"
        assert said in html.unescape(verdict), said
        in_dataset = (table["dataset"] == row.dataset) & gaps
        assert table.loc[in_dataset, "reason"].str.contains(said, regex=False).all(), said


def test_nothing_left_to_do(repo_root, tiny_run):
    proc = snakemake(repo_root, tiny_run, "-n", "--cores", "1", "all")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def planned_jobs(output: str) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table of a dry run."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Job stats"))
    jobs = {}
    for line in lines[start + 3 :]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        jobs[parts[0]] = int(parts[1])
    jobs.pop("total", None)
    return jobs


def test_adding_a_detector_plans_only_its_jobs(repo_root, tiny_run):
    import yaml

    config = yaml.safe_load((tiny_run / "config.yaml").read_text())
    config["detectors"]["meso4_wide"] = {
        "arch": "meso4",
        "input_size": 64,
        "model": {"dropout": 0.3},
    }
    (tiny_run / "more.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = snakemake(
        repo_root, tiny_run, "-n", "--cores", "1", "all",
        configfiles=[tiny_run / "more.yaml"], timeout=600,
    )  # fmt: skip
    jobs = planned_jobs(proc.stdout + proc.stderr)
    n_predict = len(config["datasets"]) * len(config["variants"])
    assert jobs.get("train") == 1
    from fairforge.workflow import dataset_methods

    # One prediction job per dataset, variant and method (the real crops and each fake's).
    n_methods = sum(len(dataset_methods(config, d)) + 1 for d in config["datasets"])
    assert jobs.get("predict") == len(config["variants"]) * n_methods
    assert jobs.get("predictions") == n_predict
    per_image = {
        "sources_listing",
        "sources_shard",
        "sources",
        "faces_shard",
        "faces",
        "pairs",
        "forgery_shard",
        "forgery",
        "samples",
        "method_samples",
        "ranking_study",
        "embed_shard",
        "exposure",
        "train_encoder",
        "video_variant_shard",
        "video_variant",
        "frame_variant_shard",
        "frame_variant",
        "face_detection_under_perturbation",
    }
    assert not per_image & set(jobs), jobs


def test_imported_external_and_failing_detectors(repo_root, tiny_run, tmp_path):
    """User weights and score files enter as detectors; a detector that raises fails alone,
    names its rule, input and log, and leaves no partial output (--keep-going); missing
    weights are named before anything runs."""
    import yaml

    work = tmp_path / "run"
    shutil.copytree(tiny_run, work, symlinks=True)
    preds = pd.concat(
        [pd.read_parquet(p) for p in (work / "results/predictions/meso4").glob("*/clean.parquet")]
    )
    preds[["dataset", "sample_id", "score"]].to_csv(work / "scores.csv", index=False)
    config = yaml.safe_load((work / "config.yaml").read_text())
    config["detectors"].update(
        {
            "external": {"scores": "scores.csv"},
            "imported": {
                "arch": "meso4",
                "input_size": 64,
                "checkpoint": str(work / "results/models/meso4/model.pt"),
            },
            "broken": {"arch": "meso4", "input_size": 64, "model": {"dropout": 1.5}},
        }
    )
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = [
        f"results/predictions/{d}/synthetic/clean.parquet"
        for d in ("external", "imported", "broken")
    ]
    proc = snakemake(repo_root, work, "--cores", "2", "--keep-going", *targets, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Error in rule train" in out and "results/logs/train/broken.log" in out
    assert "results/synthetic/samples.parquet" in out  # the job's input
    assert "dropout" in (work / "results/logs/train/broken.log").read_text()
    assert not (work / "results/models/broken/model.pt").exists()
    assert not (work / "results/predictions/broken").exists()

    external = pd.read_parquet(work / targets[0])
    clean = pd.read_parquet(work / "results/predictions/meso4/synthetic/clean.parquet")
    pd.testing.assert_series_equal(external["score"], clean["score"])
    imported = pd.read_parquet(work / targets[1])
    np.testing.assert_array_equal(imported["score"].to_numpy(), clean["score"].to_numpy())

    config["detectors"]["broken"] = {"arch": "meso4", "checkpoint": "/nonexistent/weights.pt"}
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = snakemake(repo_root, work, "-n", targets[2], check=False)
    assert proc.returncode != 0 and "/nonexistent/weights.pt" in proc.stdout + proc.stderr
