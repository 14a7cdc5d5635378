"""The Exposure paper's laptop walk-through (docs/papers.md), run for real: one far-trained
encoder trained on DiveFace, ranking DiveFace and VGGFace2 at two distances in one run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairforge.runtime import read_checkpoint
from paper_walkthroughs import VGG_TEST_PEOPLE, job_counts, prepare, run_laptop

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def walk(repo_root, tmp_path_factory) -> dict:
    return prepare(repo_root, "exposure", tmp_path_factory.mktemp("exposure"))


def test_exposure_ranks_vggface2_with_an_encoder_trained_on_diveface(walk):
    """The Exposure laptop walk-through for real, as written: the generator and one
    far-trained encoder trained once, on DiveFace's train identities through that
    generator, then DiveFace's and VGGFace2's test identities ranked at two distances in
    one run, to the exposure tables and Fig. 2's averaged exposure."""
    results = walk["copy"] / "results"
    line, proc = run_laptop(walk, "exposure", timeout=1200)
    jobs = job_counts(proc.stdout + proc.stderr)
    assert jobs["train_encoder"] == jobs["train_degradation"] == 1
    assert jobs["embed_shard"] == 2 * 2
    table = pd.read_csv(results / "exposure_table.csv")
    assert list(table.columns[:3]) == ["dataset", "encoder", "setting"]
    assert set(table["encoder"]) == {"mobilefacenet_far"}
    assert set(table["dataset"]) == {"diveface", "vggface2"}
    assert set(table["distance"].astype(str)) == {"learned", "3"}
    assert len(table) == 2 * 2 * 2 * 2  # datasets, distances, settings, conventions
    vgg = table[table["dataset"] == "vggface2"]
    assert (vgg["n_identities"] == VGG_TEST_PEOPLE).all()
    assert vgg[["exposure_female", "exposure_male"]].notna().all().all()
    assert vgg.filter(like="exposure_asian").isna().all().all()  # DiveFace's groups only
    # trained once, on DiveFace's train identities: none of them ranked, none of VGGFace2's
    trained = read_checkpoint(results / "encoders" / "mobilefacenet_far" / "model.pt", mmap=True)
    learned = set(trained["classes"])
    diveface = pd.read_parquet(results / "diveface" / "sources.parquet")
    train_ids = set(diveface.loc[diveface["split"] == "train", "subject_id"])
    assert len(learned) >= 2 and learned <= train_ids
    for dataset in ("diveface", "vggface2"):
        study = pd.read_parquet(results / "ranking" / dataset / "study.parquet")
        assert not learned & set(study["subject_id"])
    # the far crops and probes went through the generator this run trained first
    generator = results / "degradation" / "high_to_low.pt"
    model = results / "encoders" / "mobilefacenet_far" / "model.pt"
    assert generator.stat().st_mtime <= model.stat().st_mtime
    embedded = {
        d: pd.read_parquet(
            next((results / "ranking" / "vggface2" / f"distance_{d}").rglob("*.parquet"))
        )
        for d in ("learned", "3")
    }
    probes = [e.loc[e["role"] == "probe", "embedding"].tolist() for e in embedded.values()]
    assert not np.allclose(np.stack(probes[0]), np.stack(probes[1]))
    # Fig. 2: the exposure averaged across the encoders of each view, with KS tests
    averaged = pd.read_csv(results / "exposure_averaged_ks.csv")
    assert set(averaged["dataset"]) == {"diveface", "vggface2"}
    assert set(averaged["trained"]) == {"far"} and (averaged["n_encoders"] == 1).all()
    assert {"mean_a", "mean_b", "delta", "pvalue", "pvalue_holm"} <= set(averaged.columns)
    assert (results / "figures" / "exposure_averaged.png").stat().st_size > 1000
