"""Face-ranking exposure at a distance: the Exposure paper's protocol (docs/metrics.md section 9).

1. Identities with at least ``l`` usable crops; ``l`` of them are drawn per identity
   (``rng_for(seed, "exposure_sample", subject_id)``), 30% become probes and 70% gallery.
2. Probes are seen far away: :func:`fairforge.perturb.distance.far_degrade` at ``distance``
   (1..5), seeded by ``(seed, "far", image_id, distance)`` so the same probe is degraded the
   same way in every setting and for every encoder, then upsampled to the encoder's input;
   with ``degradation="learned"`` the Exposure paper's own degradation instead: the
   near-to-far generator trained jointly with a far-to-near restorer
   (:mod:`fairforge.perturb.learned_degradation`).
3. Settings: ``reidentification`` (probe and gallery both far) and ``identification`` (far
   probe against a close-range gallery, the crops as they are).
4. Each gallery identity is one template, the mean of its gallery embeddings re-normalised;
   each probe ranks all templates by cosine similarity.
5. Metrics of :mod:`fairforge.metrics.exposure`, for both counting conventions.

:func:`exposure_study` runs it in one process; the workflow runs its steps as jobs, for
every ranked dataset and distance: :func:`split_probe_gallery` once per dataset,
:func:`embed_study` per dataset, distance, encoder and shard (dlib's fallback box calibrated
on the same :func:`calibration_rows` in every shard), :func:`rank_studies` once for all.

Outputs (:func:`write_exposure_outputs`; :func:`exposure_study` writes them to ``out_dir``,
the results folder by default):
``exposure_table.csv`` (one row per (dataset ×) distance × encoder × setting × convention),
``exposure_per_probe_group.csv``, ``exposure_ks.csv`` (KS tests on visibility and exposure,
raw and Holm-adjusted p-values), and for the figure ``exposure_per_ranking.parquet``
(per-ranking visibility and exposure of every group, NaN where the group holds no counted
position) and ``exposure_hit_curve.csv``. The table has equation 7's unconditional
``disparate_*`` and, beside them, the paper's figures' ``disparate_*_conditional`` (means
over only the rankings in which a group appears). ``exposure_averaged.csv`` and
``exposure_averaged_ks.csv`` are the paper's Fig. 2, the exposure averaged across the
encoders of one training view (:func:`average_across_encoders`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.encoders import FaceEncoder, create_encoder, embed_in_batches, l2_normalise
from fairforge.encoders.crops import face_images, far_generator
from fairforge.metrics import exposure as xm
from fairforge.metrics.multiplicity import holm_adjust
from fairforge.plotting import save_png
from fairforge.seeding import rng_for

SETTINGS = ("reidentification", "identification")
OUTPUT_FILES = {
    "exposure_table": "exposure_table.csv",
    "per_probe_group": "exposure_per_probe_group.csv",
    "ks": "exposure_ks.csv",
    "per_ranking": "exposure_per_ranking.parquet",
    "hit_curve": "exposure_hit_curve.csv",
    "averaged": "exposure_averaged.csv",
    "averaged_ks": "exposure_averaged_ks.csv",
}
#: How an encoder saw faces in training (:func:`average_across_encoders` pools one view).
ENCODER_VIEWS = ("near", "far")


# --------------------------------------------------------------------------- selection


def resolve_groups(faces: pd.DataFrame, group_column: str | Sequence[str]) -> pd.Series:
    """The group of every row: one column, or the intersection of several joined by ``_``
    (``["tone", "gender"]``, or ``"tone_gender"`` when that is not itself a column)."""
    if isinstance(group_column, str):
        if group_column in faces.columns:
            return faces[group_column].astype(str)
        parts = group_column.split("_")
        if len(parts) > 1 and all(p in faces.columns for p in parts):
            group_column = parts
        else:
            raise KeyError(
                f"group column {group_column!r} not in the faces table "
                f"(columns: {list(faces.columns)})"
            )
    columns = list(group_column)
    missing = [c for c in columns if c not in faces.columns]
    if missing:
        raise KeyError(f"group columns {missing} not in the faces table")
    return faces[columns].astype(str).agg("_".join, axis=1)


def split_probe_gallery(
    faces: pd.DataFrame,
    l: int = 10,
    seed: int = 0,
    group_column: str | Sequence[str] = "group",
    probe_fraction: float = 0.3,
) -> pd.DataFrame:
    """Rows of the study: ``l`` crops of every identity with at least ``l``, each marked
    ``role`` = probe or gallery, with its ``group``. Sorted by subject, role, image id."""
    if l < 2:
        raise ValueError(f"l must be at least 2 (one probe, one gallery image), got {l}")
    needed = {"image_id", "subject_id", "crop_path"}
    missing = needed - set(faces.columns)
    if missing:
        raise KeyError(f"the faces table lacks {sorted(missing)}")
    rows = faces
    if "ok" in rows.columns:
        rows = rows[rows["ok"].astype(bool)]
    rows = rows[rows["crop_path"].notna()].copy()
    rows["group"] = resolve_groups(rows, group_column).to_numpy()
    mixed = rows.groupby("subject_id")["group"].nunique()
    if (mixed > 1).any():
        raise ValueError(f"subjects with more than one group: {list(mixed[mixed > 1].index[:5])}")
    rows = rows.sort_values(["subject_id", "image_id"], kind="stable")
    n_probe = int(min(l - 1, max(1, round(probe_fraction * l))))
    picked = []
    for subject, items in rows.groupby("subject_id", sort=True):
        if len(items) < l:
            continue
        order = rng_for(seed, "exposure_sample", subject).permutation(len(items))[:l]
        chosen = items.iloc[order].copy()
        chosen["role"] = ["probe"] * n_probe + ["gallery"] * (l - n_probe)
        picked.append(chosen)
    if not picked:
        raise ValueError(f"no identity has at least l={l} usable crops")
    out = pd.concat(picked, ignore_index=True)
    out = out.sort_values(
        ["subject_id", "role", "image_id"], ascending=[True, False, True], kind="stable"
    ).reset_index(drop=True)
    return out[["image_id", "subject_id", "group", "crop_path", "role"]]


# --------------------------------------------------------------------------- embeddings


def identity_templates(
    embeddings: np.ndarray, identity_index: np.ndarray, n_identities: int
) -> np.ndarray:
    """Mean embedding of each identity, re-normalised to unit length."""
    sums = np.zeros((n_identities, embeddings.shape[1]), dtype=np.float64)
    np.add.at(sums, identity_index, embeddings)
    return l2_normalise(sums.astype(np.float32))


def resolve_encoders(encoder) -> dict[str, FaceEncoder]:
    """Encoders by label from a name, an instance, a list of those, or a mapping
    label → instance | config dict (``{"encoder": registered name, **constructor args}``;
    the registered name defaults to the label)."""
    if isinstance(encoder, FaceEncoder):
        return {encoder.name: encoder}
    if isinstance(encoder, str):
        return {encoder: create_encoder(encoder)}
    if isinstance(encoder, Mapping):
        out = {}
        for label, value in encoder.items():
            if isinstance(value, FaceEncoder):
                out[label] = value
            else:
                cfg = dict(value or {})
                out[label] = create_encoder(cfg.pop("encoder", label), **cfg)
        return out
    out = {}
    for item in encoder:
        out.update(resolve_encoders(item))
    return out


# --------------------------------------------------------------------------- the study


def _convention_rows(
    R,
    probe_identity,
    gallery_groups,
    probe_groups,
    groups,
    k,
    convention,
    base,
    counts,
    hit_cols,
    probe_hits,
):
    vis_rank = xm.per_ranking_visibility(R, gallery_groups, groups, k, probe_identity, convention)
    exp_rank = xm.per_ranking_exposure(R, gallery_groups, groups, k, probe_identity, convention)
    vis, exp = vis_rank.mean(axis=0), exp_rank.mean(axis=0)
    # a ranking in which a group holds no counted position has no value for it
    vis_empty = np.where(vis_rank > 0, vis_rank, np.nan)
    exp_empty = np.where(vis_rank > 0, exp_rank, np.nan)
    vis_cond, exp_cond = xm.conditional_means(vis_empty), xm.conditional_means(exp_empty)
    summary = {**base, "convention": convention, **counts, **hit_cols}
    summary.update({f"visibility_{g}": float(v) for g, v in zip(groups, vis)})
    summary.update({f"exposure_{g}": float(e) for g, e in zip(groups, exp)})
    summary["disparate_visibility"] = xm.mean_disparity(vis)
    summary["disparate_exposure"] = xm.mean_disparity(exp)
    # the paper's figures: means over the rankings in which the group appears
    summary["disparate_visibility_conditional"] = xm.mean_disparity_defined(vis_cond)
    summary["disparate_exposure_conditional"] = xm.mean_disparity_defined(exp_cond)
    summary.update({f"conditional_visibility_{g}": float(v) for g, v in zip(groups, vis_cond)})
    summary.update({f"conditional_exposure_{g}": float(e) for g, e in zip(groups, exp_cond)})

    vis_m, n_per_group = xm.per_probe_group_matrix(vis_rank, probe_groups, groups)
    exp_m, _ = xm.per_probe_group_matrix(exp_rank, probe_groups, groups)
    per_group = [
        {
            **base,
            "convention": convention,
            "probe_group": pg,
            "gallery_group": gg,
            "n_probes": int(n_per_group[p]),
            "visibility": float(vis_m[p, q]),
            "exposure": float(exp_m[p, q]),
            **probe_hits[pg],
        }
        for p, pg in enumerate(groups)
        for q, gg in enumerate(groups)
    ]

    ks = [
        {**base, "convention": convention, "quantity": quantity, **row}
        for quantity, values in (("visibility", vis_empty), ("exposure", exp_empty))
        for row in xm.ks_tests(values, groups)
    ]
    # one family per encoder x setting x convention: every pair, both quantities
    for row, p in zip(ks, holm_adjust([row["pvalue"] for row in ks])):
        row["pvalue_holm"] = float(p)
    return summary, per_group, ks, vis_empty, exp_empty


def study_views(settings: Sequence[str]) -> list[tuple[str, bool]]:
    """The (role, far) views the settings compare: far probes always, the far gallery for
    re-identification, the close-range gallery for identification."""
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown or not settings:
        raise ValueError(f"settings must be among {SETTINGS}, got {list(settings)}")
    views = [("probe", True)]
    if "reidentification" in settings:
        views.append(("gallery", True))
    if "identification" in settings:
        views.append(("gallery", False))
    return views


def calibration_rows(study: pd.DataFrame, n: int = 64) -> pd.DataFrame:
    """The close-range crops on which encoders with a ``calibrate_fallback`` method fit
    their no-detection box: the first ``n`` gallery rows, the same for every shard."""
    return study[study["role"] == "gallery"].iloc[:n]


def check_study(study: pd.DataFrame, k: int, l: int) -> None:
    n_id = study["subject_id"].nunique()
    if n_id < k + 1:
        raise ValueError(
            f"{n_id} identities with l={l} crops; a top-{k} ranking needs at least "
            f"{k + 1} (with {k} or fewer it holds the whole gallery and measures nothing)"
        )


def embed_study(
    study: pd.DataFrame,
    results_dir: str | Path,
    encoder: FaceEncoder,
    settings: Sequence[str] = SETTINGS,
    distance: int = 3,
    seed: int = 0,
    face_fraction: float = 1.0,
    batch_size: int = 64,
    calibration: pd.DataFrame | None = None,
    degradation: str = "classical",
    generator: str | Path | None = None,
) -> pd.DataFrame:
    """The embeddings that ``settings`` compare of ``study`` rows (all of them, or one
    shard's): one row per image and view with ``image_id``, ``role``, ``far``,
    ``fell_back`` (1 where the encoder found no face and aligned on its fallback box; NaN
    for encoders that detect nothing) and ``embedding`` (unit-norm float32).

    ``calibration``: close-range crops (:func:`calibration_rows`) on which an encoder with
    ``calibrate_fallback`` (dlib_resnet) first fits its fallback box; crops share one
    geometry, so where the face is found on near crops is where it is on far ones.

    ``degradation``: how far views are made (``ranking.degradation``): ``classical`` (the
    far chain at ``distance``) or ``learned`` (the near-to-far generator trained jointly
    with its restorer, checkpoint ``generator``; it has a single distance).
    """
    views = study_views(settings)
    gen = far_generator(degradation, generator)
    results_dir = Path(results_dir)
    if calibration is not None and len(study) and hasattr(encoder, "calibrate_fallback"):
        encoder.calibrate_fallback(
            face_images(
                calibration, results_dir, False, distance, seed, encoder.input_size, face_fraction
            )
        )
    frames = []
    for role, far in views:
        rows = study[study["role"] == role]
        start = None if encoder.fallbacks is None else len(encoder.fallbacks)
        emb = embed_in_batches(
            encoder,
            face_images(
                rows, results_dir, far, distance, seed, encoder.input_size, face_fraction, gen
            ),
            batch_size,
        )
        fell_back = (
            np.full(len(rows), np.nan)
            if start is None
            else np.asarray(encoder.fallbacks[start:], dtype=float)
        )
        frames.append(
            pd.DataFrame(
                {
                    "image_id": rows["image_id"].to_numpy(),
                    "role": role,
                    "far": far,
                    "fell_back": fell_back,
                    "embedding": list(emb),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _view(
    embeddings: pd.DataFrame, rows: pd.DataFrame, role: str, far: bool, label: str
) -> tuple[np.ndarray, np.ndarray]:
    part = embeddings[(embeddings["role"] == role) & (embeddings["far"] == far)]
    part = part.drop_duplicates("image_id").set_index("image_id")
    missing = pd.Index(rows["image_id"]).difference(part.index)
    if len(missing):
        view = "far" if far else "close-range"
        raise ValueError(
            f"{label}: no {view} {role} embedding for {len(missing)} image(s), "
            f"e.g. {list(missing[:3])}"
        )
    part = part.loc[rows["image_id"]]
    emb = np.stack(part["embedding"].to_numpy()).astype(np.float32)
    return emb, part["fell_back"].to_numpy(dtype=float)


def rank_study(
    study: pd.DataFrame,
    embeddings: Mapping[str, pd.DataFrame],
    settings: Sequence[str] = SETTINGS,
    distance: int = 3,
    l: int = 10,
    k: int = 10,
    *,
    hit_ks: Sequence[int] = (1, 5, 10),
    conventions: Sequence[str] = xm.CONVENTIONS,
    dataset: str | None = None,
) -> dict[str, pd.DataFrame]:
    """Rank the gallery for every probe of ``study`` (:func:`split_probe_gallery`) with each
    encoder's embeddings (:func:`embed_study`, label → frame) and measure; returns the
    frames of :data:`OUTPUT_FILES` by key but the averaged ones (:func:`rank_studies`).
    ``distance`` labels the rows (a level of the far chain, or ``learned``); ``dataset``,
    when given, leads every row."""
    study_views(settings)
    check_study(study, k, l)
    identities = np.array(sorted(study["subject_id"].unique()), dtype=object)
    n_id = len(identities)
    id_index = {s: i for i, s in enumerate(identities)}
    id_group = study.groupby("subject_id")["group"].first()
    gallery_groups = id_group.loc[identities].to_numpy(dtype=object)
    groups = sorted(id_group.unique())

    probes = study[study["role"] == "probe"].reset_index(drop=True)
    gallery = study[study["role"] == "gallery"].reset_index(drop=True)
    probe_identity = probes["subject_id"].map(id_index).to_numpy(dtype=np.int64)
    gallery_identity = gallery["subject_id"].map(id_index).to_numpy(dtype=np.int64)
    probe_groups = probes["group"].to_numpy(dtype=object)
    depth = min(n_id, max([k, *hit_ks]))
    lead = {} if dataset is None else {"dataset": dataset}
    distance = distance_label(distance)

    tables, per_group_rows, ks_rows, ranking_frames, curve_frames = [], [], [], [], []
    for label, frame in embeddings.items():
        probe_emb, probe_fallback = _view(frame, probes, "probe", True, label)
        for setting in settings:
            gallery_emb, gallery_fallback = _view(
                frame, gallery, "gallery", setting == "reidentification", label
            )
            templates = identity_templates(gallery_emb, gallery_identity, n_id)
            R, _ = xm.rank_gallery(probe_emb, templates, depth)

            curve = xm.hit_ratio_curve(R, probe_identity, np.arange(1, depth + 1))
            hit_at = {c: float(curve[min(c, depth) - 1]) for c in hit_ks}
            hit_cols = {f"hit_ratio@{c}": v for c, v in hit_at.items()}
            probe_hits = {}
            for g in groups:
                mine = probe_groups == g
                probe_hits[g] = {
                    f"hit_ratio@{c}": (
                        float(xm.hit_ratio(R[mine], probe_identity[mine], min(c, depth)))
                        if mine.any()
                        else np.nan
                    )
                    for c in hit_ks
                }
            base = {
                **lead,
                "encoder": label,
                "setting": setting,
                "distance": distance,
                "k": int(k),
                "l": int(l),
            }
            counts = {
                "n_identities": n_id,
                "n_probes": len(probes),
                "n_gallery_images": len(gallery),
                "fallback_share_probes": float(probe_fallback.mean()),
                "fallback_share_gallery": float(gallery_fallback.mean()),
                **{
                    f"fallback_probes_{g}": float(probe_fallback[probe_groups == g].mean())
                    for g in groups
                },
            }
            curve_frames.append(
                pd.DataFrame(
                    {
                        **lead,
                        "encoder": label,
                        "setting": setting,
                        "distance": distance,
                        "k": np.arange(1, depth + 1),
                        "hit_ratio": curve,
                    }
                )
            )
            for convention in conventions:
                summary, per_group, ks, vis_empty, exp_empty = _convention_rows(
                    R,
                    probe_identity,
                    gallery_groups,
                    probe_groups,
                    groups,
                    k,
                    convention,
                    base,
                    counts,
                    hit_cols,
                    probe_hits,
                )
                tables.append(summary)
                per_group_rows.extend(per_group)
                ks_rows.extend(ks)
                ranking_frames.append(
                    pd.DataFrame(
                        {
                            **lead,
                            "encoder": label,
                            "setting": setting,
                            "distance": distance,
                            "convention": convention,
                            "probe_image_id": np.repeat(probes["image_id"].to_numpy(), len(groups)),
                            "probe_group": np.repeat(probe_groups, len(groups)),
                            "group": np.tile(np.asarray(groups, dtype=object), len(probes)),
                            "visibility": vis_empty.reshape(-1),
                            "exposure": exp_empty.reshape(-1),
                        }
                    )
                )

    return {
        "exposure_table": pd.DataFrame(tables),
        "per_probe_group": pd.DataFrame(per_group_rows),
        "ks": pd.DataFrame(ks_rows),
        "per_ranking": pd.concat(ranking_frames, ignore_index=True),
        "hit_curve": pd.concat(curve_frames, ignore_index=True),
    }


def rank_studies(
    runs: Sequence[tuple[str, object, pd.DataFrame, Mapping[str, pd.DataFrame]]],
    settings: Sequence[str] = SETTINGS,
    l: int = 10,
    k: int = 10,
    views: Mapping[str, str] | None = None,
    *,
    hit_ks: Sequence[int] = (1, 5, 10),
    conventions: Sequence[str] = xm.CONVENTIONS,
) -> dict[str, pd.DataFrame]:
    """Several studies ranked in one run: ``runs`` holds (dataset, distance, study,
    embeddings by encoder label) per ranked dataset and distance (:func:`rank_study` each).
    Their outputs are stacked, every frame leading with a ``dataset`` column when there is
    more than one dataset; a ``distance`` column that mixes ``learned`` with levels is
    text. Then the exposure averaged across encoders (:func:`average_across_encoders`,
    encoders pooled by ``views``: label → ``near`` | ``far``, default ``near``)."""
    if not runs:
        raise ValueError(
            "no study to rank: give at least one (dataset, distance, study, embeddings)"
        )
    several = len({dataset for dataset, *_ in runs}) > 1
    parts = [
        rank_study(
            study,
            embeddings,
            settings,
            distance,
            l,
            k,
            hit_ks=hit_ks,
            conventions=conventions,
            dataset=dataset if several else None,
        )
        for dataset, distance, study, embeddings in runs
    ]
    outputs = {key: pd.concat([p[key] for p in parts], ignore_index=True) for key in parts[0]}
    if any(isinstance(distance_label(d), str) for _, d, _, _ in runs):
        for frame in outputs.values():
            frame["distance"] = frame["distance"].astype(str)
    outputs.update(average_across_encoders(outputs["per_ranking"], views))
    return outputs


def distance_label(distance) -> int | str:
    """A distance as the tables write it: a level of the far chain (1..5) as an int, else
    its name (``learned``, the near-to-far generator)."""
    text = str(distance)
    return int(text) if text.isdigit() else text


def _pooled_parts(per_ranking: pd.DataFrame, views: Mapping[str, str] | None):
    """Per study, setting, convention and encoder view: (keys, groups, encoders, the
    per-ranking values of each encoder by quantity), for :func:`average_across_encoders`
    and its figure."""
    views = dict(views or {})
    unknown = {v for v in views.values() if v not in ENCODER_VIEWS}
    if unknown:
        raise ValueError(f"encoder views must be among {ENCODER_VIEWS}, got {sorted(unknown)}")
    frame = per_ranking.assign(trained=per_ranking["encoder"].map(lambda e: views.get(e, "near")))
    keys = [c for c in ("dataset", "distance", "setting", "convention") if c in frame.columns]
    keys.append("trained")
    for values, part in frame.groupby(keys, sort=False):
        groups = sorted(part["group"].unique())
        encoders = list(dict.fromkeys(part["encoder"]))
        arrays = {
            quantity: [
                part[part["encoder"] == e]
                .pivot(index="probe_image_id", columns="group", values=quantity)
                .reindex(columns=groups)
                .to_numpy()
                for e in encoders
            ]
            for quantity in ("visibility", "exposure")
        }
        yield dict(zip(keys, values)), groups, encoders, arrays


def average_across_encoders(
    per_ranking: pd.DataFrame, views: Mapping[str, str] | None = None
) -> dict[str, pd.DataFrame]:
    """The Exposure paper's Fig. 2 as tables (:func:`fairforge.metrics.exposure
    .averaged_across_encoders`): the rankings of every encoder of one view (``views``:
    label → ``near`` | ``far``, default ``near``; the paper's close- and long-range runs
    each pool their six encoders) pooled per study, setting and convention. ``averaged``:
    per group its mean per-ranking visibility and exposure over the pooled rankings in which
    it appears (``n_rankings``); ``averaged_ks``: the two-sample KS test between every pair
    of groups with both means and their difference ``delta``, ``pvalue_holm`` adjusted over
    one family per study, setting, convention and view (every pair, both quantities)."""
    means_rows, ks_rows = [], []
    for base, groups, encoders, arrays in _pooled_parts(per_ranking, views):
        base = {**base, "n_encoders": len(encoders)}
        family = []
        for quantity, values in arrays.items():
            means, counts, rows = xm.averaged_across_encoders(values, groups)
            means_rows.extend(
                {**base, "quantity": quantity, "group": g, "n_rankings": int(n), "mean": float(m)}
                for g, n, m in zip(groups, counts, means)
            )
            family.extend({**base, "quantity": quantity, **row} for row in rows)
        for row, p in zip(family, holm_adjust([row["pvalue"] for row in family])):
            row["pvalue_holm"] = float(p)
        ks_rows.extend(family)
    return {"averaged": pd.DataFrame(means_rows), "averaged_ks": pd.DataFrame(ks_rows)}


def write_exposure_outputs(outputs: Mapping[str, pd.DataFrame], out_dir: str | Path) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for key, frame in outputs.items():
        path = out / OUTPUT_FILES[key]
        if path.suffix == ".parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False)


def exposure_study(
    faces_df: pd.DataFrame,
    results_dir: str | Path,
    encoder="dlib_resnet",
    settings: Sequence[str] = SETTINGS,
    distance: int = 3,
    l: int = 10,
    k: int = 10,
    seed: int = 0,
    group_column: str | Sequence[str] = "group",
    *,
    probe_fraction: float = 0.3,
    hit_ks: Sequence[int] = (1, 5, 10),
    conventions: Sequence[str] = xm.CONVENTIONS,
    face_fraction: float = 1.0,
    batch_size: int = 64,
    calibrate: bool = True,
    out_dir: str | Path | None = None,
    write: bool = True,
    degradation: str = "classical",
    generator: str | Path | None = None,
    views: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The whole protocol in one process: :func:`split_probe_gallery`, :func:`embed_study`
    for every encoder, :func:`rank_study`, :func:`average_across_encoders` (encoders pooled
    by ``views``). Returns (exposure_table, per_probe_group, ks_table) and, with ``write``,
    writes all outputs to ``out_dir`` (default ``results_dir``). The workflow runs the same
    steps as separate jobs, embedding shard by shard, for every ranked dataset and distance.

    ``faces_df``: faces-manifest rows to use (e.g. the test split) with ``image_id``,
    ``subject_id``, ``crop_path`` (relative to ``results_dir``) and the group column(s).
    ``face_fraction``: share of the crop width the face spans, so that the far chain shrinks
    the face, not the crop, to its target width. ``calibrate``: encoders with a
    ``calibrate_fallback`` method (dlib_resnet) first fit their no-detection fallback box on
    up to 64 close-range gallery crops. The table's ``fallback_share_probes`` and
    ``fallback_share_gallery`` are the shares of images such an encoder embedded without
    finding the face (aligned on its fallback box; NaN for encoders that detect nothing), and
    ``fallback_probes_<group>`` that share among each group's probes. ``degradation`` and
    ``generator``: as :func:`embed_study`.
    """
    study_views(settings)
    study = split_probe_gallery(faces_df, l, seed, group_column, probe_fraction)
    check_study(study, k, l)
    calibration = calibration_rows(study) if calibrate else None
    embeddings = {
        label: embed_study(
            study,
            results_dir,
            enc,
            settings,
            distance,
            seed,
            face_fraction,
            batch_size,
            calibration,
            degradation,
            generator,
        )
        for label, enc in resolve_encoders(encoder).items()
    }
    outputs = rank_studies(
        [(None, distance, study, embeddings)],
        settings,
        l,
        k,
        views,
        hit_ks=hit_ks,
        conventions=conventions,
    )
    if write:
        write_exposure_outputs(outputs, out_dir if out_dir is not None else results_dir)
    return outputs["exposure_table"], outputs["per_probe_group"], outputs["ks"]


# --------------------------------------------------------------------------- figure


def _studies(frame: pd.DataFrame) -> list[dict]:
    """The (dataset, distance) studies of an output frame, in order, as column filters."""
    keys = [c for c in ("dataset", "distance") if c in frame.columns]
    if not keys:
        return [{}]
    return [dict(zip(keys, values)) for values in dict.fromkeys(zip(*(frame[c] for c in keys)))]


def _rows_of(frame: pd.DataFrame, where: Mapping) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        mask &= (frame[column] == value).to_numpy()
    return frame[mask]


def _study_title(where: Mapping, several: bool) -> str:
    if not several:
        return ""
    return ", ".join(f"{k} {v}" for k, v in where.items()) + ": "


def plot_exposure(
    per_ranking: pd.DataFrame,
    hit_curve: pd.DataFrame,
    path: str | Path,
    convention: str = "false_positive",
) -> Path:
    """Box plots of per-ranking exposure per group (one panel per setting, one box per
    encoder and group; empty values left out) and hit ratio against k per encoder; one row
    of panels per ranked dataset and distance."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    studies = _studies(per_ranking)
    data_all = per_ranking[per_ranking["convention"] == convention]
    settings = list(dict.fromkeys(data_all["setting"])) or list(dict.fromkeys(hit_curve["setting"]))
    encoders = list(dict.fromkeys(per_ranking["encoder"]))
    fig = Figure(figsize=(4.5 * (len(settings) + 1), 4.0 * len(studies)), layout="constrained")
    FigureCanvasAgg(fig)
    rows = fig.subplots(len(studies), len(settings) + 1, squeeze=False)
    width = 0.8 / max(1, len(encoders))
    colours = [f"C{i}" for i in range(len(encoders))]
    for axes, where in zip(rows, studies):
        title = _study_title(where, len(studies) > 1)
        data = _rows_of(data_all, where)
        groups = sorted(_rows_of(per_ranking, where)["group"].unique())
        for ax, setting in zip(axes, settings):
            here = data[data["setting"] == setting]
            for e, enc in enumerate(encoders):
                values = [
                    here.loc[(here["encoder"] == enc) & (here["group"] == g), "exposure"]
                    .dropna()
                    .to_numpy()
                    for g in groups
                ]
                positions = np.arange(len(groups)) + (e - (len(encoders) - 1) / 2) * width
                keep = [i for i, v in enumerate(values) if len(v)]
                if keep:
                    box = ax.boxplot(
                        [values[i] for i in keep],
                        positions=positions[keep],
                        widths=width * 0.9,
                        patch_artist=True,
                        showfliers=False,
                    )
                    for patch in box["boxes"]:
                        patch.set_facecolor(colours[e])
                        patch.set_alpha(0.6)
            ax.set_xticks(np.arange(len(groups)), groups, rotation=30, ha="right")
            # several rows: a longer title in a smaller font (one row: as it always was)
            ax.set_title(
                f"{title}{setting} ({convention})", **({"fontsize": "medium"} if title else {})
            )
            ax.set_ylabel("per-ranking exposure")
        if len(encoders) > 1:
            from matplotlib.patches import Patch

            axes[0].legend(
                [Patch(facecolor=c, alpha=0.6) for c in colours], encoders, fontsize="small"
            )
        ax = axes[-1]
        curves = _rows_of(hit_curve, where)
        for e, enc in enumerate(encoders):
            for s, setting in enumerate(settings):
                curve = curves[(curves["encoder"] == enc) & (curves["setting"] == setting)]
                ax.plot(
                    curve["k"],
                    curve["hit_ratio"],
                    color=colours[e],
                    linestyle=("-", "--", ":")[s % 3],
                    marker=".",
                    label=f"{enc} / {setting}",
                )
        if title:
            ax.set_title(title.rstrip(": "))
        ax.set_xlabel("k")
        ax.set_ylabel("hit ratio @k")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize="small")
    return save_png(fig, path)


#: p-value marks of the averaged-exposure figure's brackets (the paper's level is 0.05).
SIGNIFICANCE = ((0.001, "***"), (0.01, "**"), (0.05, "*"))


def plot_averaged_exposure(
    per_ranking: pd.DataFrame,
    averaged_ks: pd.DataFrame,
    path: str | Path,
    views: Mapping[str, str] | None = None,
    convention: str = "false_positive",
    alpha: float = 0.05,
) -> Path:
    """The Exposure paper's Fig. 2: per group, the per-ranking exposure of the rankings of
    every encoder of one view pooled (:func:`average_across_encoders`; empty values left
    out), one panel per study, view and setting; a bracket joins two groups whose KS test
    rejects equal distributions at ``alpha`` (raw p-value, as the paper; * < 0.05,
    ** < 0.01, *** < 0.001) and the mean of each group is marked."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    parts = [
        (base, groups, encoders, arrays["exposure"])
        for base, groups, encoders, arrays in _pooled_parts(per_ranking, views)
        if base["convention"] == convention
    ]
    settings = list(dict.fromkeys(base["setting"] for base, *_ in parts))
    panels = list(
        dict.fromkeys(
            tuple((k, v) for k, v in base.items() if k not in ("setting", "convention"))
            for base, *_ in parts
        )
    )
    fig = Figure(
        figsize=(5.0 * max(1, len(settings)), 4.0 * max(1, len(panels))), layout="constrained"
    )
    FigureCanvasAgg(fig)
    axes = fig.subplots(max(1, len(panels)), max(1, len(settings)), squeeze=False)
    for base, groups, encoders, values in parts:
        where = tuple((k, v) for k, v in base.items() if k not in ("setting", "convention"))
        ax = axes[panels.index(where), settings.index(base["setting"])]
        pooled = xm.pooled_rankings(values, len(groups))
        columns = [col[np.isfinite(col)] for col in pooled.T]
        keep = [i for i, col in enumerate(columns) if len(col)]
        if keep:
            ax.boxplot([columns[i] for i in keep], positions=keep, showfliers=False)
            ax.plot(keep, [columns[i].mean() for i in keep], "D", color="C3", markersize=4)
        tests = averaged_ks  # no pair to test (one group): no column either
        if not tests.empty:
            tests = _rows_of(tests, {**dict(where), "setting": base["setting"]})
            tests = tests[(tests["convention"] == convention) & (tests["quantity"] == "exposure")]
        top = max((col.max() for col in columns if len(col)), default=1.0)
        step, level = 0.06 * max(top, 1e-6), top
        significant = tests[tests["pvalue"] < alpha] if len(tests) else tests
        for row in significant.itertuples(index=False):
            a, b = groups.index(row.group_a), groups.index(row.group_b)
            level += step
            ax.plot([a, a, b, b], [level - step / 3, level, level, level - step / 3], "k-", lw=0.8)
            mark = next(m for cut, m in SIGNIFICANCE if row.pvalue < cut)
            ax.text((a + b) / 2, level, mark, ha="center", va="bottom", fontsize="small")
        ax.set_xticks(np.arange(len(groups)), groups, rotation=30, ha="right")
        label = ", ".join(f"{k} {v}" for k, v in where if k != "trained")
        view = dict(where)["trained"]
        ax.set_title(
            f"{label + ': ' if label else ''}{len(encoders)} {view}-trained encoders, "
            f"{base['setting']}",
            fontsize="medium",
        )
        ax.set_ylabel(f"per-ranking exposure ({convention})")
    return save_png(fig, path)


def plot_exposure_outputs(
    out_dir: str | Path,
    path: str | Path | None = None,
    convention: str = "false_positive",
    averaged_path: str | Path | None = None,
    views: Mapping[str, str] | None = None,
) -> Path:
    """:func:`plot_exposure` from the files :func:`exposure_study` wrote to ``out_dir``;
    with ``averaged_path``, :func:`plot_averaged_exposure` there too."""
    out_dir = Path(out_dir)
    per_ranking = pd.read_parquet(out_dir / OUTPUT_FILES["per_ranking"])
    hit_curve = pd.read_csv(out_dir / OUTPUT_FILES["hit_curve"])
    if averaged_path is not None:
        try:
            averaged_ks = pd.read_csv(out_dir / OUTPUT_FILES["averaged_ks"])
        except pd.errors.EmptyDataError:  # one group: no pair to test
            averaged_ks = pd.DataFrame()
        plot_averaged_exposure(per_ranking, averaged_ks, averaged_path, views, convention)
    return plot_exposure(
        per_ranking, hit_curve, path or out_dir / "exposure_figure.png", convention
    )
