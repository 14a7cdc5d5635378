"""SimSwap's official backend computes the authors' function: the generator (224 and 512) and
ArcFace equal a re-statement of the authors' modules (tests/helpers/simswap_reference.py) loaded with
the same random weights saved in the release's layouts, and the whole path (alignment,
identity, generator, paste-back) equals the authors' inference path on photographs."""

from __future__ import annotations

import numpy as np
import pytest
import skimage.data
import torch
from matplotlib import cbook

import simswap_reference as ref
from fairforge.checkpoints import CheckpointMismatch, load_exact, read_state_dict
from fairforge.cli import main as cli
from fairforge.config import ConfigError, validate_config
from fairforge.faces import detect_and_align
from fairforge.forgery import create_method
from fairforge.forgery.base import five_points
from fairforge.forgery.nets.arcface import SimSwapArcFace, convert_release
from fairforge.forgery.nets.simswap import SimSwapGenerator
from fairforge.forgery.simswap_official import estimate_norm
from fairforge.images import load_image

SMALL_ARCFACE = ref.SMALL_ARCFACE
write_release = ref.write_random_release


@pytest.mark.parametrize("crop_size, size", [(224, 96), (512, 128)])
def test_generator_equals_the_authors(tmp_path, crop_size, size):
    """The released layout (9 ID-injection blocks) loads with no key renamed and computes
    the authors' generator; fully convolutional, so a smaller image checks every layer."""
    reference = ref.random_generator(crop_size, seed=crop_size)
    path = ref.save_generator(reference, tmp_path / "net_G.pth")
    state = read_state_dict(path, "generator")
    ours = SimSwapGenerator.for_state(state, crop_size)
    load_exact(ours, state, "generator")
    gen = torch.Generator().manual_seed(1)
    target = torch.rand(2, 3, size, size, generator=gen)
    latent = torch.nn.functional.normalize(torch.randn(2, 512, generator=gen), dim=1)
    with torch.no_grad():
        expected = reference(target, latent)
        got = ours.eval()(target, latent)
    assert len(ours.BottleNeck) == 9 and not ours.deep
    assert float(expected.std()) > 1e-3  # the output depends on the input
    assert float((got - expected).abs().max()) <= 1e-5


def test_arcface_converts_without_the_authors_code_and_equals_theirs(tmp_path):
    reference = ref.random_arcface(seed=5)
    tar = ref.save_arcface_release(reference, tmp_path / "arcface_checkpoint.tar")
    with pytest.raises(CheckpointMismatch, match="converted to its state_dict once"):
        read_state_dict(tar, "the release as published")  # fairforge never unpickles it
    out = tmp_path / "arcface.pth"
    assert cli(["convert-release", "simswap-arcface", str(tar), str(out)]) == 0
    state = read_state_dict(out, "converted ArcFace")
    ours = SimSwapArcFace.for_state(state)
    load_exact(ours, state, "converted ArcFace")
    assert [len(getattr(ours, f"layer{i}")) for i in range(1, 5)] == [3, 4, 23, 3]
    x = torch.randn(2, 3, 112, 112, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected, got = reference(x), ours.eval()(x)
    assert float(expected.std()) > 1e-3
    assert float((got - expected).abs().max()) <= 1e-5 * max(1.0, float(expected.abs().max()))


def test_a_release_unlike_simswap_s_arcface_is_refused(tmp_path):
    odd = ref.random_arcface(seed=6, layers=SMALL_ARCFACE)
    odd.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    tar = ref.save_arcface_release(odd, tmp_path / "odd.tar")
    with pytest.raises(CheckpointMismatch, match=r"conv1: Conv2d\(3, 64.*padding=\(1, 1\)"):
        convert_release(tar, tmp_path / "odd.pth")
    torch.save({"model": torch.nn.Linear(2, 2), "optimizer": torch.optim.SGD}, tmp_path / "x.tar")
    with pytest.raises(CheckpointMismatch, match="not SimSwap's pickled ArcFace"):
        convert_release(tmp_path / "x.tar", tmp_path / "x.pth")
    assert cli(["convert-release", "nothing", str(tar), str(tmp_path / "y.pth")]) == 2
    assert not (tmp_path / "odd.pth").exists()


@pytest.fixture(scope="module")
def photos():
    """Aligned crops of two photographs, as the faces stage gives them: scikit-image's
    astronaut (the target, kept) and matplotlib's Grace Hopper (the identity)."""
    out = {}
    for name, image in (
        ("target", skimage.data.astronaut()),
        ("source", load_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))),
    ):
        face = detect_and_align(image, crop_size=256)
        assert face.ok, face.reason
        out[name] = (face.crop, face.landmarks)
    return out


@pytest.mark.parametrize("crop_size, n_blocks", [(224, 9), (512, 2)])
def test_the_whole_path_equals_the_authors_inference(tmp_path, photos, crop_size, n_blocks):
    """Alignment to SimSwap's template, ArcFace identity, generator and paste-back: the
    authors' test_wholeimage_swapsingle.py (without the parsing mask) gives the same image."""
    options, gen, arc = write_release(tmp_path, crop_size, seed=11, n_blocks=n_blocks)
    method = create_method("simswap", "official", **options)
    (src, src_lm), (tgt, tgt_lm) = photos["source"], photos["target"]
    result = method(src, src_lm, tgt, tgt_lm, np.random.default_rng(0))
    expected_bgr, _ = ref.whole_image_swap(
        arc, gen, src[..., ::-1].copy(), five_points(src_lm), tgt[..., ::-1].copy(),
        five_points(tgt_lm), crop_size,
    )  # fmt: skip
    expected = expected_bgr[..., ::-1]
    changed = (expected != tgt).any(2)
    assert changed.mean() > 0.2  # the swap covers the face, not a few pixels
    assert np.array_equal(result.image, expected)  # to the last bit
    # the mask is the blend's support: it covers every change, the rest is the target's
    assert not (changed & (result.mask == 0)).any()
    assert np.array_equal(result.image[result.mask == 0], tgt[result.mask == 0])


@pytest.mark.parametrize("crop_size", [224, 512])
def test_alignment_picks_the_authors_template(photos, crop_size):
    points = five_points(photos["target"][1])
    mode = "ffhq" if crop_size == 512 else "None"
    expected, _ = ref.estimate_norm(points, crop_size, mode=mode)
    np.testing.assert_allclose(estimate_norm(points, crop_size), expected, atol=1e-9)
    # a face turned to one side fits another of the 224 model's five templates
    turned = points.copy()
    turned[2, 0] += 0.4 * (points[1, 0] - points[0, 0])
    expected, index = ref.estimate_norm(turned, 224, mode="None")
    assert index != 2
    np.testing.assert_allclose(estimate_norm(turned, 224), expected, atol=1e-9)


def test_batched_forging_equals_one_at_a_time(tmp_path, photos):
    options, _, _ = write_release(tmp_path, 224, seed=3, n_blocks=1)
    method = create_method("simswap", "official", batch=2, **options)
    (src, src_lm), (tgt, tgt_lm) = photos["source"], photos["target"]
    items = [(src, src_lm, tgt, tgt_lm), (tgt, tgt_lm, src, src_lm)]
    batched = method.forge_batch(items)
    for item, got in zip(items, batched):
        one = method(*item, np.random.default_rng(0))
        assert np.abs(one.image.astype(int) - got.image).max() <= 1
        assert np.array_equal(one.mask, got.mask)


def test_a_file_of_the_other_release_names_the_crop_size(tmp_path):
    options, _, _ = write_release(tmp_path, 512, seed=2, n_blocks=1)
    with pytest.raises(ValueError, match="512 px release's generator.*crop_size: 512"):
        create_method("simswap", "official", **{**options, "crop_size": 224})
    state = read_state_dict(options["generator_path"], "g")
    del state["BottleNeck.0.style1.linear.weight"]
    torch.save(state, tmp_path / "broken.pth")
    with pytest.raises(CheckpointMismatch, match="BottleNeck.0.style1.linear.weight"):
        create_method(
            "simswap", "official", **{**options, "generator_path": str(tmp_path / "broken.pth")}
        )


def test_the_config_check_names_the_missing_file_and_its_release(tmp_path):
    config = {
        "forgery": {
            "methods": ["simswap"],
            "backends": {"simswap": "official"},
            "options": {"simswap": {"generator_path": str(tmp_path / "latest_net_G.pth")}},
        }
    }
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    text = str(err.value)
    assert "forgery.options.simswap" in text and "latest_net_G.pth" in text
    assert "github.com/neuralchen/SimSwap/releases" in text
    config["forgery"]["options"]["simswap"] = {"crop_size": 256}
    with pytest.raises(ConfigError, match="crop_size 256.*224, 512"):
        validate_config(config)
