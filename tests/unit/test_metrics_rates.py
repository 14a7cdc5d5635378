"""Intervals of a rate and the test of equal rates across groups, against values derived by
hand (closed forms and enumerations small enough to do on paper)."""

import math

import numpy as np
import pytest

from fairforge.metrics.rates import (
    CHI_SQUARE,
    EXACT,
    MONTE_CARLO,
    equal_rates_test,
    wilson_interval,
)

Z = 1.959963984540054  # the normal 0.975 quantile


def test_wilson_interval_at_the_ends_is_the_closed_form():
    # k = 0: the lower end is 0 and the upper end z² / (n + z²); k = n mirrors it
    low, high = wilson_interval([0, 10], [10, 10])
    assert low[0] == 0.0 and high[1] == 1.0
    assert high[0] == pytest.approx(Z**2 / (10 + Z**2), abs=1e-12)  # 0.2775
    assert low[1] == pytest.approx(10 / (10 + Z**2), abs=1e-12)
    assert high[0] == pytest.approx(0.27753, abs=1e-5)


def test_wilson_interval_of_7_in_24_solves_the_score_equation():
    # Wilson's bounds are the p with |k/n - p| = z sqrt(p (1 - p) / n): the roots of
    # (1 + z²/n) p² - (2 k/n + z²/n) p + (k/n)² = 0
    k, n = 7, 24
    a, b, c = 1 + Z**2 / n, -(2 * k / n + Z**2 / n), (k / n) ** 2
    roots = sorted(
        [
            (-b - math.sqrt(b * b - 4 * a * c)) / (2 * a),
            (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a),
        ]
    )
    low, high = wilson_interval(k, n)
    assert [float(low), float(high)] == pytest.approx(roots, abs=1e-12)
    assert float(low) == pytest.approx(0.14915, abs=1e-5) and float(high) == pytest.approx(
        0.49168, abs=1e-5
    )


def test_wilson_interval_is_nan_without_trials_and_refuses_bad_counts():
    low, high = wilson_interval([0], [0])
    assert np.isnan(low[0]) and np.isnan(high[0])
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson_interval(5, 4)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 4, confidence=1.0)


def test_fisher_exact_on_the_tea_tasting_table():
    # Fisher's lady tasting tea: 4 of 4 cups right in one group, 0 of 4 in the other. The
    # tables with 4 events among 8 have probabilities C(4,x) C(4,4-x) / C(8,4), x = 0..4:
    # 1, 16, 36, 16, 1 over 70; the two as improbable as the observed one give 2/70.
    result = equal_rates_test([4, 0], [4, 4])
    assert result.test == EXACT
    assert result.p_value == pytest.approx(2 / 70, rel=1e-12)
    assert result.statistic == pytest.approx(8.0)  # Pearson's X² of the table, df 1
    assert result.df == 1


def test_freeman_halton_on_three_groups_of_two():
    # 2 events among groups of 2, 2, 2: the tables (2,0,0) and its two rotations have
    # probability 1/15 each, (1,1,0) and its rotations 4/15 each.
    assert equal_rates_test([2, 0, 0], [2, 2, 2]).p_value == pytest.approx(3 / 15, rel=1e-12)
    assert equal_rates_test([1, 1, 0], [2, 2, 2]).p_value == pytest.approx(1.0)


def test_chi_square_when_every_expected_count_is_five_or_more():
    # The reported case: fakes made for 7 of 24 and 17 of 24 faces in two groups and all 24
    # in two more, i.e. 17, 7, 0, 0 failures. Expected: 6 failures and 18 successes per
    # group, so X² = 194/6 + 194/18 = 43.11 on 3 df, whose survival function is
    # erfc(sqrt(x/2)) + sqrt(2x/pi) exp(-x/2).
    result = equal_rates_test([17, 7, 0, 0], [24, 24, 24, 24])
    x = 194 / 6 + 194 / 18
    assert result.test == CHI_SQUARE and result.df == 3
    assert result.statistic == pytest.approx(x, rel=1e-12)
    expected = math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2)
    assert result.p_value == pytest.approx(expected, rel=1e-9)
    assert result.p_value < 1e-8


def test_monte_carlo_estimates_the_exact_p_value_past_the_table_limit():
    exact = equal_rates_test([2, 0, 0], [2, 2, 2])
    estimate = equal_rates_test([2, 0, 0], [2, 2, 2], max_tables=2, seed=5)
    assert estimate.test == MONTE_CARLO
    assert estimate.p_value == pytest.approx(exact.p_value, abs=0.01)  # 100000 draws
    assert equal_rates_test([2, 0, 0], [2, 2, 2], max_tables=2, seed=5) == estimate


def test_degenerate_tables():
    # no failure anywhere, or every item failed: one table has these margins, p = 1
    assert equal_rates_test([0, 0, 0], [4, 5, 6]).p_value == 1.0
    assert equal_rates_test([4, 5, 6], [4, 5, 6]).p_value == 1.0
    # one group (others empty) is no comparison
    one = equal_rates_test([3, 0], [4, 0])
    assert one.test == "" and np.isnan(one.p_value)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        equal_rates_test([3, 5], [4, 4])
