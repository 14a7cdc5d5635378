"""The training recipe: augmentation draws per epoch, whatever the number of workers."""

import cv2
import numpy as np
import pandas as pd
import pytest
import torch

from fairforge.data import FaceDataset
from fairforge.perturb.augment import create_augment
from fairforge.training import TrainConfig, pick_device, training_loader


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
