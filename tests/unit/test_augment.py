"""SDAug / DAug / AugMix: step rates, parameter ranges, effects, determinism, Dataset use."""

from __future__ import annotations

import pickle

import cv2
import numpy as np
import pytest
import torch

from fairforge.perturb import AugMix, DAug, SDAug, create_augment
from fairforge.perturb.augment import (
    AUGMIX_ALL_OPS,
    AUGMIX_OPERATORS,
    AUGMIX_OPS,
    AugmentPlan,
    AugMixPlan,
    apply_plan,
    enhance,
    smooth,
)
from fairforge.perturb.ops import jpeg_roundtrip
from fairforge.registry import UnknownName
from fairforge.seeding import rng_for

N_PLANS = 4000


def image(h: int = 48, w: int = 40) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([100 + 40 * np.sin(xx / 5), 110 + 30 * np.cos(yy / 4), 120 + xx - yy], -1)
    return np.clip(img, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def sdaug_plans() -> list[AugmentPlan]:
    aug = SDAug()
    return [aug.plan(rng_for("plans", i)) for i in range(N_PLANS)]


def rate(flags) -> float:
    return float(np.mean(list(flags)))


def test_sdaug_step_rates(sdaug_plans):
    tol = 4 * np.sqrt(0.25 / N_PLANS)  # four binomial standard deviations
    fired = [p.fired() for p in sdaug_plans]
    for step, p in (("enhance", 0.5), ("smooth", 0.5), ("noise", 0.3), ("jpeg", 0.7)):
        assert rate(f[step] for f in fired) == pytest.approx(p, abs=tol), step
    # Steps fire independently of each other.
    assert rate(f["noise"] and f["jpeg"] for f in fired) == pytest.approx(0.21, abs=tol)
    assert rate(f["enhance"] and f["smooth"] for f in fired) == pytest.approx(0.25, abs=tol)
    assert rate(not any(f.values()) for f in fired) == pytest.approx(0.5 * 0.5 * 0.7 * 0.3, abs=tol)


def test_sdaug_parameters_stay_in_range(sdaug_plans):
    enh = [p.enhance for p in sdaug_plans if p.enhance]
    smo = [p.smooth for p in sdaug_plans if p.smooth]
    sig = np.array([p.noise_sigma for p in sdaug_plans if p.noise_sigma is not None])
    qual = np.array([p.jpeg_quality for p in sdaug_plans if p.jpeg_quality is not None])
    factors = np.array([f for _, f in enh])
    assert factors.min() >= 0.5 and factors.max() <= 1.5
    assert factors.min() < 0.52 and factors.max() > 1.48  # the whole range is used
    assert rate(k == "brightness" for k, _ in enh) == pytest.approx(0.5, abs=0.05)
    assert rate(k == "gaussian" for k, _ in smo) == pytest.approx(0.5, abs=0.05)
    kernels = [k for _, k in smo]
    assert set(kernels) == {3, 5, 7, 9, 11, 13, 15}
    assert sig.min() >= 0 and sig.max() <= 50 and sig.max() > 49 and sig.min() < 1
    assert qual.dtype.kind == "i" and qual.min() == 10 and qual.max() == 95


def test_daug_has_no_random_decision():
    aug = DAug()
    plans = {aug.plan(rng_for("daug", i)) for i in range(50)}
    assert plans == {
        AugmentPlan(
            enhance=("brightness", 1.25), smooth=("gaussian", 9), noise_sigma=25.0, jpeg_quality=52
        )
    }
    other = DAug(enhance="contrast", smooth="average").plan(rng_for(0))
    assert other.enhance == ("contrast", 1.25) and other.smooth == ("average", 9)
    # Only the noise values are random: without noise, DAug is a fixed function.
    img = image()
    a, b = aug(img, rng_for("a")), aug(img, rng_for("b"))
    assert not np.array_equal(a, b)
    no_noise = AugmentPlan(enhance=("brightness", 1.25), smooth=("gaussian", 9), jpeg_quality=52)
    np.testing.assert_array_equal(
        DAug(sigma=0.0)(img, rng_for("a")), apply_plan(img, no_noise, rng_for("x"))
    )
    with pytest.raises(ValueError, match="enhance"):
        DAug(enhance="gamma")


def test_sdaug_draws_the_noise_decision_per_batch():
    aug = SDAug()
    img = image()
    decisions = []
    for batch in range(300):
        fired = aug.batch_noise_fires(rng_for("batch", batch))
        outs = aug.augment_batch(
            [img] * 6, [rng_for("train", batch, i) for i in range(6)], rng_for("batch", batch)
        )
        for i, out in enumerate(outs):
            own = aug.plan(rng_for("train", batch, i))  # what the image would draw alone
            rng = rng_for("train", batch, i)
            imposed = aug.plan(rng, fired)
            assert imposed.fired()["noise"] == fired
            assert (imposed.enhance, imposed.smooth, imposed.jpeg_quality) == (
                own.enhance,
                own.smooth,
                own.jpeg_quality,
            )
            np.testing.assert_array_equal(out, apply_plan(img, imposed, rng))
        decisions.append(fired)
    assert rate(decisions) == pytest.approx(0.3, abs=4 * np.sqrt(0.21 / 300))
    # Per image, the decision is drawn for each call instead.
    per_image = SDAug(noise_scope="image")
    assert per_image.batch_noise_fires(rng_for("batch", 0)) is None
    with pytest.raises(ValueError, match="noise_scope"):
        SDAug(noise_scope="epoch")
    with pytest.raises(ValueError, match="generators"):
        aug.augment_batch([img, img], [rng_for(0)], rng_for(1))


def test_call_applies_the_recorded_plan():
    img = image()
    aug = SDAug()
    for i in range(30):
        out = aug(img, rng_for("call", i))
        assert out.dtype == np.uint8 and out.shape == img.shape
        rng = rng_for("call", i)
        plan = aug.plan(rng)
        assert aug.last_applied == plan
        np.testing.assert_array_equal(out, apply_plan(img, plan, rng))


def test_without_rng_the_sequence_is_reproducible():
    img = image()
    first, second = SDAug(seed=3), SDAug(seed=3)
    outs = [first(img) for _ in range(5)]
    for out in outs:
        np.testing.assert_array_equal(out, second(img))
    assert len({o.tobytes() for o in outs}) > 1
    other = SDAug(seed=4)
    assert any(not np.array_equal(out, other(img)) for out in outs)


def test_step_effects():
    img = image()
    assert enhance(img, "brightness", 1.2).mean() == pytest.approx(img.mean() * 1.2, rel=0.01)
    low = enhance(img, "contrast", 0.5).astype(float)
    assert low.std() == pytest.approx(img.astype(float).std() * 0.5, rel=0.03)
    assert low.mean() == pytest.approx(img.mean(), abs=2.0)
    np.testing.assert_array_equal(
        smooth(img, "average", 5), cv2.blur(img, (5, 5), borderType=cv2.BORDER_REFLECT_101)
    )
    flat = np.full((96, 96, 3), 128, np.uint8)
    noisy = apply_plan(flat, AugmentPlan(noise_sigma=20.0), rng_for(1)).astype(float)
    assert (noisy - 128).std() == pytest.approx(20.0, rel=0.05)
    np.testing.assert_array_equal(
        apply_plan(img, AugmentPlan(jpeg_quality=30), rng_for(1)), jpeg_roundtrip(img, 30)
    )
    np.testing.assert_array_equal(apply_plan(img, AugmentPlan(), rng_for(1)), img)


def test_create_augment():
    img = image()
    none = create_augment("none")
    np.testing.assert_array_equal(none(img, rng_for(0)), img)
    assert create_augment(None).name == "none"
    assert isinstance(create_augment("SDAug", seed=1), SDAug)
    assert isinstance(create_augment("daug"), DAug)
    assert isinstance(create_augment("AugMix"), AugMix)
    with pytest.raises(UnknownName, match="unknown augmentation 'randaug'"):
        create_augment("randaug")
    with pytest.raises(ValueError):
        SDAug(kernel_range=(2, 15))
    with pytest.raises(ValueError, match="uint8"):
        SDAug()(img.astype(np.float32), rng_for(0))


class _FaceDataset(torch.utils.data.Dataset):
    def __init__(self, augment, epoch: int = 0):
        self.images = [image() for _ in range(6)]
        self.augment, self.epoch = augment, epoch

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        img = self.augment(self.images[index], rng_for("train", self.epoch, index))
        return torch.from_numpy(img).permute(2, 0, 1)


def test_usable_in_a_torch_dataset():
    aug = pickle.loads(pickle.dumps(SDAug(seed=2)))  # DataLoader workers pickle transforms
    batches = [
        next(iter(torch.utils.data.DataLoader(_FaceDataset(aug), batch_size=6))) for _ in range(2)
    ]
    assert batches[0].shape == (6, 3, 48, 40) and batches[0].dtype == torch.uint8
    assert torch.equal(batches[0], batches[1])
    other_epoch = next(iter(torch.utils.data.DataLoader(_FaceDataset(aug, epoch=1), batch_size=6)))
    assert not torch.equal(batches[0], other_epoch)


def test_training_batches_share_one_noise_decision(tmp_path):
    """The training loader's keys carry their batch, and SDAug's noise step fires for every
    image of a batch or for none (the paper), whatever the per-image draws."""
    import pandas as pd

    from fairforge.data import EpochSampler, FaceDataset
    from fairforge.images import write_image

    rng = np.random.default_rng(0)
    for i in range(24):
        write_image(tmp_path / f"{i}.png", rng.integers(0, 256, (16, 16, 3), dtype=np.uint8))
    frame = pd.DataFrame(
        {"sample_id": [f"s{i}" for i in range(24)], "path": [f"{i}.png" for i in range(24)],
         "label": 0}
    )  # fmt: skip
    seen = []

    class Spy(SDAug):
        def __call__(self, image, rng=None, noise_fires=None):
            out = super().__call__(image, rng, noise_fires)
            seen.append(self.last_applied.noise_sigma is not None)
            return out

    data = FaceDataset(frame, tmp_path, 16, (0, 0, 0), (1, 1, 1), augment=Spy(seed=1), seed=4)
    sampler = EpochSampler(torch.utils.data.SequentialSampler(data), epoch=2, batch_size=4)
    keys = list(sampler)
    assert keys[5] == (2, 5, 1)
    for key in keys:
        data[key]
    per_batch = [set(seen[k : k + 4]) for k in range(0, 24, 4)]
    assert all(len(s) == 1 for s in per_batch)  # one decision per batch
    assert {b for s in per_batch for b in s} == {True, False}  # p = 0.3 over six batches
    assert list(EpochSampler(torch.utils.data.SequentialSampler(data)))[1] == (0, 1)


def test_augmix_draws_as_the_reference_imagenet_code():
    """Width 3, depth 1..3, severity 1, Dirichlet(1, 1, 1) chain weights, Beta(1, 1) mixing,
    the nine operators without ImageNet-C's (google-research/augmix imagenet.py defaults)."""
    aug = AugMix()
    plans = [aug.plan(rng_for("augmix", i), side=240) for i in range(2000)]
    assert {len(p.chains) for p in plans} == {3}
    depths = [len(c) for p in plans for c in p.chains]
    assert set(depths) == {1, 2, 3}
    assert np.mean(depths) == pytest.approx(2.0, abs=0.05)
    for p in plans[:200]:
        assert sum(p.weights) == pytest.approx(1.0) and min(p.weights) >= 0
    ms = np.array([p.m for p in plans])
    assert ms.mean() == pytest.approx(0.5, abs=0.02) and ms.std() == pytest.approx(
        12**-0.5, abs=0.02
    )
    steps = [s for p in plans for c in p.chains for s in c]
    assert {op for op, _ in steps} == set(AUGMIX_OPS)
    by_op = {op: [m for o, m in steps if o == op] for op in AUGMIX_OPS}
    # severity 1: level U[0.1, 1) gives int(level * 4 / 10) = 0, so 4 bits; rotations
    # int(level * 3) degrees in {-2..2}; shears under 0.03; translations int(level * 8) px
    # at 240 px (IMAGE_SIZE / 3 = 80)
    assert set(by_op["posterize"]) == {4.0}
    assert set(by_op["rotate"]) <= {-2.0, -1.0, 0.0, 1.0, 2.0} and max(by_op["rotate"]) == 2
    assert max(abs(m) for m in by_op["shear_x"]) < 0.03
    assert set(map(abs, by_op["translate_y"])) <= set(map(float, range(8)))
    assert min(by_op["solarize"]) > 256 - 26 and max(by_op["solarize"]) <= 256
    assert {o for p in (AugMix(all_ops=True).plan(rng_for("a", i)) for i in range(300))
            for c in p.chains for o, _ in c} == set(AUGMIX_ALL_OPS)  # fmt: skip
    with pytest.raises(ValueError, match="augmix"):
        AugMix(width=0)


def test_augmix_mixes_its_chains_with_the_original():
    from PIL import Image, ImageOps

    img = image(64, 64)
    pil = Image.fromarray(img)
    equalized = np.asarray(ImageOps.equalize(pil), dtype=np.float64)
    solarized = np.asarray(ImageOps.solarize(pil, 200), dtype=np.float64)
    plan = AugMixPlan(
        weights=(0.25, 0.75), m=0.4, chains=((("equalize", 0.0),), (("solarize", 200.0),))
    )
    expected = 0.6 * img + 0.4 * (0.25 * equalized + 0.75 * solarized)
    out = AugMix(width=2).apply(img, plan)
    assert out.dtype == np.uint8 and out.shape == img.shape
    np.testing.assert_array_equal(out, np.clip(np.rint(expected), 0, 255).astype(np.uint8))
    # m = 0 is the original; a translation moves the picture by whole pixels, filling black
    np.testing.assert_array_equal(AugMix().apply(img, AugMixPlan((1.0,), 0.0, ((),))), img)
    moved = np.asarray(AUGMIX_OPERATORS.create("translate_x", pil, 5.0))
    np.testing.assert_array_equal(moved[:, :-5], img[:, 5:])
    assert (moved[:, -5:] == 0).all()
    with pytest.raises(ValueError, match="unknown AugMix operation"):
        AUGMIX_OPERATORS.create("cutout", pil, 1.0)


def test_augmix_is_seeded_by_its_generator_on_a_real_photograph():
    from skimage.data import astronaut

    face = np.ascontiguousarray(astronaut()[30:230, 150:350])
    aug = AugMix()
    a, b = aug(face, rng_for("s", 1)), aug(face, rng_for("s", 1))
    np.testing.assert_array_equal(a, b)
    assert isinstance(aug.last_applied, AugMixPlan)
    others = [aug(face, rng_for("s", i)) for i in range(2, 8)]
    assert any(not np.array_equal(a, o) for o in others)
    # mild at severity 1: the face stays where it was, most pixels within a few grey levels
    assert np.median(np.abs(a.astype(int) - face)) < 30


def test_every_augmix_operation_is_registered_with_its_magnitude():
    assert set(AUGMIX_OPERATORS.names()) == set(AUGMIX_ALL_OPS)
    for op in AUGMIX_ALL_OPS:
        assert callable(AUGMIX_OPERATORS.metadata(op)["magnitude"]), op
