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
