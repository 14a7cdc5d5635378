"""AUC per forgery method and the cross-manipulation table."""

import numpy as np
import pandas as pd
import pytest

from fairforge.metrics import Conventions
from fairforge.tables import cross_manipulation_table, per_method_table


def predictions(detector: str, separable: str) -> pd.DataFrame:
    """Real images score 0.2..0.4; the ``separable`` method's fakes score above them, the
    other method's fakes exactly like the reals (AUC 0.5)."""
    real = np.linspace(0.2, 0.4, 4)
    rows = [("real", 0, s) for s in real]
    for method in ("a", "b"):
        scores = real + 0.5 if method == separable else real
        rows += [(method, 1, s) for s in scores]
    frame = pd.DataFrame(rows, columns=["method", "label", "score"])
    return frame.assign(
        dataset="d", detector=detector, variant="clean", split="test", group="g", subject_id="s"
    )


def test_per_method_auc_scores_each_method_against_the_reals():
    table = per_method_table(predictions("x", "a"))
    got = table.set_index("method")
    assert list(got.index) == ["a", "b"]
    assert got.loc["a", "AUC"] == pytest.approx(1.0)
    assert got.loc["b", "AUC"] == pytest.approx(0.5)
    assert got.loc["a", ["n_real", "n_fake"]].tolist() == [4, 4]
    # val rows are not evaluated
    assert per_method_table(predictions("x", "a").assign(split="val")).empty


def test_per_method_acc_follows_the_decision_rule():
    # the highest real scores exactly 0.4: real under ">", fake under ">="
    preds = predictions("x", "a")
    strict = per_method_table(preds, Conventions(threshold=0.4)).set_index("method")
    geq = per_method_table(preds, Conventions(threshold=0.4, threshold_rule=">=")).set_index(
        "method"
    )
    assert strict.loc["a", "ACC"] == pytest.approx(1.0)
    assert geq.loc["a", "ACC"] == pytest.approx(7 / 8)


def test_cross_manipulation_rows_are_training_methods():
    per_method = pd.concat(
        [per_method_table(predictions("on_a", "a")), per_method_table(predictions("on_b", "b"))]
    )
    settings = {"on_a": {"train_methods": ["a"]}, "on_b": {"train_methods": ["b"]}}
    cross = cross_manipulation_table(per_method, settings)
    assert list(cross.columns) == ["dataset", "detector", "trained_on", "a", "b", "average"]
    got = cross.set_index("trained_on")
    assert got.loc["a", "a"] == pytest.approx(1.0) and got.loc["a", "b"] == pytest.approx(0.5)
    assert got.loc["b", "b"] == pytest.approx(1.0) and got.loc["b", "average"] == pytest.approx(
        0.75
    )
    # One training method for every detector (the demo): one row per detector.
    same = cross_manipulation_table(per_method, {"on_a": {"train_methods": ["a"]}})
    assert list(same["trained_on"]) == ["(external)", "a"] and len(same) == 2
