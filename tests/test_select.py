"""``select:``: a part of a paper's config from a second file (fairforge.workflow.select_config).

On the shipped paper configs: names are checked against what the file defines, the config's
order and the detectors' training datasets are kept, and the fakes generated only for the
training of left-out detectors go with them."""

from __future__ import annotations

import copy

import pytest
import yaml

from fairforge.config import validate_config
from fairforge.workflow import all_variants, dataset_methods, feature_jobs, select_config


def paper(repo_root, name: str, select: dict | None = None) -> dict:
    config = yaml.safe_load((repo_root / "configs" / f"{name}.yaml").read_text())
    if select is not None:
        config["select"] = select
    return validate_config(config)


def test_no_selection_leaves_the_config_as_it_is(repo_root):
    for name in ("fairfd", "benchmark_paper", "assessment", "exposure"):
        config = paper(repo_root, name)
        assert select_config(copy.deepcopy(config)) == config
    demo = validate_config(yaml.safe_load((repo_root / "config.yaml").read_text()))
    assert select_config(copy.deepcopy(demo)) == demo


def test_one_fairfd_detector_keeps_its_data_and_the_test_approaches(repo_root):
    config = select_config(paper(repo_root, "fairfd", {"detectors": ["f3net"]}))
    assert list(config["detectors"]) == ["f3net"]
    assert list(config["datasets"]) == ["ffpp", "rfw"]
    # nothing is generated on FF++; RFW keeps FairFD's five approaches
    assert dataset_methods(config, "ffpp") == []
    assert dataset_methods(config, "rfw") == [
        "faceswap",
        "simswap",
        "fastreen",
        "dualreen",
        "maskgan",
    ]
    assert config["variants"] == ["clean", "grayscale@1"]
    # Xception's feature analysis (Figs. 6 and 7) goes with Xception
    assert feature_jobs(config) == []
    kept = select_config(paper(repo_root, "fairfd", {"detectors": ["f3net", "xception"]}))
    assert list(kept["detectors"]) == ["xception", "f3net"]
    assert feature_jobs(kept) == [("xception", "rfw")]


def test_selection_is_idempotent(repo_root):
    """A cluster job parses the workflow again and selects from the same files."""
    once = select_config(paper(repo_root, "benchmark_paper", {"detectors": ["meso4"]}))
    assert select_config(copy.deepcopy(once)) == once


@pytest.mark.parametrize(
    ("name", "select", "message"),
    [
        ("fairfd", {"detectors": ["mesonet"]}, r"select\.detectors: \['mesonet'\] not defined"),
        ("fairfd", {"datasets": ["celebdf"]}, r"select\.datasets: \['celebdf'\].*'ffpp', 'rfw'"),
        ("fairfd", {"variants": ["jpeg@50"]}, r"select\.variants: \['jpeg@50'\].*grayscale@1"),
        ("exposure", {"encoders": ["facenet"]}, r"select\.encoders: .*ranking\.encoders"),
    ],
)
def test_an_unknown_name_names_the_key_and_the_valid_names(repo_root, name, select, message):
    with pytest.raises(ValueError, match=message):
        select_config(paper(repo_root, name, select))


def test_the_valid_names_are_listed(repo_root):
    with pytest.raises(ValueError) as err:
        select_config(paper(repo_root, "fairfd", {"detectors": ["mesonet"]}))
    for name in ("xception", "capsule", "spsl", "srm", "xception_balanced"):
        assert repr(name) in str(err.value)


def test_a_detector_whose_training_dataset_is_left_out_is_an_error(repo_root):
    # FairFD's detectors train on ffpp; rfw alone leaves them nothing to train on
    with pytest.raises(
        ValueError, match=r"select\.datasets: detector 'xception' trains on \['ffpp'\]"
    ):
        select_config(paper(repo_root, "fairfd", {"detectors": ["xception"], "datasets": ["rfw"]}))
    # The Assessment's raw detectors train on its first dataset (FF++ raw) without naming it
    with pytest.raises(ValueError, match=r"detector 'capsule_raw' trains on \['ffpp_raw'\]"):
        select_config(paper(repo_root, "assessment", {"datasets": ["celebdf"]}))
    # ... and a detector that names its own is fine without the first
    part = select_config(
        paper(repo_root, "assessment", {"detectors": ["xception_c23"], "datasets": ["ffpp_c23"]})
    )
    assert list(part["datasets"]) == ["ffpp_c23"] and list(part["detectors"]) == ["xception_c23"]


def test_the_ranking_keeps_its_selected_datasets_and_their_encoders_training_set(repo_root):
    """Exposure ranks DiveFace and VGGFace2 with encoders trained on DiveFace: selecting
    DiveFace ranks it alone; VGGFace2 alone leaves the trained encoders nothing to train on
    (an error, not another training set); no ranked dataset left is an error too."""
    config = yaml.safe_load((repo_root / "configs" / "exposure.yaml").read_text())
    config["select"] = {"datasets": ["diveface"]}
    part = select_config(validate_config(copy.deepcopy(config)))
    assert part["ranking"]["datasets"] == ["diveface"]
    assert part["ranking"]["train_dataset"] == "diveface"
    assert select_config(copy.deepcopy(part)) == part  # a cluster job selects again
    config["detectors"]["meso4"]["train_dataset"] = "vggface2"
    config["select"] = {"datasets": ["vggface2"]}
    with pytest.raises(ValueError, match=r"train on 'diveface' \(ranking\.train_dataset"):
        select_config(validate_config(copy.deepcopy(config)))
    # encoders trained elsewhere: VGGFace2 is ranked alone
    config["select"]["encoders"] = ["hrnet"]
    config["ranking"]["encoders"]["hrnet"] = {"checkpoint": "hrnet.pt"}
    part = select_config(validate_config(copy.deepcopy(config)))
    assert part["ranking"]["datasets"] == ["vggface2"] and "train_dataset" not in part["ranking"]
    config["ranking"].update(datasets=["diveface"])
    with pytest.raises(ValueError, match=r"ranks \['diveface'\] \(ranking\.datasets"):
        select_config(validate_config(copy.deepcopy(config)))
    config["ranking"]["enabled"] = False
    assert list(select_config(validate_config(config))["datasets"]) == ["vggface2"]


def test_benchmark_one_family_member_on_its_training_set(repo_root):
    config = select_config(
        paper(repo_root, "benchmark_paper", {"detectors": ["fwa_celebdf"], "datasets": ["celebdf"]})
    )
    assert list(config["detectors"]) == ["fwa_celebdf"] and list(config["datasets"]) == ["celebdf"]
    # fwa_celebdf trains on celebdf's fwa fakes; nobody selected trains on its xray fakes
    assert dataset_methods(config, "celebdf") == ["fwa"]
    assert config["forgery"]["methods"] == ["fwa"]


def test_variants_select_from_the_expanded_suites_and_keep_clean(repo_root):
    full = paper(repo_root, "benchmark_paper")
    some = all_variants(full)[3:5]
    config = select_config(paper(repo_root, "benchmark_paper", {"variants": some}))
    assert config["variants"] == ["clean", *some] and config["variant_suites"] == []
    assert all_variants(config) == ["clean", *some]


def test_encoders(repo_root):
    config = select_config(
        paper(repo_root, "exposure", {"encoders": ["hrnet_far", "mobilefacenet"]})
    )
    assert list(config["ranking"]["encoders"]) == ["mobilefacenet", "hrnet_far"]


def test_the_schema_checks_the_select_block(repo_root):
    from fairforge.config import ConfigError

    with pytest.raises(ConfigError, match=r"select: unknown key 'methods'"):
        paper(repo_root, "fairfd", {"methods": ["faceswap"]})
    with pytest.raises(ConfigError, match=r"select\.detectors"):
        paper(repo_root, "fairfd", {"detectors": []})
