"""DeepfakeBench checkpoints load onto fairforge's detectors and compute DeepfakeBench's
function: zero unmatched keys at DeepfakeBench's 256 px shapes, and equal outputs on a state
dict in DeepfakeBench's names and shapes with random values (tests/deepfakebench_reference.py
reconstructs DeepfakeBench's models; tests/data/deepfakebench/*.json records their keys)."""

import json
import re

import pytest
import torch

import deepfakebench_reference as dfb
from fairforge.detectors import create_detector
from fairforge.detectors.deepfakebench import (
    CheckpointMismatch,
    deepfakebench_target,
    load_deepfakebench,
    map_deepfakebench_state,
)
from fairforge.detectors.f3net import MixBlock
from fairforge.training import TrainConfig, import_checkpoint, load_checkpoint

SMALL = 32  # the smallest input every model here takes (Xception: a 1×1 exit map)
# Parameters DeepfakeBench builds but never uses (and no running statistics), or constants it
# stores as parameters: the README's table explains the parameter counts with them.
UNUSED = (
    r"^(backbone(_rgb|_srm)?\.adjust_channel\.|backbone_srm\.last_linear\."
    r"|backbone\.(incre_modules|downsamp_modules|final_layer|classifier)\.)"
    r"|(_DCT_all|_DCT_all_T|\.base|kernel)$"
)
# DeepfakeBench's MesoNet applies Dropout2d to a flat vector (an identity at evaluation)
pytestmark = pytest.mark.filterwarnings("ignore:dropout2d")


def _recorded(model: str) -> dict:
    return json.loads((dfb.DATA / f"{model}.json").read_text())


@pytest.mark.parametrize("model", dfb.MODELS)
def test_recorded_keys_map_with_nothing_left_over(model):
    """At DeepfakeBench's 256 px: the reconstruction gives exactly the recorded keys and
    shapes, and the importer maps every one of them onto every parameter and buffer of ours
    (shapes only, on the meta device: nothing is allocated)."""
    recorded = _recorded(model)
    with torch.device("meta"):
        reference, _ = dfb.build(model, recorded["resolution"])
        ours = create_detector(deepfakebench_target(model), input_size=recorded["resolution"])
    assert dfb.key_table(reference) == recorded["state_dict"]
    state = {k: torch.empty(s, device="meta") for k, s in recorded["state_dict"].items()}
    mapped = map_deepfakebench_state(state, model, ours.state_dict())
    assert set(mapped) == set(ours.state_dict())
    # parameter counts: DeepfakeBench's, recorded, less its unused parts and constants, are
    # within 2% of ours (only a two-class head row remains)
    theirs = sum(p.numel() for p in reference.parameters())
    assert theirs == recorded["parameters"]
    unused = sum(p.numel() for k, p in reference.named_parameters() if re.search(UNUSED, k))
    here = sum(p.numel() for p in ours.parameters())
    assert abs(here - (theirs - unused)) / theirs < 0.02, (here, theirs, unused)


@pytest.mark.parametrize("model", dfb.MODELS)
def test_outputs_equal_deepfakebench(model):
    # HRNet's 1×1 last branch saturates at 32 px; the multi-attention border mask leaves
    # nothing of an attention grid under 4 × 4 (DeepfakeBench's stem and paddings: 96 px → 6)
    size = {"facexray": 64, "multi_attention": 96}.get(model, SMALL)
    reference, score, state = dfb.build_random(model, size, seed=7)
    ours = load_deepfakebench({"module." + k: v for k, v in state.items()}, model, input_size=size)
    x = dfb.calibration_images(size, seed=7)  # the images its BatchNorm statistics come from
    with torch.no_grad():
        expected = score(reference, x)
        got = torch.sigmoid(ours(x))
    assert expected.max() - expected.min() > 1e-3  # the scores depend on the image
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_a_wrong_checkpoint_lists_its_keys():
    _, _, state = dfb.build_random("meso4", SMALL, seed=3)
    state["backbone.extra.weight"] = torch.zeros(1)
    del state["backbone.conv1.weight"]
    with pytest.raises(CheckpointMismatch) as err:
        load_deepfakebench(state, "meso4", input_size=SMALL)
    message = str(err.value)
    assert "meso4_dfb" in message and "extra.weight" in message and "conv1.weight" in message
    with pytest.raises(KeyError, match="supported"):
        load_deepfakebench(state, "nope")


def test_the_workflow_import_keeps_deepfakebench_s_function(tmp_path):
    """``checkpoint_format: deepfakebench`` with the detector DeepfakeBench's model loads onto
    (``meso4_dfb``) writes a fairforge checkpoint with DeepfakeBench's outputs; naming
    fairforge's own ``meso4`` (another network) stops with the detector to use."""
    reference, score, state = dfb.build_random("meso4", SMALL, seed=5)
    path = tmp_path / "meso4_best.pth"
    torch.save({"module." + k: v for k, v in state.items()}, path)
    out = tmp_path / "model.pt"
    import_checkpoint(path, out, TrainConfig(arch="meso4_dfb", input_size=SMALL), "deepfakebench")
    model, meta = load_checkpoint(out)
    assert meta["arch"] == "meso4_dfb"
    x = torch.rand(3, 3, SMALL, SMALL, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(torch.sigmoid(model(x)), score(reference, x), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="arch: meso4_dfb"):
        import_checkpoint(path, out, TrainConfig(arch="meso4", input_size=SMALL), "deepfakebench")


def test_published_capsule_freezes_its_vgg_and_f3net_mixes_its_streams():
    capsule = create_detector("capsule", input_size=SMALL)
    assert not any(p.requires_grad for p in capsule.vgg.parameters())
    assert all(p.requires_grad for p in capsule.capsules.parameters())
    assert capsule.mean == capsule.std == (0.5, 0.5, 0.5)
    block = MixBlock(8).eval()
    fad, lfs = torch.randn(2, 8, 4, 4), torch.randn(2, 8, 4, 4)
    with torch.no_grad():
        # γ = 0: 2·sigmoid(0) − 1 = 0, neither stream receives anything from the other
        torch.testing.assert_close(block(fad, lfs)[0], block(fad, 2 * lfs)[0])
        torch.testing.assert_close(block(fad, lfs)[1], block(2 * fad, lfs)[1])
        block.fad_gamma.fill_(2.0)
        block.lfs_gamma.fill_(2.0)
        mixed = block(fad, lfs)
        changed = block(fad, lfs * 2)[0]  # the FAD output now depends on the LFS stream
    assert not torch.allclose(changed, mixed[0])
