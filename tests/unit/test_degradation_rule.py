"""The learned degradation in the workflow: which generator far_learned@1 reads, and the
train_degradation rule run for real by Snakemake on two tiny folders."""

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from fairforge.config import validate_config
from fairforge.images import read_image
from fairforge.inference import variant_unavailable
from fairforge.perturb import apply_variant
from fairforge.training.degradation import train_high_to_low
from fairforge.workflow import (
    DEGRADATION_CHECKPOINT,
    degradation_images,
    degradation_inputs,
    degradation_settings,
    encoder_training,
    encoder_training_inputs,
    ranking_degradation,
    ranking_degradation_inputs,
    ranking_distances,
    ranking_view,
    trains_degradation,
    variant_options,
)

FAR_LEARNED = "far_learned@1"


def tiny_config(
    repo_root: Path, degradation: dict | None = None, options: dict | None = None
) -> dict:
    with open(repo_root / "tests" / "data" / "tiny_config.yaml") as fh:
        config = yaml.safe_load(fh)
    if degradation is not None:
        config["degradation"] = copy.deepcopy(degradation)
    if options is not None:
        config["variant_options"] = copy.deepcopy(options)
    return validate_config(config)


# --- which generator far_learned reads --------------------------------------------------------


def test_nothing_configured_leaves_far_learned_unavailable_at_its_default_path(repo_root):
    config = tiny_config(repo_root)
    assert not trains_degradation(config)
    assert variant_options(config, FAR_LEARNED) == {}
    assert degradation_inputs(config, FAR_LEARNED) == []
    reason = variant_unavailable(FAR_LEARNED, variant_options(config, FAR_LEARNED))
    assert reason and str(Path("weights/high_to_low/generator.pt")) in reason


def test_configured_folders_train_the_generator_far_learned_reads(repo_root):
    config = tiny_config(repo_root, {"high_dir": "faces/high", "low_dir": "faces/low"})
    assert trains_degradation(config)
    assert variant_options(config, FAR_LEARNED) == {
        "far_learned": {"weights": DEGRADATION_CHECKPOINT}
    }
    assert degradation_inputs(config, FAR_LEARNED) == [DEGRADATION_CHECKPOINT]
    # Other variants neither get the option nor wait for the generator.
    for variant in ("clean", "jpeg@30", "far@3"):
        assert "far_learned" not in variant_options(config, variant)
        assert degradation_inputs(config, variant) == []
    # Until the job has run, the variant names the file it waits for.
    reason = variant_unavailable(FAR_LEARNED, variant_options(config, FAR_LEARNED))
    assert reason and DEGRADATION_CHECKPOINT in reason
    settings = degradation_settings(config)
    assert settings == {
        "high_dir": "faces/high",
        "low_dir": "faces/low",
        "steps": 2000,
        "batch_size": 32,
        "seed": 3,
        "device": "auto",
    }


def test_the_ranking_study_reads_the_learned_degradation_it_is_given(repo_root):
    """ranking.degradation: learned waits for the generator the workflow trains, or reads a
    ready checkpoint; the classical chain needs none; learned without either is an error."""
    config = tiny_config(repo_root, {"high_dir": "faces/high", "low_dir": "faces/low"})
    assert ranking_degradation(config) == {"degradation": "classical", "generator": None}
    assert ranking_degradation_inputs(config) == []
    config["ranking"]["degradation"] = "learned"
    assert ranking_degradation(config)["generator"] == DEGRADATION_CHECKPOINT
    assert ranking_degradation_inputs(config) == [DEGRADATION_CHECKPOINT]
    ready = tiny_config(repo_root, {"checkpoint": "g.pt"})
    ready["ranking"]["degradation"] = "learned"
    assert ranking_degradation(ready)["generator"] == "g.pt"
    assert ranking_degradation_inputs(ready) == []
    # far@d on detectors is defined on the face width too: the face spans 1/(1 + 2 margin)
    assert variant_options(config, "far@3") == {"far": {"face_fraction": pytest.approx(2 / 3)}}
    bare = tiny_config(repo_root)
    bare["ranking"]["degradation"] = "learned"
    with pytest.raises(ValueError, match="learned needs"):
        ranking_degradation(bare)


def test_several_distances_each_with_its_degradation(repo_root):
    """ranking.distances: one study per value in the same run, a level of the classical
    chain or the learned generator (trained earlier in the run); the one-distance keys are
    its default."""
    config = tiny_config(repo_root, {"high_dir": "faces/high", "low_dir": "faces/low"})
    assert ranking_distances(config) == [2]  # tiny_config's ranking.distance
    config["ranking"]["degradation"] = "learned"
    assert ranking_distances(config) == ["learned"]
    config["ranking"]["distances"] = ["learned", 4]
    config = validate_config(config)
    assert ranking_distances(config) == ["learned", 4]
    # the wildcard holds the text
    assert (
        ranking_view(config, "4")
        == ranking_view(config, 4)
        == {
            "distance": 4,
            "degradation": "classical",
            "generator": None,
        }
    )
    assert ranking_view(config, "learned") == {
        "degradation": "learned",
        "generator": DEGRADATION_CHECKPOINT,
    }
    assert ranking_degradation_inputs(config, "learned") == [DEGRADATION_CHECKPOINT]
    assert ranking_degradation_inputs(config, "4") == []
    assert ranking_degradation_inputs(config) == [DEGRADATION_CHECKPOINT]  # the first
    bare = tiny_config(repo_root)
    bare["ranking"]["distances"] = [3, "learned"]
    assert ranking_view(validate_config(bare), 3)["degradation"] == "classical"
    with pytest.raises(ValueError, match=r"ranking\.distances: learned needs"):
        ranking_view(bare, "learned")
    for wrong in ([6], ["far"], [3, 3], []):
        bad = tiny_config(repo_root)
        bad["ranking"]["distances"] = wrong
        with pytest.raises(ValueError, match=r"ranking\.distances"):
            validate_config(bad)


def test_far_trained_encoders_train_on_the_ranking_degradation(repo_root):
    """A far-trained encoder sees its crops through the degradation that the ranking
    applies: with ranking.degradation: learned, its rule waits for the generator the
    workflow trains and passes it on; near-trained encoders and the classical chain need
    none."""
    config = tiny_config(repo_root, {"high_dir": "faces/high", "low_dir": "faces/low"})
    config["ranking"]["splits"] = ["test"]
    config["ranking"]["encoders"] = {
        "far": {"encoder": "mobilefacenet", "train": {"far": True}},
        "near": {"encoder": "mobilefacenet", "train": {}},
    }
    config = validate_config(config)
    classical = encoder_training(config, "far")
    assert classical["far"] is True and "generator" not in classical
    assert encoder_training_inputs(config, "far") == []
    config["ranking"]["degradation"] = "learned"
    learned = encoder_training(config, "far")
    # the generator has one distance: no level is passed on
    assert learned == {
        **{k: v for k, v in classical.items() if k != "distance"},
        "degradation": "learned",
        "generator": DEGRADATION_CHECKPOINT,
    }
    assert encoder_training_inputs(config, "far") == [DEGRADATION_CHECKPOINT]
    # several distances: far-trained encoders see their crops at the first
    config["ranking"]["distances"] = [4, "learned"]
    assert encoder_training(config, "far") == {**classical, "distance": 4}
    assert encoder_training_inputs(config, "far") == []
    config["ranking"]["distances"] = ["learned", 4]
    assert encoder_training(config, "far") == learned
    assert "generator" not in encoder_training(config, "near")
    assert encoder_training_inputs(config, "near") == []
    # a ready checkpoint is read, not waited for (as for the ranking's probes)
    ready = tiny_config(repo_root, {"checkpoint": "g.pt"})
    ready["ranking"].update(
        degradation="learned", splits=["test"], encoders=config["ranking"]["encoders"]
    )
    assert encoder_training(ready, "far")["generator"] == "g.pt"
    assert encoder_training_inputs(ready, "far") == []


def test_a_ready_checkpoint_is_used_without_training(repo_root, tmp_path, face_folders):
    ckpt = tmp_path / "given.pt"
    config = tiny_config(
        repo_root, {"high_dir": "faces/high", "low_dir": "faces/low", "checkpoint": str(ckpt)}
    )
    assert not trains_degradation(config)
    options = variant_options(config, FAR_LEARNED)
    assert options == {"far_learned": {"weights": str(ckpt)}}
    # Not an input: a missing checkpoint makes the variant unavailable, not the DAG fail.
    assert degradation_inputs(config, FAR_LEARNED) == []
    assert str(ckpt) in variant_unavailable(FAR_LEARNED, options)

    high, low = face_folders
    train_high_to_low(high, low, ckpt, steps=1, seed=0, batch_size=2, device="cpu")
    assert variant_unavailable(FAR_LEARNED, options) is None
    face = read_image(sorted(high.glob("*.png"))[0])
    degraded = apply_variant(face, FAR_LEARNED, "sample-1", options)
    assert degraded.shape == face.shape and degraded.dtype == np.uint8
    assert not np.array_equal(degraded, face)
    np.testing.assert_array_equal(degraded, apply_variant(face, FAR_LEARNED, "sample-1", options))


def test_explicit_variant_options_win_over_the_degradation_block(repo_root):
    block = {"high_dir": "faces/high", "low_dir": "faces/low"}
    config = tiny_config(repo_root, block, {"far_learned": {"weights": "mine.pt"}})
    assert variant_options(config, FAR_LEARNED) == {"far_learned": {"weights": "mine.pt"}}
    assert degradation_inputs(config, FAR_LEARNED) == []  # the trained one is not read
    config = tiny_config(repo_root, block, {"far_learned": {"device": "cpu"}})
    assert variant_options(config, FAR_LEARNED) == {
        "far_learned": {"weights": DEGRADATION_CHECKPOINT, "device": "cpu"}
    }
    assert degradation_inputs(config, FAR_LEARNED) == [DEGRADATION_CHECKPOINT]


def test_one_folder_without_the_other_is_a_config_error(repo_root):
    config = tiny_config(repo_root, {"high_dir": "faces/high"})
    with pytest.raises(ValueError, match="low_dir"):
        trains_degradation(config)


def test_training_inputs_are_the_images_of_each_folder(repo_root, face_folders, tmp_path):
    high, low = face_folders
    (high / "notes.txt").write_text("not a face")
    config = tiny_config(repo_root, {"high_dir": str(high), "low_dir": str(tmp_path / "none")})
    images = degradation_images(config, "high_dir")
    assert len(images) == 16 and all(p.endswith(".png") for p in images)
    assert images == sorted(images)
    assert degradation_images(config, "low_dir") == [str(tmp_path / "none")]


# --- the rule, run for real ----------------------------------------------------------------------
