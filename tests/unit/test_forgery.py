import json
import warnings

import cv2
import numpy as np
import pandas as pd
import pytest
import torch

from fairforge.faces import stage
from fairforge.forgery import (
    FORGERY_COLUMNS,
    ForgeryError,
    create_method,
    forge_shard,
    list_backends,
    list_methods,
)
from fairforge.forgery.base import (
    FORGERY_METHODS,
    ONLINE_FORGERIES,
    ForgeryMethod,
    change_energy,
    dilate,
    erode,
    five_points,
    polygon_mask,
    similarity_transform,
)
from fairforge.forgery.blend import online_blend, sbi_source_transform, self_blend
from fairforge.forgery.examples import example_sheet
from fairforge.forgery.maskgan import FAIRFD_PARTS
from fairforge.forgery.parsing import (
    CELEBAMASK_LABELS,
    IMAGE_PARTS,
    PARTS,
    cie_lab,
    face_region,
    hair_region,
    label_map,
    measure_expression,
    occluders,
    parse_parts,
)
from fairforge.forgery.pose import (
    camera_matrix,
    face_pose,
    generic_face_3d,
    head_pose,
    rotation_from_angles,
)
from fairforge.forgery.reenact import apply_expression_delta, fit_blendshapes, project
from fairforge.forgery.shard import nearest_targets, read_forgery_shard, target_choice
from fairforge.forgery.template import template_face
from fairforge.forgery.warp import piecewise_affine_maps, triangulate
from fairforge.images import read_image, write_image
from fairforge.manifest import check_columns, write_manifest
from fairforge.pairs import NO_TARGET, make_pairs
from fairforge.registry import UnknownName
from fairforge.sources import synthetic
from shard_manifests import EIGHT_IDS, eight_sources

SIZE = 128
CLASSICAL = ["faceswap", "simswap", "fastreen", "dualreen", "maskgan", "sbi", "xray", "fwa"]


TARGET_SHAPE = dict(
    mouth_open=0.3, brow_raise=0.12, eye_open=0.6, angle_deg=6.0, scale=0.56, centre=(0.52, 0.5)
)


@pytest.fixture(scope="module")
def faces():
    """A neutral source and a target that differs in identity, colour, pose and expression."""
    src = template_face(SIZE, seed=1)
    tgt = template_face(SIZE, seed=2, **TARGET_SHAPE)
    return src, tgt


def _run(name, faces, seed=0, **options):
    (a, la), (b, lb) = faces
    method = create_method(name, **options)
    return method, method(a, la, b, lb, np.random.default_rng(seed))


def _kept(method, faces):
    (a, la), (b, lb) = faces
    return (b, lb) if method.kept == "target" else (a, la)


def test_registry():
    assert set(CLASSICAL) <= set(list_methods())
    assert list_backends("simswap") == ["classical", "official", "onnx"]
    with pytest.raises(UnknownName, match="unknown forgery method 'deepfacelab/classical'"):
        create_method("deepfacelab")
    with pytest.raises(UnknownName, match="unknown forgery method 'sbi/onnx'.*simswap/onnx"):
        create_method("sbi", backend="onnx")
    for name in ("faceswap", "simswap", "fastreen", "dualreen", "maskgan"):
        assert {"classical", "onnx"} <= set(list_backends(name))  # official where released
    with pytest.raises(ValueError, match="no option"):
        create_method("faceswap", blur=3)
    assert create_method("faceswap").replaces_identity
    assert not create_method("fastreen").replaces_identity


@pytest.mark.parametrize("name", CLASSICAL)
def test_output_contract_and_mask_covers_change(name, faces):
    method, res = _run(name, faces)
    kept, kept_lm = _kept(method, faces)
    assert res.image.shape == kept.shape and res.image.dtype == np.uint8
    assert res.mask.shape == kept.shape[:2] and res.mask.dtype == np.uint8
    assert set(np.unique(res.mask)) <= {0, 255}
    changed = (res.image != kept).any(2)
    # Outside the mask (grown by 2 px) the kept image is untouched, bit for bit.
    assert not changed[dilate(res.mask, 2) == 0].any()
    inside = res.mask > 0
    assert 0.01 < inside.mean() < 0.6
    assert changed[inside].mean() > 0.3
    # The manipulation sits on the face, not in the background.
    centre = kept_lm.mean(0)
    around_face = polygon_mask(centre + (kept_lm - centre) * 1.6, kept.shape)
    assert not (inside & (around_face == 0)).any()


@pytest.mark.parametrize("name", CLASSICAL)
def test_deterministic_for_a_seed(name, faces):
    _, r1 = _run(name, faces, seed=5)
    _, r2 = _run(name, faces, seed=5)
    assert np.array_equal(r1.image, r2.image) and np.array_equal(r1.mask, r2.mask)


@pytest.mark.parametrize("name", ["maskgan", "sbi", "xray"])
def test_random_methods_vary_with_seed(name, faces):
    images = {_run(name, faces, seed=s)[1].image.tobytes() for s in range(4)}
    assert len(images) > 1


def _bad_landmarks(lm):
    outside = lm.copy()
    outside[8] = (SIZE * 0.5, SIZE + 5.0)
    nan = lm.copy()
    nan[3, 0] = np.nan
    return {
        "outside the crop": outside,
        "degenerate": np.full_like(lm, SIZE / 2),
        "not finite": nan,
        "expected 68 landmarks": lm[:60],
    }


@pytest.mark.parametrize("name", CLASSICAL)
def test_bad_landmarks_give_reasons(name, faces):
    (a, la), (b, lb) = faces
    method = create_method(name)
    for reason, bad in _bad_landmarks(la).items():
        with pytest.raises(ForgeryError, match=reason):
            method(a, bad, b, lb, np.random.default_rng(0))
        if method.needs_target:
            with pytest.raises(ForgeryError, match=reason):
                method(a, la, b, bad, np.random.default_rng(0))


def test_size_mismatch_is_a_reason(faces):
    (a, la), _ = faces
    big, lbig = template_face(2 * SIZE, seed=3)
    with pytest.raises(ForgeryError, match="differ in size"):
        create_method("faceswap")(a, la, big, lbig, np.random.default_rng(0))


def test_degenerate_triangulation():
    line = np.stack([np.linspace(10, 50, 68), np.linspace(10, 50, 68)], 1)
    with pytest.raises(ForgeryError, match="degenerate"):
        triangulate(line)


def test_piecewise_affine_moves_points():
    rng = np.random.default_rng(0)
    src = rng.uniform(10, 110, (20, 2))
    dst = src + rng.uniform(-3, 3, src.shape)
    map_x, map_y, inside = piecewise_affine_maps(src, dst, (SIZE, SIZE))
    # Pixels at (rounded) destination points sample (nearly) the matching source points.
    for s, d in zip(src, dst):
        x, y = np.round(d).astype(int)
        if inside[y, x]:
            assert abs(map_x[y, x] - (s[0] + x - d[0])) < 1.5
            assert abs(map_y[y, x] - (s[1] + y - d[1])) < 1.5


def _highpass(img):
    g = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float32)
    return g - cv2.GaussianBlur(g, (0, 0), 2.0)


def test_faceswap_carries_source_structure_into_target(faces):
    (a, la), (b, lb) = faces
    method, res = _run("faceswap", faces)
    # Background (crop corners) is the target's.
    assert np.array_equal(res.image[:8, :8], b[:8, :8])
    assert np.array_equal(res.image[-8:, -8:], b[-8:, -8:])
    # Inside the face, fine structure follows the source warped onto the target geometry
    # (the target's open mouth is replaced by the source's closed one), not the target's.
    map_x, map_y, _ = piecewise_affine_maps(la, lb, b.shape)
    warped = cv2.remap(a, map_x, map_y, cv2.INTER_LINEAR)
    core = erode(res.mask, 3) > 0
    hp_out, hp_src, hp_tgt = _highpass(res.image)[core], _highpass(warped)[core], _highpass(b)[core]
    corr_src = np.corrcoef(hp_out, hp_src)[0, 1]
    corr_tgt = np.corrcoef(hp_out, hp_tgt)[0, 1]
    assert corr_src > 0.5 and corr_src > corr_tgt + 0.2


def _with_glasses(img, lm):
    """The face with grey glasses frames drawn round its eyes (an occluder)."""
    out = img.copy()
    iod = np.linalg.norm(lm[42:48].mean(0) - lm[36:42].mean(0))
    for eye in (lm[36:42].mean(0), lm[42:48].mean(0)):
        cv2.circle(out, tuple(int(v) for v in eye), int(0.3 * iod), (120, 120, 125), 2)
    return out


def test_occluders_find_glasses_not_the_face(faces):
    (a, la), _ = faces
    assert (occluders(a, la) > 0).mean() < 0.002
    glasses = _with_glasses(a, la)
    found = occluders(glasses, la) > 0
    frame = (glasses != a).any(2)
    on_skin = frame & (erode(parse_parts(la, a.shape)["skin"], 4) > 0)
    assert on_skin.sum() > 20 and found[on_skin].mean() > 0.9
    assert found.sum() < 4 * frame.sum()


def test_faceswap_keeps_the_targets_mouth_and_glasses(faces):
    (a, la), (b, lb) = faces
    swap = create_method("faceswap")
    # forge() itself: which pixels are kept is the point here, not the visibility rule
    # (the 128-px template faces differ little once eyes and mouth are left to the target).
    glasses = _with_glasses(b, lb)  # the target wears glasses and has an open mouth
    res = swap.forge(a, la, glasses, lb, np.random.default_rng(0))
    mouth = polygon_mask(lb[60:68], b.shape) > 0
    frame = (glasses != b).any(2)
    assert np.array_equal(res.image[mouth], b[mouth])  # no second, stretched mouth
    assert (res.image[frame] == glasses[frame]).all(1).mean() > 0.6  # the frames stay whole
    # Source glasses are not carried over: the fake has no more frame-grey pixels.
    worn = swap.forge(_with_glasses(a, la), la, b, lb, np.random.default_rng(0)).image
    plain = swap.forge(a, la, b, lb, np.random.default_rng(0)).image

    def grey(img):
        return (np.abs(img.astype(int) - [120, 120, 125]).max(2) < 20).sum()

    assert grey(worn) <= grey(plain) + 20


def test_simswap_moves_identity_and_keeps_the_targets_expression_and_lighting(faces):
    (a, la), (b, lb) = faces
    _, res = _run("simswap", faces)
    moved = np.asarray(res.extra["landmarks"])
    # Expression and placement are the target's; the shape is the source's.
    assert np.abs(measure_expression(moved) - measure_expression(lb)).max() < 0.05
    assert np.linalg.norm(moved.mean(0) - lb.mean(0)) < 0.05 * SIZE
    jaw = lambda lm: np.ptp(lm[0:17, 0]) / np.ptp(lm[17:27, 0])  # noqa: E731
    assert abs(jaw(moved) - jaw(la)) < abs(jaw(moved) - jaw(lb)) or abs(jaw(la) - jaw(lb)) < 0.02
    # Texture, on a source of the target's exact shape (no warp): the fine detail is the
    # target's, the identity band (features) the source's; the graphic swap pastes the
    # source's detail too: a different mechanism.
    twin = template_face(SIZE, seed=7, **TARGET_SHAPE)
    # (detail_sigma 0.1 IOD: 3.5 px, so the bands are resolvable in a 128-px crop)
    res = create_method("simswap", detail_sigma=0.1)(*twin, b, lb, np.random.default_rng(0))
    paste = create_method("faceswap")(*twin, b, lb, np.random.default_rng(0))
    # Skin away from the parts: the parts' edges coincide in two faces of one shape.
    inner = (erode(res.mask, 6) > 0) & (erode(parse_parts(lb, b.shape)["skin"], 4) > 0)

    def corr(x, y):
        return np.corrcoef(x[inner], y[inner])[0, 1]

    def mid(img):
        g = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float32)
        return cv2.GaussianBlur(g, (0, 0), 3.5) - cv2.GaussianBlur(g, (0, 0), 7.0)

    def detail(img):
        g = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float32)
        return g - cv2.GaussianBlur(g, (0, 0), 1.0)

    fine = [detail(img) for img in (res.image, b, twin[0], paste.image)]
    assert corr(fine[0], fine[1]) > 0.7 and corr(fine[0], fine[2]) < 0.3
    assert corr(fine[3], fine[2]) > corr(fine[3], fine[1])
    # What changed is the source's identity band replacing the target's.
    change = cv2.cvtColor(res.image, cv2.COLOR_RGB2GRAY).astype(np.float32) - cv2.cvtColor(
        b, cv2.COLOR_RGB2GRAY
    ).astype(np.float32)
    assert corr(change, mid(twin[0]) - mid(b)) > 0.5
    res = _run("simswap", faces)[1]
    # The target's mouth opening stays an opening (dark interior), not a paste of lips.
    mouth = polygon_mask(moved[60:68], b.shape) > 0
    grey = cv2.cvtColor(res.image, cv2.COLOR_RGB2GRAY)[mouth]
    assert np.percentile(grey, 10) < np.percentile(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), 5) + 40


def test_faceswap_blend_modes_differ(faces):
    _, feather = _run("faceswap", faces, blend="feather")
    _, poisson = _run("faceswap", faces, blend="poisson")
    assert not np.array_equal(feather.image, poisson.image)
    with pytest.raises(ValueError):
        create_method("faceswap", blend="alpha")


def test_expression_rules_hit_the_goal(faces):
    (_, la), (_, lb) = faces
    goal = measure_expression(lb)
    moved = apply_expression_delta(la, goal - measure_expression(la))
    assert np.allclose(measure_expression(moved), goal, atol=1e-6)
    weights, fitted = fit_blendshapes(la, goal)
    assert np.abs(measure_expression(fitted) - goal).max() < 0.03
    assert np.abs(weights).max() > 0.1


@pytest.mark.parametrize("name", ["fastreen", "dualreen"])
def test_reenactment_takes_the_drivers_open_mouth(name, faces):
    (a, la), (b, lb) = faces
    method, res = _run(name, faces)
    assert np.allclose(list(res.extra["expression"].values()), measure_expression(lb), atol=1e-3)
    # The driver's mouth is open (dark interior, teeth); the source's was closed (flat lip
    # colour). Where the new opening is, the output has the driver's dark-and-bright interior.
    moved = np.asarray(res.extra["landmarks"])
    assert moved.shape == (68, 2)
    mouth = polygon_mask(moved[60:68], a.shape, convex=False) > 0
    grey_out = cv2.cvtColor(res.image, cv2.COLOR_RGB2GRAY)[mouth].astype(float)
    grey_src = cv2.cvtColor(a, cv2.COLOR_RGB2GRAY)[mouth].astype(float)
    assert grey_out.std() > grey_src.std() + 20
    assert np.percentile(grey_out, 10) < np.percentile(grey_src, 10) - 25
    # Pose and identity stay: the jaw-free top half outside the mask is the source's.
    assert np.array_equal(res.image[:8], a[:8])


def _turned_driver(faces, yaw, pitch):
    """The target face's landmarks re-posed: the generic 3-D face under (yaw, pitch), placed
    over the target's landmark box."""
    (_, _), (b, lb) = faces
    cam = camera_matrix(SIZE)
    rot, t = head_pose(lb, generic_face_3d(), cam)
    moved = project(generic_face_3d(), rotation_from_angles(yaw, pitch), t, cam)
    return b, moved.astype(np.float32)


@pytest.mark.parametrize("name", ["fastreen", "dualreen"])
def test_reenactment_turns_the_head_to_the_drivers_pose(name, faces):
    (a, la), _ = faces
    b, lb = _turned_driver(faces, yaw=14.0, pitch=-8.0)
    res = create_method(name)(a, la, b, lb, np.random.default_rng(0))
    before, goal = face_pose(la, SIZE), face_pose(lb, SIZE)
    after = face_pose(np.asarray(res.extra["landmarks"]), SIZE)
    for angle in ("yaw", "pitch"):
        gap = goal[angle] - before[angle]
        assert abs(gap) > 5
        assert (after[angle] - before[angle]) / gap > 0.5, (angle, before, after, goal)
    # The image follows the landmarks: the nose tip moved sideways with the yaw.
    moved = np.asarray(res.extra["landmarks"])
    assert abs(moved[30, 0] - la[30, 0]) > 1.0
    assert (res.image[res.mask > 0] != a[res.mask > 0]).any(1).mean() > 0.3


def test_reenactments_differ(faces):
    (a, la), _ = faces
    b, lb = _turned_driver(faces, yaw=14.0, pitch=-8.0)
    fast = create_method("fastreen")(a, la, b, lb, np.random.default_rng(0))
    dual = create_method("dualreen")(a, la, b, lb, np.random.default_rng(0))
    union = (fast.mask > 0) | (dual.mask > 0)
    between = np.abs(fast.image.astype(int) - dual.image.astype(int)).mean(2)[union].mean()
    own = np.mean([change_energy(r.image, a, r.mask) for r in (fast, dual)])
    assert between > 0.5 * own, (between, own)


def test_reenactment_of_identical_expression_fails_cleanly(faces):
    (a, la), _ = faces
    with pytest.raises(ForgeryError, match="identical"):
        create_method("dualreen")(a, la, a, la, np.random.default_rng(0))


def test_parsing_parts_are_disjoint_and_on_the_face(faces):
    (a, la), _ = faces
    parts = parse_parts(la, a.shape)
    assert list(parts) == list(PARTS)
    region = face_region(la, a.shape)
    for name, m in parts.items():
        assert (m > 0).sum() > 0 or name == "mouth"
        assert not ((m > 0) & (dilate(region, 2) == 0)).any(), name
    assert not ((parts["skin"] > 0) & (parts["nose"] > 0)).any()


def test_maskgan_edits_a_parsed_subset(faces):
    """FairFD's edit (tests/unit/test_maskgan.py has its details): a subset of the parsed parts,
    each dilated or eroded; a nose-only edit stays within the nose dilated by its radius."""
    for seed in range(5):
        _, res = _run("maskgan", faces, seed=seed)
        parts = res.extra["parts"]
        assert parts and set(parts) <= set(FAIRFD_PARTS)
        assert {e["op"] for e in res.extra["edits"].values()} <= {"dilate", "erode"}
    _, only_nose = _run("maskgan", faces, parts=("nose",))
    assert only_nose.extra["parts"] == ["nose"]
    (a, la), _ = faces
    nose = label_map(la, a.shape) == CELEBAMASK_LABELS.index("nose")
    radius = only_nose.extra["edits"]["nose"]["radius"]
    assert not ((only_nose.mask > 0) & (dilate(nose.astype(np.uint8), radius) == 0)).any()


@pytest.mark.parametrize("name", ["sbi", "xray"])
def test_blends_save_an_xray_map(name, faces):
    for seed in range(3):
        _, res = _run(name, faces, seed=seed)
        xray = res.extra["xray"]
        assert xray.shape == (SIZE, SIZE) and xray.dtype == np.uint8 and xray.max() > 100
        assert not ((xray > 0) & (res.mask == 0)).any()
        # B = 4M(1-M) is a boundary map: high on the blend edge, zero deep inside the face
        # where M is 1 (for sbi only when its blend ratio is 1; xray has no ratio).
        core = erode(res.mask, 12) > 0
        if res.extra.get("blend_ratio", 1.0) == 1.0 and core.any():
            assert xray[core].mean() < 5 and xray.max() > 200


def test_xray_pastes_the_other_face_aligned_and_colour_corrected(faces):
    (a, la), (b, lb) = faces
    _, res = _run("xray", faces)
    core = erode(res.mask, 10) > 0
    aligned = cv2.warpAffine(b, similarity_transform(lb, la), (SIZE, SIZE))
    hp = [_highpass(x)[core] for x in (res.image, aligned, a)]
    assert np.corrcoef(hp[0], hp[1])[0, 1] > 0.8 > np.corrcoef(hp[0], hp[2])[0, 1]
    lab = [cv2.cvtColor(x, cv2.COLOR_RGB2LAB)[core].mean(0) for x in (res.image, a, b)]
    assert np.abs(lab[0] - lab[1]).max() < np.abs(lab[2] - lab[1]).max()


def test_sbi_source_transform_has_the_reference_strengths():
    flat = np.full((32, 32, 3), 128, np.uint8)
    rng = np.random.default_rng(0)
    shifts = np.array([sbi_source_transform(flat, rng).mean((0, 1)) - 128 for _ in range(300)])
    # Brightness +-25.5 and contrast +-10% move all channels together; the RGB shift
    # (+-20, probability 0.3) moves them apart.
    assert np.abs(shifts).max() < 20 + 25.5 + 0.1 * 128 + 3
    apart = np.ptp(shifts, axis=1) > 1.5
    assert 0.2 < apart.mean() < 0.4


def test_self_blend_augments_either_copy_and_online_blends_are_fresh(faces):
    (a, la), _ = faces
    sides = []
    for seed in range(12):
        real, fake, weight, info = self_blend(a, la, np.random.default_rng(seed))
        sides.append(info["augmented"])
        assert np.array_equal(real, a) == (info["augmented"] == "source")
        outside = weight == 0
        assert np.array_equal(fake[outside], real[outside])
    assert {"source", "target"} == set(sides)
    e1 = online_blend("sbi", a, la, seed=3, key="img1", epoch=1)
    e2 = online_blend("sbi", a, la, seed=3, key="img1", epoch=2)
    again = online_blend("sbi", a, la, seed=3, key="img1", epoch=1)
    assert all(np.array_equal(x, y) for x, y in zip(e1, again))
    assert not np.array_equal(e1[1], e2[1])
    with pytest.raises(ValueError, match="partner"):
        online_blend("xray", a, la, seed=3, key="img1", epoch=1)
    real, fake, xray = online_blend("xray", a, la, 3, "img1", 1, partner=faces[1])
    assert np.array_equal(real, a) and xray.max() > 200 and not np.array_equal(fake, a)


# --------------------------------------------------------------------------- onnx backend


def _tiny_onnx_models(d):
    """Export a tiny ArcFace-shaped encoder and an inswapper_128-shaped swapper."""
    import onnx
    from onnx import numpy_helper

    class TinyArcFace(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = torch.nn.AdaptiveAvgPool2d(4)
            self.fc = torch.nn.Linear(48, 512)

        def forward(self, x):
            return self.fc(self.pool(x).flatten(1))

    class TinySwapper(torch.nn.Module):
        """The target image, modulated per channel by the identity latent."""

        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
            self.fc = torch.nn.Linear(512, 3)

        def forward(self, target, source):
            return torch.sigmoid(self.conv(target) + 4.0 * self.fc(source)[:, :, None, None])

    def export(model, args, names, path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # dynamo=False: the TorchScript exporter needs no onnxscript.
            torch.onnx.export(
                model, args, str(path), input_names=names, output_names=["out"], dynamo=False
            )

    torch.manual_seed(0)
    arc, swap = d / "arcface.onnx", d / "inswapper.onnx"
    export(TinyArcFace().eval(), (torch.zeros(1, 3, 112, 112),), ["input.1"], arc)
    export(
        TinySwapper().eval(),
        (torch.zeros(1, 3, 128, 128), torch.zeros(1, 512)),
        ["target", "source"],
        swap,
    )
    # Like inswapper_128: an unused 512x512 latent map as the graph's last initializer.
    model = onnx.load(str(swap))
    emap = np.random.default_rng(0).normal(size=(512, 512)).astype(np.float32)
    model.graph.initializer.append(numpy_helper.from_array(emap, "emap"))
    swap_emap = d / "inswapper_emap.onnx"
    onnx.save(model, str(swap_emap))
    return arc, swap, swap_emap


@pytest.fixture(scope="module")
def onnx_models(tmp_path_factory):
    return _tiny_onnx_models(tmp_path_factory.mktemp("onnx"))


def test_simswap_onnx_missing_paths_are_named(tmp_path, onnx_models):
    arc, swap, _ = onnx_models
    with pytest.raises(ValueError, match="swapper_path"):
        create_method("simswap", backend="onnx", arcface_path=str(arc))
    with pytest.raises(ValueError, match="arcface_path"):
        create_method("simswap", backend="onnx", swapper_path=str(swap))
    missing = tmp_path / "nope.onnx"
    with pytest.raises(FileNotFoundError, match="nope.onnx"):
        create_method("simswap", backend="onnx", swapper_path=str(missing), arcface_path=str(arc))
    with pytest.raises(ValueError, match="as a swapper"):
        create_method("simswap", backend="onnx", swapper_path=str(arc), arcface_path=str(arc))


def test_simswap_onnx_runs_insightfaces_own_swapper(faces, onnx_models):
    from insightface.app.common import Face
    from insightface.model_zoo import get_model

    (a, la), (b, lb) = faces
    arc, _, swap = onnx_models
    method = create_method("simswap", backend="onnx", swapper_path=str(swap), arcface_path=str(arc))
    assert type(method.swapper).__name__ == "INSwapper" and method.swapper.emap.shape == (512, 512)
    res = method(a, la, b, lb, np.random.default_rng(0))
    assert res.image.shape == b.shape and res.image.dtype == np.uint8
    changed = (res.image != b).any(2)
    assert np.array_equal(changed, res.mask > 0) and 0.05 < changed.mean() < 0.8
    # Exactly insightface's result: its ArcFace embedding and INSwapper.get on BGR images.
    src_face = Face(kps=five_points(la))
    get_model(str(arc)).get(np.ascontiguousarray(a[..., ::-1]), src_face)
    ref = get_model(str(swap)).get(
        np.ascontiguousarray(b[..., ::-1]), Face(kps=five_points(lb)), src_face
    )
    assert np.array_equal(res.image, ref[..., ::-1])
    # The identity matters: another source face gives another result.
    c, lc = template_face(SIZE, seed=9)
    assert not np.array_equal(method(c, lc, b, lb, np.random.default_rng(0)).image, res.image)


def _tiny_generator(path, names, parsing=False):
    """A tiny ONNX model with the learned-backend contract: inputs ``names`` (1x3x32x32, or
    1x1x32x32 for a parsing map), output 1x3x32x32 in [0, 1] mixing all inputs."""

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Conv2d(3, 3, 3, padding=1)
            self.b = torch.nn.Conv2d(1 if parsing else 3, 3, 3, padding=1)

        def forward(self, x, y):
            return torch.sigmoid(self.a(x) + 0.5 * self.b(y))

    torch.manual_seed(0)
    shapes = [(1, 3, 32, 32), (1, 1 if parsing else 3, 32, 32)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Tiny().eval(),
            tuple(torch.rand(*sh) for sh in shapes),
            str(path),
            input_names=list(names),
            output_names=["out"],
            dynamo=False,
        )
    return path


@pytest.mark.parametrize(
    "name,names",
    [
        ("faceswap", ("target", "source")),
        ("fastreen", ("source", "driver")),
        ("dualreen", ("source", "driver")),
        ("maskgan", ("image", "parsing")),
    ],
)
def test_onnx_backends_follow_their_contract(name, names, faces, tmp_path):
    (a, la), (b, lb) = faces
    path = _tiny_generator(tmp_path / f"{name}.onnx", names, parsing=name == "maskgan")
    method = create_method(name, backend="onnx", model_path=str(path))
    kept = b if method.kept == "target" else a
    res = method(a, la, b, lb, np.random.default_rng(0))
    changed = (res.image != kept).any(2)
    assert res.image.shape == kept.shape and not changed[res.mask == 0].any()
    assert 0.05 < (res.mask > 0).mean() < 0.8 and changed[res.mask > 0].mean() > 0.3
    if name == "maskgan":
        assert res.extra["parts"] and set(res.extra["parts"]) <= set(PARTS)
    else:  # both inputs matter
        c, lc = template_face(SIZE, seed=9)
        other = (
            method(c, lc, b, lb, np.random.default_rng(0))
            if method.kept == "target"
            else (method(a, la, c, lc, np.random.default_rng(0)))
        )
        assert not np.array_equal(other.image, res.image)
    with pytest.raises(FileNotFoundError, match="gone.onnx"):
        create_method(name, backend="onnx", model_path=str(tmp_path / "gone.onnx"))
    wrong = _tiny_generator(tmp_path / "wrong.onnx", ("x", "y"))
    with pytest.raises(ValueError, match="must take inputs"):
        create_method(name, backend="onnx", model_path=str(wrong))


# --------------------------------------------------------------------------- shard runner


@pytest.fixture()
def dataset(tmp_path):
    """Crops on disk and a faces table: group A has 2 subjects x 2 images, B has 1 subject."""
    rows = []
    specs = [("A", "A_s0", 11), ("A", "A_s1", 12), ("B", "B_s0", 13)]
    for group, subject, seed in specs:
        for i in range(2):
            image_id = f"{subject}_i{i}"
            img, lm = template_face(SIZE, seed=seed * 10 + i, mouth_open=0.15 * i)
            rel = f"faces/{image_id}.png"
            write_image(tmp_path / rel, img)
            rows.append(
                {
                    "image_id": image_id,
                    "ok": True,
                    "reason": "",
                    "subject_id": subject,
                    "group": group,
                    "split": "test",
                    "crop_path": rel,
                    "landmarks": lm.reshape(-1).tolist(),
                }
            )
    bad = dict(rows[1])
    bad["landmarks"] = (np.asarray(bad["landmarks"]) + 1000).tolist()  # outside the crop
    rows[1] = bad
    rows.append(
        {
            "image_id": "A_s1_i9",
            "ok": False,
            "reason": "no face detected",
            "subject_id": "A_s1",
            "group": "A",
            "split": "test",
            "crop_path": "",
            "landmarks": None,
        }
    )
    return tmp_path, pd.DataFrame(rows)


def test_forge_shard_writes_manifest_rows(dataset):
    root, faces_df = dataset
    pairs = make_pairs(faces_df, seed=3)
    out = forge_shard(
        "faceswap",
        "classical",
        pairs,
        faces_df,
        root,
        "forgeries/faceswap",
        3,
        source_ids=faces_df.image_id,
    )
    check_columns(out, "forgery")
    assert list(out.columns[: len(FORGERY_COLUMNS)]) == FORGERY_COLUMNS
    assert list(out.image_id) == sorted(faces_df.image_id)
    by_id = out.set_index("image_id")
    # A face the faces stage could not use keeps its row, with the faces stage's reason.
    assert by_id.loc["A_s1_i9", "reason"] == "face not usable: no face detected"
    assert by_id.loc["A_s1_i9", "group"] == "A" and not by_id.loc["A_s1_i9", "ok"]
    # The single-subject group cannot be swapped; the face with bad landmarks fails cleanly.
    assert set(by_id.loc[["B_s0_i0", "B_s0_i1"], "reason"]) == {NO_TARGET}
    assert not by_id.loc["A_s0_i1", "ok"] and "outside the crop" in by_id.loc["A_s0_i1", "reason"]
    good = out[out.ok]
    assert len(good) >= 2
    for row in good.itertuples():
        assert row.sample_id == f"faceswap__{row.image_id}" and row.backend == "classical"
        img, mask = read_image(root / row.path), read_image(root / row.mask_path)
        assert img.shape == (SIZE, SIZE, 3) and set(np.unique(mask)) <= {0, 255}
        assert row.group == "A" and row.subject_id == row.image_id.rsplit("_", 1)[0]
        assert json.loads(row.params)["blend"] == "feather"
    write_manifest(out, root / "forgeries" / "faceswap.parquet", "forgery")
    # Same inputs, same files and rows.
    first = (root / good.path.iloc[0]).read_bytes()
    again = forge_shard(
        "faceswap",
        "classical",
        pairs,
        faces_df,
        root,
        "forgeries/faceswap",
        3,
        source_ids=faces_df.image_id,
    )
    pd.testing.assert_frame_equal(out, again)
    assert (root / good.path.iloc[0]).read_bytes() == first
    # Identity-replacing methods share the pairs.
    sim = forge_shard("simswap", "classical", pairs, faces_df, root, "forgeries/simswap", 3)
    assert list(sim.image_id) == sorted(pairs.image_id)  # without source_ids: the pairs
    assert list(sim.target_image_id) == list(
        out.set_index("image_id").loc[sim.image_id, "target_image_id"]
    )


def test_forge_shard_self_methods_ignore_pairing(dataset):
    root, faces_df = dataset
    pairs = make_pairs(faces_df, seed=3)
    out = forge_shard("sbi", "classical", pairs, faces_df, root, "forgeries/sbi", 3)
    by_id = out.set_index("image_id")
    assert by_id.loc["B_s0_i0", "ok"] and by_id.loc["B_s0_i0", "target_image_id"] == "B_s0_i0"
    assert "xray_path" in out.columns
    for row in out[out.ok].itertuples():
        xray = cv2.imread(str(root / row.xray_path), cv2.IMREAD_UNCHANGED)
        assert xray.shape == (SIZE, SIZE)
        assert 0 < json.loads(row.params)["blend_ratio"] <= 1


def test_xray_blends_the_nearest_face_of_another_subject(dataset):
    root, faces_df = dataset
    pairs = make_pairs(faces_df, seed=3)
    assert target_choice("xray") == "nearest" and target_choice("faceswap") == "pair"
    out = forge_shard("xray", "classical", pairs, faces_df, root, "forgeries/xray", 3)
    by_id = out.set_index("image_id")
    # A's sources blend one of the other A subject's faces; B has no other subject.
    # (A_s0_i1's landmarks are broken: a source drawing it records the target's failure.)
    assert by_id.loc["A_s1_i0", "target_image_id"].startswith("A_s0_")
    assert by_id.loc["A_s0_i0", "target_image_id"] in ("A_s1_i0", "A_s1_i1")
    assert by_id.loc["A_s0_i0", "ok"], by_id.loc["A_s0_i0", "reason"]
    assert not by_id.loc["B_s0_i0", "ok"] and NO_TARGET in by_id.loc["B_s0_i0", "reason"]
    # The choice is among the nearest in landmarks: with one neighbour, the nearest.
    faces = faces_df.set_index("image_id")
    lms = {i: np.asarray(v, float).reshape(68, 2) for i, v in faces["landmarks"].dropna().items()}
    near = nearest_targets(faces, ["A_s1_i0"], seed=3, method="xray", neighbours=1)
    others = [i for i in lms if i.startswith("A_s0_") and faces.loc[i, "ok"]]
    dist = {i: np.linalg.norm(lms[i] - lms["A_s1_i0"], axis=1).mean() for i in others}
    assert near["A_s1_i0"] == min(dist, key=dist.get)


# --------------------------------------------------------------------------- real landmarks


def _rendered_faces(people):
    """The synthetic world's faces of ``people`` ((subject, tone, gender), first view, drawn
    at 400 px), aligned by the faces stage: a list of (crop, landmarks)."""
    out = []
    for sid, tone, gender in people:
        img = synthetic.render_face(
            synthetic.sample_subject(0, sid, tone, gender),
            synthetic.sample_view(0, f"{sid}_0"),
            400,
        )
        face = stage.detect_and_align(img, crop_size=SIZE)
        assert face.ok, face.reason
        out.append((face.crop, face.landmarks))
    return out


def test_methods_on_rendered_faces_with_dlib_landmarks():
    """End to end on the synthetic renderer's faces, with landmarks from the faces stage."""
    crops = _rendered_faces((("s1", "tone1", "female"), ("s2", "tone4", "male")))
    for name in CLASSICAL:
        method, res = _run(name, crops)
        kept, _ = _kept(method, crops)
        changed = (res.image != kept).any(2)
        assert not changed[dilate(res.mask, 2) == 0].any(), name
        assert changed[res.mask > 0].mean() > 0.3, name


def test_a_near_copy_is_a_failure_not_a_fake(faces):
    """A change under NEAR_INVISIBLE grey levels inside the mask is recorded as a failure."""
    with pytest.raises(ForgeryError, match="no visible change"):
        _run("fastreen", faces, strength=0.05)


def test_maskgan_keeps_the_skin_tone(faces):
    """No skin edit: skin outside the edited parts' region is the source's, bit for bit,
    and most of the skin is outside it."""
    (a, la), _ = faces
    skin = parse_parts(la, a.shape)["skin"] > 0
    for seed in range(8):
        _, res = _run("maskgan", faces, seed=seed)
        outside = skin & (res.mask == 0)
        assert np.array_equal(res.image[outside], a[outside])
        assert outside.sum() > 0.8 * skin.sum(), seed
        assert "skin" not in res.extra["parts"]
    with pytest.raises(ValueError, match="never edits skin"):
        create_method("maskgan", parts=("skin", "nose"))


@pytest.fixture(scope="module")
def haired():
    """Rendered faces of the synthetic world (which draws hair), aligned by the faces stage:
    long black hair on a light face and short hair on a dark one."""
    return _rendered_faces((("s0", "tone1", "female"), ("s2", "tone3", "female")))


def test_hair_region_is_hair_around_the_face(haired):
    for img, lm in haired:
        hair = hair_region(img, lm) > 0
        parts = parse_parts(lm, img.shape, img)
        assert list(parts) == list(IMAGE_PARTS)
        assert (parts["hair"] > 0).sum() == hair.sum() > 0.05 * hair.size
        # Hair is off the face below the brows and off the skin the parsing keeps.
        below_brows = parse_parts(lm, img.shape)["skin"] > 0
        below_brows &= np.arange(SIZE)[:, None] > lm[17:27, 1].max()
        assert not (hair & below_brows).any()
        assert not (hair & (parts["skin"] > 0)).any()
        # Mostly above the eyes, and of another colour than the cheeks.
        ys = np.nonzero(hair)[0]
        assert np.mean(ys < lm[36:48, 1].mean()) > 0.5
        lab = cie_lab(img)
        cheeks = below_brows & (np.arange(SIZE)[:, None] > lm[30, 1])
        assert np.linalg.norm(lab[hair].mean(0) - lab[cheeks].mean(0)) > 15


def test_no_hair_on_a_bald_head(faces):
    """A head whose surroundings are all skin-coloured has no hair."""
    (a, la), _ = faces
    bald = a.copy()
    outside = face_region(la, a.shape, lift=0.5) == 0
    bald[outside] = np.median(a[parse_parts(la, a.shape)["skin"] > 0], axis=0)
    assert not hair_region(bald, la).any()


def test_a_nearest_target_shard_reads_every_real_face(tmp_path):
    ids = list(EIGHT_IDS)
    sources = eight_sources()
    faces = pd.DataFrame(
        {
            "image_id": ids,
            "ok": True,
            "reason": "",
            "crop_path": [f"c/{i}.png" for i in ids],
            "landmarks": [[float(k)] * 136 for k in range(8)],
            "bbox": [[0, 0, 4, 4]] * 8,
            "det_score": 0.9,
            "detector": "hog",
        }
    )
    pairs = make_pairs(faces.assign(subject_id=sources.subject_id, group="g"), seed=0)
    for name, frame in (("sources", sources), ("faces", faces), ("pairs", pairs)):
        write_manifest(frame, tmp_path / f"{name}.parquet")
    paths = [tmp_path / f"{n}.parquet" for n in ("sources", "faces", "pairs")]
    ids_x, _, faces_x = read_forgery_shard(*paths, "000", 4, "xray")
    _, _, faces_p = read_forgery_shard(*paths, "000", 4, "faceswap")
    assert ids_x == ids[:4] and faces_x["image_id"].tolist() == ids
    assert len(faces_p) < len(faces_x)
    near = nearest_targets(faces_x.set_index("image_id"), ids_x, 0, "xray", neighbours=1)
    # Landmarks k*1.0: the nearest face of another subject is the next subject's first.
    assert near == {"i00": "i02", "i01": "i02", "i02": "i01", "i03": "i04"}


def test_example_sheet_shows_each_methods_change(dataset):
    root, faces_df = dataset
    pairs = make_pairs(faces_df, seed=3)
    forgeries = {
        m: forge_shard(m, "classical", pairs, faces_df, root, f"forgeries/{m}", 3)
        for m in ("faceswap", "sbi")
    }
    out = root / "sheet.png"
    shown = example_sheet(faces_df, forgeries, root, out, tile=32)
    sheet = read_image(out)
    groups = len(shown)
    assert groups >= 1 and sheet.shape == (22 + groups * (22 + 3 * 32), 4 * 32, 3)
    # The change row of group A: a heat map that is not blank where a fake was made.
    change_row = sheet[22 + 22 + 2 * 32 : 22 + 22 + 3 * 32]
    for k, m in enumerate(sorted(forgeries)):
        tile = change_row[:, (2 + k) * 32 : (3 + k) * 32]
        made = shown["image_id"].iloc[0] in set(forgeries[m].loc[forgeries[m].ok, "image_id"])
        assert (tile != 255).any() == made


def test_a_method_learns_name_and_backend_from_its_key():
    toy = type("ToyMethod", (ForgeryMethod,), {"kept": "source"})
    with pytest.raises(ValueError, match="must be '<method>/<backend>'"):
        FORGERY_METHODS.register("toyswap", toy)
    with pytest.raises(TypeError, match="metadata are its class attributes"):
        FORGERY_METHODS.register("toyswap/onnx", toy, kept="target")
    with FORGERY_METHODS.registered("toyswap/onnx", toy):
        assert (toy.name, toy.backend) == ("toyswap", "onnx")
        assert FORGERY_METHODS.metadata("toyswap/onnx")["kept"] == "source"
        assert "onnx" in list_backends("toyswap")
    assert "toyswap" not in list_methods()


def test_online_forgeries_are_a_registry_and_name_the_config_key():
    assert ONLINE_FORGERIES.names() == ["fwa", "sbi", "xray"]
    with pytest.raises(UnknownName, match="unknown online_forgery 'swap'; valid: fwa, sbi, xray"):
        online_blend("swap", np.zeros((8, 8, 3), np.uint8), np.zeros((68, 2)), 0, "k", 0)
