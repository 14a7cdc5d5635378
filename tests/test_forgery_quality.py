"""The forgery quality card: per-fake measures on real rendered faces, and the card's statistics."""

import numpy as np
import pandas as pd
import pytest

from fairforge.forgery import forge_shard
from fairforge.forgery.pose import (
    angles_from_rotation,
    camera_matrix,
    face_pose,
    generic_face_3d,
    rotation_from_angles,
)
from fairforge.forgery.quality import (
    FAKE_QUALITY_COLUMNS,
    NEAR_INVISIBLE,
    QUALITY_MEASURES,
    boundary_gradient,
    change_energy,
    identity_sample,
    measure_forgeries,
)
from fairforge.images import read_image, write_image
from fairforge.pairs import make_pairs
from fairforge.tables.forgery_quality import (
    card_columns,
    quality_card,
    quality_verdicts,
    quality_view,
)

SIZE = 128


def _project(yaw, pitch, roll=0.0, size=256.0):
    model = generic_face_3d()
    rot = rotation_from_angles(yaw, pitch, roll)
    cam = camera_matrix(size)
    pts = (rot @ model.T).T + np.array([0.0, 0.0, 600.0])
    uv = (cam @ pts.T).T
    return uv[:, :2] / uv[:, 2:]


@pytest.mark.parametrize("yaw,pitch,roll", [(0, 0, 0), (15, -8, 3), (-20, 10, -5)])
def test_face_pose_recovers_the_projected_rotation(yaw, pitch, roll):
    pose = face_pose(_project(yaw, pitch, roll), 256.0)
    assert pose["yaw"] == pytest.approx(yaw, abs=0.5)
    assert pose["pitch"] == pytest.approx(pitch, abs=0.5)
    assert pose["roll"] == pytest.approx(roll, abs=0.5)
    assert angles_from_rotation(rotation_from_angles(yaw, pitch, roll)) == pytest.approx(
        (yaw, pitch, roll)
    )


def test_pixel_measures():
    rng = np.random.default_rng(0)
    kept = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    mask = np.zeros((64, 64), np.uint8)
    mask[16:48, 16:48] = 255
    fake = kept.copy()
    fake[mask > 0] = np.clip(fake[mask > 0].astype(int) + 10, 0, 255).astype(np.uint8)
    assert change_energy(fake, kept, mask) == pytest.approx(
        np.abs(fake.astype(int) - kept.astype(int))[mask > 0].mean()
    )
    assert change_energy(kept, kept, mask) == 0.0
    assert boundary_gradient(kept, kept, mask) == pytest.approx(1.0)
    # A flat patch pasted into texture: its edge is a seam, its gradient no longer the image's.
    flat = np.full_like(kept, 128)
    seam = np.where(mask[..., None] > 0, flat, np.full_like(kept, 20))
    assert boundary_gradient(seam, np.full_like(kept, 20), mask) > 10


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Aligned crops of the synthetic renderer: two groups, two subjects, two images each,
    a faces table and the pairs."""
    synthetic = pytest.importorskip("fairforge.sources.synthetic")
    stage = pytest.importorskip("fairforge.faces.stage")
    root = tmp_path_factory.mktemp("quality")
    rows = []
    for group, tone in (("A", "tone1"), ("B", "tone4")):
        for s in range(2):
            sid = f"{group}{s}"
            subject = synthetic.sample_subject(0, sid, tone, "female" if s else "male")
            for i in range(2):
                image_id = f"{sid}_{i}"
                img = synthetic.render_face(subject, synthetic.sample_view(0, image_id), 400)
                face = stage.detect_and_align(img, crop_size=SIZE)
                assert face.ok, face.reason
                rel = f"crops/{image_id}.png"
                write_image(root / rel, face.crop)
                rows.append(
                    {
                        "image_id": image_id,
                        "ok": True,
                        "reason": "",
                        "subject_id": sid,
                        "group": group,
                        "split": "test",
                        "crop_path": rel,
                        "landmarks": face.landmarks.reshape(-1).tolist(),
                    }
                )
    faces = pd.DataFrame(rows)
    return root, faces, make_pairs(faces, seed=1)


def _embed_by_mean_colour(images):
    """A deterministic stand-in embedding for tests of the plumbing (not of dlib)."""
    out = np.stack([np.asarray(i, np.float32).mean((0, 1)) for i in images])
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_measure_forgeries_on_rendered_faces(rendered):
    root, faces, pairs = rendered
    frames = []
    for method in ("faceswap", "maskgan"):
        manifest = forge_shard(method, "classical", pairs, faces, root, f"fakes/{method}", 3)
        fakes = measure_forgeries(
            manifest, faces, root, "synth", 3, embed=_embed_by_mean_colour, identity_per_group=1
        )
        assert list(fakes.columns) == FAKE_QUALITY_COLUMNS
        assert len(fakes) == int(manifest["ok"].sum()) > 0
        # One image per group for identity, the same image ids for every method.
        assert fakes.groupby("group")["identity_sampled"].sum().tolist() == [1, 1]
        sampled = fakes.loc[fakes["identity_sampled"]]
        assert sampled[["id_sim_source", "id_sim_target"]].notna().all().all()
        assert fakes.loc[~fakes["identity_sampled"], "id_sim_source"].isna().all()
        # The renderer's faces are found again in their fakes, with a pose and an expression.
        assert fakes["redetected"].all()
        assert fakes[["pose_distance", "expression_distance"]].notna().all().all()
        assert (fakes["near_invisible"] == (fakes["change_energy"] < NEAR_INVISIBLE)).all()
        frames.append(fakes)
    swap, edit = frames
    # maskgan needs no target: its driver is the source, so the source gap is zero.
    assert (edit["source_pose_distance"] == 0).all()
    assert (edit["id_sim_source"].dropna() == edit["id_sim_target"].dropna()).all()
    # A swap shows the target's pose: closer to its driver than the source is.
    assert swap["pose_distance"].mean() < swap["source_pose_distance"].mean()
    # The identity sample is the first ids of each group in a seeded order, for any method.
    assert identity_sample(edit, 3, 1) == set(edit.loc[edit["identity_sampled"], "image_id"])
    assert identity_sample(edit, 3, None) == set(edit["image_id"])

    card = quality_card(pd.concat(frames, ignore_index=True), n_boot=200, seed=0)
    assert list(card.columns) == card_columns()
    assert len(card) == 4 and set(card["method"]) == {"faceswap", "maskgan"}
    for m in QUALITY_MEASURES:
        ok = card[m].notna()
        assert (card.loc[ok, f"{m}_ci_low"] <= card.loc[ok, m] + 1e-9).all()
        assert (card.loc[ok, m] <= card.loc[ok, f"{m}_ci_high"] + 1e-9).all()
    assert set(quality_verdicts(card).columns) == {"dataset", "method", "A", "B"}
    assert len(quality_view(card)) == 4


def test_near_copy_is_flagged(rendered, tmp_path):
    root, faces, _ = rendered
    crop = faces.iloc[0]
    img = read_image(root / crop["crop_path"])
    mask = np.zeros(img.shape[:2], np.uint8)
    mask[30:90, 30:90] = 255
    fake = img.copy()
    fake[mask > 0] = np.clip(fake[mask > 0].astype(int) + 1, 0, 255).astype(np.uint8)
    write_image(root / "nearcopy.png", fake)
    write_image(root / "nearcopy_mask.png", mask)
    manifest = pd.DataFrame(
        [
            {
                "sample_id": "maskgan__x",
                "method": "maskgan",
                "backend": "classical",
                "image_id": crop["image_id"],
                "target_image_id": crop["image_id"],
                "path": "nearcopy.png",
                "mask_path": "nearcopy_mask.png",
                "group": crop["group"],
                "subject_id": crop["subject_id"],
                "ok": True,
            }
        ]
    )
    fakes = measure_forgeries(manifest, faces, root, "synth", 0)
    assert fakes["change_energy"].iloc[0] == pytest.approx(1.0, abs=0.05)
    assert fakes["near_invisible"].iloc[0]
    assert fakes["id_sim_source"].isna().all()  # no embed given: identity not measured


def _frame(values_by_group, measure="change_energy", per_subject=3):
    rows = []
    for group, values in values_by_group.items():
        for s, v in enumerate(values):
            for k in range(per_subject):
                row = dict.fromkeys(QUALITY_MEASURES, np.nan)
                row.update(
                    dataset="d",
                    method="m",
                    group=group,
                    subject_id=f"{group}{s}",
                    identity_sampled=False,
                    near_invisible=False,
                    redetected=True,
                )
                row[measure] = v + 0.01 * k
                rows.append(row)
    return pd.DataFrame(rows)


def test_card_flags_a_group_that_differs_and_not_equal_groups():
    rng = np.random.default_rng(0)
    base = 5 + rng.normal(0, 0.5, 8)
    equal = {g: list(rng.permutation(base)) for g in "ABC"}  # the same subjects' values
    card = quality_card(_frame(equal), n_boot=300, seed=1)
    assert (card["change_energy_p"] > 0.05).all() and (card["differs"].fillna("") == "").all()
    shifted = {**equal, "C": [v + 5 for v in equal["C"]]}
    card = quality_card(_frame(shifted), n_boot=300, seed=1)
    assert (card["change_energy_p"] < 0.05).all()
    by_group = card.set_index("group")["differs"].fillna("")
    assert "change_energy" in by_group["C"]
    assert quality_verdicts(card).set_index("method").loc["m", "C"].startswith("differs")
    # Deterministic for a seed; every subject's fakes move together.
    again = quality_card(_frame(shifted), n_boot=300, seed=1)
    pd.testing.assert_frame_equal(card, again)
    assert card["n_subjects"].tolist() == [8, 8, 8]
    # The constant measure (redetected: all True) is equal with p = 1.
    assert (card["redetected_p"] == 1.0).all() and (card["redetected"] == 1.0).all()
