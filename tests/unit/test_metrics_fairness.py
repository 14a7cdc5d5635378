import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    equalized_odds_difference,
    false_negative_rate,
    false_positive_rate,
    selection_rate,
    true_negative_rate,
    true_positive_rate,
)
from sklearn.metrics import accuracy_score, roc_auc_score

from fairforge.metrics import (
    Conventions,
    accuracy_matrix,
    apply_group_thresholds,
    best_threshold,
    compare_thresholds,
    fairfd_metrics,
    fairness_reasons,
    fairness_report,
    fairness_table,
    fit_group_thresholds,
    group_rates,
    per_group_long,
    per_group_table,
    textbook_metrics,
)

# FairFD's published numbers: Table 1(a) (Xception's accuracy matrix), Table 3's Xception
# column and Table 5(b) at threshold 0.5
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "fairfd_xception.json"
ROWS = ["real", "faceswap", "simswap", "fastreen", "dualreen", "maskgan"]


@pytest.fixture(scope="module")
def ref():
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="module")
def ref_matrix(ref):
    return pd.DataFrame(ref["accuracy"], index=ROWS, columns=ref["groups"])


def frame_from_matrix(A: pd.DataFrame, per_cell: int = 10000, subjects_per_group: int = 50):
    """Predictions whose cell accuracies are round(A * per_cell) / per_cell exactly."""
    parts = []
    for method in A.index:
        label = 0 if method == "real" else 1
        for group in A.columns:
            n_correct = int(round(A.loc[method, group] * per_cell))
            correct = np.arange(per_cell) < n_correct
            predicted_fake = correct == (label == 1)
            parts.append(
                pd.DataFrame(
                    {
                        "label": label,
                        "method": method,
                        "group": group,
                        "subject_id": [
                            f"{group}-{i % subjects_per_group}" for i in range(per_cell)
                        ],
                        "score": np.where(predicted_fake, 0.8, 0.2).astype(np.float32),
                    }
                )
            )
    frame = pd.concat(parts, ignore_index=True)
    frame.insert(0, "sample_id", [f"s{i}" for i in range(len(frame))])
    return frame


def random_predictions(
    seed: int,
    n: int = 4000,
    groups=("g1", "g2", "g3", "g4"),
    methods=("real", "faceswap", "simswap"),
):
    rng = np.random.default_rng(seed)
    group = rng.choice(groups, size=n)
    method = rng.choice(methods, size=n, p=[0.4] + [0.6 / (len(methods) - 1)] * (len(methods) - 1))
    label = (method != "real").astype(int)
    shift = {g: 0.3 * i for i, g in enumerate(groups)}
    logits = (2 * label - 1) * 1.0 + np.array([shift[g] for g in group]) + rng.normal(0, 1.2, n)
    score = np.round(1 / (1 + np.exp(-logits)), 3)  # rounded: ties and exact 0.5 scores occur
    return pd.DataFrame(
        {
            "sample_id": np.arange(n).astype(str),
            "label": label,
            "method": method,
            "group": group,
            "subject_id": [f"{g}-{i % 40}" for i, g in enumerate(group)],
            "score": score,
        }
    )


# ----------------------------------------------------------------------------- FairFD matrix


def test_table3_reproduced_with_one_plus_acc(ref, ref_matrix):
    got = fairfd_metrics(ref_matrix, ur_denominator="one_plus_acc")
    for key, value in ref["table3"].items():
        assert got[key] == pytest.approx(value, abs=ref["tolerance"]), key


def test_table5b_reproduced_with_acc_on_real_and_faceswap(ref, ref_matrix):
    got = fairfd_metrics(ref_matrix.loc[["real", "faceswap"]], ur_denominator="acc")
    for key, value in ref["table5b_threshold_0.5_real_and_faceswap_only"].items():
        assert got[key] == pytest.approx(value, abs=ref["tolerance"]), key


def test_denominators_differ_and_unknown_rejected(ref_matrix):
    plus = fairfd_metrics(ref_matrix, ur_denominator="one_plus_acc")
    bare = fairfd_metrics(ref_matrix, ur_denominator="acc")
    assert bare["URDPD"] > plus["URDPD"]
    assert bare["AADPD"] == plus["AADPD"]
    with pytest.raises(ValueError):
        fairfd_metrics(ref_matrix, ur_denominator="mean")
    with pytest.raises(ValueError):
        fairfd_metrics(ref_matrix.drop(index="real"))


def test_array_and_stack_inputs_agree_with_frame(ref_matrix):
    from_frame = fairfd_metrics(ref_matrix)
    from_array = fairfd_metrics(ref_matrix.to_numpy())
    assert from_array == pytest.approx(from_frame, abs=1e-15)
    # real row not first: the frame finds it by name, the array by index
    shuffled = ref_matrix.iloc[[2, 0, 5, 1, 4, 3]]
    assert fairfd_metrics(shuffled) == pytest.approx(from_frame, abs=1e-12)
    assert fairfd_metrics(shuffled.to_numpy(), real_row=1) == pytest.approx(from_frame, abs=1e-12)
    rng = np.random.default_rng(0)
    stack = np.clip(ref_matrix.to_numpy() + rng.normal(0, 0.05, (5, 6, 4)), 0, 1)
    stacked = fairfd_metrics(stack)
    for b in range(5):
        single = fairfd_metrics(stack[b])
        for key in single:
            assert stacked[key][b] == pytest.approx(single[key], abs=1e-15)


def test_per_group_table_matches_table1(ref, ref_matrix):
    table = per_group_table(ref_matrix)
    tol = ref["tolerance"]
    assert list(table.index) == ROWS + ["overall"]
    assert list(table.columns) == ref["groups"] + ["mean", "STD", "AccGap"]
    np.testing.assert_allclose(table.loc[ROWS, "STD"], ref["table1_std"], atol=tol)
    np.testing.assert_allclose(table.loc[ROWS, "AccGap"], ref["table1_accgap"], atol=tol)
    overall = ref["table1_overall"]
    np.testing.assert_allclose(table.loc["overall", ref["groups"]], overall["per_group"], atol=tol)
    assert table.loc["overall", "mean"] == pytest.approx(overall["mean"], abs=tol)
    assert table.loc["overall", "STD"] == pytest.approx(overall["std"], abs=tol)
    assert table.loc["overall", "AccGap"] == pytest.approx(overall["accgap"], abs=tol)


# ----------------------------------------------------------------------------- the frame path


@pytest.fixture(scope="module")
def ref_frame(ref_matrix):
    return frame_from_matrix(ref_matrix)


def test_accuracy_matrix_of_built_frame(ref_frame, ref_matrix):
    got = accuracy_matrix(
        ref_frame["label"], ref_frame["method"], ref_frame["group"], ref_frame["score"]
    )
    assert list(got.index) == ["real", "dualreen", "faceswap", "fastreen", "maskgan", "simswap"]
    assert list(got.columns) == sorted(ref_matrix.columns)
    expected = (ref_matrix * 10000).round() / 10000
    pd.testing.assert_frame_equal(
        got.loc[ROWS, list(ref_matrix.columns)], expected, check_names=False, atol=1e-12, rtol=0
    )
    ordered = accuracy_matrix(
        ref_frame["label"],
        ref_frame["method"],
        ref_frame["group"],
        ref_frame["score"],
        approaches=ROWS,
        groups=list(ref_matrix.columns),
    )
    assert list(ordered.index) == ROWS and list(ordered.columns) == list(ref_matrix.columns)


def test_fairness_report_reproduces_reference(ref, ref_frame):
    tol = ref["tolerance"]
    report = fairness_report(ref_frame, Conventions(ur_denominator=("one_plus_acc", "acc")))
    for key, value in ref["table3"].items():
        name = f"{key}_one_plus_acc" if key.startswith("UR") else key
        assert report[name] == pytest.approx(value, abs=tol), key
    assert report["AccGap"] == pytest.approx(ref["table1_overall"]["accgap"], abs=tol)
    assert report["MeanAcc"] == pytest.approx(ref["table1_overall"]["mean"], abs=tol)
    assert report["n_samples"] == len(ref_frame)
    table5b = fairness_report(
        ref_frame, Conventions(ur_denominator="acc"), approaches=["real", "faceswap"]
    )
    for key, value in ref["table5b_threshold_0.5_real_and_faceswap_only"].items():
        name = f"{key}_acc" if key.startswith("UR") else key
        assert table5b[name] == pytest.approx(value, abs=tol), key
    assert table5b["n_samples"] == 2 * 4 * 10000
    assert not any(k.endswith("_one_plus_acc") for k in table5b)


def test_report_rejects_ambiguous_input(ref_frame):
    with pytest.raises(ValueError, match="sample_id"):
        fairness_report(pd.concat([ref_frame, ref_frame]))
    with pytest.raises(ValueError, match="no 'real'"):
        fairness_report(ref_frame, approaches=["faceswap", "simswap"])
    bad = ref_frame.copy()
    bad.loc[0, "label"] = 1  # a real sample labelled fake
    with pytest.raises(ValueError, match="'real'"):
        fairness_report(bad)
    with pytest.raises(ValueError, match="lack"):
        fairness_report(ref_frame.drop(columns="score"))


def test_threshold_is_strict_and_accepts_group_mapping():
    label = np.array([0, 0, 1, 1, 0, 1])
    method = np.array(["real", "real", "fs", "fs", "real", "fs"])
    group = np.array(["a", "a", "a", "a", "b", "b"])
    score = np.array([0.5, 0.2, 0.5, 0.9, 0.4, 0.45])
    A = accuracy_matrix(label, method, group, score)
    # 0.5 is not > 0.5: predicted real
    assert A.loc["real", "a"] == 1.0 and A.loc["fs", "a"] == 0.5
    assert A.loc["real", "b"] == 1.0 and A.loc["fs", "b"] == 0.0
    per_group = accuracy_matrix(label, method, group, score, threshold={"a": 0.1, "b": 0.42})
    assert per_group.loc["real", "a"] == 0.0 and per_group.loc["fs", "a"] == 1.0
    assert per_group.loc["real", "b"] == 1.0 and per_group.loc["fs", "b"] == 1.0
    with pytest.raises(ValueError, match="threshold"):
        accuracy_matrix(label, method, group, score, threshold={"a": 0.5})


def test_one_empty_cell_is_left_out_and_named_not_turned_into_nan():
    # A = real [1, 0, empty]; fs [1, 1, 0] (groups a, b, c)
    frame = pd.DataFrame(
        {
            "label": [0, 0, 1, 1, 1],
            "method": ["real", "real", "fs", "fs", "fs"],
            "group": ["a", "b", "a", "b", "c"],
            "score": [0.1, 0.9, 0.9, 0.9, 0.1],
        }
    )
    A = accuracy_matrix(frame["label"], frame["method"], frame["group"], frame["score"])
    assert np.isnan(A.loc["real", "c"])
    got = fairfd_metrics(A)
    assert got["AADPD"] == pytest.approx(1.0)  # ranges 1 (real over a, b) and 1 (fs)
    assert got["DPD"] == pytest.approx(1.0)  # group means 1, 0.5, 0 (c: the fs cell only)
    assert got["STD"] == pytest.approx(np.std([1, 0.5, 0]))
    assert got["AASTD"] == pytest.approx((np.std([1, 0]) + np.std([1, 1, 0])) / 2)
    assert got["URDPD"] == pytest.approx((1 / 1.5 + 1 / (1 + 2 / 3)) / 2)
    report = fairness_report(frame)
    assert report["MeanAcc"] == pytest.approx(0.6)
    reasons = fairness_reasons(frame, report)
    assert "computed without the empty cell(s) (real, c)" in reasons["AADPD"]
    assert "(real, c)" in reasons["URDEOdds_one_plus_acc"]
    # group c has no real sample: its FPR, and so the pooled DEOdds, is undefined
    assert np.isnan(report["pooled_DEOdds"])
    assert "c have no real sample" in reasons["pooled_DEOdds"]
    assert "pooled_DPD" not in reasons and "ACC" not in reasons
    # a metric no defined cell supports stays NaN, and says so
    only_real = fairfd_metrics(
        pd.DataFrame([[1.0, np.nan], [np.nan, np.nan]], index=["real", "fs"])
    )
    assert np.isnan(only_real["AADEO"]) and only_real["AADPD"] == 0.0


# ----------------------------------------------------------------------------- textbook metrics


@pytest.mark.parametrize("seed,groups", [(1, ("g1", "g2", "g3")), (2, ("g1", "g2", "g3", "g4"))])
def test_textbook_metrics_match_fairlearn(seed, groups):
    df = random_predictions(seed, groups=groups)
    y, s, g = df["label"].to_numpy(), df["score"].to_numpy(), df["group"].to_numpy()
    pred = (s > 0.5).astype(int)
    ours = textbook_metrics(y, s, g)
    assert ours["DPD"] == pytest.approx(
        demographic_parity_difference(y, pred, sensitive_features=g), abs=1e-9
    )
    assert ours["DEOdds"] == pytest.approx(
        equalized_odds_difference(y, pred, sensitive_features=g, agg="mean"), abs=1e-9
    )
    frame = MetricFrame(
        metrics={
            "PR": selection_rate,
            "TPR": true_positive_rate,
            "FPR": false_positive_rate,
            "TNR": true_negative_rate,
            "FNR": false_negative_rate,
            "Acc": accuracy_score,
        },
        y_true=y,
        y_pred=pred,
        sensitive_features=g,
    )
    by_group = frame.by_group
    assert ours["DEO"] == pytest.approx(by_group["TPR"].max() - by_group["TPR"].min(), abs=1e-9)
    assert ours["STD"] == pytest.approx(np.std(by_group["Acc"].to_numpy()), abs=1e-9)
    assert ours["AccGap"] == pytest.approx(frame.difference()["Acc"], abs=1e-9)
    rates = group_rates(y, s, g)
    for col in ["PR", "TPR", "FPR", "TNR", "FNR", "Acc"]:
        np.testing.assert_allclose(
            rates[col].to_numpy(),
            by_group.loc[rates.index, col].to_numpy(),
            atol=1e-12,
            err_msg=col,
        )
    aucs = [roc_auc_score(y[g == name], s[g == name]) for name in rates.index]
    np.testing.assert_allclose(rates["AUC"], aucs, atol=1e-12)
    assert ours["AUCGap"] == pytest.approx(max(aucs) - min(aucs), abs=1e-12)
    # hard predictions passed as scores give the same numbers
    assert textbook_metrics(y, pred, g)["DPD"] == pytest.approx(ours["DPD"], abs=1e-15)


def test_report_pooled_metrics_equal_sample_level_path():
    df = random_predictions(3)
    report = fairness_report(df)
    direct = textbook_metrics(df["label"], df["score"], df["group"])
    for key, value in direct.items():
        assert report[f"pooled_{key}"] == pytest.approx(value, abs=1e-12), key
    assert report["ACC"] == pytest.approx(
        np.mean((df["score"] > 0.5) == (df["label"] == 1)), abs=1e-12
    )
    assert report["AUC"] == pytest.approx(roc_auc_score(df["label"], df["score"]), abs=1e-12)
    one_group = textbook_metrics([0, 1, 1], [0.2, 0.7, 0.9], ["a", "a", "b"])
    assert np.isnan(one_group["AUCGap"]) and np.isnan(one_group["DEOdds"])


def test_fairness_table_and_per_group_long():
    a, b = random_predictions(4), random_predictions(5)
    df = pd.concat([a.assign(detector="xception"), b.assign(detector="meso4")], ignore_index=True)
    table = fairness_table(df, by="detector")
    assert list(table.columns) == ["meso4", "xception"]
    assert table.index.name == "metric"
    for name, part in [("xception", a), ("meso4", b)]:
        assert table[name].to_dict() == pytest.approx(fairness_report(part), nan_ok=True)
    long = per_group_long(df, by="detector")
    assert list(long.columns[:3]) == ["detector", "approach", "group"]
    x = long[long["detector"] == "xception"]
    A = accuracy_matrix(a["label"], a["method"], a["group"], a["score"])
    cells = x[x["approach"] != "all"].set_index(["approach", "group"])["accuracy"]
    np.testing.assert_allclose(cells.unstack().loc[A.index, A.columns].to_numpy(), A.to_numpy())
    pooled = x[x["approach"] == "all"].set_index("group")
    rates = group_rates(a["label"], a["score"], a["group"])
    for col in ["TPR", "FPR", "PR", "AUC"]:
        np.testing.assert_allclose(pooled.loc[rates.index, col], rates[col], err_msg=col)
    np.testing.assert_allclose(pooled.loc[rates.index, "accuracy"], rates["Acc"])
    assert x["n"].sum() == 2 * len(a)  # cells plus the pooled rows


# ----------------------------------------------------------------------------- thresholds


def _brute_force_best_accuracy(y, s):
    candidates = np.r_[np.unique(s), np.unique(s) - 1e-9, np.linspace(-0.01, 1.01, 103)]
    return max(np.mean((s > t) == (y == 1)) for t in candidates)


def test_group_thresholds_maximise_validation_accuracy():
    val = random_predictions(6, n=1500)
    fitted = fit_group_thresholds(val["label"], val["score"], val["group"])
    assert sorted(fitted) == ["g1", "g2", "g3", "g4"]
    for group, t in fitted.items():
        part = val[val["group"] == group]
        y, s = part["label"].to_numpy(), part["score"].to_numpy()
        assert np.mean((s > t) == (y == 1)) == pytest.approx(
            _brute_force_best_accuracy(y, s), abs=1e-12
        )
    # groups are shifted by 0.3 logits each, so the best thresholds increase with the shift
    assert fitted["g4"] > fitted["g1"]
    pred = apply_group_thresholds(val["score"], val["group"], fitted)
    expected = val["score"].to_numpy() > val["group"].map(fitted).to_numpy()
    np.testing.assert_array_equal(pred, expected)
    with pytest.raises(ValueError):
        apply_group_thresholds([0.3], ["unknown"], fitted)
    assert apply_group_thresholds([0.3], ["unknown"], fitted, default=0.2).tolist() == [True]


def test_best_threshold_keeps_preferred_value_when_optimal():
    y = np.array([0, 0, 1, 1])
    assert best_threshold(y, [0.1, 0.2, 0.8, 0.9]) == 0.5
    t = best_threshold(y, [0.6, 0.7, 0.8, 0.9])
    assert 0.7 <= t < 0.8
    assert best_threshold([1, 1], [0.2, 0.3]) < 0.2
    assert best_threshold([0, 0], [0.7, 0.8]) >= 0.8


def test_compare_thresholds_side_by_side():
    val, test = random_predictions(7, n=3000), random_predictions(8, n=3000)
    table, fitted = compare_thresholds(val, test)
    assert list(table.columns) == ["global", "per_group"]
    assert table["global"].to_dict() == pytest.approx(fairness_report(test), nan_ok=True)
    assert table["per_group"].to_dict() == pytest.approx(
        fairness_report(test, Conventions(threshold=fitted)), nan_ok=True
    )
    # fitted on the test data itself, per-group thresholds cannot lower accuracy
    table_self, _ = compare_thresholds(test, test)
    assert table_self.loc["ACC", "per_group"] >= table_self.loc["ACC", "global"]
    # threshold-free metrics do not move
    assert table.loc["AUC", "per_group"] == table.loc["AUC", "global"]


def test_threshold_rule_reaches_the_fairness_metrics_and_the_fitted_thresholds():
    # every score sits exactly on 0.5 or clearly away: the rule decides the tied samples
    frame = pd.DataFrame(
        {
            "label": [0, 0, 1, 1, 0, 0, 1, 1],
            "method": ["real", "real", "fs", "fs"] * 2,
            "group": ["a"] * 4 + ["b"] * 4,
            "score": [0.5, 0.1, 0.5, 0.9, 0.1, 0.1, 0.9, 0.9],
        }
    )
    args = (frame["label"], frame["method"], frame["group"], frame["score"])
    strict = accuracy_matrix(*args)
    geq = accuracy_matrix(*args, threshold_rule=">=")
    # group a: the real at 0.5 is right under ">" and wrong under ">="; the fake the reverse
    assert strict.loc["real", "a"] == 1.0 and strict.loc["fs", "a"] == 0.5
    assert geq.loc["real", "a"] == 0.5 and geq.loc["fs", "a"] == 1.0
    report = fairness_report(frame, Conventions(threshold_rule=">="))
    assert report["AADPD"] == pytest.approx(0.5 * (0.5 + 0.0))
    assert fairness_report(frame)["AADPD"] == pytest.approx(0.5 * (0.0 + 0.5))
    # the fitted threshold maximises accuracy under the same rule
    y, s = np.array([0, 1, 1, 0]), np.array([0.2, 0.5, 0.7, 0.5])
    from fairforge.metrics.thresholds import best_threshold

    for rule, op in ((">", np.greater), (">=", np.greater_equal)):
        t = best_threshold(y, s, threshold_rule=rule)
        grid = np.r_[np.unique(s), -1, 2, (np.unique(s)[:-1] + np.unique(s)[1:]) / 2]
        best = max(np.mean(op(s, c) == (y == 1)) for c in grid)
        assert np.mean(op(s, t) == (y == 1)) == pytest.approx(best)
