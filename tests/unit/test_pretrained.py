"""Pretrained starts: ImageNet-style state dicts that the tests make (timm models built with
``pretrained=False`` and saved) load onto the detectors by their layouts; bad files stop."""

import pytest
import timm
import torch

import deepfakebench_reference as dfb
from fairforge.detectors import create_detector
from fairforge.detectors.pretrained import PretrainedMismatch, apply_pretrained


def _save(state: dict, path) -> str:
    torch.save(state, path)
    return str(path)


def test_cadene_xception_file_loads_with_its_2d_pointwise_weights(tmp_path):
    imagenet = timm.create_model("legacy_xception", pretrained=False, num_classes=1000)
    state = imagenet.state_dict()
    # Cadene's file stores pointwise convolutions as (out, in) matrices
    state = {k: v.squeeze(-1).squeeze(-1) if "pointwise" in k else v for k, v in state.items()}
    path = _save(state, tmp_path / "xception-b5690688.pth")
    model = create_detector("xception", input_size=64)
    head = model.backbone.fc.weight.clone()
    loaded = apply_pretrained(model, "xception", path)
    assert loaded > 200
    ours = model.backbone.state_dict()
    for key, value in imagenet.state_dict().items():
        if not key.startswith("fc."):
            assert torch.equal(ours[key], value), key
    assert torch.equal(model.backbone.fc.weight, head)  # the 1000-class head is dropped
    assert model.backbone.fc.weight.shape == (1, 2048)


def test_extra_input_channels_repeat_the_rgb_filters(tmp_path):
    imagenet = timm.create_model("legacy_xception", pretrained=False)
    path = _save(imagenet.state_dict(), tmp_path / "x.pth")
    model = create_detector("spsl", input_size=64)  # RGB + phase: 4 input channels
    apply_pretrained(model, "spsl", path)
    rgb = imagenet.conv1.weight
    conv = model.backbone.conv1.weight
    assert conv.shape[1] == 4
    torch.testing.assert_close(conv[:, :3], rgb * 3 / 4)
    torch.testing.assert_close(conv[:, 3], rgb[:, 0] * 3 / 4)


def test_a_truncated_trunk_takes_the_first_stages(tmp_path):
    imagenet = timm.create_model("resnet18", pretrained=False)
    path = _save(imagenet.state_dict(), tmp_path / "resnet18.pth")
    model = create_detector("patch_resnet", input_size=64)
    apply_pretrained(model, "patch_resnet", path)
    assert torch.equal(model.trunk[0].weight, imagenet.conv1.weight)
    assert torch.equal(model.trunk[4][1].conv2.weight, imagenet.layer1[1].conv2.weight)


def test_missing_and_mismatched_files_stop_naming_path_and_keys(tmp_path):
    model = create_detector("patch_resnet", input_size=64)
    with pytest.raises(FileNotFoundError, match="nowhere.pth"):
        apply_pretrained(model, "patch_resnet", tmp_path / "nowhere.pth")
    state = timm.create_model("resnet18", pretrained=False).state_dict()
    del state["layer1.0.conv1.weight"]
    state["bn1.weight"] = torch.ones(3)
    path = _save(state, tmp_path / "bad.pth")
    with pytest.raises(PretrainedMismatch) as err:
        apply_pretrained(model, "patch_resnet", path)
    assert "bad.pth" in str(err.value)
    assert "trunk.4.0.conv1.weight" in str(err.value)
    assert "bn1.weight (3,)" in str(err.value)
    # a file of another network leaves keys nobody takes
    other = _save(timm.create_model("resnet18", pretrained=False).state_dict(), tmp_path / "o.pth")
    with pytest.raises(PretrainedMismatch, match="file keys no parameter takes"):
        apply_pretrained(create_detector("xception", input_size=64), "xception", other)
    with pytest.raises(KeyError, match="unknown pretrained layout .meso4."):
        apply_pretrained(create_detector("meso4", input_size=64), "meso4", path)


def test_fine_tuning_starts_from_a_fairforge_or_deepfakebench_checkpoint(tmp_path):
    from fairforge.detectors.deepfakebench import CheckpointMismatch
    from fairforge.training.detector import TrainConfig, build_model, save_checkpoint

    cfg = TrainConfig(arch="meso4", input_size=32, seed=1)
    trained, kwargs, size = build_model(cfg)
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(1.0)  # unlike any fresh initialisation
    save_checkpoint(tmp_path / "m.pt", trained, cfg, kwargs, size, epoch=3, val_auc=0.9)
    tuned, _, _ = build_model(
        TrainConfig(
            arch="meso4", input_size=32, init="checkpoint", init_checkpoint=str(tmp_path / "m.pt")
        )
    )
    for key, value in trained.state_dict().items():
        assert torch.equal(tuned.state_dict()[key], value), key
    with pytest.raises(FileNotFoundError, match="gone.pt"):
        build_model(
            TrainConfig(arch="meso4", init="checkpoint", init_checkpoint=str(tmp_path / "gone.pt"))
        )
    payload = torch.load(tmp_path / "m.pt", weights_only=True)
    del payload["state_dict"]["head.2.weight"]
    torch.save(payload, tmp_path / "cut.pt")
    with pytest.raises(
        CheckpointMismatch, match=r"cut.pt.*head.2.weight \(not in the checkpoint\)"
    ):
        build_model(
            TrainConfig(
                arch="meso4",
                input_size=32,
                init="checkpoint",
                init_checkpoint=str(tmp_path / "cut.pt"),
            )
        )

    # DeepfakeBench's names: backbone.* and a two-class last_linear
    ours = create_detector("xception", input_size=64).state_dict()
    dfb = {k.replace("backbone.fc.", "backbone.last_linear."): v for k, v in ours.items()}
    dfb["backbone.last_linear.weight"] = torch.randn(2, 2048)
    dfb["backbone.last_linear.bias"] = torch.tensor([0.25, -0.5])
    torch.save(dfb, tmp_path / "dfb.pth")
    tuned, _, _ = build_model(
        TrainConfig(
            arch="xception",
            input_size=64,
            init="checkpoint",
            init_checkpoint=str(tmp_path / "dfb.pth"),
            init_format="deepfakebench",
        )
    )
    assert torch.equal(tuned.backbone.conv1.weight, ours["backbone.conv1.weight"])
    assert tuned.backbone.fc.bias.item() == pytest.approx(-0.75)  # fake − real


def test_the_train_rule_reads_the_start_files():
    from fairforge.config import validate_config
    from fairforge.workflow import detector_settings, train_input

    config = validate_config(
        {
            "detectors": {
                "x": {"arch": "xception", "pretrained": "/w/xception-b5690688.pth"},
                "f": {"arch": "xception", "checkpoint": "/w/dfb.pth", "init": "checkpoint"},
                "i": {"arch": "xception", "checkpoint": "/w/dfb.pth"},
            }
        }
    )
    samples = [f"results/synthetic/samples/{m}.parquet" for m in ("crops", "faceswap")]
    assert train_input(config, "x") == {"weights": ["/w/xception-b5690688.pth"], "samples": samples}
    assert train_input(config, "f") == {"weights": ["/w/dfb.pth"], "samples": samples}
    # imported as is, not trained
    assert train_input(config, "i") == {"weights": ["/w/dfb.pth"], "samples": []}
    f = detector_settings(config, "f")
    assert (f["init"], f["init_checkpoint"], f["init_format"]) == (
        "checkpoint",
        "/w/dfb.pth",
        "fairforge",
    )
    assert detector_settings(config, "x")["pretrained"] == "/w/xception-b5690688.pth"


def test_a_pretrained_file_for_an_architecture_without_layout_stops_the_config():
    from fairforge.config import ConfigError, validate_config

    with pytest.raises(
        ConfigError, match=r"detectors\.m\.pretrained: unknown pretrained layout 'meso4'"
    ):
        validate_config({"detectors": {"m": {"arch": "meso4", "pretrained": "/w/x.pth"}}})


def _efficientnet_pytorch_b0(size: int, seed: int):
    """A B0 in efficientnet_pytorch's names and layout (tests/helpers/deepfakebench_reference.py) with
    random weights and BatchNorm statistics of random images, and its ImageNet head."""
    with torch.device("meta"):
        net = dfb._EfficientNet(size, dfb._B0, stem=32, head=1280, unpadded_stem=False)
        net._fc = torch.nn.Linear(1280, 1000)
    net.load_state_dict(dfb.random_state(dfb.key_table(net), seed, {}), assign=True)
    dfb.calibrate_batchnorm(net, lambda m, x: m.extract_features(x), size, seed)
    return net.eval()


def test_an_efficientnet_pytorch_file_maps_onto_timm_names(tmp_path):
    """efficientnet_pytorch's ``_conv_stem`` / ``_blocks.N._depthwise_conv`` / ``_bn0`` names
    (the AdvProp file DeepfakeBench and the multi-attention authors start from) load onto the
    timm EfficientNet of ``efficientnet_b4`` (here at B0 size) and compute the same features."""
    size = 64
    reference = _efficientnet_pytorch_b0(size, seed=4)
    state = reference.state_dict()
    assert "_blocks.0._depthwise_conv.weight" in state and "_blocks.1._expand_conv.weight" in state
    path = _save(state, tmp_path / "adv-efficientnet-b0.pth")
    model = create_detector("efficientnet_b4", input_size=size, backbone="tf_efficientnet_b0")
    head = model.backbone.classifier.weight.clone()
    loaded = apply_pretrained(model, "efficientnet_b4", path)
    assert loaded == len(model.backbone.state_dict()) - 2  # all but our one-logit head
    assert torch.equal(model.backbone.classifier.weight, head)
    model.eval()
    x = dfb.calibration_images(size, seed=4)
    with torch.no_grad():
        expected = reference.extract_features(x)
        got = model.backbone.forward_features(x)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
    # the multi-attention backbone takes the same file
    attention = create_detector("multi_attention", input_size=size, backbone="tf_efficientnet_b0")
    assert apply_pretrained(attention, "multi_attention", path) == loaded
    assert torch.equal(
        attention.backbone.blocks[1][0].conv_pw.weight, state["_blocks.1._expand_conv.weight"]
    )
    # a file of another depth leaves blocks unmatched, named in the error
    del state["_blocks.15._project_conv.weight"]
    with pytest.raises(PretrainedMismatch, match=r"blocks\.6\.0\.conv_pwl\.weight"):
        apply_pretrained(model, "efficientnet_b4", _save(state, tmp_path / "short.pth"))
