import numpy as np
import pandas as pd
import pytest

from fairforge.pairs import NO_TARGET, derangement, make_pairs


def _faces(groups: dict[str, tuple[int, int]], bad: tuple[str, ...] = ()) -> pd.DataFrame:
    """groups: name -> (subjects, images per subject); ``bad`` image ids get ok=False."""
    rows = []
    for g, (n_subj, n_img) in groups.items():
        for s in range(n_subj):
            for i in range(n_img):
                image_id = f"{g}_s{s}_i{i}"
                rows.append(
                    {
                        "image_id": image_id,
                        "subject_id": f"{g}_s{s}",
                        "group": g,
                        "split": "test",
                        "ok": image_id not in bad,
                        "reason": "no face detected" if image_id in bad else "",
                    }
                )
    return pd.DataFrame(rows)


FACES = _faces({"A": (5, 3), "B": (3, 2), "C": (1, 2)}, bad=("A_s0_i1", "B_s2_i0"))


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    return make_pairs(FACES, seed=7)


def test_only_ok_faces_each_once_sorted(pairs):
    ok_ids = sorted(FACES.loc[FACES.ok, "image_id"])
    assert list(pairs["image_id"]) == ok_ids
    assert "A_s0_i1" not in set(pairs["image_id"])


def test_targets_same_group_other_subject_ok_image(pairs):
    faces = FACES.set_index("image_id")
    paired = pairs[pairs.ok]
    assert len(paired) == len(pairs) - 2
    for row in paired.itertuples():
        assert row.target_subject != row.source_subject
        target = faces.loc[row.target_image_id]
        assert target.subject_id == row.target_subject
        assert target.group == row.group == faces.loc[row.image_id, "group"]
        assert bool(target.ok)


def test_target_subject_fixed_per_subject_and_a_derangement(pairs):
    paired = pairs[pairs.ok]
    per_subject = paired.groupby("source_subject")["target_subject"].nunique()
    assert (per_subject == 1).all()
    mapping = paired.groupby("source_subject")["target_subject"].first()
    for group, sub in paired.groupby("group"):
        subjects = sorted(sub["source_subject"].unique())
        targets = sorted(mapping[subjects])
        assert targets == subjects, f"group {group}: targets are not a permutation"


def test_single_subject_group_unpaired(pairs):
    lonely = pairs[pairs.group == "C"]
    assert len(lonely) == 2
    assert (~lonely.ok).all() and (lonely.reason == NO_TARGET).all()
    assert lonely.target_image_id.isna().all()
    assert pairs.attrs["unpaired"] == 2


def test_deterministic_and_order_independent(pairs):
    shuffled = FACES.sample(frac=1.0, random_state=3).reset_index(drop=True)
    again = make_pairs(shuffled, seed=7)
    pd.testing.assert_frame_equal(pairs, again)


def test_seed_changes_the_pairing():
    def mapping(seed):
        p = make_pairs(FACES, seed=seed)
        return tuple(p[p.ok].groupby("source_subject")["target_subject"].first())

    assert len({mapping(s) for s in range(6)}) > 1


def test_target_images_drawn_per_image():
    faces = _faces({"A": (2, 12)})
    p = make_pairs(faces, seed=1)
    # 12 source images each draw one of 12 target images: all the same would be a bug.
    assert p.groupby("source_subject")["target_image_id"].nunique().min() > 1


def test_new_images_do_not_move_other_pairs(pairs):
    extra = pd.DataFrame(
        [
            {
                "image_id": "A_s1_i9",
                "subject_id": "A_s1",
                "group": "A",
                "split": "test",
                "ok": True,
                "reason": "",
            }
        ]
    )
    grown = make_pairs(pd.concat([FACES, extra], ignore_index=True), seed=7)
    # Target subjects stay; draws for images whose target subject gained no image stay.
    target_of_a_s1 = pairs.loc[pairs.source_subject == "A_s1", "target_subject"].iloc[0]
    keep = pairs[pairs.ok & (pairs.target_subject != "A_s1")].set_index("image_id")
    merged = grown.set_index("image_id").loc[keep.index]
    assert (merged.target_image_id == keep.target_image_id).all()
    assert grown.loc[grown.image_id == "A_s1_i9", "target_subject"].iloc[0] == target_of_a_s1


def test_subjects_from_sources_table():
    faces = FACES[["image_id", "ok", "reason"]]
    sources = FACES[["image_id", "subject_id", "group", "split"]]
    p = make_pairs(faces, seed=7, sources_df=sources)
    pd.testing.assert_frame_equal(p, make_pairs(FACES, seed=7))
    with pytest.raises(ValueError, match="subject_id"):
        make_pairs(faces, seed=7)


def test_derangement_has_no_fixed_point():
    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 50):
        for _ in range(20):
            perm = derangement(n, rng)
            assert sorted(perm) == list(range(n))
            assert not (perm == np.arange(n)).any()
    with pytest.raises(ValueError):
        derangement(1, rng)


def test_targets_stay_in_the_source_split():
    faces = _faces({"A": (6, 2)})
    faces["split"] = faces["subject_id"].map(lambda s: "train" if s[-1] in "012" else "test")
    pairs = make_pairs(faces, seed=3)
    split_of = faces.set_index("subject_id")["split"].to_dict()
    assert pairs["ok"].all()
    for row in pairs.itertuples():
        assert split_of[row.target_subject] == split_of[row.source_subject]
