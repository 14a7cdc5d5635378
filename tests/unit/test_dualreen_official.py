"""``dualreen`` backend ``official``: the Dual-Generator release (Hsu et al., CVPR 2022) loaded
from its three files computes the release's function.

tests/helpers/dualreen_reference.py restates the release's modules and ``demo.py``; random weights
saved in the release's layout are loaded through fairforge's loader, and the networks and
the whole pipeline on real photographs (Grace Hopper as the source, scikit-image's astronaut
as the driver) give the release's outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dualreen_reference as ref
from fairforge.checkpoints import CheckpointMismatch
from fairforge.config import ConfigError, validate_config
from fairforge.forgery import FORGERY_METHODS, create_method, list_backends
from fairforge.forgery.dualreen_official import keep_driver_eyelids
from fairforge.forgery.releases import ReleaseFileError
from official_support import photographs

TOL = 1e-5


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict:
    return ref.random_release(tmp_path_factory.mktemp("dualreen"))


@pytest.fixture(scope="module")
def method(release):
    return create_method("dualreen", "official", **release)


@pytest.fixture(scope="module")
def reference():
    return ref.load_release(ref.random_states(0))


@pytest.fixture(scope="module")
def faces():
    return photographs()


def test_each_network_computes_the_release_s(method, reference):
    idsg, rfg, vgg_encode = reference
    g = torch.Generator().manual_seed(3)
    small = torch.rand(2, 3, 64, 64, generator=g)  # the convolutional parts take any size
    full = torch.rand(2, 3, 256, 256, generator=g)  # the style encoder ends in a 4x4 kernel
    driver = torch.rand(2, 136, generator=g)
    mean, std = method.imagenet
    with torch.no_grad():
        pairs = {
            "vgg": (vgg_encode(small), method.vgg((small - mean) / std)),
            "style": (rfg["style_encoder"](full), method.style_encoder(full)),
        }
        style = pairs["style"][0]
        pairs["generator"] = (rfg["generator"](small, style), method.generator(small, style))
        code = pairs["vgg"][0]
        theirs = idsg["linear_decoder"](idsg["lm_linear_encoder"](driver), code)
        ours = method.shape_decoder(method.landmark_encoder(driver), code)
        pairs["idsg"] = (theirs, ours)
        pairs["eyelids"] = (ref.turn_eye(theirs.clone(), driver), keep_driver_eyelids(ours, driver))
    for name, (expected, got) in pairs.items():
        assert expected.std() > 1e-3, name  # random weights still give varied outputs
        torch.testing.assert_close(got, expected, atol=TOL, rtol=0, msg=name)


def test_photographs_reenacted_as_the_demo_does(method, reference, faces, monkeypatch):
    """The whole pipeline (alignment, IDSG, eyelids, drawing, RFG) equals demo.py on real
    photographs; the forgery keeps the source crop outside its mask bit for bit."""
    source, driver = faces
    seen = {}
    generate = method.generate

    def spy(*args):
        seen.update(generate(*args))
        return seen

    monkeypatch.setattr(method, "generate", spy)
    rng = np.random.default_rng(0)
    result = method(source.crop, source.landmarks, driver.crop, driver.landmarks, rng)
    expected = ref.demo_reenact(
        *reference,
        np.ascontiguousarray(source.crop[..., ::-1]),  # demo.py reads BGR frames
        source.landmarks,
        np.ascontiguousarray(driver.crop[..., ::-1]),
        driver.landmarks,
    )
    drawing = (expected["drawing"][0, 0] * 255).round().byte().numpy()
    assert np.array_equal(seen["drawing"], drawing) and drawing.max() == 255
    np.testing.assert_allclose(seen["landmarks"], expected["landmarks"][0].numpy(), atol=TOL)
    torch.testing.assert_close(seen["face"], expected["face"], atol=TOL, rtol=0)

    assert result.image.shape == source.crop.shape and result.mask.any()
    outside = result.mask == 0
    assert np.array_equal(result.image[outside], source.crop[outside])
    assert (result.image[~outside] != source.crop[~outside]).any()


def test_registered_as_a_reenactment_that_keeps_the_source():
    assert "official" in list_backends("dualreen")
    assert FORGERY_METHODS.metadata("dualreen/official")["kept"] == "source"


def test_missing_release_files_name_option_file_and_release(tmp_path, release):
    with pytest.raises(ReleaseFileError, match=r"rfg_path.*501500_nets_ema\.ckpt.*AvLab-CV"):
        create_method("dualreen", "official")
    with pytest.raises(ReleaseFileError, match=r"vgg_path.*vgg_face_dag\.pth.*no file is there"):
        create_method("dualreen", "official", **{**release, "vgg_path": str(tmp_path / "no")})
    with pytest.raises(ConfigError, match=r"forgery\.options\.dualreen.*idsg_path"):
        validate_config(
            {
                "forgery": {
                    "methods": ["dualreen"],
                    "backends": {"dualreen": "official"},
                    "options": {"dualreen": {"rfg_path": release["rfg_path"]}},
                }
            }
        )


def test_a_wrong_checkpoint_says_what_it_lacks(tmp_path, release):
    idsg = {k: dict(v) for k, v in ref.random_states(0)["idsg"].items()}
    del idsg["lm_linear_encoder"]["main.0.weight"]
    idsg["lm_linear_encoder"]["main.99.weight"] = torch.zeros(1)
    torch.save(idsg, tmp_path / "30000_nets_ema.ckpt")
    with pytest.raises(CheckpointMismatch) as err:
        create_method(
            "dualreen",
            "official",
            **{**release, "idsg_path": str(tmp_path / "30000_nets_ema.ckpt")},
        )
    assert "main.0.weight" in str(err.value) and "main.99.weight" in str(err.value)
    with pytest.raises(CheckpointMismatch, match=r"no 'lm_linear_encoder'.*generator.*30000_nets"):
        # the RFG file given as the IDSG
        create_method("dualreen", "official", **{**release, "idsg_path": release["rfg_path"]})
