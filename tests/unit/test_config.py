import pytest
import yaml

from fairforge.config import ConfigError, load_config, load_schema, validate_config
from fairforge.metrics import DEFAULT_CONVENTIONS, Conventions
from fairforge.metrics.conventions import UR_DENOMINATORS
from fairforge.metrics.detection import EER_METHODS, THRESHOLD_RULES


def test_defaults_are_filled_in_nested_blocks():
    config = validate_config({"detectors": {"m": {"arch": "meso4"}}})
    assert config["training"]["recipe"] == "deepfakebench"
    assert "init" not in config["detectors"]["m"]  # unset: as the architecture's paper
    assert config["metrics"]["ur_denominator"] == "one_plus_acc"


def test_conventions_defaults_and_choices_are_the_schemas():
    metrics = load_schema()["properties"]["metrics"]["properties"]
    for name in ("threshold", "threshold_rule", "eer", "ur_denominator"):
        assert getattr(DEFAULT_CONVENTIONS, name) == metrics[name]["default"], name
    assert list(THRESHOLD_RULES) == metrics["threshold_rule"]["enum"]
    assert list(EER_METHODS) == metrics["eer"]["enum"]
    assert set(UR_DENOMINATORS) == set(metrics["ur_denominator"]["enum"])
    # a validated config gives the conventions its metrics block holds, the rest ignored
    config = validate_config({"metrics": {"threshold_rule": ">=", "eer": "nearest"}})
    assert Conventions.from_config(config) == Conventions(threshold_rule=">=", eer="nearest")
    assert Conventions.from_config({}) == DEFAULT_CONVENTIONS
    with pytest.raises(ValueError, match="ur_denominator"):
        Conventions(ur_denominator="half")
    with pytest.raises(ValueError, match="threshold_rule"):
        Conventions(threshold_rule="=>")


def test_unknown_key_is_named():
    with pytest.raises(ConfigError, match=r"detectors\.m: unknown key 'epoch'"):
        validate_config({"detectors": {"m": {"arch": "meso4", "epoch": 3}}})
    with pytest.raises(ConfigError, match="unknown key 'sed'"):
        validate_config({"sed": 1})


def test_wrong_type_names_the_key():
    with pytest.raises(ConfigError, match=r"training\.epochs"):
        validate_config({"training": {"epochs": "many"}})
    with pytest.raises(ConfigError, match=r"metrics\.ur_denominator"):
        validate_config({"metrics": {"ur_denominator": "half"}})


def test_references_and_split_checked():
    with pytest.raises(ConfigError, match="train_dataset"):
        validate_config({"detectors": {"m": {"train_dataset": "nope"}}})
    with pytest.raises(ConfigError, match="sum to 1"):
        validate_config({"split": {"train": 0.5, "val": 0.2, "test": 0.2}})


def test_a_job_process_checks_the_schema_and_leaves_the_references_to_the_planner():
    """A cluster job parses the workflow again (check_references=False): defaults are
    filled and schema errors still stop it; names and links were checked at planning."""
    config = validate_config(
        {"detectors": {"m": {"train_dataset": "nope"}}}, check_references=False
    )
    assert config["training"]["recipe"] == "deepfakebench"
    with pytest.raises(ConfigError, match="epochs"):
        validate_config({"training": {"epochs": "many"}}, check_references=False)


def test_shipped_config_is_valid(repo_root):
    config = load_config(repo_root / "config.yaml")
    assert "synthetic" in config["datasets"]
    with open(repo_root / "config.yaml") as fh:
        assert yaml.safe_load(fh)["datasets"]["synthetic"]["adapter"] == "synthetic"


def test_variants_are_checked_at_start():
    validate_config(
        {"variants": ["clean", "jpeg@30", "far@3", "vid_h264@40", "learned_compression@3"]}
    )  # missing weights: not an error
    with pytest.raises(ConfigError, match="'jpeg@50'"):
        validate_config({"variants": ["jpeg@50"]})
    with pytest.raises(ConfigError, match="unknown operation 'blur'"):
        validate_config({"variants": ["blur@3"]})


def test_training_methods_must_be_generated():
    with pytest.raises(ConfigError, match=r"detectors\.m\.train_methods: \['sbi'\]"):
        validate_config({"detectors": {"m": {"arch": "meso4", "train_methods": ["sbi"]}}})
    validate_config(
        {
            "forgery": {"methods": ["faceswap", "sbi"]},
            "detectors": {"m": {"arch": "meso4", "train_methods": ["sbi"]}},
        }
    )


def test_trained_encoders_are_checked_and_resolved():
    from fairforge.workflow import encoder_training, ranking_encoders, trained_encoders

    def ranking(encoders, splits=("val", "test")):
        return {"ranking": {"encoders": encoders, "splits": list(splits), "distance": 4}}

    config = validate_config(
        ranking(
            {
                "dlib_resnet": {},
                "far_mfn": {"encoder": "mobilefacenet", "train": {"far": True, "epochs": 2}},
            }
        )
    )
    assert trained_encoders(config) == ["far_mfn"]
    assert ranking_encoders(config) == {
        "dlib_resnet": {"encoder": "dlib_resnet"},
        "far_mfn": {"encoder": "mobilefacenet", "checkpoint": "results/encoders/far_mfn/model.pt"},
    }
    settings = encoder_training(config, "far_mfn")
    assert settings["arch"] == "mobilefacenet" and settings["distance"] == 4
    assert settings["far"] is True and settings["epochs"] == 2 and settings["head"] == "npcface"
    # the Exposure paper's recipe is the default train block
    recipe = {k: settings[k] for k in ("optimizer", "lr", "momentum", "weight_decay")}
    assert recipe == {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-8}
    assert settings["milestones"] == [5, 25, 68] and settings["batch_size"] == 64
    assert settings["patience"] == 5

    with pytest.raises(ConfigError, match=r"ranking\.encoders\.r\.train: unknown key 'epoch'"):
        validate_config(ranking({"r": {"encoder": "resnet", "train": {"epoch": 2}}}))
    with pytest.raises(
        ConfigError,
        match=r"ranking\.encoders\.dlib_resnet\.train: "
        "'dlib_resnet' is not a trainable encoder",
    ):
        validate_config(ranking({"dlib_resnet": {"train": {}}}))
    with pytest.raises(ConfigError, match="either checkpoint"):
        validate_config(ranking({"resnet": {"train": {}, "checkpoint": "r.pt"}}))
    # ranking the identities an encoder trained on would flatter it
    with pytest.raises(ConfigError, match=r"ranking\.splits: .*train split"):
        validate_config(ranking({"resnet": {"train": {}}}, splits=("train", "test")))


def test_ranked_datasets_and_the_encoders_training_set():
    """ranking.datasets ranks several datasets in one run; trained encoders learn
    ranking.train_dataset's train identities (default: the first ranked dataset), so only
    that dataset's train split may not be ranked."""
    from fairforge.workflow import encoder_train_dataset, ranked_datasets

    datasets = {name: {"adapter": "synthetic"} for name in ("a", "b")}
    trained = {"mfn": {"encoder": "mobilefacenet", "train": {}}}

    def ranking(**keys):
        return {"datasets": datasets, "ranking": {"encoders": trained, "splits": ["test"], **keys}}

    config = validate_config(ranking())
    assert ranked_datasets(config) == ["a"] and encoder_train_dataset(config) == "a"
    config = validate_config(ranking(datasets=["b", "a"]))
    assert ranked_datasets(config) == ["b", "a"] and encoder_train_dataset(config) == "b"
    config = validate_config(ranking(datasets=["b"], train_dataset="a", splits=["train", "test"]))
    assert ranked_datasets(config) == ["b"] and encoder_train_dataset(config) == "a"
    with pytest.raises(ConfigError, match=r"ranking\.splits: .*train split of 'a'"):
        validate_config(ranking(datasets=["a", "b"], splits=["train", "test"]))
    with pytest.raises(ConfigError, match=r"ranking\.datasets: unknown dataset 'c'"):
        validate_config(ranking(datasets=["a", "c"]))
    with pytest.raises(ConfigError, match=r"ranking\.train_dataset: unknown dataset 'c'"):
        validate_config(ranking(train_dataset="c"))
    with pytest.raises(ConfigError, match="not both"):
        validate_config(ranking(dataset="a", datasets=["b"]))
    with pytest.raises(ConfigError, match=r"ranking\.datasets"):
        validate_config(ranking(datasets=["a", "a"]))
    datasets["a"]["split"] = "test_only"
    with pytest.raises(ConfigError, match=r"ranking\.train_dataset: .*'a', which is test_only"):
        validate_config(ranking(datasets=["a", "b"]))


def test_registered_names_are_checked_against_their_registries():
    """Adapters, forgery method/backend pairs and augmentations are valid when registered,
    so a member a user adds needs no schema edit; a wrong name lists the valid ones."""
    with pytest.raises(
        ConfigError,
        match=r"datasets\.d\.adapter: unknown adapter 'rfv'; "
        r"valid: .*rfw",
    ):
        validate_config({"datasets": {"d": {"adapter": "rfv", "root": "/x"}}})
    with pytest.raises(
        ConfigError,
        match=r"forgery\.methods: faceswap: unknown forgery "
        r"method 'faceswap/gan'",
    ):
        validate_config({"forgery": {"methods": ["faceswap"], "backends": {"faceswap": "gan"}}})
    with pytest.raises(
        ConfigError,
        match=r"detectors\.m\.augment: unknown augmentation "
        r"'sdag'; valid: augmix, daug, deepfakebench, fairfd, none, sdaug",
    ):
        validate_config({"detectors": {"m": {"arch": "meso4", "augment": "sdag"}}})
    with pytest.raises(
        ConfigError, match=r"detectors\.m\.recipe: unknown recipe 'sb'; valid: .*sbi"
    ):
        validate_config({"detectors": {"m": {"arch": "meso4", "recipe": "sb"}}})


def test_quality_identity_sample_default_is_the_cards():
    from fairforge.forgery.quality import IDENTITY_PER_GROUP

    config = validate_config({"datasets": {"s": {"adapter": "synthetic"}}})
    assert config["forgery"]["quality"]["identity_per_group"] == IDENTITY_PER_GROUP
