"""`fairforge fairness` reproduces FairFD's published Xception numbers from their accuracies."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairforge.cli import main

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "fairfd_xception.json"
PER_CELL = 10_000  # every accuracy has four decimals, so it is an exact count of 10 000


def reference_predictions(ref: dict, rows: list[str]) -> pd.DataFrame:
    """Predictions whose per-(approach, group) accuracies equal the published matrix."""
    parts = []
    for r, row in enumerate(ref["rows"]):
        if row not in rows:
            continue
        label = ref["row_labels"][row]
        method = "real" if row == "Real" else row.lower()
        for g, group in enumerate(ref["groups"]):
            n_correct = round(ref["accuracy"][r][g] * PER_CELL)
            correct = np.arange(PER_CELL) < n_correct
            fake_pred = correct if label == 1 else ~correct
            parts.append(
                pd.DataFrame(
                    {
                        "sample_id": [f"{method}_{group}_{i}" for i in range(PER_CELL)],
                        "label": label,
                        "method": method,
                        "group": group,
                        "subject_id": [f"{group}_{i % 50}" for i in range(PER_CELL)],
                        "detector": "xception",
                        "score": np.where(fake_pred, 0.9, 0.1).astype(np.float32),
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def ref():
    if not REFERENCE.is_file():
        pytest.skip(f"reference numbers not found at {REFERENCE}")
    return json.loads(REFERENCE.read_text())


def run_cli(tmp_path, preds, denominator):
    src = tmp_path / "preds.parquet"
    preds.to_parquet(src)
    out = tmp_path / "table.csv"
    assert (
        main(
            [
                "fairness",
                "--predictions",
                str(src),
                "--out",
                str(out),
                "--ur-denominator",
                denominator,
            ]
        )
        == 0
    )
    table = pd.read_csv(out)
    return dict(zip(table["metric"], table["xception"]))


def test_table3_through_the_cli(tmp_path, ref):
    got = run_cli(tmp_path, reference_predictions(ref, ref["rows"]), "one_plus_acc")
    for key, expected in ref["table3"].items():
        name = key + "_one_plus_acc" if key.startswith("UR") else key
        assert got[name] == pytest.approx(expected, abs=ref["tolerance"]), key


def test_table5b_through_the_cli(tmp_path, ref):
    got = run_cli(tmp_path, reference_predictions(ref, ["Real", "FaceSwap"]), "acc")
    for key, expected in ref["table5b_threshold_0.5_real_and_faceswap_only"].items():
        name = key + "_acc" if key.startswith("UR") else key
        assert got[name] == pytest.approx(expected, abs=ref["tolerance"]), key


def test_missing_columns_are_a_clear_error(tmp_path, capsys):
    src = tmp_path / "bad.parquet"
    pd.DataFrame({"sample_id": ["a"], "score": [0.3]}).to_parquet(src)
    assert main(["fairness", "--predictions", str(src), "--out", str(tmp_path / "t.csv")]) == 2
    assert "missing prediction column" in capsys.readouterr().err


def test_the_cli_writes_the_standing_and_every_reason_the_workflow_writes(tmp_path):
    """With the training logs and failures.csv files the workflow's fairness_table rule reads,
    ``fairforge fairness`` writes the same four tables: a detector that learned nothing is
    named in fairness_standing.csv and in every gap's reason, and so is a forgery method
    that made fakes for too few faces of a group; the bars are the config's keys."""
    from test_tables import constant_predictions, failure_rows, predictions

    from fairforge import tables

    preds = pd.concat(
        [predictions((0.95, 0.9, 0.95, 0.9), detector="good"), constant_predictions("untrained")]
    )
    src = tmp_path / "preds.parquet"
    preds.to_parquet(src)
    logs = []
    for detector, best in (("good", 0.91), ("untrained", 0.53)):
        log = tmp_path / "models" / detector / "training_log.csv"
        log.parent.mkdir(parents=True)
        pd.DataFrame({"epoch": [1, 2], "val_auc": [0.5, best]}).to_csv(log, index=False)
        logs.append(str(log))
    failures = tmp_path / "data" / "failures.csv"
    failures.parent.mkdir()
    pd.DataFrame(failure_rows("data", "forgery:faceswap", [0, 17, 0, 0])).to_csv(
        failures, index=False
    )
    paths = {name: tmp_path / f"{name}.csv" for name in ("table", "per_group", "ci", "standing")}

    def cli(*extra: str) -> dict[str, pd.DataFrame]:
        args = ["fairness", "--predictions", str(src), "--out", str(paths["table"])]
        args += ["--per-group", str(paths["per_group"]), "--bootstrap", "20"]
        args += ["--ci", str(paths["ci"]), "--standing", str(paths["standing"])]
        args += ["--training-logs", *logs, "--failures", str(failures), *extra]
        assert main(args) == 0
        return {name: pd.read_csv(path, keep_default_na=False) for name, path in paths.items()}

    got = cli()
    expected = tables.fairness_outputs(
        preds,
        bootstrap=20,
        training=tables.training_records(logs),
        failures=tables.read_failures([failures]),
    )
    for name, frame in expected.items():
        written = tmp_path / f"expected_{name}.csv"
        frame.to_csv(written, index=False, float_format="%.6g")
        assert paths[name].read_bytes() == written.read_bytes(), name
    standing = got["standing"].set_index("detector")
    assert standing["judged"].to_dict() == {"good": True, "untrained": False}
    assert standing.loc["untrained", "reason"].startswith(
        "not trained enough to judge: validation AUC 0.53, under metrics.min_val_auc 0.7"
    )
    note = "faceswap made fakes for 7 of 24 g1 images (29%)"
    aadpd = got["table"].set_index("metric").loc["AADPD", "reason"]
    assert aadpd.startswith("untrained: not trained enough") and aadpd.endswith(note)
    ci = got["ci"].set_index(["detector", "metric"])
    assert ci.loc[("good", "AADPD"), "reason"] == note
    # the bars are options: above the good detector's validation AUC, neither is judged
    stricter = cli("--min-val-auc", "0.95", "--min-forgery-success", "0.2")
    assert not stricter["standing"]["judged"].astype(bool).any()
    assert (
        "good: not trained enough to judge: validation AUC 0.91, under metrics.min_val_auc "
        "0.95" in stricter["table"].set_index("metric").loc["AADPD", "reason"]
    )
    assert note not in stricter["table"].set_index("metric").loc["AADPD", "reason"]
