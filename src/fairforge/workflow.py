"""Glue between the Snakemake rules and the package: what each rule reads and its settings,
resolved from the config (each script's log is :mod:`fairforge.joblog`).

Kept here (not in the .smk files) so it is importable and unit-tested. Paths come from
:mod:`fairforge.paths`, shard plans from :mod:`fairforge.sharding`.
"""

from __future__ import annotations

from pathlib import Path

from fairforge.checkpoints import TIMM_PREFIX
from fairforge.columns import CLEAN
from fairforge.faces.align import face_fraction
from fairforge.forgery.base import backend_options
from fairforge.paths import RESULTS, result_path
from fairforge.perturb import (
    RANDOM,
    apply_at,
    at_crop,
    at_frame,
    is_codec,
    is_frame_variant,
    is_random_variant,
    operation_names,
    parse_variant,
    suite,
)
from fairforge.recipes import CONFIG, RECIPE_KEYS, RECIPES, Recipe, resolve_recipe
from fairforge.samples import CROPS
from fairforge.sources import ADAPTERS, IMAGE_SUFFIXES
from fairforge.tables.detectors import training_families
from fairforge.tables.robustness import augmentation_twins
from fairforge.video import (  # importing the video package registers its frame sampler
    VIDEO_SUITE,
    is_video_variant,
    predict_samples_path,
)


def dataset_root(name: str, dataset_cfg: dict) -> Path:
    """Where a dataset's source paths are relative to (where rendered images are written,
    for the adapters that write them)."""
    return ADAPTERS.create(dataset_cfg["adapter"]).resolve_root(name, dataset_cfg, RESULTS)


def count_source_items(name: str, dataset_cfg: dict) -> int:
    """At least how many source images a dataset has, cheaply (no decoding), to plan shards."""
    return ADAPTERS.create(dataset_cfg["adapter"]).count_items(name, dataset_cfg)


# Keys of a dataset block that are not the adapter's business: the listing and shard jobs get
# the block without them, so choosing methods reruns no listing, and the split its own param.
DATASET_PLAN_KEYS = ("forgery", "split", "train_compression")


def dataset_block(config: dict, name: str) -> dict:
    """A dataset's block as its adapter sees it (adapter, root, group_by, options)."""
    block = config["datasets"][name]
    return {k: v for k, v in block.items() if k not in DATASET_PLAN_KEYS}


def dataset_split(config: dict, name: str):
    """A dataset's ``split:`` (fractions, test_only, official or files), else the global."""
    spec = config["datasets"][name].get("split")
    return config["split"] if spec is None else spec


def dataset_methods(config: dict, name: str) -> list[str]:
    """The forgery methods generated on a dataset: ``forgery.methods``, or its own choice
    (``datasets.X.forgery``: false or [] for none, a list for some)."""
    choice = config["datasets"][name].get("forgery", True)
    methods = list(config["forgery"]["methods"])
    if choice is True:
        return methods
    if choice is False:
        return []
    return [m for m in methods if m in choice]


def forgery_backend(config: dict, method: str) -> str:
    """The backend that forges ``method``'s fakes (``forgery.backends``, else classical)."""
    return config["forgery"]["backends"].get(method, "classical")


def forgery_options(config: dict, method: str, backend: str) -> dict:
    """The options of ``method`` that ``backend`` takes (``forgery.options.<method>`` holds
    those of every backend the run uses for it)."""
    return backend_options(method, backend, config["forgery"]["options"].get(method, {}))


def quality_comparisons(config: dict, dataset: str) -> list[tuple[str, str]]:
    """``(method, backend)`` of every backend the quality card compares on ``dataset``
    (``forgery.quality.compare_backends``) besides the one that forges the method's fakes."""
    compared = config["forgery"]["quality"]["compare_backends"]
    return [
        (method, backend)
        for method in dataset_methods(config, dataset)
        for backend in dict.fromkeys(compared.get(method, []))
        if backend != forgery_backend(config, method)
    ]


def detector_recipe(config: dict, name: str) -> tuple[str, Recipe]:
    """The recipe a detector trains by (``recipe``, else ``training.recipe``), by name: a
    paper's named recipe (:data:`~fairforge.recipes.RECIPES`), or one declared on a
    detector's registration (``published``: its architecture's own; ``sbi``, ...)."""
    det = config["detectors"][name]
    chosen = det.get("recipe") or config["training"].get("recipe", "deepfakebench")
    if chosen in RECIPES:
        return chosen, RECIPES.get(chosen)
    # declared with the networks (torch): imported only for a config that asks for one
    from fairforge.detectors.base import declared_recipe

    return chosen, declared_recipe(chosen, det.get("arch", name))


def detector_protocol(config: dict, name: str) -> tuple[dict, dict]:
    """The resolved training settings of one detector and, for each recipe key, where its
    value comes from: its recipe (:func:`detector_recipe`), overridden by the recipe keys
    set in ``training``, then by those set in the detector's block
    (:func:`fairforge.recipes.resolve_recipe`); and its start (``pretrained``, ``init``).
    The one resolution of the training rule and of the protocol card."""
    det = config["detectors"][name]
    base = config["training"]
    arch = det.get("arch", name)
    recipe_name, recipe = detector_recipe(config, name)
    values, sources = resolve_recipe(
        recipe,
        recipe_name,
        arch,
        (CONFIG, {k: base[k] for k in RECIPE_KEYS if k in base}),
        (CONFIG, {k: det[k] for k in RECIPE_KEYS if k in det}),
    )
    init = det.get("init")
    settings = {
        "arch": arch,
        "detector": name,
        "model": dict(det.get("model", {})),
        "train_methods": train_methods(config, name),
        "balanced": balanced_setting(det.get("balanced", False)),
        "num_workers": int(base["num_workers"]),
        "device": config["device"],
        "seed": int(config["seed"]),
        "precision": det.get("precision"),
        "online_forgery": det.get("online_forgery"),
        "frames_per_sequence": det.get("frames_per_sequence"),
        "pretrained": det.get("pretrained"),
        "init": init,
        "init_checkpoint": det.get("checkpoint") if init == "checkpoint" else None,
        "init_format": det.get("checkpoint_format", "fairforge"),
        **values,
    }
    return settings, sources


def detector_settings(config: dict, name: str) -> dict:
    """The resolved training settings of one detector (:func:`detector_protocol`), the
    keyword arguments of :class:`fairforge.training.detector.TrainConfig`."""
    return detector_protocol(config, name)[0]


def balanced_setting(value) -> bool | dict:
    """A detector's ``balanced``: a flag, or ``{"subjects": N, "groups": [...] or None}``."""
    if isinstance(value, dict):
        groups = value.get("groups")
        return {"subjects": int(value["subjects"]), "groups": list(groups) if groups else None}
    return bool(value)


def train_methods(config: dict, name: str) -> list[str]:
    """The methods whose fakes a detector trains on (its own, else ``training``'s)."""
    det = config["detectors"][name]
    return list(det.get("train_methods", config["training"]["train_methods"]))


def scoring_settings(config: dict, name: str) -> dict:
    """How a detector's predictions pick the frames of a video: ``frames_test`` (its resolved
    recipe's, :func:`detector_settings`) and ``frames_test_pick`` (its block's; None: the
    architecture's own, :func:`fairforge.detector_kinds.frame_pick`)."""
    return {
        "frames_test": detector_settings(config, name)["frames_test"],
        "frames_test_pick": config["detectors"][name].get("frames_test_pick"),
    }


def all_variants(config: dict) -> list[str]:
    """``variants`` plus the members of ``variant_suites``, in order, without repeats; a
    suite named with ``~frame`` (``deeperforensics~frame``) gives its members' frame mode."""
    names = list(config["variants"])
    for name in config["variant_suites"]:
        base = at_crop(name)
        members = VIDEO_SUITE if base == "video" else suite(base, with_clean=False)
        names += [at_frame(v) for v in members] if apply_at(name) == "frame" else members
    return list(dict.fromkeys(names))


def variant_options(config: dict, variant: str) -> dict:
    """The options (e.g. weights paths) of the operation(s) in one variant, and nothing else,
    so that editing one operation's options reruns only its own jobs.

    ``far_learned`` gets the generator of the ``degradation`` block as its ``weights``;
    keys set under ``variant_options.far_learned`` override it. ``far`` (on crops) gets
    the share of the crop the face spans at ``faces.margin`` as its ``face_fraction``, so
    that ``far@d`` is defined on the face width, as the ranking study's chain is. An
    ``op@random`` variant also gets the ``random`` entry (how it draws its intensity).
    """
    ops = operation_names(variant)  # a combination's parts take their own ops' options
    if is_random_variant(variant):
        ops.append(RANDOM)
    options = {op: opts for op, opts in config["variant_options"].items() if op in ops}
    if FAR_OP in ops and apply_at(variant) == "crop":
        # far@d shrinks the face, not the aligned crop with its margin, to the nominal width
        margin = config["faces"]["margin"]
        options[FAR_OP] = {"face_fraction": face_fraction(margin), **options.get(FAR_OP, {})}
    weights = degradation_checkpoint(config) if LEARNED_DEGRADATION_OP in ops else None
    if weights:
        options[LEARNED_DEGRADATION_OP] = {
            "weights": weights,
            **options.get(LEARNED_DEGRADATION_OP, {}),
        }
    return options


LEARNED_DEGRADATION_OP = "far_learned"
FAR_OP = "far"
DEGRADATION_CHECKPOINT = result_path("degradation_generator")
DEGRADATION_SAMPLE_SHEET = result_path("degradation_samples")


def trains_degradation(config: dict) -> bool:
    """Whether the workflow trains the high-to-low generator: both folders set, no
    ready checkpoint. One folder without the other is a configuration error."""
    block = config.get("degradation") or {}
    if block.get("checkpoint"):
        return False
    given = [key for key in ("high_dir", "low_dir") if block.get(key)]
    if len(given) == 1:
        missing = "low_dir" if given == ["high_dir"] else "high_dir"
        raise ValueError(
            f"config: degradation: {given[0]} is set but {missing} is not; "
            "training the generator needs both (or set checkpoint)"
        )
    return len(given) == 2


def degradation_checkpoint(config: dict) -> str | None:
    """The generator ``far_learned`` uses: the configured checkpoint, else the one the
    workflow trains, else None (the op then reports the default path it expected)."""
    block = config.get("degradation") or {}
    if block.get("checkpoint"):
        return str(block["checkpoint"])
    return DEGRADATION_CHECKPOINT if trains_degradation(config) else None


def degradation_inputs(config: dict, variant: str) -> list[str]:
    """Extra inputs of a prediction job: the trained generator when this variant uses it.

    A configured checkpoint is not an input: when it is missing, the variant is reported as
    unavailable with that path instead of failing the DAG.
    """
    weights = variant_options(config, variant).get(LEARNED_DEGRADATION_OP, {}).get("weights")
    if trains_degradation(config) and weights == DEGRADATION_CHECKPOINT:
        return [DEGRADATION_CHECKPOINT]
    return []


def degradation_images(config: dict, key: str) -> list[str]:
    """The images under ``degradation.<key>`` (a folder), as inputs of the training job.

    Listed file by file because Snakemake dates a folder by its own mtime, which misses a
    face replaced in place. A missing folder is returned as is, so Snakemake names it.
    """
    folder = Path(config["degradation"][key])
    if not folder.is_dir():
        return [str(folder)]
    return sorted(
        str(p) for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
    )


#: ``ranking.distances``' value for the near-to-far generator (the others are far@1..5's levels).
LEARNED_DISTANCE = "learned"


def ranking_distances(config: dict) -> list:
    """How far away the ranking sees probes, one study per value in the same run:
    ``ranking.distances`` (1..5, the classical chain at that level, or ``learned``, the
    near-to-far generator), else the one-distance form: ``learned`` with
    ``ranking.degradation: learned``, else ``ranking.distance``. Far-trained encoders see
    their crops at the first value."""
    ranking = config["ranking"]
    if ranking.get("distances"):
        return list(ranking["distances"])
    if ranking.get("degradation", "classical") == LEARNED_DISTANCE:
        return [LEARNED_DISTANCE]
    return [ranking["distance"]]


def ranking_view(config: dict, distance) -> dict:
    """How the ranking sees faces at one value of :func:`ranking_distances` (an int, or its
    text as a wildcard holds it): the keyword arguments of
    :func:`fairforge.ranking.embed_study`, ``{"distance": d, "degradation": "classical",
    "generator": None}`` or, for ``learned`` (one distance), ``{"degradation": "learned",
    "generator": path}``."""
    if str(distance) != LEARNED_DISTANCE:
        return {"distance": int(distance), "degradation": "classical", "generator": None}
    weights = degradation_checkpoint(config)
    if not weights:
        raise ValueError(
            "config: ranking.distances: learned needs the near-to-far generator (as "
            "ranking.degradation: learned does) - set degradation.high_dir and low_dir (the "
            "workflow trains it) or degradation.checkpoint"
        )
    return {"degradation": LEARNED_DISTANCE, "generator": weights}


def ranking_degradation(config: dict) -> dict:
    """How the ranking sees faces at its first distance: ``{"degradation": ..., "generator":
    path or None}`` (:func:`ranking_view` without the distance)."""
    view = ranking_view(config, ranking_distances(config)[0])
    return {"degradation": view["degradation"], "generator": view["generator"]}


def ranking_degradation_inputs(config: dict, distance=None) -> list[str]:
    """The generator the ranking reads at ``distance`` (default: its first), when the
    workflow trains it."""
    if distance is None:
        distance = ranking_distances(config)[0]
    weights = ranking_view(config, distance)["generator"]
    return [weights] if weights == DEGRADATION_CHECKPOINT else []


def degradation_settings(config: dict) -> dict:
    """What trains the generator (its params, so changing any of them retrains it)."""
    block = config["degradation"]
    return {
        "high_dir": str(block["high_dir"]),
        "low_dir": str(block["low_dir"]),
        "steps": int(block["steps"]),
        "batch_size": int(block["batch_size"]),
        "seed": int(config["seed"]),
        "device": config["device"],
    }


def is_external(config: dict, name: str) -> bool:
    """An external detector brings its own scores: nothing to train, run or time."""
    return "scores" in config["detectors"][name]


def model_input(config: dict, name: str) -> str:
    """What prediction for a detector reads: its score file, or its (trained) checkpoint."""
    det = config["detectors"][name]
    return det["scores"] if "scores" in det else f"{RESULTS}/models/{name}/model.pt"


def train_input(config: dict, name: str) -> dict[str, list[str]]:
    """What the train rule reads, by name: ``weights``, the files it starts from (user weights
    to import as they are, a pretrained start or a checkpoint to fine-tune: a missing one stops
    the run before any job, naming its path), and ``samples``, the samples of the dataset's own
    crops (real, and the fakes a labelled dataset ships) and of the detector's generated
    training methods (and nothing else, so that a new forgery method, variant or dataset leaves
    a trained detector as it is)."""
    det = config["detectors"][name]
    fine_tune = det.get("init") == "checkpoint"
    if det.get("checkpoint") and not fine_tune:
        return {"weights": [det["checkpoint"]], "samples": []}
    wanted = detector_settings(config, name)["train_methods"]
    samples = []
    for dataset in train_datasets(config, name):
        methods = [m for m in wanted if m in dataset_methods(config, dataset)]
        # A dataset with train_compression trains on compressed copies of its training crops.
        share = "train_copies" if train_compression(config, dataset) else "method_samples"
        samples += [result_path(share, dataset=dataset, method=m) for m in [CROPS, *methods]]
    starts = [det.get("pretrained"), det.get("checkpoint") if fine_tune else None]
    # timm's ImageNet weights (timm:<model>) are timm's download, not a file of the config's
    files = [path for path in starts if path and not str(path).startswith(TIMM_PREFIX)]
    return {"weights": files, "samples": samples}


def train_compression(config: dict, dataset: str) -> str | None:
    """The variant that a dataset's training crops are compressed with, if any."""
    return config["datasets"][dataset].get("train_compression")


def imports_fakes(config: dict, dataset: str) -> bool:
    """Whether a dataset ships fakes of its own (FaceForensics++, a labelled csv; also when
    its adapter cannot tell without listing it): their masks are made beside its samples
    (``imported_masks``) for mask-supervised training."""
    block = dataset_block(config, dataset)
    return ADAPTERS.create(block["adapter"]).imported_methods(dataset, block) != []


def imported_masks_input(config: dict, dataset: str) -> list[str]:
    """The masks manifest of the fakes a dataset ships, where it ships some."""
    return (
        [result_path("imported_masks", dataset=dataset)] if imports_fakes(config, dataset) else []
    )


def method_samples_inputs(dataset: str, method: str, masks: bool = False) -> dict[str, str]:
    """What one share of the samples is built from: sources, faces and, for a forgery
    method, its own forgeries; the dataset's own crops also the masks of the fakes it ships
    (``masks``: it ships some, :func:`imports_fakes`)."""
    inputs = {
        "sources": result_path("sources", dataset=dataset),
        "faces": result_path("faces", dataset=dataset),
    }
    if method != CROPS:
        inputs["forgery"] = result_path("forgery", dataset=dataset, method=method)
    elif masks:
        inputs["masks"] = result_path("imported_masks", dataset=dataset)
    return inputs


def predict_shard_samples(dataset: str, variant: str, method: str) -> str:
    """The samples one prediction job reads: its method's samples, or, for a video or a
    frame variant, the variant's own crops (every method; the job keeps its own)."""
    if is_video_variant(variant) or is_frame_variant(variant):
        return predict_samples_path(dataset, variant)
    return result_path("method_samples", dataset=dataset, method=method)


def prediction_methods(config: dict, dataset: str) -> list[str]:
    """What prediction jobs on ``dataset`` are split by, besides shards: the dataset's own
    crops and each forgery method generated on it."""
    return [CROPS, *dataset_methods(config, dataset)]


def train_datasets(config: dict, name: str) -> list[str]:
    """The datasets a detector trains on (``detectors.X.train_dataset``: one name or a list;
    default the first configured dataset), in the order given."""
    chosen = config["detectors"][name].get("train_dataset") or next(iter(config["datasets"]))
    return [chosen] if isinstance(chosen, str) else list(chosen)


def train_dataset(config: dict, name: str) -> str:
    """A detector's training datasets as one label ('a' or 'a+b'), as the tables show it."""
    return "+".join(train_datasets(config, name))


def trained_settings(config: dict) -> dict[str, dict]:
    """Every detector the workflow trains or imports (not score files): its resolved settings
    and its training dataset(s), what tells two detectors apart."""
    return {
        d: {**detector_settings(config, d), "train_dataset": train_dataset(config, d)}
        for d in config["detectors"]
        if not is_external(config, d)
    }


def augmentation_studies(config: dict) -> list[tuple[str, str, str]]:
    """``(detector, twin, augment)``: each detector trained without augmentation beside its
    twins that differ only in ``augment`` (SDAug, DAug, AugMix: the Assessment's Tables 4-6,
    Figs. 6-8); empty when there is none."""
    return augmentation_twins(trained_settings(config))


def rate_variants(variants) -> list[str]:
    """The codec variants whose bits per pixel the compression study measures (crop mode, a
    tabulated level): all of them when one codec has two or more (a rate curve: the
    Assessment's Fig. 5), else none."""
    codecs = [
        v for v in variants if is_codec(v) and apply_at(v) == "crop" and not is_random_variant(v)
    ]
    per_codec: dict[str, int] = {}
    for v in codecs:
        per_codec[parse_variant(v)[0]] = per_codec.get(parse_variant(v)[0], 0) + 1
    return codecs if max(per_codec.values(), default=0) >= 2 else []


def training_data_families(config: dict) -> list[list[str]]:
    """Families of two or more detectors that differ only in their training datasets (the
    Assessment's Fig. 4: one architecture on FF++ raw, c23 and all qualities)."""
    families = training_families(trained_settings(config))
    return [members for members in families if len(members) > 1]


def ranked_datasets(config: dict) -> list[str]:
    """The datasets whose identities the ranking study ranks, each in a study of its own:
    ``ranking.datasets``, else ``ranking.dataset``, else the first configured dataset."""
    ranking = config["ranking"]
    if ranking.get("datasets"):
        return list(ranking["datasets"])
    return [ranking.get("dataset") or next(iter(config["datasets"]))]


def encoder_train_dataset(config: dict) -> str:
    """The dataset on whose train-split identities the trained encoders learn, once for
    every ranked dataset (the Exposure paper trains on DiveFace and ranks VGGFace2 too):
    ``ranking.train_dataset``, else the first ranked dataset."""
    return config["ranking"].get("train_dataset") or ranked_datasets(config)[0]


def trained_encoders(config: dict) -> list[str]:
    """Labels of the ranking encoders that the workflow trains (those with a ``train`` block)."""
    return [label for label, opts in config["ranking"]["encoders"].items() if "train" in opts]


def encoder_views(config: dict) -> dict[str, str]:
    """Label -> how each ranking encoder saw faces in training: ``far`` (a ``train`` block
    with ``far: true``) or ``near`` (close-range crops, and every encoder not trained
    here). The exposure averaged across encoders pools encoders of one view."""
    return {
        label: "far" if (opts.get("train") or {}).get("far") else "near"
        for label, opts in config["ranking"]["encoders"].items()
    }


def encoder_checkpoint(label: str) -> str:
    return result_path("encoder_model", encoder=label)


def ranking_encoders(config: dict) -> dict[str, dict]:
    """Label → ``{"encoder": registered name, **constructor options}`` for the exposure study;
    trained encoders load the checkpoint their rule writes."""
    out = {}
    for label, opts in config["ranking"]["encoders"].items():
        opts = {k: v for k, v in opts.items() if k != "train"}
        opts.setdefault("encoder", label)
        if label in trained_encoders(config):
            opts["checkpoint"] = encoder_checkpoint(label)
        out[label] = opts
    return out


def encoder_training(config: dict, label: str) -> dict:
    """Keyword arguments of :func:`fairforge.training.encoder.train_encoder_on_faces` for
    one trained encoder; far-trained encoders see faces as the ranking sees probes at its
    first distance (:func:`ranking_distances`: the classical chain at that level, or the
    same near-to-far generator that degrades the probes)."""
    opts = config["ranking"]["encoders"][label]
    view = ranking_view(config, ranking_distances(config)[0])
    at = {"distance": view["distance"]} if "distance" in view else {}
    settings = {"arch": opts.get("encoder", label), **at, **opts["train"]}
    if settings.get("far") and view["degradation"] != "classical":
        settings.update(degradation=view["degradation"], generator=view["generator"])
    return settings


def encoder_training_inputs(config: dict, label: str) -> list[str]:
    """What training one encoder waits for besides the faces: the near-to-far generator the
    workflow trains, when a far-trained encoder sees faces through it."""
    if encoder_training(config, label).get("degradation") == LEARNED_DISTANCE:
        return ranking_degradation_inputs(config)
    return []


def feature_jobs(config: dict) -> list[tuple[str, str]]:
    """``(detector, dataset)`` of every features file the run draws (``metrics.features``):
    its detectors on its datasets (default every dataset), those ``select:`` kept."""
    block = config["metrics"]["features"]
    datasets = block.get("datasets") or list(config["datasets"])
    return [
        (detector, dataset)
        for detector in block["detectors"]
        if detector in config["detectors"]
        for dataset in datasets
        if dataset in config["datasets"]
    ]


def feature_settings(config: dict) -> dict:
    """What one features job draws: the approaches, samples per approach and group, the
    evaluated split and the run's seed (FairFD A.7)."""
    block = config["metrics"]["features"]
    return {
        "methods": list(block["methods"]),
        "per_group": int(block["per_group"]),
        "split": config["metrics"]["evaluation_split"],
        "seed": int(config["seed"]),
    }


def feature_analysis_settings(config: dict) -> dict:
    """The keyword arguments of the feature tables (MMD reference group and permutations,
    t-SNE perplexity) and the run's seed."""
    block = config["metrics"]["features"]
    return {
        "reference_group": block.get("reference_group"),
        "permutations": int(block["mmd_permutations"]),
        "perplexity": float(block["tsne_perplexity"]),
        "seed": int(config["seed"]),
    }


# The parts of a config that `select:` names (docs/papers.md, "Run a part of a paper"):
# select key -> where the config defines the names.
SELECTABLE = {
    "detectors": "detectors",
    "datasets": "datasets",
    "variants": "variants and variant_suites",
    "encoders": "ranking.encoders",
}


def selectable_names(config: dict, key: str) -> list[str]:
    """The names ``select.<key>`` may list: the ones the config defines, in its order."""
    if key == "variants":
        return all_variants(config)
    if key == "encoders":
        return list(config["ranking"]["encoders"])
    return list(config[key])


def trains(config: dict, name: str) -> bool:
    """Whether a detector reads training samples: not scored elsewhere (``scores``) nor
    given its weights as they are (``checkpoint`` without ``init: checkpoint``)."""
    return not is_external(config, name) and bool(train_input(config, name)["samples"])


def select_config(config: dict) -> dict:
    """Keep the part of a validated config that ``select`` names, in place; return it.

    Each of ``select.detectors``, ``datasets``, ``variants`` (after ``variant_suites`` are
    expanded) and ``encoders`` (``ranking.encoders``) lists the names to keep; a missing
    list keeps them all, ``clean`` stays with any variants, and the config's order is kept
    (a detector without ``train_dataset`` still trains on the first dataset). A name the
    config does not define is an error that lists the valid ones. What only unselected
    detectors use goes too: a generated forgery method that some detector trains on from a
    dataset, and no selected one does, is no longer generated there (FairFD's ``sbi`` blends
    on FF++). A selected detector that trains on an unselected dataset is an error: leaving
    it out silently would change what the detector is. The ranking study keeps the
    selected datasets it ranks (:func:`select_ranked_datasets`)."""
    chosen = config.get("select") or {}
    if not chosen:
        return config
    for key, where in SELECTABLE.items():
        valid = selectable_names(config, key)
        unknown = [n for n in chosen.get(key, []) if n not in valid]
        if unknown:
            raise ValueError(
                f"config: select.{key}: {unknown} not defined in {where} (defined: {valid})"
            )
    keep = {key: set(chosen.get(key) or selectable_names(config, key)) for key in SELECTABLE}
    keep["variants"].add(CLEAN)
    for name in (n for n in config["detectors"] if n in keep["detectors"]):
        missing = [d for d in train_datasets(config, name) if d not in keep["datasets"]]
        if missing and trains(config, name):
            raise ValueError(
                f"config: select.datasets: detector {name!r} trains on {missing} "
                f"(detectors.{name}.train_dataset, default the first dataset), which "
                "select.datasets leaves out: select it too, or leave the detector out"
            )
    ranking = config["ranking"]
    if ranking["enabled"] and "datasets" in chosen:
        select_ranked_datasets(config, keep)
    unused = training_only_methods(config, keep["detectors"])
    generated = {m for d in config["datasets"] for m in dataset_methods(config, d)}
    for name in config["datasets"]:
        dropped = unused.get(name, set())
        if dropped:
            config["datasets"][name]["forgery"] = [
                m for m in dataset_methods(config, name) if m not in dropped
            ]
    config["datasets"] = {k: v for k, v in config["datasets"].items() if k in keep["datasets"]}
    still = {m for d in config["datasets"] for m in dataset_methods(config, d)}
    config["forgery"]["methods"] = [
        m for m in config["forgery"]["methods"] if m in still or m not in generated
    ]
    config["detectors"] = {k: v for k, v in config["detectors"].items() if k in keep["detectors"]}
    if "variants" in chosen:
        config["variants"] = [v for v in all_variants(config) if v in keep["variants"]]
        config["variant_suites"] = []
    ranking["encoders"] = {k: v for k, v in ranking["encoders"].items() if k in keep["encoders"]}
    return config


def select_ranked_datasets(config: dict, keep: dict[str, set[str]]) -> None:
    """The ranking study on the selected datasets among those it ranks: none left is an
    error, and so is leaving out the dataset that selected encoders train on (pinned in
    ``ranking.train_dataset``, so that it does not become another dataset quietly)."""
    ranking = config["ranking"]
    ranked = ranked_datasets(config)
    kept = [d for d in ranked if d in keep["datasets"]]
    if not kept:
        raise ValueError(
            f"config: select.datasets: the ranking study ranks {ranked} (ranking.datasets, "
            "default the first dataset), which select.datasets leaves out: select one of "
            "them too, or set ranking.enabled: false"
        )
    trainers = [e for e in trained_encoders(config) if e in keep["encoders"]]
    train_on = encoder_train_dataset(config)
    if trainers and train_on not in keep["datasets"]:
        raise ValueError(
            f"config: select.datasets: encoders {trainers} train on {train_on!r} "
            "(ranking.train_dataset, default the first ranked dataset), which "
            "select.datasets leaves out: select it too, or leave those encoders out"
        )
    if trainers:
        ranking["train_dataset"] = train_on
    else:
        ranking.pop("train_dataset", None)
    ranking.pop("dataset", None)
    ranking["datasets"] = kept


def training_only_methods(config: dict, selected: set[str]) -> dict[str, set[str]]:
    """Dataset -> the generated methods on it that detectors train on, none of them
    ``selected``: fakes made only for unselected detectors' training."""
    trainers: dict[tuple[str, str], set[str]] = {}
    for name in filter(lambda n: trains(config, n), config["detectors"]):
        for dataset in train_datasets(config, name):
            for method in set(train_methods(config, name)) & set(dataset_methods(config, dataset)):
                trainers.setdefault((dataset, method), set()).add(name)
    out: dict[str, set[str]] = {}
    for (dataset, method), names in trainers.items():
        if not names & selected:
            out.setdefault(dataset, set()).add(method)
    return out
