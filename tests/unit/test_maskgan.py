"""FairFD's automated MaskGAN edit (FairFD §3.4: a random subset of the face's parts, each
dilated or eroded, what a part loses filled with skin) and the classical maskgan that renders
it, on label maps, on the template face and on real photographs (scikit-image's astronaut,
matplotlib's Grace Hopper, insightface's Tom Hanks and t1 group photo)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fairforge.forgery import ForgeryError, create_method, list_backends
from fairforge.forgery.base import dilate, erode
from fairforge.forgery.maskgan import FAIRFD_PARTS, KEEP, RADIUS, edited_region, fairfd_edit
from fairforge.forgery.parsing import CELEBAMASK_LABELS, label_map
from fairforge.forgery.template import template_face

CODE = {name: k for k, name in enumerate(CELEBAMASK_LABELS)}


def toy_map() -> np.ndarray:
    """A 96 x 96 face: skin with hair above, the eleven parts as rectangles, ears at the
    background's edge."""
    m = np.zeros((96, 96), np.uint8)
    m[10:90, 14:82] = CODE["skin"]
    m[4:14, 14:82] = CODE["hair"]
    boxes = {
        "l_brow": (24, 27, 54, 70), "r_brow": (24, 27, 26, 42), "l_eye": (32, 37, 54, 68),
        "r_eye": (32, 37, 28, 42), "eye_g": (30, 32, 44, 52), "nose": (40, 58, 44, 52),
        "u_lip": (64, 67, 38, 58), "mouth": (67, 69, 40, 56), "l_lip": (69, 73, 38, 58),
        "l_ear": (36, 56, 82, 88), "r_ear": (36, 56, 8, 14),
    }  # fmt: skip
    for name, (y0, y1, x0, x1) in boxes.items():
        m[y0:y1, x0:x1] = CODE[name]
    return m


def dilated_union(labels: np.ndarray, edits) -> np.ndarray:
    union = np.zeros(labels.shape, bool)
    for p, e in edits.items():
        union |= dilate((labels == CODE[p]).astype(np.uint8), e["radius"]) > 0
    return union


def test_the_edit_dilates_and_erodes_the_chosen_parts():
    labels, iod = toy_map(), 40.0
    lo, hi = RADIUS
    for seed in range(40):
        edited, edits = fairfd_edit(labels, iod, np.random.default_rng(seed))
        again = fairfd_edit(labels, iod, np.random.default_rng(seed))
        assert np.array_equal(edited, again[0]) and edits == again[1]
        assert edits and list(edits) == [p for p in FAIRFD_PARTS if p in edits]
        eroded_away = np.zeros(labels.shape, bool)
        for p, e in edits.items():
            if e["op"] == "erode":
                old = (labels == CODE[p]).astype(np.uint8)
                eroded_away |= (old > 0) & (erode(old, e["radius"]) == 0)
        for p, e in edits.items():
            r = e["radius"]
            assert max(round(lo * iod), 1) <= r <= round(hi * iod)
            old = (labels == CODE[p]).astype(np.uint8)
            new = edited == CODE[p]
            if e["op"] == "erode":
                assert np.array_equal(new, erode(old, r) > 0), (seed, p)
                # the part's lost pixels became skin or another growing part
                lost = (old > 0) & ~new
                assert (
                    lost.any()
                    and np.isin(edited[lost], [CODE["skin"], *map(CODE.get, edits)]).all()
                )
            else:
                assert new[old > 0].all() and not new[dilate(old, r) == 0].any()
                gained = new & (old == 0)
                assert gained.any(), (seed, p)
                assert not np.isin(labels[gained], [CODE[c] for c in KEEP]).any()
                # over another edited part only where an erosion gave its pixels to skin
                others = np.isin(labels, [CODE[q] for q in edits if q != p])
                assert not (gained & others & ~eroded_away).any()
                if p not in ("l_ear", "r_ear"):
                    assert not (labels[gained] == CODE["background"]).any()
        # nothing changes outside the chosen parts dilated by their radii; the skin that
        # changes becomes a part, nothing else does
        changed = edited != labels
        assert not changed[~dilated_union(labels, edits)].any()
        assert edited_region(labels, edited, edits, iod)[changed].all()
        assert not (changed & (labels == CODE["hair"])).any()


def test_the_parts_are_fairfd_s():
    assert FAIRFD_PARTS == ("nose", "eye_g", "l_eye", "r_eye", "l_brow", "r_brow", "l_ear",
                            "r_ear", "mouth", "u_lip", "l_lip")  # fmt: skip


def test_every_listed_part_and_both_operations_are_drawn():
    labels = toy_map()
    chosen, ops, sizes = set(), set(), set()
    for seed in range(200):
        _, edits = fairfd_edit(labels, 40.0, np.random.default_rng(seed))
        chosen |= set(edits)
        ops |= {(p, e["op"]) for p, e in edits.items()}
        sizes.add(len(edits))
    assert chosen == set(FAIRFD_PARTS)
    assert ops == {(p, op) for p in FAIRFD_PARTS for op in ("dilate", "erode")}
    assert min(sizes) == 1 and max(sizes) >= 8
    # the candidates can be narrowed
    for seed in range(10):
        _, edits = fairfd_edit(labels, 40.0, np.random.default_rng(seed), parts=("nose", "l_eye"))
        assert set(edits) <= {"nose", "l_eye"}


def test_the_edit_needs_a_face_with_parts():
    labels = toy_map()
    with pytest.raises(ForgeryError, match="no skin"):
        fairfd_edit(np.where(labels == CODE["skin"], 0, labels), 40.0, np.random.default_rng(0))
    tiny = np.where(np.isin(labels, [CODE[p] for p in FAIRFD_PARTS]), CODE["skin"], labels)
    tiny[40, 40] = CODE["nose"]  # a pixel is no part to edit
    with pytest.raises(ForgeryError, match="no face part to edit"):
        fairfd_edit(tiny, 40.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="never edits skin"):
        create_method("maskgan", parts=("skin", "nose"))
    with pytest.raises(ValueError, match=r"\['hair'\] unknown"):
        create_method("maskgan", parts=("hair",))


def test_landmark_parsing_names_the_subject_s_sides():
    """CelebAMask-HQ's ``l_`` classes are the subject's left: the image's right side."""
    img, lm = template_face(128, seed=1, mouth_open=0.3)
    labels = label_map(lm, img.shape)
    cx = lambda name: np.nonzero(labels == CODE[name])[1].mean()  # noqa: E731
    assert cx("l_eye") > 64 > cx("r_eye") and cx("l_brow") > 64 > cx("r_brow")
    assert {CELEBAMASK_LABELS[k] for k in np.unique(labels)} == {
        "background", "skin", "nose", "l_eye", "r_eye", "l_brow", "r_brow", "u_lip", "l_lip",
        "mouth",
    }  # fmt: skip
    assert cx("u_lip") == pytest.approx(cx("l_lip"), abs=3)
    assert (
        np.nonzero(labels == CODE["u_lip"])[0].mean()
        < np.nonzero(labels == CODE["l_lip"])[0].mean()
    )


@pytest.fixture(scope="module")
def photographs():
    """Real photographs aligned by the faces stage (dlib HOG, 68 landmarks), 256 px crops."""
    import insightface
    import skimage.data
    from matplotlib import cbook

    from fairforge.faces.stage import detect_and_align
    from fairforge.images import load_image

    images = os.path.join(os.path.dirname(insightface.__file__), "data", "images")
    photos = {
        "astronaut": skimage.data.astronaut(),
        "grace_hopper": load_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)),
        "tom_hanks": load_image(os.path.join(images, "Tom_Hanks_54745.png")),
        "t1": load_image(os.path.join(images, "t1.jpg")),
    }
    faces = {}
    for name, photo in photos.items():
        face = detect_and_align(photo, crop_size=256)
        assert face.ok, (name, face.reason)
        faces[name] = (face.crop, face.landmarks)
    return faces


def test_classical_maskgan_on_real_photographs(photographs):
    """Which parts changed, and that the change stays inside the parsed parts' dilated union:
    every chosen part's pixels changed, and no pixel outside the chosen parts dilated by their
    radii did (the rest of the photo, skin included, is the source's bit for bit)."""
    method = create_method("maskgan")
    seen = set()
    for name, (crop, lm) in photographs.items():
        labels = label_map(lm, crop.shape)
        for seed in range(3):
            res = method(crop, lm, None, None, np.random.default_rng(seed))
            edits = res.extra["edits"]
            assert res.extra["parts"] == sorted(edits) and res.extra["parser"] == "landmarks"
            seen |= set(edits)
            changed = (res.image != crop).any(2)
            union = dilated_union(labels, edits)
            assert not changed[~union].any(), (name, seed, edits)
            assert not (res.mask > 0)[~union].any()
            assert changed[res.mask > 0].mean() > 0.3
            for p in edits:
                part = labels == CODE[p]
                assert changed[part].mean() > 0.3, (name, seed, p)
            untouched = (labels == CODE["skin"]) & ~union
            assert untouched.sum() > 0.8 * (labels == CODE["skin"]).sum()
    # the landmarks parse no glasses and no ears: those parts need the released parser
    assert seen <= set(FAIRFD_PARTS) - {"eye_g", "l_ear", "r_ear"} and len(seen) >= 6


def test_maskgan_backends():
    assert list_backends("maskgan") == ["classical", "official", "onnx"]
