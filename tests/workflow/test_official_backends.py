"""The official forgery backends in the workflow: a tiny dataset forged with ``backend:
official`` on random-weight release files, end to end by Snakemake up to the forgery quality
card, which compares each method's official fakes with its classical ones per group
(``forgery.quality.compare_backends``); and a config naming a missing release file stops
``snakemake -n`` before any job, naming the method, the file and its release.

Adding an official method is one entry in :data:`RELEASES`: a function writing its release
files (random weights in the release's layout) into a folder and returning its options.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pandas as pd
import pytest
import yaml

import dualreen_reference
import fastreen_reference
import maskgan_reference
import simswap_reference
from fairforge.config import ConfigError, validate_config
from fairforge.forgery import FORGERY_METHODS, method_key
from fairforge.paths import result_path
from fairforge.workflow import forgery_options, quality_comparisons
from snakemake_run import snakemake


def simswap_release(folder: Path) -> dict:
    """SimSwap 224 (one ID-injection block, a one-block-per-stage ArcFace: the tiny run's
    speed; the released depths are checked in tests/unit/test_simswap_official.py)."""
    return simswap_reference.write_random_release(folder, 224, seed=4, n_blocks=1)[0]


# method -> writes its release files into a folder, returns forgery.options.<method>
RELEASES = {
    "simswap": simswap_release,
    "dualreen": dualreen_reference.random_release,  # the released sizes (VGG-Face included)
    "fastreen": fastreen_reference.random_release,  # the test widths of its args.txt
    "maskgan": maskgan_reference.random_release,  # a narrow generator at 64 px, the full parser
}
GROUPS = ["tone1", "tone2", "tone3", "tone4"]


def tiny_config(options: dict[str, dict]) -> dict:
    """Two subjects per tone, two photos each, every one tested (so every subject has a
    partner of its group and split); crops of 128 px, which SimSwap's 40-px paste-back
    erosion leaves a face to swap in."""
    methods = sorted(options)
    return {
        "seed": 5,
        "shard_size": 40,
        "datasets": {
            "synthetic": {
                "adapter": "synthetic",
                "group_by": ["tone"],
                "split": "test_only",
                "options": {"subjects_per_group": 1, "images_per_subject": 2, "size": 400},
            }
        },
        "faces": {"crop_size": 128, "compare_backends": []},
        "forgery": {
            "methods": methods,
            "backends": dict.fromkeys(methods, "official"),
            "options": copy.deepcopy(options),
            "quality": {
                "identity_per_group": 1,
                "compare_backends": {m: ["classical", "official"] for m in methods},
            },
        },
        "training": {"train_methods": methods},  # no detector is trained: the config asks
        "metrics": {"bootstrap": 20},
        "ranking": {"enabled": False},
    }


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("releases")
    return {method: write(root / method) for method, write in RELEASES.items()}


def test_each_backend_takes_its_own_options_of_a_compared_method(releases):
    config = validate_config(tiny_config(releases))
    for method, options in releases.items():
        assert forgery_options(config, method, "official") == options
        classical = FORGERY_METHODS.get(method_key(method, "classical")).defaults
        assert set(forgery_options(config, method, "classical")) <= set(classical)
    assert quality_comparisons(config, "synthetic") == [(m, "classical") for m in sorted(releases)]
    wrong = tiny_config(releases)
    wrong["forgery"]["options"]["simswap"]["generator"] = "typo"
    with pytest.raises(
        ConfigError, match=r"simswap \(official, classical\) has no option.*generator"
    ):
        validate_config(wrong)
    wrong = tiny_config(releases)
    wrong["forgery"]["quality"]["compare_backends"]["faceswap"] = ["classical"]
    with pytest.raises(
        ConfigError, match=r"compare_backends: \['faceswap'\] not in forgery.methods"
    ):
        validate_config(wrong)


@pytest.mark.workflow
def test_official_backends_forge_a_tiny_dataset_up_to_the_quality_card(
    releases, repo_root, tmp_path
):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(tiny_config(releases)))
    card_path = result_path("forgery_quality")
    snakemake(repo_root, tmp_path, "--cores", "2", card_path, timeout=3000)
    results = tmp_path / "results"
    for method in RELEASES:
        fakes = pd.read_parquet(results / "synthetic" / "forgeries" / f"{method}.parquet")
        assert (fakes["backend"] == "official").all() and fakes["ok"].all(), fakes["reason"]
        compared = pd.read_parquet(
            tmp_path / result_path("forgery_quality_compared", dataset="synthetic", method=method, backend="classical")
        )  # fmt: skip
        assert (compared["backend"] == "classical").all()
        assert set(compared["sample_id"]) == set(fakes["sample_id"])  # the same pairs
    card = pd.read_csv(tmp_path / card_path)
    expected = set(itertools.product(RELEASES, GROUPS, ["classical", "official"]))
    assert set(zip(card["method"], card["group"], card["backend"])) == expected
    assert len(card) == len(expected)
    assert (card["n_fakes"] == 4).all()  # two subjects of two photos in every group
    official = card.loc[card["backend"] == "official"]
    assert (official["change_energy"] > 2).all() and (official["near_invisible"] == 0).all()
    # separation is the forged fakes' (official), not the compared backend's
    assert card.loc[card["backend"] == "classical", "n_separation"].eq(0).all()
    assert (tmp_path / result_path("forgery_quality_figure", method="simswap")).is_file()


@pytest.mark.workflow
@pytest.mark.parametrize("method", sorted(RELEASES))
def test_a_missing_release_file_stops_the_dry_run(releases, repo_root, tmp_path, method):
    options = copy.deepcopy(releases)
    specs = FORGERY_METHODS.get(method_key(method, "official")).release_files
    first = next(s for s in specs if s.required)
    options[method][first.option] = str(
        tmp_path / "nowhere" / Path(options[method][first.option]).name
    )
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(tiny_config(options)))
    proc = snakemake(repo_root, tmp_path, "-n", result_path("forgery_quality"), check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"forgery.options.{method}" in text and first.option in text
    assert options[method][first.option] in text and first.release.split()[0] in text
    assert not (tmp_path / "results").exists()  # nothing ran, nothing was listed
