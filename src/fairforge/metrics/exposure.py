"""Visibility and exposure of demographic groups in face rankings (docs/metrics.md section 9).

A ranking matrix ``R`` (n_probes × depth) holds gallery identity indices, best first, as
:func:`rank_gallery` returns them. ``gallery_groups[j]`` is the group of gallery identity j,
``groups`` the ordered group labels to report (identities of other groups take positions but
count for no reported group). For a group g and cut-off k:

* visibility  V(g, k) = 1/(n·k) Σ_i Σ_{pos≤k} 1[R_i[pos] ∈ g]
* exposure    E(g, k) = 1/(n·o) Σ_i Σ_{pos≤k} 1[R_i[pos] ∈ g] / log2(pos + 1),
  o = Σ_{pos≤k} 1/log2(pos + 1)

Two counting conventions (``convention=``):

* ``"all"``: every one of the first k positions counts, the probe's own identity included.
  V and E of all groups then sum to 1.
* ``"false_positive"``: only identities other than the probe's count, as when the ranking is
  read as a list of possible suspects (the Exposure paper's code). The top-k list is kept as
  ranked; a position that holds the probe's own identity counts for nobody (its weight is
  dropped, nothing moves up, the (k+1)-th identity is not pulled in); every other position
  keeps its weight 1/k or 1/(o·log2(pos + 1)). V and E summed over groups then equal
  (false positives in the top k)/k, not 1.

Per-ranking values (:func:`per_ranking_visibility`, :func:`per_ranking_exposure`) are the
inner sums of one probe, normalised by k or o; their mean over probes is V or E. A ranking in
which a group holds no counted position has no value for that group ("empty"): pass
``absent=np.nan`` to mark it. :func:`conditional_means` averages over the other rankings only
(the paper's figures), and :func:`ks_tests` drops empty values explicitly before comparing
the distributions of two groups, with Holm-adjusted p-values beside the raw ones.
:func:`averaged_across_encoders` pools several encoders' per-ranking values first (the
Exposure paper's Fig. 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from .multiplicity import holm_adjust

CONVENTIONS = ("all", "false_positive")


# --------------------------------------------------------------------------- ranking


def rank_gallery(
    probe_emb: np.ndarray, gallery_templates: np.ndarray, k: int, batch_size: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k gallery indices (best first) and their cosine scores for every probe.

    Embeddings are expected L2-normalised, so cosine similarity is a dot product: one matrix
    product per batch of probes, ``np.argpartition`` for the k best, then a sort of those k
    only. Ties are broken by the lower gallery index.
    """
    probes = np.asarray(probe_emb, dtype=np.float32)
    gallery = np.asarray(gallery_templates, dtype=np.float32)
    if probes.ndim != 2 or gallery.ndim != 2 or probes.shape[1] != gallery.shape[1]:
        raise ValueError(
            f"embedding shapes do not match: probes {probes.shape}, gallery {gallery.shape}"
        )
    n, n_gallery = len(probes), len(gallery)
    if not 1 <= k <= n_gallery:
        raise ValueError(f"k must be in 1..{n_gallery} (gallery size), got {k}")
    indices = np.empty((n, k), dtype=np.int64)
    scores = np.empty((n, k), dtype=np.float32)
    gallery_t = np.ascontiguousarray(gallery.T)
    for start in range(0, n, batch_size):
        sim = probes[start : start + batch_size] @ gallery_t
        if k < n_gallery:
            top = np.argpartition(sim, n_gallery - k, axis=1)[:, n_gallery - k :]
            top.sort(axis=1)
        else:
            top = np.broadcast_to(np.arange(n_gallery), sim.shape)
        top_scores = np.take_along_axis(sim, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        indices[start : start + len(sim)] = np.take_along_axis(top, order, axis=1)
        scores[start : start + len(sim)] = np.take_along_axis(top_scores, order, axis=1)
    return indices, scores


def hit_ratio(R: np.ndarray, probe_identity: np.ndarray, k: int) -> float:
    """Share of probes whose own identity is among the first k positions."""
    return float(hit_ratio_curve(R, probe_identity, [k])[0])


def hit_ratio_curve(R: np.ndarray, probe_identity: np.ndarray, ks: Sequence[int]) -> np.ndarray:
    """Hit ratio at every cut-off in ``ks`` (each at most ``R.shape[1]``)."""
    R = _check_rankings(R)
    ks = np.asarray(ks, dtype=np.int64)
    if ks.size and (ks.min() < 1 or ks.max() > R.shape[1]):
        raise ValueError(f"cut-offs must be in 1..{R.shape[1]}, got {ks.tolist()}")
    is_self = R == np.asarray(probe_identity)[:, None]
    # rank of the first hit (0-based), or the depth when the identity is absent
    first = np.where(is_self.any(axis=1), is_self.argmax(axis=1), R.shape[1])
    if len(R) == 0:
        return np.full(len(ks), np.nan)
    return (first[None, :] < ks[:, None]).mean(axis=1)


# --------------------------------------------------------------------------- positions


def position_discounts(k: int) -> np.ndarray:
    """1/log2(pos + 1) for pos = 1..k."""
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def effective_rankings(
    R: np.ndarray, k: int, probe_identity: np.ndarray | None = None, convention: str = "all"
) -> tuple[np.ndarray, np.ndarray]:
    """The first k positions and which of them count under ``convention``: (R[:, :k], mask).

    ``all``: every position counts. ``false_positive``: a position holding the probe's own
    identity does not count; the list is not renumbered (see the module docstring).
    """
    R = _check_rankings(R)
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if R.shape[1] < k:
        raise ValueError(f"rankings have {R.shape[1]} columns, k={k}")
    top = R[:, :k]
    if convention == "all":
        return top, np.ones(top.shape, dtype=bool)
    if probe_identity is None:
        raise ValueError("the false_positive convention needs probe_identity")
    probe_identity = np.asarray(probe_identity)
    if probe_identity.shape != (len(R),):
        raise ValueError(
            f"probe_identity must hold one identity per ranking ({len(R)}), "
            f"got shape {probe_identity.shape}"
        )
    return top, top != probe_identity[:, None]


def group_codes(gallery_groups: Sequence, groups: Sequence) -> np.ndarray:
    """Index into ``groups`` of each gallery identity's group (-1: not a reported group)."""
    labels = np.asarray(gallery_groups, dtype=object)
    lookup = {g: i for i, g in enumerate(groups)}
    if len(lookup) != len(groups):
        raise ValueError(f"group labels must be unique, got {list(groups)}")
    return np.fromiter((lookup.get(g, -1) for g in labels), dtype=np.int64, count=len(labels))


def _weighted_group_shares(
    R_eff: tuple[np.ndarray, np.ndarray],
    codes: np.ndarray,
    n_groups: int,
    weights: np.ndarray,
    absent: float,
) -> np.ndarray:
    """Σ_pos weights[pos]·1[group of R[i, pos] == g]·counts[i, pos] for every ranking i and
    group g, with ``R_eff`` = (R, counts) from :func:`effective_rankings`."""
    top, counted = R_eff
    pos_codes = codes[top]
    n, k = pos_codes.shape
    valid = (pos_codes >= 0) & counted
    rows = np.broadcast_to(np.arange(n)[:, None], (n, k))[valid]
    flat = rows * n_groups + pos_codes[valid]
    w = np.broadcast_to(weights, (n, k))[valid]
    shares = np.bincount(flat, weights=w, minlength=n * n_groups).reshape(n, n_groups)
    if absent != 0.0:
        present = np.bincount(flat, minlength=n * n_groups).reshape(n, n_groups) > 0
        shares = np.where(present, shares, absent)
    return shares


def per_ranking_visibility(
    R: np.ndarray,
    gallery_groups: Sequence,
    groups: Sequence,
    k: int,
    probe_identity: np.ndarray | None = None,
    convention: str = "all",
    absent: float = 0.0,
) -> np.ndarray:
    """(n_probes, n_groups): share of the k counted positions held by each group."""
    R_eff = effective_rankings(R, k, probe_identity, convention)
    weights = np.full(k, 1.0 / k)
    return _weighted_group_shares(
        R_eff, group_codes(gallery_groups, groups), len(groups), weights, absent
    )


def per_ranking_exposure(
    R: np.ndarray,
    gallery_groups: Sequence,
    groups: Sequence,
    k: int,
    probe_identity: np.ndarray | None = None,
    convention: str = "all",
    absent: float = 0.0,
) -> np.ndarray:
    """(n_probes, n_groups): position-discounted share (÷ o) held by each group."""
    R_eff = effective_rankings(R, k, probe_identity, convention)
    discounts = position_discounts(k)
    return _weighted_group_shares(
        R_eff, group_codes(gallery_groups, groups), len(groups), discounts / discounts.sum(), absent
    )


def visibility(
    R: np.ndarray,
    gallery_groups: Sequence,
    groups: Sequence,
    k: int,
    probe_identity: np.ndarray | None = None,
    convention: str = "all",
) -> np.ndarray:
    """V(g, k) for every group in ``groups`` (an array in that order)."""
    return _mean_rows(
        per_ranking_visibility(R, gallery_groups, groups, k, probe_identity, convention),
        len(groups),
    )


def exposure(
    R: np.ndarray,
    gallery_groups: Sequence,
    groups: Sequence,
    k: int,
    probe_identity: np.ndarray | None = None,
    convention: str = "all",
) -> np.ndarray:
    """E(g, k) for every group in ``groups`` (an array in that order)."""
    return _mean_rows(
        per_ranking_exposure(R, gallery_groups, groups, k, probe_identity, convention), len(groups)
    )


# --------------------------------------------------------------------------- comparisons


def pairwise_disparity(values: np.ndarray) -> np.ndarray:
    """(G, G) matrix of |v_i − v_j|."""
    v = np.asarray(values, dtype=np.float64)
    return np.abs(v[:, None] - v[None, :])


def mean_disparity(values: np.ndarray) -> float:
    """Mean of |v_i − v_j| over all unordered pairs of groups (NaN with fewer than two)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return float("nan")
    i, j = np.triu_indices(v.size, k=1)
    return float(np.abs(v[i] - v[j]).mean())


def disparities(values: np.ndarray, groups: Sequence) -> dict[tuple, float]:
    """|v_i − v_j| for every unordered pair of groups, keyed by (g_i, g_j)."""
    d = pairwise_disparity(values)
    return {(groups[i], groups[j]): float(d[i, j]) for i, j in combinations(range(len(groups)), 2)}


def per_probe_group_matrix(
    per_ranking: np.ndarray, probe_groups: Sequence, probe_group_order: Sequence
) -> tuple[np.ndarray, np.ndarray]:
    """Mean per-ranking values over the probes of each probe group.

    Returns (matrix (P, G): row p = probes of ``probe_group_order[p]``, column g = gallery
    group; counts (P,): number of probes in each row). A probe group without probes gives a
    row of NaN.
    """
    values = np.asarray(per_ranking, dtype=np.float64)
    codes = group_codes(probe_groups, probe_group_order)
    onehot = (codes[:, None] == np.arange(len(probe_group_order))[None, :]).astype(np.float64)
    counts = onehot.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        matrix = (onehot.T @ values) / counts[:, None]
    return matrix, counts.astype(np.int64)


def conditional_means(per_ranking: np.ndarray) -> np.ndarray:
    """Per group, the mean per-ranking value over only the rankings in which the group holds a
    counted position (empty values, NaN, and zeros dropped), as the Exposure paper's figures
    annotate; NaN for a group that appears in no ranking."""
    values = np.asarray(per_ranking, dtype=np.float64)
    present = np.isfinite(values) & (values != 0)
    n = present.sum(axis=0)
    total = np.where(present, values, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def mean_disparity_defined(values: np.ndarray) -> float:
    """:func:`mean_disparity` over the groups with a defined (finite) value."""
    v = np.asarray(values, dtype=np.float64)
    return mean_disparity(v[np.isfinite(v)])


def ks_tests(per_ranking: np.ndarray, groups: Sequence) -> list[dict]:
    """Two-sample Kolmogorov–Smirnov test between the value distributions of every pair of
    groups (columns of ``per_ranking``). Empty values (NaN) are dropped first; a pair where
    either side is left empty gets NaN statistic and p-value. ``pvalue_holm`` adjusts the
    p-values of these pairs together (:func:`holm_adjust`); to adjust over a larger family,
    apply :func:`holm_adjust` to the ``pvalue`` of all its rows."""
    from scipy.stats import ks_2samp  # scipy.stats costs a second to import; the planner skips it

    values = np.asarray(per_ranking, dtype=np.float64)
    columns = [col[~np.isnan(col)] for col in values.T]
    rows = []
    for i, j in combinations(range(len(groups)), 2):
        a, b = columns[i], columns[j]
        if len(a) and len(b):
            res = ks_2samp(a, b)
            statistic, pvalue = float(res.statistic), float(res.pvalue)
        else:
            statistic = pvalue = float("nan")
        rows.append(
            {
                "group_a": groups[i],
                "group_b": groups[j],
                "n_a": len(a),
                "n_b": len(b),
                "statistic": statistic,
                "pvalue": pvalue,
            }
        )
    adjusted = holm_adjust([r["pvalue"] for r in rows])
    for row, p in zip(rows, adjusted):
        row["pvalue_holm"] = float(p)
    return rows


def pooled_rankings(per_ranking: Sequence[np.ndarray], n_groups: int) -> np.ndarray:
    """The per-ranking values of several encoders as one (Σ n_rankings, n_groups) array,
    empty values (NaN, and 0: the group holds no counted position) as NaN."""
    arrays = [np.asarray(a, dtype=np.float64) for a in per_ranking]
    if not arrays:
        raise ValueError("averaging across encoders needs at least one encoder's rankings")
    for a in arrays:
        if a.ndim != 2 or a.shape[1] != n_groups:
            raise ValueError(
                f"each encoder's per-ranking values must be (n_rankings, {n_groups}), got {a.shape}"
            )
    pooled = np.concatenate(arrays, axis=0)
    return np.where(pooled == 0, np.nan, pooled)


def averaged_across_encoders(
    per_ranking: Sequence[np.ndarray], groups: Sequence
) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """The Exposure paper's Fig. 2: each group's exposure over the rankings of several
    encoders, and a two-sample Kolmogorov–Smirnov test between every pair of groups.

    ``per_ranking``: one (n_rankings, n_groups) array per encoder (columns in ``groups``
    order; the encoders need not have the same number of rankings). A value that is NaN or
    0 is empty: the group holds no counted position in that ranking (the authors' code sets
    zeros to NaN). "Averaged across face encoders" is done as the authors' code does it
    (``suspect_ranking_original.py``: ``pd.concat`` of every encoder's rankings, then the
    per-group columns): the encoders' rankings are pooled (:func:`pooled_rankings`), each
    group's mean is taken over the pooled rankings in which it appears (so an encoder
    weighs by how often the group appears in its rankings), and the pooled distributions of
    two groups are compared with ``scipy.stats.ks_2samp`` (two-sided; the paper calls a
    difference significant at p < 0.05).

    Returns (means, counts, rows): per group the mean and the number of pooled rankings in
    which it appears, and the rows of :func:`ks_tests` on the pooled values
    (``pvalue_holm`` over these pairs), each with ``mean_a``, ``mean_b`` and ``delta`` =
    |mean_a − mean_b| (the figure's Δ annotations).
    """
    pooled = pooled_rankings(per_ranking, len(groups))
    means = conditional_means(pooled)
    counts = np.isfinite(pooled).sum(axis=0)
    rows = ks_tests(pooled, groups)
    for row, (i, j) in zip(rows, combinations(range(len(groups)), 2)):
        row.update(
            mean_a=float(means[i]),
            mean_b=float(means[j]),
            delta=float(abs(means[i] - means[j])),
        )
    return means, counts, rows


# --------------------------------------------------------------------------- helpers


def _check_rankings(R: np.ndarray) -> np.ndarray:
    R = np.asarray(R)
    if R.ndim != 2 or not np.issubdtype(R.dtype, np.integer):
        raise ValueError(f"rankings must be a 2-D integer array, got {R.dtype} {R.shape}")
    return R


def _mean_rows(values: np.ndarray, n_groups: int) -> np.ndarray:
    if len(values) == 0:
        return np.full(n_groups, np.nan)
    return values.mean(axis=0)
