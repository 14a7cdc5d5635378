import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from fairforge.metrics import acc, ap, auc, detection_metrics, eer, roc_points, video_level
from fairforge.metrics.detection import video_scores


@pytest.mark.parametrize("seed,decimals", [(0, None), (1, 2), (2, 1)])
def test_auc_and_ap_match_sklearn(seed, decimals):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 3000)
    s = (rng.normal(size=3000) + 0.8 * y).astype(np.float32)
    if decimals is not None:  # heavy ties
        s = np.round(1 / (1 + np.exp(-s)), decimals)
    assert auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert ap(y, s) == pytest.approx(average_precision_score(y, s), abs=1e-12)
    fpr, tpr, _ = roc_points(y, s)
    ref_fpr, ref_tpr, _ = roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, ref_fpr)
    np.testing.assert_allclose(tpr, ref_tpr)


def test_eer_hand_made_cases():
    # ROC (0,0) (0,.5) (.5,.5) (.5,1) (1,1): FNR = FPR = 0.5 at a vertex
    assert eer([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9]) == pytest.approx(0.5)
    # a tie between a real and a fake makes a diagonal segment from (0,.5) to (.5,1);
    # FNR = 1 - TPR meets FPR halfway along it, at 0.25
    assert eer([1, 1, 0, 0], [0.8, 0.5, 0.5, 0.2]) == pytest.approx(0.25)
    assert eer([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 0.0
    assert eer([1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9]) == 1.0
    # one wrong pair among 4 + 4: steps of 1/4, crossing at a vertex with FPR = FNR = 1/4
    assert eer(
        [0, 0, 0, 0, 1, 1, 1, 1], [0.1, 0.2, 0.3, 0.7, 0.6, 0.8, 0.85, 0.9]
    ) == pytest.approx(0.25)


def test_eer_of_gaussian_scores_matches_theory():
    # Fakes ~ N(d, 1), reals ~ N(0, 1): the equal error threshold is d/2, EER = Phi(-d/2).
    rng = np.random.default_rng(3)
    d, n = 1.5, 100_000
    y = np.r_[np.zeros(n), np.ones(n)].astype(int)
    s = np.r_[rng.normal(0, 1, n), rng.normal(d, 1, n)]
    assert eer(y, s) == pytest.approx(norm.cdf(-d / 2), abs=0.004)


def test_acc_threshold_is_strict():
    assert acc([0, 1, 1], [0.5, 0.5, 0.51]) == pytest.approx(2 / 3)
    assert acc([0, 1], [0.3, 0.3], threshold=np.array([0.4, 0.2])) == 1.0


def test_single_class_and_empty_inputs_give_nan_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for y, s in [([1, 1, 1], [0.2, 0.6, 0.9]), ([0, 0], [0.1, 0.9]), ([], [])]:
            m = detection_metrics(y, s)
            assert np.isnan(m["AUC"]) and np.isnan(m["AP"]) and np.isnan(m["EER"])
        assert detection_metrics([1, 1, 1], [0.2, 0.6, 0.9])["ACC"] == pytest.approx(2 / 3)
        assert np.isnan(detection_metrics([], [])["ACC"])


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="NaN"):
        auc([0, 1], [0.2, np.nan])
    with pytest.raises(ValueError, match="labels"):
        auc([0, 2], [0.2, 0.3])
    with pytest.raises(ValueError):
        auc([0, 1, 1], [0.2, 0.3])


def test_detection_metrics_keys_and_counts():
    m = detection_metrics([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.6])
    assert m["n"] == 4 and m["n_real"] == 2 and m["n_fake"] == 2
    assert m["AUC"] == pytest.approx(0.75) and m["ACC"] == pytest.approx(0.5)


def test_video_level_averages_frames():
    rng = np.random.default_rng(4)
    n_videos = 60
    video_label = rng.integers(0, 2, n_videos)
    n_frames = rng.integers(1, 9, n_videos)
    video = np.repeat(np.arange(n_videos), n_frames)
    frames = pd.DataFrame(
        {
            "video_id": [f"v{v}" for v in video],
            "label": video_label[video],
            "score": rng.random(video.size) * 0.6 + 0.3 * video_label[video],
        }
    )
    got = video_level(frames)
    means = frames.groupby("video_id")["score"].mean()
    labels = frames.groupby("video_id")["label"].first()
    assert got["n"] == n_videos
    assert got["AUC"] == pytest.approx(roc_auc_score(labels, means), abs=1e-12)
    assert got["AP"] == pytest.approx(average_precision_score(labels, means), abs=1e-12)
    assert got["ACC"] == pytest.approx(np.mean((means > 0.5) == (labels == 1)), abs=1e-12)
    per_video = video_scores(frames)
    assert per_video["n_frames"].sum() == len(frames)
    mixed = pd.DataFrame(
        {"video_id": ["a", "a", "b"], "label": [0, 1, 0], "score": [0.1, 0.2, 0.3]}
    )
    with pytest.raises(ValueError, match="both labels"):
        video_level(mixed)


# ----------------------------------------------------------------------------- conventions


def test_threshold_rule_decides_scores_equal_to_the_threshold():
    from fairforge.metrics.detection import predict_fake

    y = np.array([0, 1, 1, 0])
    s = np.array([0.5, 0.5, 0.7, 0.2])
    np.testing.assert_array_equal(predict_fake(s, 0.5), [False, False, True, False])
    np.testing.assert_array_equal(predict_fake(s, 0.5, ">="), [True, True, True, False])
    assert acc(y, s) == 0.75  # the fake at 0.5 is missed
    assert acc(y, s, threshold_rule=">=") == 0.75  # the real at 0.5 is flagged instead
    assert acc(y[1:], s[1:], threshold_rule=">=") == 1.0
    assert acc(y[1:], s[1:]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="threshold_rule"):
        acc(y, s, threshold_rule="=>")


def test_eer_nearest_is_deepfakebench_s_roc_point():
    from sklearn.metrics import roc_curve

    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(4, 40))
        y = rng.integers(0, 2, n)
        if y.min() == y.max():
            continue
        s = np.round(rng.random(n) + 0.3 * y, 1)  # many ties
        fpr, tpr, _ = roc_curve(y, s)
        expected = fpr[np.nanargmin(np.abs((1 - tpr) - fpr))]
        assert eer(y, s, "nearest") == pytest.approx(expected)
        assert detection_metrics(y, s, eer="nearest")["EER"] == pytest.approx(expected)
    # by hand: ROC points (0, 0), (0, 1/3), (0, 2/3), (1/2, 2/3), (1/2, 1), (1, 1) with
    # FNR - FPR = 1, 2/3, 1/3, -1/6, -1/2, -1: the curve crosses FNR = FPR at FPR 1/3 on the
    # segment from (0, 2/3) to (1/2, 2/3); the nearest point is (1/2, 2/3), |gap| 1/6
    y, s = np.array([1, 1, 0, 1, 0]), np.array([0.9, 0.8, 0.7, 0.6, 0.1])
    assert eer(y, s) == pytest.approx(1 / 3)
    assert eer(y, s, "nearest") == 0.5
    with pytest.raises(ValueError, match="eer"):
        eer(y, s, "closest")
