"""Ranking exposure (docs/metrics.md section 9): hand-worked values, invariants, fast ranking and a
tiny end-to-end study on synthetic identities."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairforge.metrics import exposure as xm
from fairforge.seeding import rng_for

# Gallery identities 0..5: 0, 1, 2 in group a; 3, 4 in b; 5 in c.
GALLERY_GROUPS = np.array(["a", "a", "a", "b", "b", "c"], dtype=object)
GROUPS = ["a", "b", "c"]
# Probe 0 is identity 0 (group a), probe 1 is identity 4 (group b). Four columns: k=3 plus one
# so that the false-positive convention still has three others.
R = np.array([[0, 3, 1, 5], [3, 4, 5, 2]])
PROBE_ID = np.array([0, 4])
PROBE_GROUPS = np.array(["a", "b"], dtype=object)
D1, D2, D3 = 1.0, 1.0 / math.log2(3), 1.0 / math.log2(4)  # 1/log2(pos+1), pos = 1..3
O = D1 + D2 + D3


def test_visibility_and_exposure_all_identities_by_hand():
    # top 3: probe 0 sees a, b, a; probe 1 sees b, b, c
    vis = xm.visibility(R, GALLERY_GROUPS, GROUPS, 3, PROBE_ID, "all")
    np.testing.assert_allclose(vis, [2 / 6, 3 / 6, 1 / 6])
    exp = xm.exposure(R, GALLERY_GROUPS, GROUPS, 3, PROBE_ID, "all")
    np.testing.assert_allclose(exp, [(D1 + D3) / (2 * O), (D2 + D1 + D2) / (2 * O), D3 / (2 * O)])
    assert exp[1] > exp[0] > exp[2]


def test_false_positive_convention_drops_the_probe_identity_without_renumbering():
    # probe 0's own identity holds position 1 of [0, 3, 1]: that weight is dropped and 3, 1
    # keep positions 2, 3 (b, a); probe 1's own identity holds position 2 of [3, 4, 5]:
    # 3 keeps position 1 (b), 5 keeps position 3 (c); the fourth column is never pulled in
    vis = xm.visibility(R, GALLERY_GROUPS, GROUPS, 3, PROBE_ID, "false_positive")
    np.testing.assert_allclose(vis, [1 / 6, 2 / 6, 1 / 6])
    exp = xm.exposure(R, GALLERY_GROUPS, GROUPS, 3, PROBE_ID, "false_positive")
    np.testing.assert_allclose(exp, [D3 / (2 * O), (D2 + D1) / (2 * O), D3 / (2 * O)])
    top, counted = xm.effective_rankings(R, 3, PROBE_ID, "false_positive")
    np.testing.assert_array_equal(top, R[:, :3])
    np.testing.assert_array_equal(counted, [[False, True, True], [True, False, True]])
    # k columns are enough: the (k+1)-th identity plays no part
    np.testing.assert_allclose(
        xm.exposure(R[:, :3], GALLERY_GROUPS, GROUPS, 3, PROBE_ID, "false_positive"), exp
    )
    with pytest.raises(ValueError, match="probe_identity"):
        xm.visibility(R, GALLERY_GROUPS, GROUPS, 3, None, "false_positive")


def test_worked_example_of_the_paper_convention():
    # docs/metrics.md section 9: k = 3, gallery groups A,B,A,C,B,C for identities 0..5,
    # rankings [0,1,2], [1,3,5], [5,1,2] for probes of identities 0, 3, 4
    gallery = np.array(["A", "B", "A", "C", "B", "C"], dtype=object)
    rankings = np.array([[0, 1, 2], [1, 3, 5], [5, 1, 2]])
    probes = np.array([0, 3, 4])
    groups = ["A", "B", "C"]
    o = 1 + 1 / math.log2(3) + 1 / 2
    exp = xm.exposure(rankings, gallery, groups, 3, probes, "false_positive")
    np.testing.assert_allclose(exp, [0.1564, 0.3538, 0.2346], atol=5e-5)
    # by hand: A holds position 3 in rankings 1 and 3; B positions 2, 1, 2; C positions 3, 1
    d2 = 1 / math.log2(3)
    np.testing.assert_allclose(
        exp, [(0.5 + 0.5) / (3 * o), (d2 + 1 + d2) / (3 * o), (0.5 + 1) / (3 * o)]
    )
    vis = xm.visibility(rankings, gallery, groups, 3, probes, "false_positive")
    np.testing.assert_allclose(vis, [2 / 9, 3 / 9, 2 / 9])
    assert vis.sum() == pytest.approx(7 / 9)  # 7 false positives among 3 x 3 positions
    # the conditional means of the paper's figures: only rankings in which a group appears
    per_exp = xm.per_ranking_exposure(
        rankings, gallery, groups, 3, probes, "false_positive", np.nan
    )
    per_vis = xm.per_ranking_visibility(
        rankings, gallery, groups, 3, probes, "false_positive", np.nan
    )
    np.testing.assert_allclose(
        xm.conditional_means(per_exp), [0.5 / o, (d2 + 1 + d2) / (3 * o), (0.5 + 1) / (2 * o)]
    )
    np.testing.assert_allclose(xm.conditional_means(per_vis), [1 / 3, 1 / 3, 1 / 3])
    # the all convention on the same rankings sums to 1 and differs
    all_exp = xm.exposure(rankings, gallery, groups, 3, probes, "all")
    assert all_exp.sum() == pytest.approx(1.0)
    assert not np.allclose(all_exp, exp)


def test_holm_adjustment_by_hand():
    from fairforge.metrics.multiplicity import holm_adjust

    # sorted 0.01, 0.02, 0.04 (m = 3): 0.03, 0.04, 0.04 (running max); NaN not counted
    np.testing.assert_allclose(
        holm_adjust([0.04, 0.01, np.nan, 0.02]), [0.04, 0.03, np.nan, 0.04], equal_nan=True
    )
    np.testing.assert_allclose(holm_adjust([0.5, 0.9]), [1.0, 1.0])
    assert holm_adjust([]).size == 0


def test_disparities_and_per_probe_group_matrix_by_hand():
    vis = xm.visibility(R, GALLERY_GROUPS, GROUPS, 3, PROBE_ID, "all")
    pairs = xm.disparities(vis, GROUPS)
    assert pairs[("a", "b")] == pytest.approx(1 / 6)
    assert pairs[("a", "c")] == pytest.approx(1 / 6)
    assert pairs[("b", "c")] == pytest.approx(1 / 3)
    assert xm.mean_disparity(vis) == pytest.approx((1 / 6 + 1 / 6 + 1 / 3) / 3)
    per_ranking = xm.per_ranking_visibility(R, GALLERY_GROUPS, GROUPS, 3, PROBE_ID, "all")
    matrix, counts = xm.per_probe_group_matrix(per_ranking, PROBE_GROUPS, GROUPS)
    np.testing.assert_allclose(matrix[:2], [[2 / 3, 1 / 3, 0], [0, 2 / 3, 1 / 3]])
    assert np.isnan(matrix[2]).all()  # no probe of group c
    np.testing.assert_array_equal(counts, [1, 1, 0])


def test_hit_ratio_on_a_known_case():
    assert xm.hit_ratio(R, PROBE_ID, 1) == 0.5  # probe 1's identity is second
    assert xm.hit_ratio(R, PROBE_ID, 2) == 1.0
    np.testing.assert_allclose(xm.hit_ratio_curve(R, PROBE_ID, [1, 2, 3, 4]), [0.5, 1, 1, 1])
    absent = np.array([[1, 2], [0, 4]])  # identity 0 absent from the first row
    np.testing.assert_allclose(xm.hit_ratio_curve(absent, np.array([0, 4]), [1, 2]), [0, 0.5])


def test_visibility_and_exposure_sum_to_one_or_to_the_false_positive_share():
    rng = rng_for(1, "exposure-sum")
    n_gallery, k = 40, 10
    gallery_groups = rng.choice(np.array(["g1", "g2", "g3", "g4"], dtype=object), n_gallery)
    R = np.stack([rng.permutation(n_gallery)[:k] for _ in range(50)])
    probe_id = np.where(rng.random(50) < 0.5, R[:, 3], rng.integers(0, n_gallery, 50))
    groups = ["g1", "g2", "g3", "g4"]
    discounts = xm.position_discounts(k)
    is_self = R == probe_id[:, None]
    assert is_self.any()
    expected = {
        "all": (np.ones(50), np.ones(50)),
        "false_positive": (
            1 - is_self.mean(axis=1),
            1 - (is_self * discounts).sum(1) / discounts.sum(),
        ),
    }
    for convention in xm.CONVENTIONS:
        for fn, want in zip(
            (xm.per_ranking_visibility, xm.per_ranking_exposure), expected[convention]
        ):
            per = fn(R, gallery_groups, groups, k, probe_id, convention)
            np.testing.assert_allclose(per.sum(axis=1), want)
            # a group left out of the report takes positions but counts for nobody
            partial = fn(R, gallery_groups, groups[:3], k, probe_id, convention)
            np.testing.assert_allclose(partial, per[:, :3])


def test_exposure_rewards_top_positions_more_than_visibility():
    # group a always holds position 1, group b positions 2..4: same visibility ratio 1:3,
    # but exposure weighs the first position more
    gallery_groups = np.array(["a", "b", "b", "b"], dtype=object)
    R = np.tile([0, 1, 2, 3], (5, 1))
    vis = xm.visibility(R, gallery_groups, ["a", "b"], 4)
    exp = xm.exposure(R, gallery_groups, ["a", "b"], 4)
    np.testing.assert_allclose(vis, [0.25, 0.75])
    o4 = sum(1 / math.log2(p + 1) for p in range(1, 5))
    np.testing.assert_allclose(exp, [1 / o4, 1 - 1 / o4])


def test_ks_drops_empty_values_explicitly():
    values = np.array(
        [[0.1, np.nan, np.nan], [0.2, np.nan, np.nan], [np.nan, 0.5, np.nan], [0.3, 0.6, np.nan]]
    )
    rows = {(r["group_a"], r["group_b"]): r for r in xm.ks_tests(values, ["a", "b", "c"])}
    ab = rows[("a", "b")]
    assert (ab["n_a"], ab["n_b"]) == (3, 2)
    expected = stats.ks_2samp([0.1, 0.2, 0.3], [0.5, 0.6])
    assert ab["statistic"] == pytest.approx(expected.statistic) == 1.0
    assert ab["pvalue"] == pytest.approx(expected.pvalue)
    assert rows[("a", "c")]["n_b"] == 0 and np.isnan(rows[("a", "c")]["statistic"])
    # Holm over the pairs that could be tested (the empty ones do not count)
    assert ab["pvalue_holm"] == pytest.approx(min(1.0, ab["pvalue"]))
    assert np.isnan(rows[("a", "c")]["pvalue_holm"])
    # absent=nan marks rankings where the group holds no position
    per = xm.per_ranking_exposure(R, GALLERY_GROUPS, GROUPS, 3, PROBE_ID, "all", absent=np.nan)
    assert np.isnan(per[0, 2]) and np.isnan(per[1, 0]) and not np.isnan(per).all(axis=0).any()


def test_exposure_averaged_across_encoders_pools_their_rankings_by_hand():
    """Exposure Fig. 2 as the authors' code computes it: every encoder's rankings pooled,
    empty values (0 or NaN) dropped, two-sample KS between groups."""
    nan = np.nan
    # encoder 1 ranks two probes, encoder 2 three; groups a, b, c
    one = np.array([[0.1, 0.0, nan], [0.2, 0.3, 0.0]])
    two = np.array([[0.25, 0.5, 0.0], [0.0, 0.6, 0.0], [nan, 0.7, 0.9]])
    means, counts, rows = xm.averaged_across_encoders([one, two], ["a", "b", "c"])
    # pooled a = {0.1, 0.2, 0.25}, b = {0.3, 0.5, 0.6, 0.7}, c = {0.9}
    np.testing.assert_allclose(means, [0.55 / 3, 2.1 / 4, 0.9])
    assert counts.tolist() == [3, 4, 1]
    # pooled, not the mean of the encoders' means ((0.15 + 0.25) / 2 = 0.2 for a)
    assert means[0] != pytest.approx(0.2)
    by_pair = {(r["group_a"], r["group_b"]): r for r in rows}
    # Every pooled value of a lies below every one of b, and b's below c's: D = 1. Under
    # equal distributions each of the C(n + m, n) orders of the pooled values is equally
    # likely and D = 1 only for "all below" or "all above": p = 2 / C(n + m, n).
    expected = {("a", "b"): (3, 4, 2 / 35), ("a", "c"): (3, 1, 2 / 4), ("b", "c"): (4, 1, 2 / 5)}
    for pair, (n_a, n_b, pvalue) in expected.items():
        row = by_pair[pair]
        assert (row["n_a"], row["n_b"]) == (n_a, n_b)
        assert row["statistic"] == 1.0
        assert row["pvalue"] == pytest.approx(pvalue)
    assert by_pair[("a", "b")]["delta"] == pytest.approx(2.1 / 4 - 0.55 / 3)
    assert by_pair[("b", "c")]["mean_a"] == pytest.approx(0.525)
    assert by_pair[("b", "c")]["mean_b"] == pytest.approx(0.9)
    # Holm over the three pairs: 3 * 2/35, then max(2 * 0.4, 1 * 0.5)
    holm = [by_pair[p]["pvalue_holm"] for p in expected]
    np.testing.assert_allclose(holm, [6 / 35, 0.8, 0.8])
    # one encoder alone is its own average; a group no ranking holds has no value or test
    means, counts, rows = xm.averaged_across_encoders([one], ["a", "b", "c"])
    np.testing.assert_allclose(means[:2], [0.15, 0.3])
    assert np.isnan(means[2]) and counts.tolist() == [2, 1, 0]
    assert np.isnan(rows[1]["pvalue"]) and np.isnan(rows[1]["delta"])
    with pytest.raises(ValueError, match=r"\(n_rankings, 3\)"):
        xm.averaged_across_encoders([one, two[:, :2]], ["a", "b", "c"])
    with pytest.raises(ValueError, match="at least one encoder"):
        xm.averaged_across_encoders([], ["a"])


def test_rank_gallery_matches_a_full_sort():
    rng = rng_for(2, "rank")
    probes = rng.standard_normal((37, 16)).astype(np.float32)
    gallery = rng.standard_normal((23, 16)).astype(np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    gallery /= np.linalg.norm(gallery, axis=1, keepdims=True)
    full = np.argsort(-(probes @ gallery.T), axis=1, kind="stable")
    for k in (1, 5, 23):
        idx, scores = xm.rank_gallery(probes, gallery, k, batch_size=8)
        np.testing.assert_array_equal(idx, full[:, :k])
        np.testing.assert_allclose(
            scores, np.take_along_axis(probes @ gallery.T, idx, 1), rtol=1e-5, atol=1e-6
        )
        assert idx.dtype == np.int64
    with pytest.raises(ValueError):
        xm.rank_gallery(probes, gallery, 24)


def test_rank_gallery_breaks_ties_by_lower_index():
    gallery = np.eye(4, dtype=np.float32)[[0, 1, 1, 2, 1]]  # identities 1, 2, 4 identical
    probe = np.array([[0, 1, 0, 0]], dtype=np.float32)
    idx, _ = xm.rank_gallery(probe, gallery, 3)
    np.testing.assert_array_equal(idx, [[1, 2, 4]])


# --------------------------------------------------------------------------- end to end


def _tiny_onnx_encoder(tmp_path):
    import torch

    from fairforge.encoders import create_encoder

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.AvgPool2d(4),
            torch.nn.Conv2d(3, 8, 3, 2),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(8 * 13 * 13, 32),
        ).eval()
    path = tmp_path / "tiny_arcface.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.zeros(1, 3, 112, 112),),
            str(path),
            input_names=["data"],
            output_names=["embedding"],
            dynamic_axes={"data": {0: "n"}, "embedding": {0: "n"}},
            dynamo=False,
        )
    return create_encoder("onnx_arcface", model_path=path, threads=1)


@pytest.fixture(scope="module")
def synthetic_faces(tmp_path_factory):
    """A faces table of 8 synthetic identities (4 tones x 2 genders) with 4 crops each, plus
    one identity with too few crops and one failed row."""
    from fairforge.images import write_image
    from fairforge.sources.synthetic import render_face, sample_subject, sample_view

    root = tmp_path_factory.mktemp("results")
    rows = []
    for tone in ("tone1", "tone2", "tone3", "tone4"):
        for gender in ("female", "male"):
            sid = f"syn_{tone}_{gender}"
            subject = sample_subject(7, sid, tone, gender)
            n = 2 if (tone, gender) == ("tone4", "male") else 4
            for j in range(n):
                iid = f"{sid}_{j}"
                crop = render_face(subject, sample_view(7, iid), 128)
                rel = f"faces/{sid}/{iid}.png"
                write_image(root / rel, crop)
                rows.append(
                    {
                        "image_id": iid,
                        "subject_id": sid,
                        "tone": tone,
                        "gender": gender,
                        "crop_path": rel,
                        "ok": True,
                        "reason": "",
                    }
                )
    rows.append(
        {
            "image_id": "broken",
            "subject_id": "syn_tone1_female",
            "tone": "tone1",
            "gender": "female",
            "crop_path": None,
            "ok": False,
            "reason": "no face",
        }
    )
    return root, pd.DataFrame(rows)


def test_exposure_study_end_to_end_writes_all_tables(synthetic_faces, tmp_path):
    from fairforge.ranking import OUTPUT_FILES, exposure_study, plot_exposure_outputs

    root, faces = synthetic_faces
    encoder = _tiny_onnx_encoder(tmp_path)
    out = tmp_path / "out"
    table, per_group, ks = exposure_study(
        faces,
        root,
        {"tiny": encoder},
        distance=4,
        l=4,
        k=3,
        seed=3,
        group_column="tone_gender",
        hit_ks=(1, 5),
        out_dir=out,
    )
    for name in OUTPUT_FILES.values():
        assert (out / name).is_file(), name
    # 7 identities have 4 crops (one has only 2): 7 groups, 1 probe and 3 gallery images each
    groups = sorted(
        f"{t}_{g}" for t in ("tone1", "tone2", "tone3", "tone4") for g in ("female", "male")
    )[:-1]
    assert len(table) == 2 * 2  # settings x conventions
    assert set(table["setting"]) == {"reidentification", "identification"}
    assert (table["n_identities"] == 7).all() and (table["n_probes"] == 7).all()
    assert (table["n_gallery_images"] == 21).all()
    # the onnx encoder takes the crop as it is: no detection, no fallback to report
    assert table.filter(like="fallback_").isna().all().all()
    everyone = table["convention"] == "all"
    for kind in ("visibility", "exposure"):
        sums = table[[f"{kind}_{g}" for g in groups]].sum(axis=1)
        np.testing.assert_allclose(sums[everyone], 1.0)
        # false positives only: the share of positions not holding the probe's identity
        assert (sums[~everyone] <= 1.0 + 1e-12).all()
    assert {"disparate_exposure_conditional", "disparate_visibility_conditional"} <= set(
        table.columns
    )
    assert table["disparate_exposure_conditional"].notna().all()
    assert table["hit_ratio@1"].between(0, 1).all()
    assert (table["hit_ratio@1"] <= table["hit_ratio@5"]).all()
    # one identity per group, so under false_positive no group sees itself in its ranking
    fp = per_group[per_group["convention"] == "false_positive"]
    assert (fp.loc[fp["probe_group"] == fp["gallery_group"], "visibility"] == 0).all()
    assert len(per_group) == 2 * 2 * 7 * 7
    assert len(ks) == 2 * 2 * 2 * 21 and set(ks.columns) >= {
        "quantity",
        "pvalue_holm",
        "group_a",
        "group_b",
        "statistic",
        "pvalue",
        "n_a",
        "n_b",
    }
    pd.testing.assert_frame_equal(
        pd.read_csv(out / OUTPUT_FILES["exposure_table"]), table, check_dtype=False
    )
    # same seed, same numbers
    again, _, _ = exposure_study(
        faces,
        root,
        {"tiny": encoder},
        distance=4,
        l=4,
        k=3,
        seed=3,
        group_column=["tone", "gender"],
        hit_ks=(1, 5),
        write=False,
    )
    pd.testing.assert_frame_equal(again, table)
    figure = plot_exposure_outputs(out)
    assert figure.is_file() and figure.stat().st_size > 1000


def test_exposure_study_with_dlib_calibrates_the_chip_fallback(synthetic_faces, tmp_path):
    from fairforge.encoders import create_encoder
    from fairforge.ranking import exposure_study

    root, faces = synthetic_faces
    enc = create_encoder("dlib_resnet")
    table, per_group, ks = exposure_study(
        faces,
        root,
        enc,
        settings=["identification"],
        distance=5,
        l=4,
        k=2,
        seed=0,
        group_column="tone",
        hit_ks=(1,),
        write=False,
    )
    assert enc.fallback_box != (0.0, 0.0, 1.0, 1.0)  # fitted on the near gallery crops
    # 16-px far probes are never detected; most close-range gallery faces are
    assert (table["fallback_share_probes"] == 1.0).all()
    assert (table["fallback_share_gallery"] < 0.5).all()
    assert (
        (table[[f"fallback_probes_{t}" for t in ("tone1", "tone2", "tone3", "tone4")]] == 1.0)
        .all()
        .all()
    )
    assert list(table["convention"]) == ["all", "false_positive"]
    assert table["encoder"].eq("dlib_resnet").all() and table["hit_ratio@1"].between(0, 1).all()
    assert len(ks) == 2 * 2 * 6 and len(per_group) == 2 * 16  # conventions x quantities x pairs


def test_embedding_shard_by_shard_gives_the_same_study(synthetic_faces, tmp_path):
    """The workflow embeds each shard in its own job (calibrating on the same close-range
    crops) and ranks once: the numbers equal the one-process study."""
    from fairforge.encoders import create_encoder
    from fairforge.ranking import (
        calibration_rows,
        embed_study,
        exposure_study,
        rank_study,
        split_probe_gallery,
    )

    root, faces = synthetic_faces
    kw = dict(settings=["reidentification", "identification"], distance=4, l=4, k=2, seed=1)
    whole, _, _ = exposure_study(
        faces,
        root,
        create_encoder("dlib_resnet"),
        group_column="tone",
        hit_ks=(1,),
        write=False,
        **kw,
    )
    study = split_probe_gallery(faces, kw["l"], kw["seed"], "tone")
    calibration = calibration_rows(study)
    shards = [study.iloc[i::3] for i in range(3)] + [study.iloc[:0]]  # one shard empty
    parts = [
        embed_study(
            part,
            root,
            create_encoder("dlib_resnet"),
            kw["settings"],
            kw["distance"],
            kw["seed"],
            calibration=calibration,
        )
        for part in shards
    ]
    embeddings = pd.concat(parts, ignore_index=True)
    # far probes, far gallery, close-range gallery
    assert len(embeddings) == len(study) + (study["role"] == "gallery").sum()
    assert embeddings["fell_back"].isin([0.0, 1.0]).all()
    outputs = rank_study(
        study,
        {"dlib_resnet": embeddings},
        kw["settings"],
        kw["distance"],
        kw["l"],
        kw["k"],
        hit_ks=(1,),
    )
    pd.testing.assert_frame_equal(outputs["exposure_table"], whole)
    with pytest.raises(ValueError, match="no close-range gallery embedding"):
        rank_study(
            study,
            {"dlib_resnet": embeddings[~(embeddings["role"] == "gallery") | embeddings["far"]]},
            kw["settings"],
            kw["distance"],
            kw["l"],
            kw["k"],
        )


def test_several_datasets_and_distances_in_one_ranking(synthetic_faces, tmp_path):
    """rank_studies stacks one study per dataset and distance (a dataset column leads when
    there are several; a distance column mixing learned with levels is text) and pools
    the encoders of one view for the exposure averaged across encoders."""
    from fairforge.ranking import (
        embed_study,
        plot_averaged_exposure,
        plot_exposure,
        rank_studies,
        rank_study,
        split_probe_gallery,
    )

    root, faces = synthetic_faces
    encoder = _tiny_onnx_encoder(tmp_path)
    settings = ["reidentification", "identification"]
    studies = {
        "one": split_probe_gallery(faces, 4, 3, "tone_gender"),
        "two": split_probe_gallery(faces, 3, 5, "tone"),
    }
    runs = []
    for name, study in studies.items():
        for distance in (2, 4):
            emb = embed_study(study, root, encoder, settings, distance, 3)
            # a second label for the same network, trained "far": views pool by label
            runs.append((name, distance, study, {"near_enc": emb, "far_enc": emb}))
    views = {"near_enc": "near", "far_enc": "far"}
    out = rank_studies(runs, settings, 3, 3, views, hit_ks=(1,))
    table = out["exposure_table"]
    assert list(table.columns[:3]) == ["dataset", "encoder", "setting"]
    assert len(table) == 2 * 2 * 2 * 2 * 2  # datasets, distances, encoders, settings, conventions
    assert table.groupby("dataset")["distance"].unique().map(list).to_dict() == {
        "one": [2, 4],
        "two": [2, 4],
    }
    # the tone_gender groups belong to "one", the tone groups to "two"
    assert table.loc[table["dataset"] == "two", "exposure_tone1_female"].isna().all()
    alone = rank_study(studies["two"], runs[3][3], settings, 4, 3, 3, hit_ks=(1,))
    part = table[(table["dataset"] == "two") & (table["distance"] == 4)]
    pd.testing.assert_frame_equal(
        part[list(alone["exposure_table"].columns)].reset_index(drop=True),
        alone["exposure_table"],
    )
    for key in ("per_probe_group", "ks", "per_ranking", "hit_curve"):
        assert out[key]["dataset"].tolist()[:1] == ["one"], key
    # averaged: one family per dataset, distance, setting, convention and view
    averaged, tests = out["averaged"], out["averaged_ks"]
    assert set(tests["trained"]) == {"near", "far"} and (tests["n_encoders"] == 1).all()
    n_one, n_two = 7, 4  # groups of each dataset
    # per dataset: distance, setting, convention, view and quantity, then one row per group
    assert len(averaged) == 2 * 2 * 2 * 2 * 2 * (n_one + n_two)
    assert len(tests) == 2 * 2 * 2 * 2 * 2 * (n_one * (n_one - 1) // 2 + n_two * (n_two - 1) // 2)
    # the same network under both views: the same numbers
    near = tests[tests["trained"] == "near"].drop(columns="trained").reset_index(drop=True)
    far = tests[tests["trained"] == "far"].drop(columns="trained").reset_index(drop=True)
    pd.testing.assert_frame_equal(near, far)
    # pooled by hand for one study: both labels in one view
    both = rank_studies(runs[:1], settings, 3, 3, hit_ks=(1,))
    per = both["per_ranking"]
    rows = per[(per["setting"] == "identification") & (per["convention"] == "false_positive")]
    groups = sorted(rows["group"].unique())
    arrays = [
        rows[rows["encoder"] == e]
        .pivot(index="probe_image_id", columns="group", values="exposure")
        .reindex(columns=groups)
        .to_numpy()
        for e in ("near_enc", "far_enc")
    ]
    means, counts, _ = xm.averaged_across_encoders(arrays, groups)
    got = both["averaged"]
    got = got[
        (got["setting"] == "identification")
        & (got["convention"] == "false_positive")
        & (got["quantity"] == "exposure")
    ]
    assert "dataset" not in got.columns and (got["n_encoders"] == 2).all()
    np.testing.assert_allclose(got["mean"], means)
    assert got["n_rankings"].tolist() == counts.tolist()
    # a learned distance beside a level: the column is text
    mixed = rank_studies([runs[0], ("one", "learned", *runs[1][2:])], settings, 3, 3, views)
    for frame in mixed.values():
        assert set(frame["distance"]) == {"2", "learned"}
    a = plot_averaged_exposure(out["per_ranking"], tests, tmp_path / "avg.png", views)
    b = plot_exposure(out["per_ranking"], out["hit_curve"], tmp_path / "exp.png")
    assert a.stat().st_size > 1000 and b.stat().st_size > 1000
    again = plot_averaged_exposure(out["per_ranking"], tests, tmp_path / "avg2.png", views)
    assert again.read_bytes() == a.read_bytes()


def test_a_study_of_one_group_has_no_pair_to_test(tmp_path):
    """VGGFace2 ranked by one gender, say: the averaged exposure has its means but no KS
    pair, and the figures are still drawn."""
    from fairforge.ranking import plot_exposure_outputs, rank_studies, write_exposure_outputs

    rng = rng_for(5, "one group")
    study, embeddings = [], []
    for s in range(4):
        for j, role in enumerate(("probe", "gallery", "gallery")):
            study.append(
                {"image_id": f"s{s}_{j}", "subject_id": f"s{s}", "group": "g", "role": role}
            )
            for far in (True,) if role == "probe" else (True, False):
                v = rng.normal(size=8).astype(np.float32)
                embeddings.append(
                    {"image_id": f"s{s}_{j}", "role": role, "far": far, "fell_back": np.nan,
                     "embedding": v / np.linalg.norm(v)}
                )  # fmt: skip
    out = rank_studies(
        [("d", 3, pd.DataFrame(study), {"e": pd.DataFrame(embeddings)})], k=2, l=3, hit_ks=(1,)
    )
    assert out["averaged_ks"].empty and set(out["averaged"]["group"]) == {"g"}
    write_exposure_outputs(out, tmp_path)
    figure = plot_exposure_outputs(tmp_path, tmp_path / "f.png", averaged_path=tmp_path / "a.png")
    assert figure.is_file() and (tmp_path / "a.png").is_file()


def test_exposure_study_rejects_too_few_identities(synthetic_faces, tmp_path):
    from fairforge.ranking import exposure_study

    root, faces = synthetic_faces
    with pytest.raises(ValueError, match="identities"):
        exposure_study(
            faces, root, _tiny_onnx_encoder(tmp_path), l=4, k=7, group_column="tone", write=False
        )


def test_exposure_study_with_the_learned_degradation(synthetic_faces, tmp_path):
    """ranking.degradation: learned - probes seen far away through the near-to-far generator
    trained (jointly with its restorer, a few steps) on unpaired close and far folders."""
    import cv2

    from fairforge.images import read_image, write_image
    from fairforge.ranking import embed_study, exposure_study, split_probe_gallery
    from fairforge.training.degradation import HighToLowConfig, train_high_to_low

    root, faces = synthetic_faces
    ok = faces[faces["ok"]]
    for i, rel in enumerate(ok["crop_path"].iloc[:6]):
        crop = read_image(root / rel)
        write_image(tmp_path / "near" / f"{i}.png", crop)
        far = cv2.resize(crop, (16, 16), interpolation=cv2.INTER_AREA)
        write_image(tmp_path / "far" / f"{i}.png", far)
    gen = train_high_to_low(
        tmp_path / "near", tmp_path / "far", tmp_path / "g.pt", steps=2, batch_size=2,
        device="cpu", config=HighToLowConfig(channels=8),
    ).checkpoint  # fmt: skip
    encoder = _tiny_onnx_encoder(tmp_path)
    kwargs = dict(distance=4, l=4, k=3, seed=3, group_column="tone_gender", write=False)
    learned = exposure_study(
        faces, root, {"tiny": encoder}, degradation="learned", generator=gen, **kwargs
    )[0]
    classical = exposure_study(faces, root, {"tiny": encoder}, **kwargs)[0]
    assert len(learned) == len(classical) == 4 and learned["hit_ratio@1"].between(0, 1).all()
    study = split_probe_gallery(faces, 4, 3, "tone_gender")
    far = [
        embed_study(study, root, encoder, ["reidentification"], 4, 3, **d)
        for d in ({"degradation": "learned", "generator": gen}, {})
    ]
    probes = [f.loc[f["far"], "embedding"].tolist() for f in far]
    assert not np.allclose(np.stack(probes[0]), np.stack(probes[1]))
    with pytest.raises(ValueError, match="learned needs"):
        exposure_study(faces, root, {"tiny": encoder}, degradation="learned", **kwargs)
