"""CONTRIBUTING.md's recipes, followed: each example member runs as the module it names,
registers on the real registry, and is driven through the public entry points.

The examples are read from CONTRIBUTING.md itself, so the file and these tests cannot drift
apart. Every name a recipe registers is removed again when its test ends, so the other
tests (which parametrize over the registries) never see a toy.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import fairforge.video  # noqa: F401  (registers the frame sampler and synthetic_video)
from fairforge.config import ConfigError, validate_config
from fairforge.detector_kinds import predict, train_detector
from fairforge.detectors import DETECTORS, create_detector, detector_kind, list_detectors
from fairforge.encoders import ENCODERS, create_encoder, list_encoders
from fairforge.forgery import (
    FORGERY_METHODS,
    ForgeryResult,
    create_method,
    list_backends,
    list_methods,
)
from fairforge.forgery.base import dilate, polygon_mask
from fairforge.forgery.template import template_face
from fairforge.images import write_image
from fairforge.perturb import (
    OPERATIONS,
    InvalidLevel,
    apply_variant,
    parse_variant,
    unavailable_reason,
    variants_of,
)
from fairforge.ranking import resolve_encoders
from fairforge.registry import Registry
from fairforge.sources import ADAPTERS, build_sources, list_sources
from fairforge.training.detector import TrainConfig
from fairforge.workflow import count_source_items, dataset_root

REPO = Path(__file__).resolve().parents[2]
CONTRIBUTING = REPO / "CONTRIBUTING.md"
# A recipe's example is a python block whose first line names the file it would be.
EXAMPLE = re.compile(r"```python\n(# (src/fairforge/[\w/]+\.py)\n.*?)```", re.S)
EXAMPLES = {path: code for code, path in EXAMPLE.findall(CONTRIBUTING.read_text("utf-8"))}

DETECTOR = "src/fairforge/detectors/toynet.py"
METHOD = "src/fairforge/forgery/toyswap.py"
OPERATION = "src/fairforge/perturb/toyop.py"
ADAPTER = "src/fairforge/sources/toyfolder.py"
ENCODER = "src/fairforge/encoders/toyenc.py"


@pytest.fixture
def follow():
    """``follow(path, registry, name)`` runs the example of ``path`` as the module that file
    would be, checks that it registered ``name`` on ``registry``, and returns the module.
    On teardown the name leaves the registry and the module sys.modules."""
    followed: list[tuple[Registry, str, str]] = []

    def run(path: str, registry: Registry, name: str) -> types.ModuleType:
        assert name not in registry, f"{name!r} is registered before its recipe ran"
        module_name = path.removeprefix("src/").removesuffix(".py").replace("/", ".")
        module = types.ModuleType(module_name)
        sys.modules[module_name] = module
        followed.append((registry, name, module_name))
        exec(compile(EXAMPLES[path], f"CONTRIBUTING.md:{path}", "exec"), module.__dict__)
        assert name in registry, f"the example of {path} did not register {name!r}"
        return module

    yield run
    for registry, name, module_name in followed:
        if name in registry:
            registry.unregister(name)
        sys.modules.pop(module_name, None)
        assert name not in registry and name not in registry.names()


def test_every_example_is_followed_by_a_test():
    assert set(EXAMPLES) == {DETECTOR, METHOD, OPERATION, ADAPTER, ENCODER}


# ------------------------------------------------------------------------------ detector


def test_toy_detector_trains_and_predicts(follow, tmp_path):
    module = follow(DETECTOR, DETECTORS, "toynet")
    assert detector_kind("toynet") == "network" and "toynet" in list_detectors(kind="network")

    torch.manual_seed(0)
    model = create_detector("toynet", input_size=32).train()
    assert isinstance(model, module.ToyNet) and model.name == "toynet"
    logits = model(torch.randn(2, 3, 32, 32))
    assert logits.shape == (2,) and torch.isfinite(logits).all()
    before = [p.detach().clone() for p in model.parameters()]
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.loss(logits, torch.tensor([0, 1]), {}).backward()
    optimiser.step()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))

    # The shared protocol trains it and reads its checkpoint back by its registered name.
    rng = np.random.default_rng(0)
    rows = []
    for split, n in (("train", 8), ("val", 4), ("test", 4)):
        for i in range(n):
            path = f"{split}/{i}.png"
            write_image(tmp_path / path, rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
            rows.append(
                {"sample_id": f"{split}{i}", "dataset": "toy", "split": split,
                 "label": i % 2, "method": "faceswap" if i % 2 else "real",
                 "group": f"g{i % 2}", "subject_id": f"{split}{i}", "path": path,
                 "mask_path": None}
            )  # fmt: skip
    samples = pd.DataFrame(rows)
    settings = TrainConfig(arch="toynet", input_size=32, epochs=1, batch_size=4, device="cpu")
    log = train_detector(samples, tmp_path, settings, tmp_path / "model.pt")
    assert len(log) == 1 and log["n_train"].iloc[0] == 8
    scores = predict(tmp_path / "model.pt", samples, tmp_path, "toy", splits=("test",),
                     device="cpu")["score"]  # fmt: skip
    assert len(scores) == 4 and ((scores >= 0) & (scores <= 1)).all()


# ------------------------------------------------------------------------ forgery method


def test_toy_forgery_method_changes_only_the_masked_mouth(follow):
    follow(METHOD, FORGERY_METHODS, "toyswap/classical")
    assert "toyswap" in list_methods() and list_backends("toyswap") == ["classical"]
    assert FORGERY_METHODS.metadata("toyswap/classical")["kept"] == "target"

    source, source_lm = template_face(128, seed=1)
    target, target_lm = template_face(128, seed=2, mouth_open=0.3, angle_deg=6.0)
    method = create_method("toyswap", "classical")
    assert method.replaces_identity
    result = method(source, source_lm, target, target_lm, np.random.default_rng(0))
    assert isinstance(result, ForgeryResult)
    assert result.image.shape == target.shape and set(np.unique(result.mask)) == {0, 255}

    changed = (result.image != target).any(2)
    inside = result.mask > 0
    assert not changed[~inside].any()  # the target outside the mask, bit for bit
    assert changed[inside].mean() > 0.5
    mouth = dilate(polygon_mask(target_lm[48:68], target.shape), 2) > 0
    assert not (inside & ~mouth).any() and 0.002 < inside.mean() < 0.05

    again = method(source, source_lm, target, target_lm, np.random.default_rng(0))
    assert np.array_equal(again.image, result.image)
    with pytest.raises(ValueError, match="no option"):
        create_method("toyswap", "classical", radius=3)


# ----------------------------------------------------------------------------- operation


def test_toy_operation_is_a_seeded_variant(follow):
    follow(OPERATION, OPERATIONS, "toyop")
    assert parse_variant("toyop@2") == ("toyop", 2)
    assert variants_of("toyop") == [f"toyop@{level}" for level in range(1, 6)]
    assert unavailable_reason("toyop@2") is None

    image, _ = template_face(64, seed=3)
    out = apply_variant(image, "toyop@2", "sample-1")
    assert out.shape == image.shape and out.dtype == np.uint8
    assert np.array_equal(out, apply_variant(image, "toyop@2", "sample-1"))
    dropped = (out != image).any(2).mean()
    assert 0.005 < dropped < 0.04  # level 2 drops 2% of the pixels
    assert not np.array_equal(out, apply_variant(image, "toyop@2", "sample-2"))
    assert (apply_variant(image, "toyop@5", "sample-1") != image).any(2).mean() > 0.1

    with pytest.raises(InvalidLevel):
        apply_variant(image, "toyop@9", "sample-1")
    validate_config({"variants": ["clean", "toyop@2"]})
    with pytest.raises(ConfigError, match="toyop@9"):
        validate_config({"variants": ["toyop@9"]})


# ------------------------------------------------------------------------------- adapter


def test_toy_adapter_lists_groups_and_subject_splits(follow, tmp_path):
    follow(ADAPTER, ADAPTERS, "toyfolder")
    root = tmp_path / "toy"
    rng = np.random.default_rng(0)
    for group in ("a", "b"):
        for subject in range(5):
            for k in range(2):
                pixels = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
                write_image(root / group / f"{group}{subject}" / f"{k}.png", pixels)
    block = {"adapter": "toyfolder", "root": str(root)}

    # What the workflow asks of an adapter before listing, then what the listing job does.
    assert dataset_root("toy", block) == root
    assert count_source_items("toy", block) == 20
    adapter = ADAPTERS.create("toyfolder")
    listing = list_sources("toyfolder", root, "toy", seed=0,
                           **adapter.listing_options("toy", block))  # fmt: skip
    assert len(listing) == 20 and listing["ok"].all()
    assert set(listing["group"]) == {"a", "b"}
    assert listing.loc[listing["image_id"] == "a__a3__1", "path"].item() == "a/a3/1.png"
    assert (listing.groupby("subject_id")["split"].nunique() == 1).all()
    for _, part in listing.groupby("group"):
        assert set(part["split"]) == {"train", "val", "test"}

    sources = build_sources("toyfolder", root, "toy", seed=0)
    assert list(sources["split"]) == list(listing["split"])
    assert sources["ok"].all() and (sources["width"] == 16).all()


def test_a_registered_adapter_needs_no_schema_edit(follow, tmp_path):
    """The config check asks the registries, not the schema, for adapter names."""
    follow(ADAPTER, ADAPTERS, "toyfolder")
    config = validate_config(
        {"datasets": {"mine": {"adapter": "toyfolder", "root": str(tmp_path)}}}
    )
    assert config["datasets"]["mine"]["adapter"] == "toyfolder"
    with pytest.raises(ConfigError, match="unknown adapter 'toyfoldr'"):
        validate_config({"datasets": {"mine": {"adapter": "toyfoldr", "root": str(tmp_path)}}})


# ------------------------------------------------------------------------------- encoder


def test_toy_encoder_gives_unit_embeddings_of_its_dim(follow):
    module = follow(ENCODER, ENCODERS, "toyenc")
    assert "toyenc" not in list_encoders(trainable=True)

    encoder = create_encoder("toyenc")
    assert isinstance(encoder, module.ToyEncoder) and encoder.dim == 24
    a, _ = template_face(64, seed=1)
    b, _ = template_face(64, seed=2)
    emb = encoder.embed([a, b, a])
    assert emb.shape == (3, 24) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-6)
    assert np.array_equal(emb[0], emb[2]) and not np.allclose(emb[0], emb[1])

    # The ranking's config block: a free label, the registered name, constructor arguments.
    encoders = resolve_encoders({"toy": {"encoder": "toyenc", "bins": 4}})
    assert encoders["toy"].embed([a]).shape == (1, 12)
