"""Training on fakes made on the fly (SBI, Face X-ray, FWA) and Conv-LSTM's frame sequences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch.utils.data import DataLoader, SequentialSampler

from fairforge.data import EpochSampler, OnlineForgeryDataset, sequence_groups
from fairforge.detector_kinds import predict
from fairforge.detectors import create_detector
from fairforge.forgery.template import template_face
from fairforge.images import write_image
from fairforge.inference import one_row_per_video, video_scores
from fairforge.training.detector import TrainConfig, online_method, train_network, with_landmarks
from training_clips import _video_frame, clip_samples

SIZE = 64


@pytest.fixture(scope="module")
def reals(tmp_path_factory):
    """Four real crops of four subjects in two groups, with their landmarks, on disk."""
    root = tmp_path_factory.mktemp("online")
    rows, lms = [], []
    for i in range(4):
        img, lm = template_face(SIZE, seed=i, scale=0.55 + 0.03 * i)
        write_image(root / f"real_{i}.png", img)
        rows.append(
            {
                "sample_id": f"real__{i}",
                "image_id": str(i),
                "dataset": "d",
                "path": f"real_{i}.png",
                "label": 0,
                "method": "real",
                "subject_id": f"s{i}",
                "group": "g" + str(i % 2),
            }
        )
        lms.append(lm)
    frame = pd.DataFrame(rows)
    return root, frame, lms


def _dataset(reals, method, seed=0):
    root, frame, lms = reals
    return OnlineForgeryDataset(frame, lms, root, method, 32, (0.5,) * 3, (0.5,) * 3, seed=seed)


@pytest.mark.parametrize("method", ["sbi", "xray", "fwa"])
def test_online_fakes_are_fresh_each_epoch_and_seeded(reals, method):
    ds = _dataset(reals, method)
    n = len(ds) // 2
    assert len(ds) == 8 and list(ds.labels) == [0] * 4 + [1] * 4
    fake = n + 1  # the fake of real 1
    e1, e2 = ds[(1, fake)], ds[(2, fake)]
    assert int(e1["label"]) == 1 and int(ds[(1, 1)]["label"]) == 0
    assert not torch.equal(e1["image"], e2["image"])  # a new fake each epoch
    assert torch.equal(_dataset(reals, method)[(1, fake)]["image"], e1["image"])  # same seed
    assert not torch.equal(_dataset(reals, method, seed=1)[(1, fake)]["image"], e1["image"])
    # the fake differs from its real inside the face only, and its X-ray map marks a boundary
    real = ds[(1, 1)]
    assert float(real["xray"].abs().max()) == 0.0
    assert e1["xray"].shape == (1, 32, 32) and float(e1["xray"].max()) > 0.3
    if method != "sbi":  # an SBI real is its epoch's (possibly augmented) background copy
        torch.testing.assert_close(real["image"], ds[(2, 1)]["image"])
    diff = (e1["image"] - real["image"]).abs().sum(0)
    assert float(diff[14:18, 14:18].mean()) > float(diff[:2, :2].mean())


def test_online_fakes_do_not_depend_on_workers(reals):
    ds = _dataset(reals, "xray")

    def images(workers):
        sampler = EpochSampler(SequentialSampler(ds))
        loader = DataLoader(ds, sampler=sampler, batch_size=3, num_workers=workers)
        out = []
        for epoch in (1, 2):
            sampler.set_epoch(epoch)
            out.append(torch.cat([b["image"] for b in loader]))
        return out

    serial, parallel = images(0), images(2)
    for a, b in zip(serial, parallel):
        assert torch.equal(a, b)
    assert not torch.equal(serial[0][4:], serial[1][4:])  # the fakes changed between epochs
    assert torch.equal(serial[0][:4], serial[1][:4])  # the reals did not


def test_xray_partner_needs_another_subject(reals):
    root, frame, lms = reals
    one = frame.assign(subject_id="s0")
    with pytest.raises(ValueError, match="two subjects"):
        OnlineForgeryDataset(one, lms, root, "xray", 32, (0.5,) * 3, (0.5,) * 3)
    with pytest.raises(ValueError, match="online_forgery"):
        OnlineForgeryDataset(frame, lms, root, "swap", 32, (0.5,) * 3, (0.5,) * 3)


def test_online_method_comes_from_the_registry_or_the_config():
    assert online_method(TrainConfig(arch="fwa")) == "fwa"
    assert online_method(TrainConfig(arch="face_xray")) == "xray"
    assert online_method(TrainConfig(arch="meso4")) is None
    assert online_method(TrainConfig(arch="meso4", online_forgery="sbi")) == "sbi"
    assert online_method(TrainConfig(arch="fwa", online_forgery="none")) is None


def test_landmarks_come_from_the_faces_manifest(reals, tmp_path):
    _, frame, lms = reals
    faces = pd.DataFrame(
        {
            "image_id": ["0", "1", "2"],
            "ok": [True, True, False],
            "reason": ["", "", "no face"],
            "bbox": [None] * 3,
            "det_score": [1.0] * 3,
            "landmarks": [lms[0].ravel(), lms[1].ravel(), None],
            "crop_path": ["real_0.png", "real_1.png", ""],
            "detector": ["hog"] * 3,
        }
    )
    (tmp_path / "d").mkdir()
    faces.to_parquet(tmp_path / "d" / "faces.parquet")
    out = with_landmarks(frame, tmp_path)
    assert list(out["image_id"]) == ["0", "1"]  # 2 failed detection, 3 has no row: left out
    np.testing.assert_allclose(np.stack(out["landmarks"]).reshape(2, 68, 2), np.stack(lms[:2]))


def test_face_xray_learns_the_blends_own_xray_map():
    model = create_detector("face_xray", input_size=32, backbone="hrnet_w18_small").train()
    x = torch.randn(2, 3, 32, 32)
    labels = torch.tensor([0, 1])
    xray = torch.zeros(2, 1, 32, 32)
    xray[1, :, 8:24, 8:24] = 1.0
    losses = []
    for target in (xray, torch.zeros_like(xray)):
        logits = model(x)
        losses.append(float(model.loss(logits, labels, {"xray": target}).detach()))
    assert losses[0] != pytest.approx(losses[1])


def test_train_network_on_online_self_blends(reals, tmp_path):
    """Only real samples in the table: the fakes are made per epoch, and validation AUC is
    computed on the validation reals and their (fixed) fakes."""
    root, frame, lms = reals
    samples = pd.concat(
        [
            frame.assign(split="train", landmarks=list(lms)),
            frame.assign(split="val", sample_id=frame["sample_id"] + "v", landmarks=list(lms)).iloc[
                :2
            ],
        ],
        ignore_index=True,
    )
    cfg = TrainConfig(
        arch="meso4", input_size=32, epochs=2, batch_size=4, online_forgery="sbi", train_methods=[]
    )
    log = train_network(samples, root, cfg, tmp_path / "m.pt")
    assert list(log["n_train"]) == [8, 8] and list(log["n_val"]) == [4, 4]
    assert log["val_auc"].notna().all()
    assert (
        torch.load(tmp_path / "m.pt", weights_only=True)["train_config"]["online_forgery"] == "sbi"
    )


# --- Conv-LSTM: frame sequences of a video, scored per video ----------------------------------


def test_sequence_groups_chunk_each_video_in_frame_order():
    frame = _video_frame([5, 1, 3], ["real", "real", "faceswap"])
    groups = sequence_groups(frame, 2)
    seqs = [list(frame["frame_index"].to_numpy()[g]) for g in groups]
    vids = [set(frame["video_id"].to_numpy()[g]) for g in groups]
    assert seqs == [[0, 1], [2, 3], [4, 4], [0, 0], [0, 1], [2, 2]]  # short ones padded
    assert vids == [{"v0"}] * 3 + [{"v1"}] + [{"v2"}] * 2
    assert sorted(set(np.concatenate(groups))) == list(range(len(frame)))  # every row used
    # a generated fake of a video keeps the real frame's video_id: method splits them
    both = pd.concat([_video_frame([2]), _video_frame([2], ["faceswap"])], ignore_index=True)
    assert len(sequence_groups(both, 2)) == 2
    # an image dataset: every sample is a video of one frame
    images = frame.drop(columns=["video_id", "frame_index"])
    assert len(sequence_groups(images, 3)) == len(frame)
    with pytest.raises(ValueError, match="at least 1"):
        sequence_groups(frame, 0)


def test_video_scores_and_one_row_per_video():
    frame = _video_frame([3, 2])
    groups = sequence_groups(frame, 2)  # v0: two sequences, v1: one
    scores = video_scores(frame, groups, np.array([0.2, 0.4, 0.9], np.float32))
    np.testing.assert_allclose(scores, [0.3, 0.3, 0.3, 0.9, 0.9])
    preds = frame.assign(score=scores, detector="d", variant="clean")
    per_video = one_row_per_video(preds)
    assert list(per_video["video_id"]) == ["v0", "v1"] and "frame_index" not in per_video
    np.testing.assert_allclose(per_video["score"], [0.3, 0.9])
    assert list(per_video["subject_id"]) == ["s0", "s1"]


def test_conv_lstm_trains_on_sequences_and_scores_per_video(tmp_path):
    """Sequences of 2 of the clips' frames; one score per video."""
    samples = clip_samples(tmp_path)
    cfg = TrainConfig(
        arch="conv_lstm",
        model={"hidden": 8},
        input_size=32,
        frames_per_sequence=2,
        epochs=1,
        batch_size=8,
        train_methods=["faceswap"],
        precision="fp32",
        init="random",  # no ImageNet InceptionV3 offline
    )
    ckpt = tmp_path / "m.pt"
    log = train_network(samples, tmp_path, cfg, ckpt)
    assert list(log["n_train"]) == [8] and list(log["n_val"]) == [8]  # 4 videos x 2 sequences
    preds = predict(ckpt, samples, tmp_path, "conv_lstm", splits=("val",))
    assert len(preds) == 4 and preds["video_id"].is_unique  # one score per video
    assert set(preds["sample_id"]) <= set(samples["sample_id"])
    assert preds["score"].between(0, 1).all() and list(preds["label"]) == [1, 1, 0, 0]
