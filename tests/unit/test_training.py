"""The training recipe: augmentation draws per epoch, whatever the number of workers; the
one training loop's best epoch, early stopping and step budget."""

import math

import cv2
import numpy as np
import pandas as pd
import pytest
import torch

from fairforge.data import FaceDataset
from fairforge.perturb.augment import create_augment
from fairforge.runtime import pick_device
from fairforge.training.detector import TrainConfig, training_loader
from fairforge.training.loop import run_loop


@pytest.fixture
def faces(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for i in range(6):
        img = rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)
        cv2.imwrite(str(tmp_path / f"f{i}.png"), img)
        rows.append({"sample_id": f"s{i}", "path": f"f{i}.png", "label": i % 2})
    return pd.DataFrame(rows), tmp_path


def _epochs(frame, root, workers: int, epochs: int = 3) -> list[dict[int, torch.Tensor]]:
    """Per epoch, the augmented image of every sample (by index) as the training loop sees it."""
    cfg = TrainConfig(arch="meso4", batch_size=4, num_workers=workers, seed=5)
    dataset = FaceDataset(
        frame, root, 32, (0.5,) * 3, (0.5,) * 3, augment=create_augment("sdaug"), seed=cfg.seed
    )
    loader, sampler = training_loader(dataset, cfg, pick_device("cpu"))
    out = []
    for epoch in range(1, epochs + 1):
        sampler.set_epoch(epoch)
        seen = {}
        for batch in loader:
            for i, img in zip(batch["index"].tolist(), batch["image"]):
                seen[i] = img
        out.append(seen)
    return out


def test_augmentation_changes_per_epoch_and_not_with_workers(faces):
    frame, root = faces
    serial = _epochs(frame, root, workers=0)
    parallel = _epochs(frame, root, workers=2)  # persistent workers
    for one, two in zip(serial, parallel):
        assert sorted(one) == sorted(two) == list(range(len(frame)))
        for i in one:
            assert torch.equal(one[i], two[i])
    for workers in (serial, parallel):
        for a, b in zip(workers, workers[1:]):
            changed = [i for i in a if not torch.equal(a[i], b[i])]
            assert len(changed) >= len(frame) - 1, f"epochs replay draws: {changed}"


def test_a_bare_index_is_epoch_zero(faces):
    frame, root = faces
    dataset = FaceDataset(frame, root, 32, (0.5,) * 3, (0.5,) * 3, augment=create_augment("sdaug"))
    assert torch.equal(dataset[2]["image"], dataset[(0, 2)]["image"])
    assert not torch.equal(dataset[(0, 2)]["image"], dataset[(1, 2)]["image"])


def _train(frame, root, tmp_path, **settings):
    from fairforge.runtime import read_checkpoint
    from fairforge.training.detector import train_network

    rows = [
        {**r, "split": split, "method": "real" if r["label"] == 0 else "faceswap", "group": "g"}
        for split in ("train", "val")
        for r in frame.to_dict("records")
    ]
    samples = pd.DataFrame(rows).assign(sample_id=lambda d: d["split"] + d["sample_id"])
    cfg = TrainConfig(arch="meso4", input_size=32, epochs=1, batch_size=4, device="cpu", **settings)
    train_network(samples, root, cfg, tmp_path / "model.pt")
    return read_checkpoint(tmp_path / "model.pt")


def test_bf16_is_kept_only_when_it_keeps_the_validation_auc(faces, tmp_path, monkeypatch):
    import fairforge.training.detector as training

    frame, root = faces
    payload = _train(frame, root, tmp_path)
    assert {"val_auc_fp32", "val_auc_bf16"} <= set(payload)
    expected = "bf16" if abs(payload["val_auc_bf16"] - payload["val_auc_fp32"]) < 1e-3 else "fp32"
    assert payload["precision"] == expected
    monkeypatch.setattr(training, "BF16_AUC_TOLERANCE", 0.0)  # no change is small enough
    assert _train(frame, root, tmp_path)["precision"] == "fp32"
    fp32 = _train(frame, root, tmp_path, precision="fp32")
    assert fp32["precision"] == "fp32" and "val_auc_bf16" not in fp32


def test_frequency_and_residual_detectors_default_to_fp32():
    from fairforge.training.detector import requested_precision

    for arch in ("f3net", "srm", "spsl"):
        assert requested_precision(TrainConfig(arch=arch)) == "fp32"
    assert requested_precision(TrainConfig(arch="xception")) == "bf16"
    assert requested_precision(TrainConfig(arch="f3net", precision="bf16")) == "bf16"


def test_pooled_datasets_train_together_in_one_order_whatever_the_input_order():
    from fairforge.training.detector import training_sets

    def dataset(name):
        return pd.DataFrame(
            {
                "sample_id": ["real__x", "fake__x", "real__y", "fake__y"],
                "dataset": name,
                "split": ["train", "train", "val", "val"],
                "label": [0, 1, 0, 1],
                "method": ["real", "faceswap", "real", "faceswap"],
                "group": "g",
                "path": [f"{name}/{i}.png" for i in range(4)],
            }
        )

    cfg = TrainConfig(arch="meso4", train_methods=["faceswap"])
    ab = training_sets(pd.concat([dataset("a"), dataset("b")]), cfg)
    ba = training_sets(pd.concat([dataset("b"), dataset("a")]), cfg)
    for one, two in zip(ab, ba):
        pd.testing.assert_frame_equal(one, two)
    train, val = ab
    # the same ids in both datasets: none is lost
    assert len(train) == len(val) == 4 and set(train["dataset"]) == {"a", "b"}
    assert train["path"].tolist() == ["a/1.png", "b/1.png", "a/0.png", "b/0.png"]


def _scored(scores: dict[int, float]):
    def validate(epoch):
        epoch.row["epoch"] = epoch.number
        return scores[epoch.number]

    return validate


def test_the_loop_saves_each_better_epoch_and_stops_after_its_patience():
    saved = []
    result = run_loop(
        range(1, 7),
        lambda epoch: range(3),
        lambda epoch, index, batch: (epoch.number, batch),
        validate=_scored({1: 0.5, 2: 0.7, 3: 0.6, 4: 0.65, 5: 0.9, 6: 1.0}),
        on_best=lambda epoch: saved.append(epoch.number),
        patience=2,
    )
    assert saved == [1, 2] and (result.best_epoch, result.best_score) == (2, 0.7)
    assert result.stopped_early and result.last_epoch == 4  # two epochs after the best
    assert [row["epoch"] for row in result.rows] == [1, 2, 3, 4]
    assert result.outputs == [(e, i) for e in range(1, 5) for i in range(3)]
    # lower is better; without patience every epoch runs
    result = run_loop(
        [0, 1, 2], lambda e: [None], lambda e, i, b: 0.0, validate=_scored({0: 3, 1: 1, 2: 2}),
        mode="min",
    )  # fmt: skip
    assert (result.best_epoch, result.last_epoch, result.stopped_early) == (1, 2, False)


def test_a_first_epoch_without_a_score_is_kept_only_when_asked():
    """A detector saves its first epoch even at a NaN AUC (scored -inf); the encoder's
    first epoch has to beat an infinite loss."""
    for keep_first, expected in ((True, [1]), (False, [])):
        result = run_loop(
            [1, 2], lambda e: [None], lambda e, i, b: None,
            validate=_scored({1: -math.inf, 2: -math.inf}),
            on_best=lambda epoch: epoch.row.update(saved=True), keep_first=keep_first,
        )  # fmt: skip
        assert [row["epoch"] for row in result.rows if row.get("saved")] == expected
        assert result.best_epoch == (expected or [0])[0]


def test_the_step_budget_stops_before_validation():
    validated = []
    result = run_loop(
        range(3),
        lambda epoch: range(4),
        lambda epoch, index, batch: index,
        validate=lambda epoch: validated.append(epoch.number) or 1.0,
        mode="min",
        max_steps=6,
    )
    assert validated == [0] and result.outputs == [0, 1, 2, 3, 0, 1] and result.last_epoch == 1
    with pytest.raises(ValueError, match="patience must be at least 1"):
        run_loop([1], lambda e: [], lambda e, i, b: None, validate=lambda e: 0.0, patience=0)
