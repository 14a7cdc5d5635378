import numpy as np
import pandas as pd
import pytest

from fairforge.metrics import (
    Conventions,
    accuracy_matrix,
    bootstrap_intervals,
    bootstrap_replicates,
    bootstrap_table,
    fairfd_metrics,
    fairness_report,
    permutation_pvalue,
    permutation_pvalues,
    stats_from_frame,
    subject_resample_indices,
    textbook_metrics,
)
from fairforge.metrics.inversion import (
    PERTURB_MIN_ROWS,
    _accepted_range,
    _crossing,
    inverted_intervals,
    prepivot_quantiles,
    signal_share,
)
from fairforge.metrics.resampling import SubjectStats, counts_from_indices, point_estimates

METHODS = ("real", "faceswap", "simswap")
GAPS = (
    "DPD",
    "DEOdds",
    "AADPD",
    "AADEOdds",
    "AASTD",
    "URDPD_one_plus_acc",
    "pooled_DPD",
    "pooled_DEOdds",
    "pooled_STD",
)


def subject_predictions(
    seed: int,
    subjects_per_group: int,
    group_accuracy=(0.7, 0.8, 0.75, 0.85),
    per_cell: int | tuple[int, int] = 20,
    subject_sd: float = 0.1,
):
    """Predictions whose correctness depends on the subject (random effect) and its group."""
    rng = np.random.default_rng(seed)
    n_groups = len(group_accuracy)
    n_subjects = n_groups * subjects_per_group
    subject_group = np.repeat(np.arange(n_groups), subjects_per_group)
    p_subject = np.clip(
        np.asarray(group_accuracy)[subject_group] + rng.normal(0, subject_sd, n_subjects),
        0.02,
        0.98,
    )
    low, high = (per_cell, per_cell + 1) if isinstance(per_cell, int) else per_cell
    counts = rng.integers(low, high, size=(n_subjects, len(METHODS)))
    subject = np.repeat(np.repeat(np.arange(n_subjects), len(METHODS)), counts.ravel())
    method = np.repeat(np.tile(np.arange(len(METHODS)), n_subjects), counts.ravel())
    label = (method > 0).astype(int)
    correct = rng.random(subject.size) < p_subject[subject]
    predicted_fake = correct == (label == 1)
    score = np.where(
        predicted_fake, 0.5 + 0.5 * rng.random(subject.size), 0.5 * rng.random(subject.size)
    )
    return pd.DataFrame(
        {
            "sample_id": np.arange(subject.size).astype(str),
            "label": label,
            "method": np.asarray(METHODS)[method],
            "group": np.array([f"g{i}" for i in range(n_groups)])[subject_group[subject]],
            "subject_id": np.char.add("s", subject.astype(str)),
            "score": score,
        }
    )


def test_point_estimates_equal_fairness_report():
    df = subject_predictions(0, 12)
    report = fairness_report(df, Conventions(ur_denominator=("one_plus_acc", "acc")))
    est = point_estimates(stats_from_frame(df), ur_denominator=("one_plus_acc", "acc"))
    for key, value in est.items():
        assert report[key] == pytest.approx(value, abs=1e-12), key


def test_vectorised_bootstrap_equals_naive_loop():
    df = subject_predictions(1, 6, per_cell=(1, 6))
    stats = stats_from_frame(df)
    idx = subject_resample_indices(stats, n_boot=25, seed=3)
    # resampling stays within groups
    for g in range(len(stats.groups)):
        members = np.flatnonzero(stats.subject_group == g)
        assert np.isin(idx[:, members], members).all()
    dens = ("one_plus_acc", "acc")
    fast = bootstrap_replicates(stats, indices=idx, ur_denominator=dens)
    seeded = bootstrap_replicates(stats, n_boot=25, seed=3, ur_denominator=dens)
    for key in fast:
        np.testing.assert_array_equal(fast[key], seeded[key])
    rows_of = {s: part for s, part in df.groupby("subject_id")}
    for b in range(len(idx)):
        sample = pd.concat([rows_of[stats.subject_ids[i]] for i in idx[b]], ignore_index=True)
        A = accuracy_matrix(
            sample["label"],
            sample["method"],
            sample["group"],
            sample["score"],
            approaches=stats.approaches,
            groups=stats.groups,
        )
        for den in dens:
            naive = fairfd_metrics(A, ur_denominator=den)
            for key, value in naive.items():
                name = f"{key}_{den}" if key.startswith("UR") else key
                assert fast[name][b] == pytest.approx(value, abs=1e-12, nan_ok=True), (b, name)
        pooled = textbook_metrics(sample["label"], sample["score"], sample["group"])
        for key in ("DPD", "DEOdds", "DEO", "STD", "AccGap"):
            assert fast[f"pooled_{key}"][b] == pytest.approx(pooled[key], abs=1e-12), (b, key)
        assert fast["ACC"][b] == pytest.approx(
            np.mean((sample["score"] > 0.5) == (sample["label"] == 1))
        )


def test_counts_from_indices():
    counts = counts_from_indices(np.array([[0, 0, 2], [1, 2, 2]]), 4)
    np.testing.assert_array_equal(counts, [[2, 0, 1, 0], [0, 1, 2, 0]])


def test_intervals_contain_estimate_and_shrink_with_more_subjects():
    widths = {}
    for n_subjects in (30, 480):
        table = bootstrap_intervals(subject_predictions(2, n_subjects), n_boot=300, seed=0)
        assert (table["n_valid"] == 300).all()
        sub = table.loc[list(GAPS)]
        assert (sub["ci_low"] <= sub["estimate"]).all() and (
            sub["estimate"] <= sub["ci_high"]
        ).all()
        widths[n_subjects] = sub["ci_high"] - sub["ci_low"]
    # 16 times the subjects: about a quarter of the width
    assert (widths[480] < 0.5 * widths[30]).all(), pd.DataFrame(widths)


def test_bootstrap_is_seeded():
    df = subject_predictions(3, 10)
    a = bootstrap_intervals(df, n_boot=150, seed=5)
    b = bootstrap_intervals(df.sample(frac=1.0, random_state=0), n_boot=150, seed=5)  # row order
    c = bootstrap_intervals(df, n_boot=150, seed=6)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["ci_low"], c["ci_low"])
    # the first resamples do not depend on how many are drawn
    first = bootstrap_replicates(df, n_boot=130, seed=5)["DPD"]
    more = bootstrap_replicates(df, n_boot=300, seed=5)["DPD"]
    np.testing.assert_array_equal(first, more[:130])


def test_bootstrap_table_per_detector():
    df = pd.concat(
        [
            subject_predictions(4, 8).assign(detector="a"),
            subject_predictions(5, 8).assign(detector="b"),
        ],
        ignore_index=True,
    )
    table = bootstrap_table(df, by="detector", n_boot=50)
    assert list(table.columns[:2]) == ["detector", "metric"]
    assert set(table["detector"]) == {"a", "b"}
    one = bootstrap_intervals(df[df["detector"] == "b"], n_boot=50).reset_index()
    np.testing.assert_allclose(table[table["detector"] == "b"]["ci_high"], one["ci_high"])


def test_subject_in_two_groups_rejected():
    df = subject_predictions(6, 5)
    df.loc[df.index[0], "group"] = "g3" if df.loc[df.index[0], "group"] != "g3" else "g0"
    with pytest.raises(ValueError, match="more than one group"):
        stats_from_frame(df)


def test_group_reassignment_counts_match_recomputation():
    df = subject_predictions(7, 5)
    stats = stats_from_frame(df)
    same = stats.cell_counts_for_assignment(stats.subject_group[None, :])
    base = stats.cell_counts()
    np.testing.assert_allclose(same[0][0], base[0])
    np.testing.assert_allclose(same[1][0], base[1])
    rng = np.random.default_rng(0)
    shuffled = rng.permutation(stats.subject_group)
    correct, total = stats.cell_counts_for_assignment(shuffled[None, :])
    new_group = dict(zip(stats.subject_ids, np.asarray(stats.groups)[shuffled]))
    moved = df.assign(group=df["subject_id"].map(new_group))
    A = accuracy_matrix(
        moved["label"],
        moved["method"],
        moved["group"],
        moved["score"],
        approaches=stats.approaches,
        groups=stats.groups,
    )
    np.testing.assert_allclose(correct[0] / total[0], A.to_numpy())


def test_permutation_pvalues_under_null_and_alternative():
    null = [
        permutation_pvalue(
            subject_predictions(100 + i, 10, group_accuracy=(0.75,) * 4, per_cell=5),
            metric="AADPD",
            n_perm=199,
            seed=i,
        )
        for i in range(40)
    ]
    null = np.array(null)
    assert ((null > 0) & (null <= 1)).all()
    assert 0.3 < null.mean() < 0.7
    assert np.mean(null <= 0.1) <= 0.25
    assert np.mean(null >= 0.5) >= 0.25
    strong = permutation_pvalues(
        subject_predictions(9, 10, group_accuracy=(0.5, 0.9, 0.7, 0.7), per_cell=5), n_perm=199
    )
    assert strong["DPD"] <= 0.01 and strong["pooled_STD"] <= 0.01
    assert "ACC" not in strong
    with pytest.raises(ValueError, match="unknown"):
        permutation_pvalue(stats_from_frame(subject_predictions(9, 3)), metric="AUC", n_perm=9)


# ----------------------------------------------------------------------------- calibrated intervals


def test_jackknife_equals_recomputing_without_each_subject():
    from fairforge.metrics.resampling import jackknife_estimates

    df = subject_predictions(4, 4, per_cell=(3, 7))
    stats = stats_from_frame(df)
    jack = jackknife_estimates(stats)
    for i in (0, 5, 13):
        without = df.loc[df["subject_id"] != stats.subject_ids[i]]
        expected = point_estimates(stats_from_frame(without))
        for key in GAPS:
            assert jack[key][i] == pytest.approx(expected[key], abs=1e-12), key


def test_basic_and_bca_intervals_by_hand():
    from fairforge.metrics.intervals import basic_interval, bca_interval

    reps = np.r_[np.arange(1.0, 101.0), np.nan]  # the NaN (a dropped resample) is ignored
    q_lo, q_hi = np.quantile(np.arange(1.0, 101.0), [0.025, 0.975])
    assert basic_interval(40.0, reps) == pytest.approx((80 - q_hi, 80 - q_lo))
    # an estimate below most replicates (an upward-biased gap) moves the interval down
    assert basic_interval(10.0, reps, floor=0.0) == (0.0, pytest.approx(20 - q_lo))
    # replicates centred on the estimate, a symmetric jackknife: BCa is the percentile
    low, high, z0, a = bca_interval(50.5, reps, np.array([-1.0, 0.0, 1.0]))
    assert z0 == pytest.approx(0.0) and a == pytest.approx(0.0)
    assert (low, high) == pytest.approx((q_lo, q_hi))
    # 40 of 100 replicates below the estimate: z0 = Φ⁻¹(0.4)
    _, _, z0, _ = bca_interval(40.5, reps, np.array([-1.0, 0.0, 1.0]))
    assert z0 == pytest.approx(-0.2533, abs=1e-4)
    assert np.isnan(bca_interval(np.nan, reps, reps)[0])


def test_intervals_report_bias_corrected_estimate_and_dropped_share():
    df = subject_predictions(7, 10)
    table = bootstrap_intervals(df, n_boot=300, seed=2)
    reps = bootstrap_replicates(df, 300, 2)
    for key in ("AADPD", "pooled_STD"):
        row = table.loc[key]
        assert row["estimate_bc"] == pytest.approx(2 * row["estimate"] - reps[key].mean())
        q = np.quantile(reps[key], [0.025, 0.975])
        assert row["basic_low"] == pytest.approx(max(0.0, 2 * row["estimate"] - q[1]))
        assert row["basic_high"] == pytest.approx(2 * row["estimate"] - q[0])
        assert 0 <= row["ci_low"] <= row["ci_high"]
        assert row["pct_low"] == pytest.approx(q[0]) and row["bca_low"] <= row["bca_high"]
    assert (table["dropped_share"] == 0).all() and (table["n_valid"] == 300).all()


def _two_group_stats(n: int = 100) -> SubjectStats:
    """real 0.8 in both groups; fake 0.7 in g0 and 0.9 in g1: AADEO = 0.2, AADPD = 0.1."""
    group = np.repeat([0, 1], n)
    correct = np.stack([np.full(2 * n, 8.0), np.where(group == 0, 7.0, 9.0)], axis=1)
    ids = np.array([f"s{i:03d}" for i in range(2 * n)], dtype=object)
    return SubjectStats(
        ids, group, ("g0", "g1"), ("real", "fake"), 0, correct, np.full((2 * n, 2), 10.0)
    )


def _two_point_noise(delta: float, n: int = 100, n_boot: int = 400) -> np.ndarray:
    """Half the resamples move the (fake, g1) cell up by delta, half down (before the
    √(n/(n−1)) inflation, which this undoes)."""
    noise = np.zeros((n_boot, 2, 2))
    noise[:, 1, 1] = np.where(np.arange(n_boot) % 2 == 0, delta, -delta) / np.sqrt(n / (n - 1))
    return noise


@pytest.mark.parametrize(
    "delta, aadeo",
    [
        # range of the fake row under λ: |0.2 λ ± δ|; the estimate 0.2 lies between the
        # quantiles 0.2 λ − δ and 0.2 λ + δ for λ in [1 − 5 δ, 1 + 5 δ]
        (0.05, (0.15, 0.25)),
        # δ = 0.3: accepted where |0.2 λ − 0.3| <= 0.2 <= 0.2 λ + 0.3, λ in [0.5, 2.5]
        (0.3, (0.1, 0.5)),
    ],
)
def test_inverted_interval_by_hand(delta, aadeo):
    # the uncalibrated test (quantile acceptance); prepivoting is tested below
    ci = inverted_intervals(
        _two_group_stats(), _two_point_noise(delta), calibrate=False, nuisance="observed"
    )
    assert ci["AADEO"] == pytest.approx(aadeo, abs=1e-9)
    assert ci["DEO"] == pytest.approx(aadeo, abs=1e-9)  # one forgery row: the same
    assert ci["AADPD"] == pytest.approx((aadeo[0] / 2, aadeo[1] / 2), abs=1e-9)  # real row: 0
    assert "ACC" not in ci and "MeanAcc" not in ci


def test_inverted_interval_without_noise_is_the_estimate_and_zero_within_noise():
    stats = _two_group_stats()
    ci = inverted_intervals(stats, np.zeros((50, 2, 2)), nuisance="observed")
    assert ci["AADEO"] == pytest.approx((0.2, 0.2))
    calibrated = inverted_intervals(
        stats, np.zeros((1000, 2, 2)), calibrate=True, nuisance="observed"
    )
    assert calibrated["AADEO"] == pytest.approx((0.2, 0.2))
    # noise of ±0.25 and a second noise draw at 0: no gap at all (λ = 0) gives estimates of
    # 0 to 0.25, which hold the estimate 0.2, so the interval starts at 0
    noise = _two_point_noise(0.25, n_boot=300)
    noise[::3] = 0.0
    low, high = inverted_intervals(stats, noise, nuisance="observed")["AADEO"]
    assert low == 0.0 and high > 0.2
    # every resample dropped: no interval
    assert np.isnan(inverted_intervals(stats, np.full((5, 2, 2), np.nan))["AADEO"][0])


def _gaussian_noise(sd: float, n_boot: int = 1000, shape=(2, 2), seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, sd, (n_boot, *shape))


def test_crossing_finds_the_lambda_of_a_value_along_a_path():
    grid = np.array([0.0, 1.0, 2.0, 4.0])
    path = np.array([[0.0, 0.1, 0.2, 0.4], [0.0, 0.05, 0.05, 0.1], [0.0, 0.01, 0.02, 0.03]])
    # row 0: 0.15 halfway between 1 and 2; row 1: first reached at λ = 3 after a flat stretch;
    # row 2: never reached
    lam = _crossing(grid, path, 0.075)
    assert lam[0] == pytest.approx(0.75) and lam[1] == pytest.approx(3.0)
    assert np.isnan(lam[2])


def test_prepivot_is_the_normal_root_where_the_gap_is_smooth():
    """Two groups 0.2 apart with noise of 0.01: the range is smooth there, its root is
    standard normal and prepivoting changes nothing (beyond its Monte Carlo error)."""
    stats = _two_group_stats()
    noise = _gaussian_noise(0.01)
    correct, total = stats.cell_counts()
    q = prepivot_quantiles(correct / total, total, stats.real_index, noise)["AADEO"]
    assert q == pytest.approx((-1.96, 1.96), abs=0.35)
    calibrated = inverted_intervals(stats, noise, calibrate=True, nuisance="observed")["AADEO"]
    plain = inverted_intervals(stats, noise, nuisance="observed")["AADEO"]
    assert calibrated == pytest.approx(plain, abs=0.01)
    assert calibrated[0] < 0.2 < calibrated[1]


def test_prepivot_moves_the_root_up_at_a_tie_at_the_maximum():
    """g1 and g2 tie at the top: a pseudo-data set's own pattern separates them, so its
    simulated estimates carry too little of the upward bias of a maximum over a tie and its
    estimate lies above their mean: the calibrated quantiles move up, and the interval down."""
    group = np.repeat([0, 1, 2], 100)
    fake = np.choose(group, [7.0, 9.0, 9.0])
    correct = np.stack([np.full(300, 8.0), fake], axis=1)
    ids = np.array([f"s{i:03d}" for i in range(300)], dtype=object)
    stats = SubjectStats(
        ids, group, ("g0", "g1", "g2"), ("real", "fake"), 0, correct, np.full((300, 2), 10.0)
    )
    noise = _gaussian_noise(0.02, shape=(2, 3), seed=1)
    c, t = stats.cell_counts()
    q_lo, q_hi = prepivot_quantiles(c / t, t, stats.real_index, noise)["AADEO"]
    assert (q_lo + q_hi) / 2 > 0.1
    calibrated = inverted_intervals(stats, noise, calibrate=True, nuisance="observed")["AADEO"]
    plain = inverted_intervals(stats, noise, nuisance="observed")["AADEO"]
    assert calibrated[1] < plain[1]


def test_prepivot_needs_enough_resamples_and_falls_back_without():
    stats = _two_group_stats()
    noise = _gaussian_noise(0.02, n_boot=30)
    c, t = stats.cell_counts()
    assert prepivot_quantiles(c / t, t, stats.real_index, noise) == {}
    observed = inverted_intervals(stats, noise, nuisance="observed")
    assert inverted_intervals(stats, noise, calibrate=True, nuisance="observed") == observed


def test_reported_interval_is_the_inversion_for_gaps_and_basic_for_accuracy():
    from fairforge.metrics.resampling import bootstrap_noise

    stats = stats_from_frame(subject_predictions(4, 15))
    table = bootstrap_intervals(stats, n_boot=200, seed=3)
    reps, noise = bootstrap_noise(stats, 200, 3)
    inverted = inverted_intervals(stats, noise)
    for key, (low, high) in inverted.items():
        assert (table.loc[key, "ci_low"], table.loc[key, "ci_high"]) == pytest.approx((low, high))
    for key in ("ACC", "MeanAcc"):
        row = table.loc[key]
        assert (row["ci_low"], row["ci_high"]) == (row["basic_low"], row["basic_high"])
    # a small sample's gaps are biased upward: the inversion moves below the percentile
    # interval, which sits around the replicates
    gaps = table.loc[list(GAPS)]
    assert (gaps["ci_low"] < gaps["pct_low"]).all()


def _three_group_stats(fake=(7.0, 9.0, 8.8)) -> SubjectStats:
    """real 0.8 in every group; the fake row's accuracies fake / 10 in g0, g1, g2."""
    group = np.repeat([0, 1, 2], 100)
    correct = np.stack([np.full(300, 8.0), np.choose(group, list(fake))], axis=1)
    ids = np.array([f"s{i:03d}" for i in range(300)], dtype=object)
    return SubjectStats(
        ids, group, ("g0", "g1", "g2"), ("real", "fake"), 0, correct, np.full((300, 2), 10.0)
    )


@pytest.mark.parametrize(
    "g2, lower, upper",
    [
        # g1 and g2 tied at the top of the fake row: moved patterns pull them apart, carry
        # less of the maximum's upward bias, and accept larger gaps
        (9.0, 0.0, 0.005),
        # 1.4 standard errors apart: moved patterns bring them closer, carry more bias, and
        # accept smaller gaps
        (8.6, 0.001, 0.0),
    ],
)
def test_perturbed_patterns_hold_the_observed_interval_and_widen_it_near_a_tie(g2, lower, upper):
    stats = _three_group_stats((7.0, 9.0, g2))
    noise = _gaussian_noise(0.02, shape=(2, 3), seed=1)
    observed = inverted_intervals(stats, noise, nuisance="observed")
    perturbed = inverted_intervals(stats, noise, nuisance="perturbed")
    for key, (low, high) in observed.items():
        assert perturbed[key][0] <= low + 1e-12 and perturbed[key][1] >= high - 1e-12, key
    assert perturbed["AADEO"][0] <= observed["AADEO"][0] - lower
    assert perturbed["AADEO"][1] >= observed["AADEO"][1] + upper
    assert perturbed["AADEO"][0] < 0.2 < perturbed["AADEO"][1]


def test_perturbed_patterns_change_little_where_the_groups_are_far_apart():
    """Groups 0.1 apart (3.5 standard errors) at the top of the fake row: moving the pattern
    by a sampling error keeps its extremes, and the interval stays the observed one up to
    the Monte Carlo error of the odd resamples."""
    stats = _three_group_stats((7.0, 9.0, 8.0))
    noise = _gaussian_noise(0.02, shape=(2, 3), seed=1)
    observed = inverted_intervals(stats, noise, nuisance="observed")["AADEO"]
    perturbed = inverted_intervals(stats, noise, nuisance="perturbed")["AADEO"]
    assert perturbed == pytest.approx(observed, abs=0.002)


def test_perturbed_patterns_need_enough_resamples_and_a_known_name():
    stats = _three_group_stats()
    few = _gaussian_noise(0.02, n_boot=PERTURB_MIN_ROWS - 1, shape=(2, 3))
    observed = inverted_intervals(stats, few, nuisance="observed")
    assert inverted_intervals(stats, few, nuisance="perturbed") == observed
    assert inverted_intervals(stats, few) == observed
    with pytest.raises(ValueError, match="nuisance"):
        inverted_intervals(stats, few, nuisance="tied")


def test_signal_share_is_the_share_of_a_rows_spread_the_noise_does_not_explain():
    noise = _gaussian_noise(0.01, n_boot=4000, shape=(4, 3), seed=2)
    spread = np.array(
        [
            [-0.1, 0.0, 0.1],  # variance 0.01 against 0.0001 of noise: 0.99
            [-0.01, 0.0, 0.01],  # variance 0.0001, all of it noise: 0
            [0.0, 0.0, 0.0],  # no spread
            [-0.1, np.nan, 0.1],  # an empty cell: variance 0.02 over the two filled ones
        ]
    )
    share = signal_share(spread, noise)
    assert share == pytest.approx([0.99, 0.0, 0.0, 0.995], abs=0.002)


def test_adaptive_moves_are_the_perturbed_ones_where_the_signal_dominates():
    """Groups 0.1 apart with cell noise of 0.005: the signal share is about 0.99, so the
    adaptive moves are the perturbed ones; with noise as large as the spread they vanish and
    the interval is the observed pattern's, up to the Monte Carlo error of the odd resamples."""
    stats = _three_group_stats((7.0, 9.0, 8.0))
    small = _gaussian_noise(0.005, shape=(2, 3), seed=1)
    perturbed = inverted_intervals(stats, small, nuisance="perturbed")["AADEO"]
    assert inverted_intervals(stats, small, nuisance="adaptive")["AADEO"] == pytest.approx(
        perturbed, abs=0.001
    )
    large = _gaussian_noise(0.12, shape=(2, 3), seed=1)
    correct, total = stats.cell_counts()
    centre = (correct / total).mean(axis=-1, keepdims=True)
    assert signal_share(correct / total - centre, large).max() == 0.0
    observed = inverted_intervals(stats, large, nuisance="observed")
    adaptive = inverted_intervals(stats, large, nuisance="adaptive")
    for key, (low, high) in observed.items():
        assert adaptive[key][0] <= low + 1e-12 and adaptive[key][1] >= high - 1e-12, key
    assert adaptive["AADEO"] == pytest.approx(observed["AADEO"], rel=0.05, abs=0.005)


def test_a_pattern_that_accepts_no_lambda_is_dropped_without_fallback():
    grid = np.array([0.0, 1.0, 2.0])
    theta = np.array([0.0, 0.1, 0.2])
    lo_minus = np.array([0.01, 0.02, 0.03])  # even no gap gives more than the estimate
    hi_minus = np.array([0.05, 0.06, 0.07])
    assert _accepted_range(grid, theta, lo_minus, hi_minus) == (0.0, 0.0)
    assert _accepted_range(grid, theta, lo_minus, hi_minus, fallback=False) is None
