"""The protocol card and what it reads: recipes declared on the detectors' registrations,
their sources, honest starts (no silent random initialisation of an ImageNet-started
detector), the card of every paper config against a value-by-value reading of its paper
(``tests/data/protocol_facts/<config>.csv``), and docs/papers.md's protocol blocks against
the card."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from fairforge.config import ConfigError, validate_config
from fairforge.detectors import DETECTORS, create_detector
from fairforge.detectors.base import declared_recipe, declared_recipes, paper_init
from fairforge.detectors.pretrained import (
    StartError,
    pretrained_layout,
    require_start,
    resolve_start,
)
from fairforge.protocol import (
    CARD_COLUMNS,
    DATASET_KEYS,
    DETECTOR_KEYS,
    card_frame,
    card_markdown,
    layered_config,
    protocol_card,
    unstated_text,
    value_text,
)
from fairforge.recipes import (
    NOT_PAPER_INIT,
    PUBLISHED,
    RECIPE_KEYS,
    RECIPES,
    UNSTATED,
    UNSTATED_MARK,
    Recipe,
    resolve_recipe,
    unstated_recipe,
)
from fairforge.report.views import protocol_lines, protocol_tables
from fairforge.tables.detectors import card_starts, detectors_frame
from fairforge.training.detector import TrainConfig, build_model, train_network
from fairforge.workflow import detector_protocol, detector_settings
from training_clips import clip_samples

REPO = Path(__file__).resolve().parents[2]
#: One facts table per paper config: ``<config stem>.csv`` with section, name, key, value
#: and citation (the paper section that states the value, or ``unstated, fairforge
#: default``). FairFD's and Assessment's go next to the Benchmark's.
FACTS = REPO / "tests" / "data" / "protocol_facts"
NETWORKS = DETECTORS.names(kind="network")


def protocol_facts(stem: str) -> list[dict]:
    """The facts table of ``configs/<stem>.yaml``: one row per value the paper states (or
    leaves unstated), each citing its section."""
    with open(FACTS / f"{stem}.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and set(rows[0]) == {"section", "name", "key", "value", "citation"}
    return rows


# ----------------------------------------------------------------- recipes as data


@pytest.mark.parametrize("arch", NETWORKS)
def test_every_network_declares_its_published_start(arch):
    """Each network's registration states how its paper starts it, and cites where; an
    ImageNet start has the layout that takes the weights, with timm's model for them."""
    recipe = declared_recipe(PUBLISHED, arch)
    init, where = paper_init(arch)
    assert init in ("random", "imagenet") and where, arch
    assert recipe.cite.get("init") == where
    if init == "imagenet":
        import timm

        layout = pretrained_layout(arch)
        assert layout.source and timm.is_model(layout.timm), arch
    for key in set(recipe.cite) & set(RECIPE_KEYS):
        assert recipe.cite[key], (arch, key)


def test_detectors_name_their_own_recipes_and_the_papers_keep_theirs():
    named = declared_recipes()
    assert named["sbi"][0] == "efficientnet_b4"
    assert named["patch_forensics"][1] is DETECTORS.metadata("patch_xception")["recipe"]
    assert declared_recipe("sbi", "xception") is named["sbi"][1]  # by name, for any arch
    assert "deepfakebench" in RECIPES and "sbi" not in RECIPES
    # a landmark model trains by no recipe
    assert declared_recipe(PUBLISHED, "headpose") == Recipe()
    with pytest.raises(KeyError, match="valid: published, patch_forensics, sbi"):
        declared_recipe("sb", "xception")


def test_every_value_has_its_origin():
    """A cited value gives its citation, an uncited one of a cited recipe is unstated, a
    named recipe's value is recipe:<name>, a config's is config, the rest default."""
    cited = Recipe(lr=1e-3, batch_size=75, source="paper:P §2", cite={"lr": "paper:P §3"})
    values, sources = resolve_recipe(cited, PUBLISHED, "meso4", ("config", {"epochs": 4}))
    assert (values["lr"], sources["lr"]) == (1e-3, "paper:P §3")
    assert (values["batch_size"], sources["batch_size"]) == (75, "paper:P §2")
    assert (values["epochs"], sources["epochs"]) == (4, "config")
    assert sources["weight_decay"] == UNSTATED
    values, sources = resolve_recipe(RECIPES.get("deepfakebench"), "deepfakebench")
    assert sources["frames_train"] == "recipe:deepfakebench" and sources["sam"] == "default"
    assert values["betas"] == [0.9, 0.999]
    with pytest.raises(ValueError, match="cite names no recipe key"):
        Recipe(cite={"lrate": "paper:P"})


def test_the_demo_keeps_its_recipe_and_plans_without_torch():
    """The demo trains as it did (its settings are the deepfakebench recipe under its
    training block), and planning it imports no torch: MesoNet's start needs no registry."""
    code = (
        "import sys, yaml; from fairforge.config import validate_config; "
        "from fairforge.workflow import detector_settings; "
        f"c = validate_config(yaml.safe_load(open({str(REPO / 'config.yaml')!r}))); "
        "s = detector_settings(c, 'meso4'); "
        "assert 'torch' not in sys.modules, 'torch imported'; "
        "print(repr((s['recipe'], s['lr'], s['epochs'], s['batch_size'], s['input_size'], "
        "s['weight_decay'], s['optimizer'], s['frames_train'], s['init'], s['pretrained'])))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    assert out.stdout.decode().strip() == repr(
        ("deepfakebench", 0.001, 20, 32, 64, 0.0, "adam", 32, None, None)
    )


# ----------------------------------------------------------------- honest starts


def test_a_paper_detector_without_weights_stops_naming_the_ways_out():
    with pytest.raises(StartError) as err:
        build_model(TrainConfig(arch="xception", detector="xc", input_size=64))
    message = str(err.value)
    for part in (
        "detectors.xc (xception)",
        "xception-b5690688.pth",  # the file it expects
        "detectors.xc.pretrained: PATH",
        "pretrained: timm:legacy_xception",
        "detectors.xc.init: random",
        NOT_PAPER_INIT,
    ):
        assert part in message, part
    model, _, _ = build_model(TrainConfig(arch="xception", input_size=64, init="random"))
    assert model.name == "xception"
    # MesoNet starts from random weights in its paper: nothing to give
    assert resolve_start("meso4").init == resolve_start("meso4", init="random").init == "random"
    assert resolve_start("meso4", init="random").note == ""


def test_a_frozen_part_never_stays_random():
    with pytest.raises(StartError, match="vgg is frozen"):
        build_model(TrainConfig(arch="capsule", input_size=64, init="random"))
    model, _, _ = build_model(
        TrainConfig(arch="capsule", input_size=64, init="random", model={"freeze_vgg": False})
    )
    assert all(p.requires_grad for p in model.parameters())


def test_init_random_is_flagged_on_the_card_detectors_csv_and_the_report():
    config = validate_config(
        {
            "detectors": {
                "x": {"arch": "xception", "init": "random"},
                "m": {"arch": "meso4"},
            }
        }
    )
    card = protocol_card(config)
    x, m = card["detectors"]
    assert x["init"] == "random" and NOT_PAPER_INIT in x["sources"]["init"]
    assert m["init"] == "random" and NOT_PAPER_INIT not in m["sources"]["init"]
    frame = card_frame(card)
    starts = card_starts(frame)
    assert starts == {"x": f"random ({NOT_PAPER_INIT})", "m": "random"}
    table = detectors_frame({n: detector_settings(config, n) for n in "xm"}, starts=starts)
    assert list(table.columns[:3]) == ["detector", "arch", "init"]
    assert table.set_index("detector").loc["x", "init"] == f"random ({NOT_PAPER_INIT})"
    assert protocol_lines(frame)[0].startswith("Started from random weights")
    assert "x" in protocol_lines(frame)[0] and "m" not in protocol_lines(frame)[0][-4:]
    assert f"random ({NOT_PAPER_INIT})" in card_markdown(card)
    assert list(protocol_tables(frame)["detectors"]["detector"]) == ["x", "m"]


def test_a_value_its_paper_leaves_to_another_recipe_names_it():
    """FairFD leaves Adam's betas, the weight decay, the schedule and the test frames to
    DeepfakeBench's detector configs (§5.1, A.6); the Assessment leaves SAM's base optimizer
    and schedule to SBI's own (§5.1.3). The card, the report and docs' column say which."""
    config = validate_config(
        {
            "detectors": {
                "x": {"arch": "xception", "init": "random", "recipe": "fairfd"},
                "s": {"arch": "efficientnet_b4", "init": "random", "recipe": "assessment"},
            }
        }
    )
    x, s = protocol_card(config)["detectors"]
    assert x["sources"]["weight_decay"] == "unstated, recipe:deepfakebench"
    assert x["sources"]["lr"] == "paper:FairFD §5.1" and x["weight_decay"] == 5e-4
    assert s["sources"]["optimizer"] == "unstated, recipe:sbi" and s["optimizer"].startswith("sgd")
    assert s["sources"]["sam"].startswith("paper:Assessment §5.1.3 (SAM); sam_rho: unstated")
    assert s["sources"]["betas"] == UNSTATED  # SBI's SGD: the paper states no betas for it
    assert [unstated_recipe(x["sources"][k]) for k in ("betas", "lr")] == ["deepfakebench", None]
    lines = protocol_lines(card_frame({"detectors": [x, s], "datasets": []}))
    assert (
        "x: its paper leaves betas, weight_decay, schedule, frames_test unstated "
        "(recipe deepfakebench's)." in lines
    )
    assert "s: its paper leaves optimizer, schedule unstated (recipe sbi's)." in lines
    assert unstated_text(s["sources"]).endswith("; optimizer, schedule (recipe:sbi)")
    with pytest.raises(ValueError, match=r"per_arch\['a'\]'s cite names no recipe key"):
        Recipe(per_arch={"a": {"lr": 1e-3, "cite": {"lrate": "paper:P"}}})


def test_the_config_check_stops_a_published_recipe_without_its_weights():
    """A detector on its own recipe is checked when the plan is made; on a named recipe,
    when its training starts (planning then imports no torch)."""
    block = {"arch": "ffd", "recipe": PUBLISHED}
    with pytest.raises(ConfigError, match=r"detectors\.f \(ffd\).*init: random"):
        validate_config({"detectors": {"f": dict(block)}})
    validate_config({"detectors": {"f": {**block, "init": "random"}}})
    validate_config({"detectors": {"f": {**block, "pretrained": "timm:legacy_xception"}}})
    with pytest.raises(ConfigError, match="timm has no model 'no_such_net'"):
        validate_config({"detectors": {"f": {**block, "pretrained": "timm:no_such_net"}}})
    with pytest.raises(ConfigError, match=r"detectors\.f\.recipe: unknown recipe 'sb'"):
        validate_config({"detectors": {"f": {**block, "recipe": "sb"}}})
    # named recipe: the check waits for the training job
    validate_config({"detectors": {"f": {"arch": "ffd"}}})
    with pytest.raises(StartError):
        require_start("f", "ffd")


_TIMM_CODE = """
import sys, torch, timm
from pathlib import Path
from safetensors.torch import save_file
from fairforge.detectors import create_detector
from fairforge.detectors.pretrained import apply_pretrained, timm_state_dict
cache = Path(sys.argv[1])
try:
    timm_state_dict("resnet18.tv_in1k")
    raise SystemExit("no error without the weights")
except FileNotFoundError as err:
    assert str(cache / "models--timm--resnet18.tv_in1k") in str(err), err
# the weights as timm's hub download leaves them, random ones written here
state = timm.create_model("resnet18", pretrained=False).state_dict()
snapshot = cache / "models--timm--resnet18.tv_in1k" / "snapshots" / "0123abcd"
snapshot.mkdir(parents=True)
save_file({k: v.contiguous() for k, v in state.items()}, snapshot / "model.safetensors")
(snapshot.parent.parent / "refs").mkdir()
(snapshot.parent.parent / "refs" / "main").write_text("0123abcd")
model = create_detector("patch_resnet", input_size=32)
assert apply_pretrained(model, "patch_resnet", "timm:resnet18.tv_in1k") > 0
assert torch.equal(model.trunk[4][0].conv1.weight, state["layer1.0.conv1.weight"])
print("ok")
"""


def test_timm_weights_come_through_timm_s_cache_and_offline_name_it(tmp_path):
    """``pretrained: timm:<model>``: timm's own download and cache (here offline, with random
    weights laid out as the hub leaves them); without them, the error names the cache."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "TORCH_HOME": str(tmp_path / "torch"),
    }
    out = subprocess.run(
        [sys.executable, "-c", _TIMM_CODE, str(tmp_path / "hub")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


# ----------------------------------------------------------------- the card


def test_the_cli_prints_the_assessment_card_as_its_paper_states_it():
    """The issue's acceptance, from a clone as it is: the JSON card of
    configs/assessment.yaml holds every value of assessment.csv with its source."""
    check_facts("assessment", cli_card("configs/assessment.yaml"))


def cli_card(config: str) -> dict:
    """``python -m fairforge protocol --configfile CONFIG --format json``, run in the
    repository as it is, parsed."""
    proc = subprocess.run(
        [sys.executable, "-m", "fairforge", "protocol", "--configfile", config]
        + ["--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_the_cli_prints_the_benchmark_card_as_json():
    """From a clone as it is: every detector with exactly the card's keys and their sources,
    every dataset with its split, frames and groups."""
    card = cli_card("configs/benchmark_paper.yaml")
    assert set(card) == {"detectors", "datasets"}
    for item in card["detectors"]:
        assert list(item) == [*DETECTOR_KEYS, "sources"]
        assert set(item["sources"]) == set(DETECTOR_KEYS)
    for item in card["datasets"]:
        assert list(item) == [*DATASET_KEYS, "sources"]
    archs = {d["arch"] for d in card["detectors"]}
    assert len(archs) == 11 and "conv_lstm" in archs  # Table 3's eleven
    # each on each standard dataset, and the nine that learn from the fakes on FF++/DF, FS and
    # FShifter (Table 4)
    assert len(card["detectors"]) == 11 * 7 + 9 * 3
    ffpp = next(d for d in card["datasets"] if d["name"] == "ffpp")
    assert ffpp["options"]["compression"] == "raw"


@pytest.fixture(scope="module")
def paper_cards() -> dict[str, dict]:
    return {
        path.stem: protocol_card(layered_config([REPO / "configs" / f"{path.stem}.yaml"]))
        for path in sorted(FACTS.glob("*.csv"))
    }


def test_every_paper_config_has_its_facts_table():
    """The three papers' detector protocols and the Exposure paper's datasets (its one
    detector is fairforge's, not the paper's)."""
    assert {p.stem for p in FACTS.glob("*.csv")} == {
        "benchmark_paper",
        "fairfd",
        "assessment",
        "exposure",
    }


@pytest.mark.parametrize("stem", sorted(p.stem for p in FACTS.glob("*.csv")))
def test_the_card_says_what_the_paper_says(stem, paper_cards):
    """Each value of the facts table is the card's; a value the paper leaves open is
    ``unstated`` on the card, and a value the card credits to a paper names the table's
    section."""
    check_facts(stem, paper_cards[stem])


def check_facts(stem: str, card: dict) -> None:
    """``card`` (the protocol card of ``configs/<stem>.yaml``, as a dict or its JSON) against
    the facts table of ``stem``, both ways."""
    by_name = {
        (section[:-1], item["detector" if section == "detectors" else "name"]): item
        for section in ("detectors", "datasets")
        for item in card[section]
    }
    facts = protocol_facts(stem)
    for fact in facts:
        item = by_name[(fact["section"], fact["name"])]
        where = f"{stem}: {fact['name']}.{fact['key']}"
        assert value_text(item[fact["key"]]) == fact["value"], where
        source = item["sources"][fact["key"]]
        cited = fact["citation"].split(" (")[0]
        if cited == UNSTATED:
            assert UNSTATED in source, (where, source)
        elif cited.startswith(UNSTATED_MARK):  # open in the paper, a named recipe's value
            assert source.startswith(cited), (where, source)
        elif "paper:" in source:
            assert cited in source, (where, source)
    # the other way round: of every detector the table reads in full (those with an `arch`
    # row), each value the card credits to this paper has its row (a value the paper does
    # not state is never credited to it)
    paper = f"paper:{paper_name(facts)}"
    read = {(f["name"], f["key"]) for f in facts if f["section"] == "detector"}
    missing = [
        (item["detector"], key, source)
        for item in card["detectors"]
        if (item["detector"], "arch") in read
        for key, source in item["sources"].items()
        if source.startswith(paper) and (item["detector"], key) not in read
    ]
    assert not missing, (stem, missing)


def paper_name(facts: list[dict]) -> str:
    """The short name of a facts table's paper: the first word most of its citations start
    with (``Benchmark``, ``FairFD``, ``Assessment``)."""
    words = [f["citation"].split()[0] for f in facts if not f["citation"].startswith("unstated")]
    return max(sorted(set(words)), key=words.count)


def test_config_files_layer_as_snakemake_layers_them(tmp_path):
    """The first file replaces config.yaml (nothing of the demo), the next merges over it
    key by key, and ``select:`` keeps a part: one detector of the Benchmark on one dataset."""
    part = tmp_path / "part.yaml"
    part.write_text(
        "select: {detectors: [conv_lstm_celebdf], datasets: [celebdf]}\n"
        "datasets: {celebdf: {options: {frames_per_video: 4}}}\n"
    )
    card = protocol_card(layered_config([REPO / "configs" / "benchmark_paper.yaml", part]))
    assert [d["detector"] for d in card["detectors"]] == ["conv_lstm_celebdf"]
    (celebdf,) = card["datasets"]
    assert celebdf["frames"] == 4 and celebdf["split"]["val_from_train"] == 0.071
    assert card["detectors"][0]["train_datasets"] == ["celebdf"]


def test_the_long_card_is_what_the_workflow_writes():
    card = protocol_card(layered_config([REPO / "config.yaml"]))
    frame = card_frame(card)
    assert list(frame.columns) == list(CARD_COLUMNS)
    assert set(frame["section"]) == {"detector", "dataset"}
    meso4 = frame.loc[frame["name"] == "meso4"].set_index("key")
    assert meso4.loc["init", "source"] == "paper:MesoNet (Afchar et al. 2018): trained from scratch"
    assert meso4.loc["lr", "source"] == "config"


PROTOCOL_BLOCK = re.compile(r"<!-- protocol: (.+?) -->\n(.*?)<!-- /protocol -->", re.DOTALL)


def test_docs_protocol_blocks_are_the_card():
    """Every ``<!-- protocol: CONFIG ... -->`` block of docs/papers.md is the card's markdown
    of those config files (regenerate with ``python -m fairforge protocol --configfile
    CONFIG --format markdown``)."""
    doc = (REPO / "docs" / "papers.md").read_text(encoding="utf-8")
    blocks = PROTOCOL_BLOCK.findall(doc)
    assert any(files.split()[0] == "configs/benchmark_paper.yaml" for files, _ in blocks)
    for files, table in blocks:
        card = protocol_card(layered_config([REPO / f for f in files.split()]))
        assert table == card_markdown(card), f"docs/papers.md's protocol block of {files}"


# ----------------------------------------------------------------- Conv-LSTM trains


def test_conv_lstm_trains_on_clips_by_the_benchmark_recipe(tmp_path):
    """The Benchmark's Conv-LSTM settings (Adam, lr 1e-5, batches of 4 clips), on a tiny
    network and 32 px frames from random weights: clips in, one score per clip."""
    config = layered_config([REPO / "configs" / "benchmark_paper.yaml"])
    settings, sources = detector_protocol(config, "conv_lstm")
    assert (settings["optimizer"], settings["lr"], settings["batch_size"]) == ("adam", 1e-5, 4)
    assert sources["lr"].startswith("paper:Benchmark App. A")
    samples = clip_samples(tmp_path)
    cfg = TrainConfig(
        **{
            **settings,
            "model": {"hidden": 8, "backbone": "resnet10t"},
            "input_size": 32,
            "frames_per_sequence": 2,
            "epochs": 1,
            "train_methods": ["faceswap"],
            "num_workers": 0,
            "device": "cpu",
            "precision": "fp32",
            "pretrained": None,
            "init": "random",
        }
    )
    log = train_network(samples, tmp_path, cfg, tmp_path / "m.pt")
    assert list(log["n_train"]) == [8] and np.isfinite(log["train_loss"]).all()
    assert asdict(cfg)["batch_size"] == 4
    assert create_detector("conv_lstm", hidden=8, backbone="resnet10t").sequence_input
