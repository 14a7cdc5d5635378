"""The ``hific`` operation computes the HiFiC release's function: a re-statement of the
release's modules (tests/helpers/hific_reference.py) with random weights, saved in the
release's checkpoint layout and converted once (``convert-release hific``), decodes the same
image to within 1e-5 and spends the same estimated bits as fairforge's network loaded from
the converted file. The widths are smaller than the release's (the layout is the same)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest
import torch

import hific_reference as ref
from fairforge.checkpoints import CheckpointMismatch
from fairforge.cli import main as cli
from fairforge.perturb import (
    OPERATIONS,
    OperationUnavailable,
    apply_variant,
    available,
    bits_per_pixel,
    create_op,
    is_codec,
    unavailable_reason,
)
from fairforge.perturb.hific import convert_release, hific_bits, load_hific, run_hific

# The release's three checkpoints as its README trains them: -nrb 9 -norm (low, high), and
# --likelihood_type logistic (med); two residual blocks and small widths here, for speed.
REGIMES = {
    "low": dict(normalize_input_image=True, regime="low"),
    "med": dict(likelihood_type="logistic", regime="med"),
    "high": dict(normalize_input_image=True, regime="high"),
}


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """``{regime: (reference model, release file, converted file)}``."""
    root = tmp_path_factory.mktemp("hific")
    out = {}
    for seed, (regime, options) in enumerate(REGIMES.items()):
        args = ref.release_args(latent_channels=8, n_residual_blocks=2, **options)
        model = ref.random_model(seed, args, **ref.SMALL)
        release = ref.save_release(model, root / "release" / f"hific_{regime}.pt", args)
        converted = root / "weights" / f"hific-{regime}.pth"
        convert_release(release, converted)
        out[regime] = (model, release, converted)
    return out


def _image(h: int, w: int, seed: int = 0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    base = 128 + 60 * np.sin(xx / 7.0) * np.cos(yy / 5.0)
    noise = np.random.default_rng(seed).normal(0, 20, (h, w, 3))
    return np.clip(base[..., None] + noise, 0, 255).astype(np.uint8)


def _options(releases) -> dict:
    folder = releases["low"][2].parent
    return {"hific": {"weights": str(folder / "hific-{regime}.pth")}}


@pytest.mark.parametrize("regime", list(REGIMES))
@pytest.mark.parametrize("size", [(96, 96), (70, 90)])
def test_decoded_image_and_bits_equal_the_release(releases, regime, size):
    """Compress then decompress as the release's Model.compress/decompress (and its
    evaluation forward), on a size divisible by 16 and one that is not (padding, crop)."""
    model, _, converted = releases[regime]
    image = _image(*size, seed=size[1])
    x = ref.to_input(image, model.args.normalize_input_image)
    net = load_hific(converted)
    with torch.no_grad():
        compressed = model.compress(x)
        expected = model.decompress(compressed)
        forward, q_bpp = model(x)
        got, bits = net(torch.from_numpy(image).permute(2, 0, 1)[None].float() / 255.0)
    assert float(expected.std()) > 1e-2  # the output depends on the input
    assert float((got - expected).abs().max()) <= 1e-5
    assert float((got - forward).abs().max()) <= 1e-5
    assert float(bits) == pytest.approx(compressed["total_bits"], rel=1e-4)
    padded = (-(-size[0] // 16) * 16) * (-(-size[1] // 16) * 16)  # forward's bpp: padded pixels
    assert float(bits) == pytest.approx(float(q_bpp) * padded, rel=1e-4)

    # the op: uint8 of the same decode, and its rate through bits_per_pixel
    level = list(REGIMES).index(regime) + 1
    out = apply_variant(image, f"hific@{level}", "s", _options(releases))
    assert out.dtype == np.uint8 and out.shape == image.shape
    want = (expected[0] * 255.0).round().to(torch.uint8).permute(1, 2, 0).numpy()
    assert np.abs(out.astype(int) - want.astype(int)).max() <= 1
    bpp = bits_per_pixel(image, f"hific@{level}", _options(releases))
    assert bpp > 0
    assert bpp == pytest.approx(compressed["total_bits"] / (size[0] * size[1]), rel=1e-4)


def test_small_sides_the_release_cannot_code_are_mirrored_out(releases):
    """A side of 64 px or less leaves the hyper-analysis a 2-wide map to reflect-pad by 2,
    which the release fails on; the op mirrors such a side out to 80 px first."""
    model, _, converted = releases["med"]
    net = load_hific(converted)
    for size in [(64, 64), (70, 50), (2, 3)]:
        image = _image(*size)
        with pytest.raises(RuntimeError, match="[Pp]adding"):
            model.compress(ref.to_input(image, False))
        out = run_hific(net, image)
        assert out.dtype == np.uint8 and out.shape == image.shape
        assert hific_bits(net, image) > 0
    # what is coded is the release's code of the mirrored image, cropped
    image = _image(80, 50)
    mirrored = np.pad(image, ((0, 0), (0, 30), (0, 0)), mode="reflect")
    with torch.no_grad():
        compressed = model.compress(ref.to_input(mirrored, False))
        expected = model.decompress(compressed)[..., :50]
    assert hific_bits(net, image) == pytest.approx(compressed["total_bits"], rel=1e-4)
    want = (expected[0] * 255.0).round().to(torch.uint8).permute(1, 2, 0).numpy()
    assert np.abs(run_hific(net, image).astype(int) - want.astype(int)).max() <= 1


def test_registered_as_a_codec_with_three_levels():
    assert OPERATIONS.get("hific").levels == (1, 2, 3)
    assert OPERATIONS.metadata("hific")["category"] == "compression"
    assert is_codec("hific@2")


def test_missing_weights_name_the_path_the_level_and_the_release(tmp_path):
    assert not available("hific@2")
    reason = unavailable_reason("hific@2")
    for part in ("weights/hific/hific-med.pth", "hific@2", "hific_med.pt", "Justin-Tan/high"):
        assert part in reason
    with pytest.raises(OperationUnavailable, match="convert-release hific") as info:
        create_op("hific", 3)
    assert str(info.value.path) == "weights/hific/hific-high.pth"
    options = {"hific": {"weights": str(tmp_path / "h{level}.pth")}}
    assert str(tmp_path / "h1.pth") in unavailable_reason("hific@1", options)
    with pytest.raises(OperationUnavailable, match=str(tmp_path / "none.pth")):
        load_hific(tmp_path / "none.pth")


def test_mismatched_keys_are_listed(releases, tmp_path):
    data = torch.load(releases["low"][2], weights_only=True)
    state = data["model_state_dict"]
    state["Generator.resblock_0.conv1.weight"] = torch.zeros(3, 3, 3, 3)
    state["Encoder.conv_block9.1.weight"] = torch.zeros(1)
    del state["Hyperprior.hyperlatent_likelihood.a_3"]
    torch.save(data, tmp_path / "odd.pth")
    with pytest.raises(CheckpointMismatch) as info:
        load_hific(tmp_path / "odd.pth")
    text = str(info.value)
    assert "Hyperprior.hyperlatent_likelihood.a_3" in text
    assert "Generator.resblock_0.conv1.weight (3, 3, 3, 3)" in text
    assert "Encoder.conv_block9.1.weight" in text


def test_the_release_file_is_converted_once_by_the_cli(releases, tmp_path):
    _, release, converted = releases["high"]
    with pytest.raises(CheckpointMismatch, match="convert-release hific"):
        load_hific(release)  # the release as published: not read at run time
    out = tmp_path / "hific-high.pth"
    assert cli(["convert-release", "hific", str(release), str(out)]) == 0
    data = torch.load(out, weights_only=True)
    assert data["hparams"] == {
        "likelihood_type": "gaussian",
        "normalize_input_image": True,
        "regime": "high",
    }
    assert not any(
        k.startswith(("Discriminator.", "perceptual_loss.")) for k in data["model_state_dict"]
    )
    assert (
        data["model_state_dict"].keys()
        == torch.load(converted, weights_only=True)["model_state_dict"].keys()
    )
    assert cli(["convert-release", "hific", str(tmp_path / "nothing.pt"), str(out)]) == 2


def test_release_variants_not_rebuilt_are_refused(tmp_path):
    args = ref.release_args(latent_channels=8, n_residual_blocks=1, use_latent_mixture_model=True)
    model = ref.random_model(
        0, ref.release_args(latent_channels=8, n_residual_blocks=1), **ref.SMALL
    )
    release = ref.save_release(model, tmp_path / "dlmm.pt", args)
    with pytest.raises(CheckpointMismatch, match="mixture model"):
        convert_release(release, tmp_path / "dlmm.pth")
    torch.save({"state_dict": model.state_dict()}, tmp_path / "other.pt")
    with pytest.raises(CheckpointMismatch, match="model_state_dict"):
        convert_release(tmp_path / "other.pt", tmp_path / "other.pth")
    assert not (tmp_path / "dlmm.pth").exists()


def test_a_release_pickling_a_namespace_and_numpy_scalars_converts(tmp_path):
    """``args`` as an argparse Namespace holding numpy scalars, which a plain weights-only
    load refuses: the conversion admits exactly those, and reads the options from it."""
    args = ref.release_args(latent_channels=8, n_residual_blocks=1, likelihood_type="logistic")
    model = ref.random_model(1, args, **ref.SMALL)
    namespace = argparse.Namespace(**{**args, "k_M": np.float64(0.002), "n_data": np.int64(9)})
    release = ref.save_release(model, tmp_path / "hific_med.pt", namespace)
    with pytest.raises(CheckpointMismatch, match="Unsupported global.*convert-release hific"):
        load_hific(release)
    summary = convert_release(release, tmp_path / "hific-med.pth")
    assert summary["likelihood_type"] == "logistic" and summary["tensors"] > 0
    image = _image(80, 80)
    with torch.no_grad():
        expected = model.compress(ref.to_input(image, False))["total_bits"]
    assert hific_bits(load_hific(tmp_path / "hific-med.pth"), image) == pytest.approx(
        expected, rel=1e-4
    )
