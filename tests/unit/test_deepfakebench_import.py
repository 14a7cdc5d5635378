"""DeepfakeBench checkpoints load onto fairforge's detectors and compute DeepfakeBench's
function: zero unmatched keys at DeepfakeBench's 256 px shapes, and equal outputs (max |diff|
≤ 1e-5) on a state dict in DeepfakeBench's names and shapes with random values, each model fed
the same uint8 images normalised as its DeepfakeBench config says and as fairforge's detector
says (tests/helpers/deepfakebench_reference.py reconstructs DeepfakeBench's models;
tests/data/deepfakebench/*.json records their keys, normalisation and resolution)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deepfakebench_reference as dfb
from fairforge.data import to_tensor
from fairforge.detectors import DETECTORS, create_detector
from fairforge.detectors.deepfakebench import (
    CheckpointMismatch,
    deepfakebench_layouts,
    deepfakebench_target,
    load_deepfakebench,
    map_deepfakebench_state,
)
from fairforge.detectors.f3net import MixBlock
from fairforge.runtime import load_checkpoint
from fairforge.training.detector import TrainConfig, import_checkpoint

SMALL = 32  # the smallest input every model here takes (Xception: a 1×1 exit map)
# Parameters DeepfakeBench builds but never uses (and no running statistics), or constants it
# stores as parameters: the README's table explains the parameter counts with them.
UNUSED = (
    r"^(backbone(_rgb|_srm)?\.adjust_channel\.|backbone_srm\.last_linear\."
    r"|backbone\.(incre_modules|downsamp_modules|final_layer|fc)\.)"
    r"|(_DCT_all|_DCT_all_T|\.base|kernel)$"
)
# The model options that score as DeepfakeBench does where fairforge's default differs
DFB_OUTPUT = {"capsule_net": {"output": "deepfakebench"}}
# DeepfakeBench's MesoNet applies Dropout2d to a flat vector (an identity at evaluation)
pytestmark = pytest.mark.filterwarnings("ignore:dropout2d")


def _recorded(model: str) -> dict:
    return json.loads((dfb.DATA / f"{model}.json").read_text())


def _ours_inputs(images: np.ndarray, mean, std) -> torch.Tensor:
    """uint8 images as fairforge's data loading gives them to a detector of ``mean``, ``std``."""
    return torch.stack([to_tensor(im, im.shape[0], mean, std) for im in images])


def _max_diff(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got - expected).abs().max())


def _scores(reference, score, ours, model: str, images: np.ndarray, mean=None, std=None):
    """``(DeepfakeBench's, ours)`` probabilities of "fake" for uint8 ``images``, each model fed
    them normalised its own way (ours: ``mean``, ``std``, by default its class's), in float64:
    float32 rounding alone moves the reference's own outputs by up to 2e-4 through 30-odd
    random-weight layers (measured against float64), so 1e-5 is checked where rounding is not
    the question."""
    mean, std = (ours.mean, ours.std) if mean is None else (mean, std)
    with torch.no_grad():
        expected = score(reference.double(), dfb.dfb_inputs(model, images).double())
        got = torch.sigmoid(ours.double()(_ours_inputs(images, mean, std).double()))
    return expected, got


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
    assert [recorded["mean"], recorded["std"]] == [list(v) for v in dfb.normalisation(model)]
    assert [recorded["mean"], recorded["std"]] == [list(ours.mean), list(ours.std)]
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


@pytest.mark.parametrize("model", sorted(deepfakebench_layouts()))
def test_the_detector_normalises_as_deepfakebench_s_config(model):
    """Every layout's detector takes DeepfakeBench's config ``mean`` and ``std`` (data loading
    reads them from the detector class), ImageNet's for ``sbi``, 0.5 for the others."""
    entry = DETECTORS.get(deepfakebench_target(model))
    mean, std = dfb.normalisation("capsule_net" if model == "capsule" else model)
    assert (tuple(entry.mean), tuple(entry.std)) == (mean, std)


def test_the_readme_names_every_imported_model_s_score():
    """The README's DeepfakeBench table has a row for every detector a layout loads onto,
    and its "score" column says which output that detector gives."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    header = "| detector | parameters here | DeepfakeBench model, parameters | import | score |"
    table = readme[readme.index(header) :].split("\n\n")[0].splitlines()[2:]
    rows = {}
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`(\w+)`", cells[0]):
            rows[name] = cells
    for model in deepfakebench_layouts():
        cells = rows[deepfakebench_target(model)]
        assert cells[3] != "—" and "DeepfakeBench" in cells[4], (model, cells[4])
    assert "output: deepfakebench" in rows["capsule"][4]


def _imported(model: str, size: int, seed: int, **cfg):
    """DeepfakeBench's ``model`` with random weights, our import of them, and one batch of
    uint8 images (those its BatchNorm statistics come from)."""
    reference, score, state = dfb.build_random(model, size, seed=seed)
    ours = load_deepfakebench(
        {"module." + k: v for k, v in state.items()}, model, input_size=size, **cfg
    )
    return reference, score, ours, dfb.images(size, seed)


@pytest.mark.parametrize("model", dfb.MODELS)
def test_outputs_equal_deepfakebench(model):
    # HRNet's 1×1 last branch saturates at 32 px; the multi-attention border mask leaves
    # nothing of an attention grid under 4 × 4 (DeepfakeBench's stem and paddings: 96 px → 6)
    size = {"facexray": 64, "multi_attention": 96}.get(model, SMALL)
    reference, score, ours, images = _imported(model, size, 7, **DFB_OUTPUT.get(model, {}))
    expected, got = _scores(reference, score, ours, model, images)
    assert expected.max() - expected.min() > 1e-3  # the scores depend on the image
    assert _max_diff(got, expected) <= 1e-5, _max_diff(got, expected)


def test_sbi_keeps_its_three_classes_and_imagenet_normalisation():
    """DeepfakeBench's ``sbi`` config: three classes (only 0 and 1 labelled), its probability
    the softmax's class 1; ImageNet mean and std. The imported head keeps its three rows, the
    logit is z₁ − log(e^z₀ + e^z₂), and training takes DeepfakeBench's three-class CE."""
    reference, score, ours, images = _imported("sbi", SMALL, seed=11)
    assert ours.name == "sbi_dfb"
    head = reference.backbone.last_layer
    assert ours.backbone.classifier.weight.shape == (3, 1792)
    assert torch.equal(ours.backbone.classifier.weight, head.weight)
    assert torch.equal(ours.backbone.classifier.bias, head.bias)
    expected, got = _scores(reference, score, ours, "sbi", images)
    assert _max_diff(got, expected) <= 1e-5
    x = dfb.dfb_inputs("sbi", images).double()
    with torch.no_grad():
        probs = torch.softmax(reference.backbone(x), dim=1)
    assert probs[:, 2].min() > 1e-3  # the third class takes part in the softmax
    torch.testing.assert_close(probs[:, 1], expected)
    # the two-class reading of the first two rows is another number
    assert _max_diff(torch.softmax(probs[:, :2].log(), dim=1)[:, 1], expected) > 1e-3
    # DeepfakeBench's normalisation of the other models would be another input
    _, other = _scores(reference, score, ours, "sbi", images, *dfb.HALF)
    assert _max_diff(other, expected) > 1e-3
    # DeepfakeBench's loss: cross-entropy over the three classes
    labels = torch.tensor([0, 1, 1, 0])
    logits = ours(x)
    classes = ours.backbone(x)
    torch.testing.assert_close(ours.loss(logits, labels), F.cross_entropy(classes, labels))


def test_capsule_scores_the_mean_vote_or_deepfakebench_s_probability():
    """``capsule`` scores the paper's mean fake vote m unless ``output: deepfakebench``, which
    gives DeepfakeBench's ``prob``, the softmax over (1 − m, m): sigmoid(2m − 1). Both order
    images alike and agree on which side of 0.5 they fall."""
    reference, score, paper, images = _imported("capsule_net", SMALL, seed=13)
    _, _, theirs, _ = _imported("capsule_net", SMALL, seed=13, output="deepfakebench")
    assert paper.output == "paper" and theirs.output == "deepfakebench"
    expected, got_theirs = _scores(reference, score, theirs, "capsule_net", images)
    # DeepfakeBench's 'cls', the mean class probabilities: the paper's mean vote is its fake one
    votes, got_paper = _scores(reference, lambda m, x: m(x)[:, 1], paper, "capsule_net", images)
    assert _max_diff(got_paper, votes) <= 1e-5
    assert _max_diff(got_theirs, expected) <= 1e-5
    torch.testing.assert_close(expected, torch.sigmoid(2 * votes - 1))
    assert _max_diff(got_paper, got_theirs) > 1e-3
    assert torch.equal(got_paper.argsort(), got_theirs.argsort())
    assert torch.equal(got_paper > 0.5, got_theirs > 0.5)
    with pytest.raises(ValueError, match="output"):
        create_detector("capsule", input_size=SMALL, output="softmax")


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


@pytest.mark.parametrize(
    "model, arch, options",
    [
        ("meso4", "meso4_dfb", {}),
        ("sbi", "sbi_dfb", {}),
        ("capsule_net", "capsule", {"output": "deepfakebench"}),
    ],
)
def test_the_workflow_import_keeps_deepfakebench_s_function(model, arch, options, tmp_path):
    """``checkpoint_format: deepfakebench`` with the detector DeepfakeBench's model loads onto
    writes a fairforge checkpoint whose options, mean and std give DeepfakeBench's outputs."""
    reference, score, state = dfb.build_random(model, SMALL, seed=5)
    path = tmp_path / f"{model}_best.pth"
    torch.save({"module." + k: v for k, v in state.items()}, path)
    out = tmp_path / "model.pt"
    cfg = TrainConfig(arch=arch, input_size=SMALL, model=dict(options))
    import_checkpoint(path, out, cfg, "deepfakebench")
    loaded, meta = load_checkpoint(out)
    assert meta["arch"] == arch
    images = dfb.images(SMALL, seed=5)
    expected, got = _scores(reference, score, loaded, model, images, meta["mean"], meta["std"])
    assert _max_diff(got, expected) <= 1e-5


def test_the_workflow_import_names_the_detector_to_use(tmp_path):
    """Naming fairforge's own ``meso4`` (another network) for DeepfakeBench's stops with the
    detector to use."""
    _, _, state = dfb.build_random("meso4", SMALL, seed=5)
    path = tmp_path / "meso4_best.pth"
    torch.save(state, path)
    with pytest.raises(ValueError, match="arch: meso4_dfb"):
        cfg = TrainConfig(arch="meso4", input_size=SMALL)
        import_checkpoint(path, tmp_path / "model.pt", cfg, "deepfakebench")


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
