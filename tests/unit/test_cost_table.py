"""The cost table against the Benchmark paper's Table 3 (parameters and GFLOPs per frame of
its eleven detectors; HeadPose, an SVM, has neither).

Each test builds one detector at the input size the paper used (written next to it), counts
its parameters and its FLOPs with :mod:`fairforge.efficiency`'s own functions, the ones that
write ``results/efficiency.csv`` (``torch.utils.flop_counter``, one image at batch 1; Conv-LSTM
one 20-frame sequence), on the meta device (shapes only: the count is the same, nothing is
computed), and checks parameters within 2 % and GFLOPs within 5 % of the table, or
says exactly which classifier head the paper counted and we do not. The convention that
matches the table is FLOPs = 2 × multiply-adds (what the counter reports): in multiply-adds
Xception would be 8.4 G, not the table's 16.84.
"""

import pytest
import timm
import torch

from fairforge.detector_kinds import kind_of
from fairforge.detectors import create_detector
from fairforge.efficiency import count_parameters, flops_per_image

PARAMS_TOL = 0.02
GFLOPS_TOL = 0.05


@pytest.fixture(autouse=True, scope="module")
def _threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


def _params(module) -> int:
    return sum(p.numel() for p in module.parameters())


def _meta(build, *args, **kwargs):
    """A model built on the meta device: parameters have shapes but no storage."""
    with torch.device("meta"):
        return build(*args, **kwargs)


def _check(params: int, gflops: float, paper_params_m: float, paper_gflops: float) -> None:
    assert params / 1e6 == pytest.approx(paper_params_m, rel=PARAMS_TOL), params
    assert gflops == pytest.approx(paper_gflops, rel=GFLOPS_TOL), gflops


def _cost(name: str, size: int, **kwargs) -> tuple[torch.nn.Module, int, float]:
    model = _meta(create_detector, name, input_size=size, **kwargs)
    return model, count_parameters(model), flops_per_image(model, size, device="meta") / 1e9


# Benchmark paper, Table 3: (params in millions, GFLOPs per frame)


def test_xception_at_299():
    # Table 3, Xception: 20.81 M, 16.84 GFLOPs
    _, params, gflops = _cost("xception", 299)
    _check(params, gflops, 20.81, 16.84)


def test_ffd_at_299():
    # Table 3, FFD: 20.82 M, 16.84 GFLOPs
    _, params, gflops = _cost("ffd", 299)
    _check(params, gflops, 20.82, 16.84)


def test_meso4_at_256():
    # Table 3, Mesonet-4: "0.28" M, 0.12 GFLOPs. The parameter figure is a factor-10 misprint:
    # the MesoNet paper gives Meso-4 27,977 parameters (0.028 M).
    _, params, gflops = _cost("meso4", 256)
    _check(params, gflops, 0.28 / 10, 0.12)


def test_meso4inception_at_256():
    # Table 3, MesoInception-4: "0.28" M, 0.11 GFLOPs. The same factor-10 misprint; 0.028 M
    # is itself rounded down from the MesoNet paper's 28,615 parameters, the figure checked.
    _, params, gflops = _cost("meso4inception", 256)
    assert params == pytest.approx(28_615, rel=PARAMS_TOL)
    assert gflops == pytest.approx(0.11, rel=GFLOPS_TOL)


@pytest.mark.xfail(
    strict=True,
    reason="Table 3 gives 0.15 M, but ResNet-18's stem and layer1 alone hold 157,504 "
    "parameters (0.1575 M, 5 % more); no head accounts for the difference",
)
def test_patch_resnet_parameters_at_299():
    # Table 3, Patch Resnet Layer1: 0.15 M
    _, params, _ = _cost("patch_resnet", 299)
    assert params / 1e6 == pytest.approx(0.15, rel=PARAMS_TOL)


def test_patch_resnet_at_299():
    # Table 3, Patch Resnet Layer1: 2.10 GFLOPs; the parameters: stem + layer1 + a 1×1 head
    model, params, gflops = _cost("patch_resnet", 299)
    stem_layer1 = 3 * 64 * 49 + 2 * 64 + 4 * (64 * 64 * 9 + 2 * 64)
    assert params == stem_layer1 + 64 + 1
    assert gflops == pytest.approx(2.10, rel=GFLOPS_TOL)


def test_patch_xception_at_299():
    # Table 3, Patch Xception Block2: 0.19 M, 3.34 GFLOPs
    _, params, gflops = _cost("patch_xception", 299)
    _check(params, gflops, 0.19, 3.34)


def test_fwa_at_224():
    # Table 3, FWA-Resnet50: 25.56 M, 8.24 GFLOPs. The paper counts ResNet-50's ImageNet
    # head (2048 → 1000); ours has one logit (2048 → 1).
    _, params, gflops = _cost("fwa", 224)
    imagenet_head, our_head = 2048 * 1000 + 1000, 2048 + 1
    _check(params - our_head + imagenet_head, gflops, 25.56, 8.24)


def test_face_xray_at_256():
    # Table 3, Face X-ray: 77.47 M, 42.58 GFLOPs. The paper's parameters are those of the
    # HRNet-W48-C classifier, ImageNet classification head included (incremental blocks,
    # downsampling path, 2048-channel layer, 1000-class fc); its GFLOPs are the trunk's, as ours.
    model, params, gflops = _cost("face_xray", 256)
    classifier = _meta(timm.create_model, "hrnet_w48", pretrained=False)
    imagenet_head = sum(
        _params(m)
        for m in (
            classifier.incre_modules,
            classifier.downsamp_modules,
            classifier.final_layer,
            classifier.classifier,
        )
    )
    our_heads = _params(model.xray_head) + _params(model.head)
    assert params - our_heads + imagenet_head == _params(classifier)
    _check(params - our_heads + imagenet_head, gflops, 77.47, 42.58)


def test_multi_attention_at_299():
    # Table 3, Multiple-attention: 18.83 M, 6.80 GFLOPs
    _, params, gflops = _cost("multi_attention", 299)
    _check(params, gflops, 18.83, 6.80)


def test_conv_lstm_at_299_with_20_frames():
    # Table 3, Conv LSTM: 30.36 M, 229.48 GFLOPs for a 20-frame clip at 299 px (the efficiency
    # table counts a video detector per sequence of its frames). The paper counts
    # InceptionV3's auxiliary classifier (with its 1000-class fc), unused at inference.
    model, params, gflops = _cost("conv_lstm", 299, frames=20)
    aux = _meta(timm.create_model, "inception_v3", pretrained=False, aux_logits=True).AuxLogits
    _check(params + _params(aux), gflops, 30.36, 229.48)


def test_headpose_has_no_network_cost():
    # Table 3, HeadPose: an SVM on landmarks, no parameters or GFLOPs given; its
    # efficiency row is a note, not numbers.
    row = kind_of("headpose").cost(None, "headpose", "cpu", (1,), 1)
    assert set(row) == {"detector", "note"} and "SVM" in row["note"]
