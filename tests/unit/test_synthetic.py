"""The synthetic face world: determinism, identities, balance, and faces dlib can find."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import dlib
import numpy as np
import pytest

from fairforge.images import read_image
from fairforge.sources.synthetic import (
    DEFAULT_GENDERS,
    DEFAULT_TONES,
    ViewParams,
    image_id_for,
    render_face,
    sample_subject,
    sample_view,
    subject_id_for,
    synthetic_sources,
    synthetic_subject_table,
)

GROUPS = [(t, g) for t in DEFAULT_TONES for g in DEFAULT_GENDERS]


def _model(name: str) -> str:
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None:
        pytest.skip("face_recognition_models is not installed")
    path = Path(spec.submodule_search_locations[0]) / "models" / name
    if not path.is_file():
        pytest.skip(f"missing dlib model {path}")
    return str(path)


def _render(seed: int, tone: str, gender: str, k: int, j: int) -> np.ndarray:
    sid = subject_id_for(tone, gender, k)
    return render_face(
        sample_subject(seed, sid, tone, gender), sample_view(seed, image_id_for(sid, j))
    )


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.png"))}


def test_sources_table_ids_paths_and_balance(tmp_path):
    table = synthetic_sources(tmp_path, subjects_per_group=2, images_per_subject=3, seed=5)
    assert list(table.columns) == ["image_id", "subject_id", "path", "tone", "gender"]
    assert len(table) == 8 * 2 * 3
    assert table["image_id"].is_unique
    assert list(table["image_id"]) == sorted(table["image_id"])
    counts = table.groupby(["tone", "gender"]).size()
    assert len(counts) == 8 and (counts == 6).all()
    assert (table.groupby(["tone", "gender"])["subject_id"].nunique() == 2).all()
    first = table.iloc[0]
    assert first["subject_id"] == "syn_tone1_female_000"
    assert first["image_id"] == "syn_tone1_female_000_0000"
    assert first["path"] == "syn_tone1_female_000/syn_tone1_female_000_0000.png"
    assert all(i.startswith(s + "_") for i, s in zip(table["image_id"], table["subject_id"]))
    for rel in table["path"]:
        img = read_image(tmp_path / rel)
        assert img.shape == (400, 400, 3) and img.dtype == np.uint8
    assert len(_files(tmp_path)) == len(table)


def test_subject_table_matches_sources_and_custom_names():
    subjects = synthetic_subject_table(
        subjects_per_group=3, seed=0, tones=["light", "dark"], genders=["a", "b"]
    )
    assert len(subjects) == 12
    assert subjects["subject_id"].is_unique
    assert set(subjects.loc[subjects["tone"] == "dark", "darkness"]) == {1.0}
    assert set(subjects.loc[subjects["gender"] == "b", "masculine"]) == {True}
    with pytest.raises(ValueError):
        synthetic_subject_table(subjects_per_group=1, seed=0, genders=["x", "y", "z"])


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    kwargs = dict(subjects_per_group=1, images_per_subject=1)
    synthetic_sources(tmp_path / "a", seed=3, **kwargs)
    synthetic_sources(tmp_path / "b", seed=3, **kwargs)
    synthetic_sources(tmp_path / "c", seed=4, **kwargs)
    a, b, c = (_files(tmp_path / d) for d in "abc")
    assert a == b
    assert a.keys() == c.keys()
    assert all(a[k] != c[k] for k in a)


def test_subject_persists_and_views_vary():
    s1 = sample_subject(0, "syn_tone2_male_001", "tone2", "male")
    assert s1 == sample_subject(0, "syn_tone2_male_001", "tone2", "male")
    assert s1 != sample_subject(1, "syn_tone2_male_001", "tone2", "male")
    assert s1 != sample_subject(0, "syn_tone2_male_002", "tone2", "male")
    v1, v2 = sample_view(0, "img_a"), sample_view(0, "img_b")
    assert v1 == sample_view(0, "img_a") and v1 != v2
    for v in (v1, v2):
        assert -20 <= v.yaw <= 20 and -10 <= v.roll <= 10
        for name in ("smile", "mouth_open", "brow_raise", "eye_closure"):
            assert 0.0 <= getattr(v, name) <= 1.0
    img1, img2 = render_face(s1, v1), render_face(s1, v2)
    assert np.array_equal(img1, render_face(s1, v1))
    assert np.abs(img1.astype(int) - img2.astype(int)).mean() > 2


def test_expression_and_pose_are_render_inputs():
    subject = sample_subject(0, "syn_tone3_female_000", "tone3", "female")
    neutral = ViewParams(image_id="clip_0000")
    base = render_face(subject, neutral).astype(int)
    changes = {}
    for name, value in [
        ("smile", 1.0),
        ("mouth_open", 1.0),
        ("eye_closure", 1.0),
        ("brow_raise", 1.0),
        ("yaw", 20.0),
        ("roll", 10.0),
    ]:
        moved = render_face(subject, dataclasses.replace(neutral, **{name: value})).astype(int)
        changes[name] = np.abs(moved - base).mean()
    assert all(v > 0.2 for v in changes.values()), changes
    img = render_face(subject, neutral, size=256)
    assert img.shape == (256, 256, 3) and img.dtype == np.uint8


def test_tone_bins_are_ordered_plausible_skin():
    def luma(rgb):
        return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]

    ranges = []
    for tone in DEFAULT_TONES:
        values = []
        for k in range(12):
            s = sample_subject(0, subject_id_for(tone, "female", k), tone, "female")
            r, g, b = s.skin_rgb
            assert r > g > b, s.skin_rgb  # warm, skin-like hue at every tone
            values.append(luma(s.skin_rgb))
        ranges.append((min(values), max(values)))
    for (lo_a, _), (_, hi_b) in zip(ranges, ranges[1:]):
        assert hi_b < lo_a + 10, ranges  # each darker bin sits below the lighter one
    assert ranges[0][0] > 170 and ranges[-1][1] > 50


def test_dlib_hog_finds_faces_in_every_group():
    detector = dlib.get_frontal_face_detector()
    for tone, gender in GROUPS:
        found = [
            len(detector(_render(11, tone, gender, k, j), 1)) > 0
            for k in range(2)
            for j in range(3)
        ]
        assert np.mean(found) >= 0.95, (tone, gender, found)


def test_identity_descriptor_separates_subjects():
    detector = dlib.get_frontal_face_detector()
    predictor = dlib.shape_predictor(_model("shape_predictor_68_face_landmarks.dat"))
    encoder = dlib.face_recognition_model_v1(_model("dlib_face_recognition_resnet_model_v1.dat"))
    codes, labels = [], []
    for k in range(3):  # subjects of one group: only identity tells them apart
        for j in range(3):
            img = _render(2, "tone3", "male", k, j)
            dets = detector(img, 0)
            assert dets, (k, j)
            codes.append(np.array(encoder.compute_face_descriptor(img, predictor(img, dets[0]))))
            labels.append(k)
    codes, labels = np.array(codes), np.array(labels)
    dist = np.linalg.norm(codes[:, None] - codes[None], axis=-1)
    same = labels[:, None] == labels[None]
    off_diag = ~np.eye(len(labels), dtype=bool)
    assert dist[same & off_diag].mean() < dist[~same].mean()
    nearest = np.where(off_diag, dist, np.inf).argmin(axis=1)
    assert (labels[nearest] == labels).mean() >= 0.8
