"""The forgery quality card: per-fake measures on real rendered faces, and the card's statistics."""

import numpy as np
import pandas as pd
import pytest

from fairforge.faces import stage
from fairforge.forgery import forge_shard
from fairforge.forgery.parsing import cie_lab, parse_parts
from fairforge.forgery.pose import (
    angles_from_rotation,
    camera_matrix,
    face_pose,
    generic_face_3d,
    rotation_from_angles,
)
from fairforge.forgery.quality import (
    CARD_MEASURES,
    FAKE_QUALITY_COLUMNS,
    NEAR_INVISIBLE,
    QUALITY_MEASURES,
    SEPARATION_COLUMNS,
    boundary_gradient,
    change_energy,
    gap_closed,
    gap_terms,
    identity_sample,
    measure_forgeries,
    method_separation,
    skin_colour_shift,
)
from fairforge.images import read_image, write_image
from fairforge.pairs import make_pairs
from fairforge.sources import synthetic
from fairforge.tables.forgery_quality import (
    card_columns,
    card_from_files,
    quality_card,
    quality_verdicts,
    quality_view,
    separation_summary,
)
from forgery_acceptance import check_forgery_card

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
    for m in CARD_MEASURES:
        ok = card[m].notna()
        assert (card.loc[ok, f"{m}_ci_low"] <= card.loc[ok, m] + 1e-9).all()
        assert (card.loc[ok, m] <= card.loc[ok, f"{m}_ci_high"] + 1e-9).all()
    assert set(quality_verdicts(card).columns) == {"dataset", "method", "backend", "A", "B"}
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
                    backend="classical",
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


def test_compared_backends_get_their_rows_and_the_same_draws(tmp_path):
    """forgery.quality.compare_backends: the other backend's fakes make their own rows (no
    separation: the methods were separated on the forged fakes), bootstrapped with the same
    subject draws, so equal fakes give equal intervals."""
    rng = np.random.default_rng(3)
    values = {g: list(5 + rng.normal(0, 0.5, 6)) for g in "AB"}
    main, other = _frame(values), _frame(values).assign(backend="official")
    main.to_parquet(tmp_path / "m.parquet")
    other.to_parquet(tmp_path / "m.official.parquet")
    sep = pd.DataFrame(
        [
            {"dataset": "d", "method": "m", "other": "n", "group": g, "between": 4.0, "own": 5.0}
            for g in "AB"
        ]
    )
    sep.to_parquet(tmp_path / "sep.parquet")
    card = card_from_files(
        [tmp_path / "m.parquet"],
        n_boot=100,
        seed=2,
        separation=[tmp_path / "sep.parquet"],
        compared=[tmp_path / "m.official.parquet"],
    )
    assert list(card.columns) == card_columns()
    assert card[["backend", "group"]].values.tolist() == [
        ["classical", "A"],
        ["classical", "B"],
        ["official", "A"],
        ["official", "B"],
    ]
    by_backend = card.set_index(["backend", "group"])
    assert by_backend.loc[("classical", "A"), "separation"] == pytest.approx(0.8)
    assert by_backend.loc["official", "separation"].isna().all()
    assert (by_backend.loc["official", "n_separation"] == 0).all()
    for col in ("change_energy", "change_energy_ci_low", "change_energy_ci_high"):
        assert by_backend.loc["official", col].tolist() == by_backend.loc["classical", col].tolist()
    verdicts = quality_verdicts(card)
    assert verdicts[["method", "backend"]].values.tolist() == [
        ["m", "classical"],
        ["m", "official"],
    ]


def test_gap_closed_is_the_share_of_the_summed_gap():
    before = np.array([0.0, 10.0, 5.0, np.nan])
    goal = np.array([10.0, 0.0, 5.0, 3.0])
    after = np.array([6.0, 6.0, 7.0, 1.0])
    moved, gap = gap_terms(after, before, goal)
    # toward: +6 and +4; no gap: 0 movement counted; NaN row left out.
    assert moved[:3].tolist() == [6.0, 4.0, 0.0] and gap[:3].tolist() == [10.0, 10.0, 0.0]
    assert np.isnan(moved[3]) and np.isnan(gap[3])
    assert gap_closed(before, after, goal) == pytest.approx(0.5)
    # Moving away counts against; no gap at all is NaN, not 0 or 1.
    assert gap_closed(np.array([0.0]), np.array([-2.0]), np.array([4.0])) == pytest.approx(-0.5)
    assert np.isnan(gap_closed(np.zeros(2), np.ones(2), np.zeros(2)))


def test_skin_colour_shift_reads_the_skin_only(rendered):
    root, faces, _ = rendered
    row = faces.iloc[0]
    img = read_image(root / row["crop_path"])
    lm = np.asarray(row["landmarks"], np.float32).reshape(68, 2)
    assert skin_colour_shift(img, img, lm) == 0.0
    skin = parse_parts(lm, img.shape, img)["skin"] > 0
    # Everything but the skin repainted: no shift; the skin lightened: a shift.
    other = img.copy()
    other[~skin] = 255 - other[~skin]
    assert skin_colour_shift(other, img, lm) == 0.0
    lighter = img.copy()
    lighter[skin] = np.clip(lighter[skin].astype(int) + 12, 0, 255).astype(np.uint8)
    shift = skin_colour_shift(lighter, img, lm)
    expected = np.linalg.norm(cie_lab(lighter)[skin].mean(0) - cie_lab(img)[skin].mean(0))
    assert shift == pytest.approx(expected, rel=1e-4) and shift > 3


def test_separation_summary_names_the_nearest_method():
    rows = []
    for other, between in (("b", 4.0), ("c", 12.0)):
        for k in range(3):
            rows.append(
                {
                    "dataset": "d",
                    "method": "a",
                    "other": other,
                    "image_id": f"i{k}",
                    "kept_image_id": f"i{k}",
                    "group": "G",
                    "subject_id": f"s{k}",
                    "between": between + k,
                    "own": 10.0,
                }
            )
    summary = separation_summary(pd.DataFrame(rows, columns=SEPARATION_COLUMNS))
    assert summary.to_dict("records") == [
        {
            "dataset": "d",
            "method": "a",
            "group": "G",
            "separation": pytest.approx(15.0 / 30.0),
            "separation_from": "b",
            "n_separation": 3,
        }
    ]
    assert separation_summary(None).empty


def test_the_card_carries_the_acceptance_numbers(rendered, tmp_path):
    """The card made the workflow's way (per-fake files, separation file, card_from_files)
    from fakes of the classical methods on rendered faces carries every acceptance number,
    and they pass the checks the workflow test applies to the demo's card."""
    root, faces, pairs = rendered
    methods = ["faceswap", "simswap", "fastreen", "dualreen", "maskgan"]
    manifests, files = {}, []
    for method in methods:
        manifests[method] = forge_shard(
            method, "classical", pairs, faces, root, f"accept/{method}", 3
        )
        fakes = measure_forgeries(manifests[method], faces, root, "synth", 3)
        files.append(tmp_path / f"{method}.parquet")
        fakes.to_parquet(files[-1])
    separation = method_separation(manifests, faces, root, "synth")
    assert list(separation.columns) == SEPARATION_COLUMNS
    # Both orders of a pair, the same numbers; only methods keeping the same image meet.
    pairs_seen = set(zip(separation["method"], separation["other"]))
    assert ("faceswap", "simswap") in pairs_seen and ("simswap", "faceswap") in pairs_seen
    assert ("faceswap", "fastreen") not in pairs_seen
    ab = separation.loc[(separation["method"] == "fastreen") & (separation["other"] == "dualreen")]
    ba = separation.loc[(separation["method"] == "dualreen") & (separation["other"] == "fastreen")]
    assert ab["between"].tolist() == ba["between"].tolist() and len(ab) > 0
    sep_file = tmp_path / "separation.parquet"
    separation.to_parquet(sep_file)

    card = card_from_files(files, n_boot=50, seed=0, separation=[sep_file])
    assert list(card.columns) == card_columns()
    for col in ("skin_colour_shift", "yaw_gap_closed", "pitch_gap_closed", "separation"):
        assert col in card.columns
    numbers = check_forgery_card(card, methods, sorted(faces["group"].unique()), poses=False)
    # The rendered faces are found again, so reenactment's pose numbers are measured here;
    # on 8 fakes only the yaw is judged (see check_forgery_card), and it follows the driver.
    for method in ("fastreen", "dualreen"):
        assert np.isfinite(numbers[method]["pitch_gap_closed"]), numbers[method]
        assert numbers[method]["yaw_gap_closed"] >= 0.5, numbers[method]
    # Needs no target: the driver is the source, so there is no gap to close.
    assert card.loc[card["method"] == "maskgan", "yaw_gap_closed"].isna().all()
