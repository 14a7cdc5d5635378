"""Every kind of detector on the one registry, behind one fit/score/cost interface."""

import numpy as np
import pandas as pd
import pytest
from torch import nn

from fairforge.columns import PREDICTION_COLUMNS
from fairforge.detector_kinds import (
    DETECTOR_KINDS,
    DetectorKind,
    detector_cost,
    kind_of,
    predict,
    train_detector,
)
from fairforge.detectors import DETECTORS, KINDS, create_detector, detector_kind, list_detectors
from fairforge.detectors.external import ScoreFile
from fairforge.detectors.headpose import HeadPoseSVM
from fairforge.registry import UnknownName
from fairforge.training.detector import TrainConfig


def test_every_detector_has_a_kind_with_an_implementation():
    assert sorted(DETECTOR_KINDS.names()) == sorted(KINDS)
    for name in list_detectors():
        assert detector_kind(name) in KINDS
        assert isinstance(kind_of(name), DetectorKind)
    assert {detector_kind(n) for n in list_detectors()} == set(KINDS)


@pytest.mark.parametrize(
    "name, config, expected",
    [
        ("meso4", {"input_size": 64}, nn.Module),
        ("headpose", {"image_size": 128}, HeadPoseSVM),
        ("external", {"path": "scores.csv"}, ScoreFile),
    ],
)
def test_registry_creates_every_kind(name, config, expected):
    assert isinstance(create_detector(name, **config), expected)
    assert isinstance(DETECTORS.create(name, **config), expected)


def test_unknown_detector_is_an_unknown_name():
    with pytest.raises(UnknownName, match="meso4"):
        create_detector("no_such_detector")
    with pytest.raises(UnknownName):
        train_detector(pd.DataFrame(), ".", TrainConfig(arch="no_such_detector"), "x.pt")


def test_external_scores_go_through_predict(tmp_path):
    samples = pd.DataFrame(
        [
            {
                "sample_id": f"test_{i}",
                "dataset": "d",
                "split": "test",
                "label": i % 2,
                "method": "faceswap" if i % 2 else "real",
                "group": "g",
                "subject_id": f"s{i}",
                "path": f"{i}.png",
            }
            for i in range(6)
        ]
    )
    pd.DataFrame({"sample_id": samples["sample_id"], "score": np.linspace(0, 1, 6)}).to_csv(
        tmp_path / "scores.csv", index=False
    )
    preds = predict(
        tmp_path / "scores.csv", samples, tmp_path, "vendor", splits=("test",), arch="external"
    )
    assert list(preds.columns) == PREDICTION_COLUMNS and len(preds) == 6
    assert (preds["detector"] == "vendor").all()
    assert "note" in detector_cost(tmp_path / "scores.csv", "vendor", arch="external")
    with pytest.raises(ValueError, match="nothing to train"):
        train_detector(samples, tmp_path, TrainConfig(arch="external"), tmp_path / "m.pt")


def test_detector_costs_time_the_networks_together_through_their_kind(tmp_path):
    from fairforge.detector_kinds import detector_costs
    from fairforge.efficiency import checkpoint_efficiency_rows
    from fairforge.training.detector import save_checkpoint

    models = {}
    for name in ("b", "a"):
        net = create_detector("meso4", input_size=32)
        cfg = TrainConfig(arch="meso4", input_size=32, precision="fp32")
        models[name] = tmp_path / f"{name}.pt"
        save_checkpoint(models[name], net, cfg, {"input_size": 32}, 32, 0, float("nan"))
    rows = detector_costs(models, "cpu", batch_sizes=(1,), rounds=1, repeats=2)
    assert [r["detector"] for r in rows] == ["b", "a"]  # the order asked for
    direct = checkpoint_efficiency_rows(models, "cpu", batch_sizes=(1,), rounds=1, repeats=2)
    assert [list(r) for r in rows] == [list(r) for r in direct]  # the same columns
    assert all(r["arch"] == "meso4" and isinstance(r["same_arch_agree"], bool) for r in rows)
    one = kind_of("meso4").cost(models["a"], "a", "cpu", (1,), 2)
    assert one["detector"] == "a" and one["same_arch_agree"] is None and one["rounds"] == 5
