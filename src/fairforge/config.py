"""Config loading and validation against the package's ``schemas/config.schema.yaml``.

Defaults from the schema are filled in (nested blocks too), and every error names the key
that is wrong, e.g. ``config: detectors.meso4: unknown key 'epoch'``.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

import fairforge.video  # noqa: F401  (registers the frame sampler the video adapters use)
from fairforge.checkpoints import TIMM_PREFIX
from fairforge.faces.detect import FACE_DETECTORS
from fairforge.faces.landmarks import LANDMARKERS
from fairforge.forgery import FORGERY_METHODS, method_key
from fairforge.forgery.base import check_method_options
from fairforge.perturb.augment import AUGMENTATIONS
from fairforge.recipes import RECIPES
from fairforge.registry import Registry, UnknownName
from fairforge.sources import ADAPTERS
from fairforge.sources.split import SplitError, fractions_of
from fairforge.workflow import encoder_train_dataset, ranked_datasets

# Package data, read through importlib.resources so that an installed (not editable) package,
# a wheel or a zip import finds it without the repository around it.
SCHEMA_RESOURCE = "schemas/config.schema.yaml"


class ConfigError(ValueError):
    pass


def _with_defaults(validator_class):
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_Validator = _with_defaults(jsonschema.Draft202012Validator)


def _fill_nested_defaults(instance, schema):
    """Fill defaults inside ``additionalProperties`` maps (datasets, detectors)."""
    if not isinstance(instance, dict):
        return
    for name, value in instance.items():
        sub = schema.get("properties", {}).get(name)
        if sub is None and isinstance(schema.get("additionalProperties"), dict):
            sub = schema["additionalProperties"]
        if isinstance(sub, dict) and isinstance(value, dict):
            for key, prop in sub.get("properties", {}).items():
                if "default" in prop and key not in value:
                    value[key] = copy.deepcopy(prop["default"])
            _fill_nested_defaults(value, sub)


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    prefix = f"config: {where}: " if where else "config: "
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return f"{prefix}unknown key {', '.join(repr(k) for k in unknown)}{hint}"
    return prefix + error.message


def load_schema(path: str | Path | None = None) -> dict:
    """The config schema: the package's own, or the one at ``path``."""
    if path is None:
        text = resources.files("fairforge").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    else:
        text = Path(path).read_text()
    # libyaml's parser, where PyYAML has it: every Snakemake process (each cluster job's too)
    # reads the schema, and the pure-Python parser takes a tenth of a second over it
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def validate_config(
    config: dict, schema: dict | None = None, check_references: bool = True
) -> dict:
    """Validate a config dict in place (defaults filled) and return it; raise ConfigError.

    ``check_references=False`` checks the schema only, not the names that registries own
    and the links between sections: for a Snakemake process that runs jobs of a run whose
    planning process checked the same config (a cluster job parses the workflow again, and
    the registry checks import torch for some configs)."""
    schema = schema or load_schema()
    validator = _Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError("\n".join(_describe(e) for e in errors))
    _fill_nested_defaults(config, schema)
    if check_references:
        _check_references(config)
    return config


def _check_name(registry: Registry, name: str, where: str) -> None:
    _check_name_by(registry.check, name, where)


def _check_registered_names(config: dict) -> None:
    """Names the schema cannot list, because users add members: each family's registry is
    the one owner of its valid names."""
    for name, dataset in config["datasets"].items():
        _check_name(ADAPTERS, dataset["adapter"], f"datasets.{name}.adapter")
    backends = config["forgery"]["backends"]
    compared = config["forgery"]["quality"]["compare_backends"]
    extra = sorted(set(compared) - set(config["forgery"]["methods"]))
    if extra:
        raise ConfigError(
            f"config: forgery.quality.compare_backends: {extra} not in forgery.methods"
        )
    for method in config["forgery"]["methods"]:
        used = list(dict.fromkeys([backends.get(method, "classical"), *compared.get(method, [])]))
        for backend in used:
            _check_name(FORGERY_METHODS, method_key(method, backend), f"forgery.methods: {method}")
        # unknown options, and an official backend's weights, before any job is planned
        try:
            check_method_options(method, used, config["forgery"]["options"].get(method, {}))
        except (ValueError, FileNotFoundError) as err:
            raise ConfigError(f"config: forgery.options.{method}: {err}") from None
    if "augment" in config["training"]:
        _check_name(AUGMENTATIONS, config["training"]["augment"], "training.augment")
    for name, det in config["detectors"].items():
        _check_recipe(config, name)
        if "augment" in det:
            _check_name(AUGMENTATIONS, det["augment"], f"detectors.{name}.augment")
        if "pretrained" in det:
            _check_pretrained(name, det)
    _check_name(FACE_DETECTORS, config["faces"]["detector"], "faces.detector")
    _check_name(LANDMARKERS, config["faces"]["landmarks"], "faces.landmarks")
    for backend in config["faces"]["compare_backends"]:
        _check_name(FACE_DETECTORS, backend, "faces.compare_backends")


def _check_recipe(config: dict, name: str) -> None:
    """A detector's recipe: a named one, or one its architecture (or another detector)
    declares on its registration; and, for a recipe of the detector's own, its start: a
    paper that starts from ImageNet weights needs them (``pretrained``) or ``init: random``.
    Detectors on a named recipe have their start checked when training starts: asking the
    registrations here would import torch into every plan."""
    det = config["detectors"][name]
    where = f"detectors.{name}.recipe" if "recipe" in det else "training.recipe"
    chosen = det.get("recipe") or config["training"]["recipe"]
    trained = "scores" not in det and ("checkpoint" not in det or det.get("init") == "checkpoint")
    if chosen in RECIPES or not trained:
        return
    # the detectors' own recipes live with the networks (torch): imported only when asked for
    from fairforge.detectors.base import DETECTORS, declared_recipe
    from fairforge.detectors.pretrained import StartError, require_start

    arch = det.get("arch", name)
    _check_name(DETECTORS, arch, f"detectors.{name}.arch")
    try:
        declared_recipe(chosen, arch)
    except UnknownName as err:
        raise ConfigError(f"config: {where}: {err}") from None
    if DETECTORS.metadata(arch)["kind"] != "network":
        return
    init = det.get("init")
    fine_tune = det.get("checkpoint") if init == "checkpoint" else None
    try:
        require_start(name, arch, init, det.get("pretrained"), fine_tune)
    except StartError as err:
        raise ConfigError(f"config: {err}") from None


def _check_pretrained(name: str, det: dict) -> None:
    """The architecture takes pretrained weights (its registration's layout), and a
    ``timm:<model>`` names a timm model."""
    # the layouts live with the networks (torch): imported only when one is asked for
    from fairforge.detectors.pretrained import pretrained_layout

    _check_name_by(pretrained_layout, det.get("arch", name), f"detectors.{name}.pretrained")
    source = str(det["pretrained"])
    if source.startswith(TIMM_PREFIX):
        import timm

        if not timm.is_model(source[len(TIMM_PREFIX) :]):
            raise ConfigError(
                f"config: detectors.{name}.pretrained: timm has no model "
                f"{source[len(TIMM_PREFIX) :]!r} (timm.list_models() lists them)"
            )


def _check_name_by(lookup, name: str, where: str) -> None:
    try:
        lookup(name)
    except UnknownName as err:
        raise ConfigError(f"config: {where}: {err}") from None


def _check_datasets(config: dict) -> set[str] | None:
    """Each dataset's split and forgery choice; returns the methods of the fakes datasets
    bring (None when one cannot tell before listing)."""
    generated = set(config["forgery"]["methods"])
    imported: set[str] | None = set()
    for name, dataset in config["datasets"].items():
        split = dataset.get("split")
        if split is not None:
            try:
                fractions_of(split)
            except SplitError as err:
                raise ConfigError(f"config: datasets.{name}.split: {err}") from None
        choice = dataset.get("forgery", True)
        if isinstance(choice, list) and set(choice) - generated:
            raise ConfigError(
                f"config: datasets.{name}.forgery: {sorted(set(choice) - generated)} not in "
                f"forgery.methods {sorted(generated)}"
            )
        brought = ADAPTERS.create(dataset["adapter"]).imported_methods(name, dataset)
        imported = None if imported is None or brought is None else imported | set(brought)
    return imported


def _check_references(config: dict) -> None:
    _check_registered_names(config)
    datasets = list(config["datasets"])
    imported = _check_datasets(config)
    methods = set(config["forgery"]["methods"]) | (imported or set())
    for name, det in config["detectors"].items():
        unknown = sorted(
            set(det.get("train_methods", config["training"]["train_methods"])) - methods
        )
        if unknown and imported is not None and "scores" not in det and "checkpoint" not in det:
            raise ConfigError(
                f"config: detectors.{name}.train_methods: {unknown} not in "
                f"forgery.methods or the datasets' own fakes {sorted(methods)}"
            )
        train_ds = det.get("train_dataset")
        for one in [train_ds] if isinstance(train_ds, str) else train_ds or []:
            if one not in datasets:
                raise ConfigError(
                    f"config: detectors.{name}.train_dataset: unknown dataset "
                    f"{one!r} (configured: {datasets})"
                )
            if config["datasets"][one].get("split") == "test_only" and "checkpoint" not in det:
                raise ConfigError(
                    f"config: detectors.{name}.train_dataset: {one!r} is test_only "
                    "(split: test_only), it has nothing to train on"
                )
    for variant in config["variants"]:
        _check_variant(variant)
    _check_ranking(config)
    _check_features(config)
    total = sum(config["split"][k] for k in ("train", "val", "test"))
    if abs(total - 1.0) > 1e-6:
        raise ConfigError(f"config: split: fractions must sum to 1, got {total:g}")


def _check_features(config: dict) -> None:
    """``metrics.features`` names configured network detectors and datasets."""
    block = config["metrics"]["features"]
    for name in block["detectors"]:
        det = config["detectors"].get(name)
        if det is None:
            raise ConfigError(
                f"config: metrics.features.detectors: unknown detector {name!r} "
                f"(configured: {list(config['detectors'])})"
            )
        # the kinds live with the networks (torch): imported only when features are asked for
        from fairforge.detectors import detector_kind

        if "scores" in det or detector_kind(det.get("arch", name)) != "network":
            raise ConfigError(
                f"config: metrics.features.detectors: {name!r} is not a network detector "
                "run here: penultimate features need its network"
            )
    unknown = sorted(set(block.get("datasets") or []) - set(config["datasets"]))
    if unknown:
        raise ConfigError(
            f"config: metrics.features.datasets: unknown dataset(s) {unknown} "
            f"(configured: {list(config['datasets'])})"
        )


def _check_ranking(config: dict) -> None:
    """The ranked datasets and the one the trained encoders learn on are configured ones."""
    ranking, datasets = config["ranking"], list(config["datasets"])
    if ranking.get("dataset") is not None and ranking.get("datasets"):
        raise ConfigError("config: ranking: give datasets (a list) or dataset (one), not both")
    named = [("dataset", ranking.get("dataset")), ("train_dataset", ranking.get("train_dataset"))]
    named += [("datasets", name) for name in ranking.get("datasets") or []]
    for key, name in named:
        if name is not None and name not in datasets:
            raise ConfigError(
                f"config: ranking.{key}: unknown dataset {name!r} (configured: {datasets})"
            )
    _check_trained_encoders(config)


def _check_trained_encoders(config: dict) -> None:
    ranking = config["ranking"]
    trained = {label: opts for label, opts in ranking["encoders"].items() if "train" in opts}
    if not trained:
        return
    from fairforge.encoders.base import trainable_encoders

    for label, opts in trained.items():
        arch = opts.get("encoder", label)
        if arch not in trainable_encoders():
            raise ConfigError(
                f"config: ranking.encoders.{label}.train: {arch!r} is not a "
                f"trainable encoder (trainable: {trainable_encoders()})"
            )
        if "checkpoint" in opts:
            raise ConfigError(
                f"config: ranking.encoders.{label}: give either checkpoint "
                "(trained elsewhere) or train, not both"
            )
    train_on = encoder_train_dataset(config)
    if config["datasets"][train_on].get("split") == "test_only":
        raise ConfigError(
            f"config: ranking.train_dataset: encoders {sorted(trained)} train on "
            f"{train_on!r}, which is test_only (split: test_only): nothing to train on"
        )
    if "train" in ranking["splits"] and train_on in ranked_datasets(config):
        raise ConfigError(
            f"config: ranking.splits: encoders {sorted(trained)} train on the "
            f"train split of {train_on!r}, so it cannot be ranked; use e.g. [val, test]"
        )


def _check_variant(variant: str) -> None:
    """Unknown operations and levels are config errors; missing weights are not (the variant
    is then reported as unavailable)."""
    from fairforge.perturb.variants import check_variant

    try:
        check_variant(variant)
    except ValueError as err:
        raise ConfigError(f"config: variants: {variant!r}: {err}") from None


def load_config(path: str | Path) -> dict:
    with open(path) as fh:
        config = yaml.safe_load(fh) or {}
    return validate_config(config)
