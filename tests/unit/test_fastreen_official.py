"""``fastreen`` backend ``official``: the bi-layer release (Zakharov et al., ECCV 2020, FairFD's
reference [23]) and its Graphonomy parser, loaded from the release's files, compute the
release's function.

tests/helpers/fastreen_reference.py restates the release. Random weights in the release's layout
(spectral-norm keys, Graphonomy's DataParallel names) are loaded through fairforge's loader;
with the narrow widths the release's arguments allow (tests/helpers/fastreen_reference.SMALL_ARGS:
the same blocks, fewer channels) the whole pipeline on real photographs gives the release's
outputs, and at the released widths every network does.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fastreen_reference as ref
from fairforge.checkpoints import CheckpointMismatch
from fairforge.config import ConfigError, validate_config
from fairforge.forgery import FORGERY_METHODS, create_method, list_backends
from fairforge.forgery.fastreen_official import read_args
from fairforge.forgery.nets import bilayer, load_released
from fairforge.forgery.releases import ReleaseFileError
from official_support import photographs

TOL = 1e-5


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict:
    return ref.random_release(tmp_path_factory.mktemp("fastreen"))


@pytest.fixture(scope="module")
def method(release):
    return create_method("fastreen", "official", **release)


@pytest.fixture(scope="module")
def faces():
    return photographs()


def test_registered_as_a_reenactment_that_keeps_the_source():
    assert "official" in list_backends("fastreen")
    assert FORGERY_METHODS.metadata("fastreen/official")["kept"] == "source"


def test_photographs_reenacted_as_the_release_infers(method, faces, monkeypatch):
    """Crop, keypoints, stickman, Graphonomy foreground, texture, enhanced texture, image and
    segmentation equal ``InferenceWrapper.forward`` on real photographs; the forgery keeps the
    source crop outside its mask bit for bit."""
    source, driver = faces
    seen = {}
    generate = method.generate

    def spy(*args):
        seen.update(generate(*args))
        return seen

    monkeypatch.setattr(method, "generate", spy)
    rng = np.random.default_rng(0)
    result = method(source.crop, source.landmarks, driver.crop, driver.landmarks, rng)
    args, nets, segmentation = ref.load_release()
    theirs = ref.infer(
        args, nets, segmentation, source.crop, source.landmarks, driver.crop, driver.landmarks
    )

    def as_uint8(t):
        return ((t[0, 0].permute(1, 2, 0).numpy() / 2 + 0.5) * 255).round().astype(np.uint8)

    assert np.array_equal(seen["square"], as_uint8(theirs["source_imgs"]))
    assert np.array_equal(seen["stickman"], as_uint8(theirs["source_stickmen"]))
    np.testing.assert_array_equal(seen["source_pose"], theirs["source_poses"][0, 0].numpy())
    np.testing.assert_array_equal(seen["target_pose"], theirs["target_poses"][0, 0].numpy())
    # Graphonomy's logits on the source square (random weights leave its foreground nearly
    # flat, so the logits' spatial detail is what is compared)
    bgr = theirs["source_imgs"][0][:, [2, 1, 0]]
    with torch.no_grad():
        expected = segmentation.net(
            bgr, segmentation.adj1_test, segmentation.adj3_test, segmentation.adj2_test
        )
        got = method.parser(bgr)
    assert (expected - expected.mean((2, 3), keepdim=True)).std() > 1e-4
    torch.testing.assert_close(got, expected, atol=TOL, rtol=0)
    torch.testing.assert_close(seen["foreground"], theirs["source_segs"][0], atol=TOL, rtol=0)
    pairs = {
        "texture": theirs["pred_tex_hf_rgbs"][:, 0],
        "enhanced_texture": theirs["pred_enh_tex_hf_rgbs"][:, 0],
        "image": theirs["pred_enh_target_imgs"][:, 0],
        "segmentation": theirs["pred_target_segs"][:, 0],
    }
    for name, expected in pairs.items():
        assert expected.std() > 1e-4, name
        torch.testing.assert_close(seen[name], expected, atol=TOL, rtol=0, msg=name)

    assert result.image.shape == source.crop.shape and result.mask.any()
    outside = result.mask == 0
    assert np.array_equal(result.image[outside], source.crop[outside])
    assert (result.image[~outside] != source.crop[~outside]).any()


def test_the_generators_at_the_released_widths_compute_the_release_s():
    """The released sizes of the networks the projectors drive (texture generator 64-512
    channels with per-pixel norms at 4-256 px, inference generator 32-256 channels, the
    256-wide keypoints embedder) on random embeddings and keypoints. The plain residual
    stacks (identity embedder, enhancer) run the same code at any width: the photograph
    test covers them at the narrow widths."""
    args = ref.args_namespace(ref.RELEASED_ARGS)
    cfg = bilayer.BilayerConfig()
    builds = {
        "texture_generator": bilayer.TextureGenerator,
        "keypoints_embedder": bilayer.PoseEmbedder,
        "inference_generator": bilayer.InferenceGenerator,
    }
    ours, theirs = {}, {}
    for name, build in builds.items():
        state = ref.random_network_state(name, small=False)
        ours[name] = load_released(lambda b=build: b(cfg), bilayer.fold_spectral_norm(state), name)
        net = ref.build_network(args, name)
        net.load_state_dict(state)
        theirs[name] = net.apply(ref.remove_spectral_norm).eval()
    g = torch.Generator().manual_seed(5)
    channels = (512, 512, 512, 256, 128, 64)
    data = {
        "source_idt_embeds": [torch.randn(1, c, 8, 8, generator=g) for c in channels],
        "source_poses": torch.rand(1, 1, 136, generator=g) * 2 - 1,
        "target_poses": torch.rand(1, 1, 136, generator=g) * 2 - 1,
    }
    with torch.no_grad():
        for name in ("texture_generator", "keypoints_embedder", "inference_generator"):
            data = theirs[name](data)
        embeds = data["source_idt_embeds"]
        texture = ours["texture_generator"](embeds)
        target = ours["keypoints_embedder"](data["target_poses"][:, 0])
        inference = ours["inference_generator"]
        inference.adapt(embeds)
        uvs, lf, logits = inference(target)
        source_uvs = inference(ours["keypoints_embedder"](data["source_poses"][:, 0]))[0]
    pairs = {
        "texture": (texture, data["pred_tex_hf_rgbs"][:, 0]),
        "pose": (target, data["target_pose_embeds"][:, 0]),
        "uvs": (uvs, data["pred_target_uvs"][:, 0]),
        "low frequencies": (lf, data["pred_target_delta_lf_rgbs"][:, 0]),
        "segmentation": (torch.sigmoid(logits), data["pred_target_segs"][:, 0]),
        "source uvs": (source_uvs, data["pred_source_uvs"][:, 0]),
    }
    for name, (got, expected) in pairs.items():
        assert expected.std() > 1e-4, name
        torch.testing.assert_close(got, expected, atol=TOL, rtol=0, msg=name)


def test_missing_release_files_name_option_file_and_release(tmp_path, release):
    with pytest.raises(ReleaseFileError, match=r"2225_identity_embedder\.pth.*saic-violet"):
        create_method("fastreen", "official")
    missing = {**release, "graphonomy_path": str(tmp_path / "none.pth")}
    with pytest.raises(ReleaseFileError, match=r"graphonomy_path.*pretrained_model\.pth.*no file"):
        create_method("fastreen", "official", **missing)
    with pytest.raises(ConfigError, match=r"forgery\.options\.fastreen.*args_path.*args\.txt"):
        options = {k: v for k, v in release.items() if k != "args_path"}
        validate_config(
            {
                "forgery": {
                    "methods": ["fastreen"],
                    "backends": {"fastreen": "official"},
                    "options": {"fastreen": options},
                }
            }
        )


def test_wrong_files_say_what_is_wrong(tmp_path, release):
    args = read_args(release["args_path"])
    assert args["tex_norm_layer_type"] == "ada_spade_bn" and args["eps"] == 1e-7
    other = tmp_path / "args.txt"
    ref.write_args(other, {**ref.SMALL_ARGS, "tex_norm_layer_type": "ada_bn"})
    with pytest.raises(ValueError, match=r"tex_norm_layer_type='ada_bn'.*released"):
        create_method("fastreen", "official", **{**release, "args_path": str(other)})

    state = dict(ref.random_states()["keypoints_embedder"])
    del state["net.mlp.0.weight_orig"]
    torch.save(state, tmp_path / "2225_keypoints_embedder.pth")
    broken = {**release, "keypoints_embedder_path": str(tmp_path / "2225_keypoints_embedder.pth")}
    with pytest.raises(CheckpointMismatch, match=r"keypoints_embedder.*net\.mlp\.0\.weight"):
        create_method("fastreen", "official", **broken)

    parser = {k: v for k, v in ref.random_states()["graphonomy"].items() if "semantic" not in k}
    torch.save(parser, tmp_path / "pretrained_model.pth")
    broken = {**release, "graphonomy_path": str(tmp_path / "pretrained_model.pth")}
    with pytest.raises(CheckpointMismatch, match=r"Graphonomy.*semantic\.weight"):
        create_method("fastreen", "official", **broken)
