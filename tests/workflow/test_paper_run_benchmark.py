"""The Benchmark's laptop walk-through (docs/papers.md), run for real: MesoNet-4 on FF++ and on
its Deepfakes alone under the five perturbations at random intensity, to Table 4, the
robustness std and Figs. 3-6."""

from __future__ import annotations

import pandas as pd
import pytest

from fairforge.runtime import read_checkpoint
from paper_walkthroughs import RANDOM_TYPES, prepare, run_laptop

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def walk(repo_root, tmp_path_factory) -> dict:
    return prepare(repo_root, "benchmark_paper", tmp_path_factory.mktemp("benchmark_paper"))


def test_benchmark_runs_its_protocol_through_all(walk):
    """The Benchmark's laptop walk-through for real: MesoNet-4 on FF++ raw and on its
    Deepfakes alone, tested under the five perturbations at random intensity, through
    Table 4, the robustness std of §4.3, Figs. 3-6 and the report."""
    results = walk["copy"] / "results"
    line, proc = run_laptop(walk, "benchmark_paper", timeout=1800)
    assert sorted(p.name for p in (results / "models").iterdir()) == ["meso4", "meso4_ffpp_df"]
    one = read_checkpoint(results / "models" / "meso4_ffpp_df" / "model.pt", mmap=True)
    assert one["train_config"]["train_methods"] == ["Deepfakes"]
    card = pd.read_csv(results / "protocol.csv").set_index(["name", "key"])
    assert card.loc[("meso4_ffpp_df", "init"), "value"] == "random"  # as MesoNet starts
    # §4.3: per detector and per average over its training sets, the population std of the
    # AUCs over the five perturbation types
    table = pd.read_csv(results / "random_intensity_table.csv")
    spread = table.loc[table["operation"] == "(std)"]
    groups = {(r.detector, r.train_dataset) for r in spread.itertuples()}
    assert groups == {
        ("meso4", "ffpp"),
        ("meso4_ffpp_df", "ffpp"),
        ("meso4", "(mean)"),
        ("meso4", "(mean, common)"),
    }
    for row in spread.itertuples():
        types = table.loc[
            (table["detector"] == row.detector)
            & (table["train_dataset"] == row.train_dataset)
            & (table["operation"] != "(std)")
        ]
        assert sorted(types["operation"]) == sorted(RANDOM_TYPES)
        assert row.AUC == pytest.approx(types["AUC"].std(ddof=0), abs=1e-5)
        assert row.n_operations == 5
    # and per detector in the robustness table, beside the category's mean
    robustness = pd.read_csv(results / "robustness_table.csv")
    in_robustness = robustness.loc[robustness["scope"] == "spread"].set_index("detector")["AUC"]
    per_detector = spread.loc[spread["train_dataset"] == "ffpp"].set_index("detector")["AUC"]
    assert in_robustness.to_dict() == pytest.approx(per_detector.to_dict(), abs=1e-5)
    # Table 4: each detector on what it trained on, FF++ counted by its manipulation
    in_domain = pd.read_csv(results / "in_domain_table.csv").set_index("family")
    assert list(in_domain.columns) == [
        "arch",
        "ffpp",
        "ffpp/Deepfakes",
        "average",
        "average_common",
    ]
    detection = pd.read_csv(results / "detection_table.csv")
    clean = detection.loc[(detection["variant"] == "clean") & (detection["unit"] == "frame")]
    per_method = pd.read_csv(results / "detection_per_method.csv")
    df_only = per_method.loc[
        (per_method["variant"] == "clean") & (per_method["method"] == "Deepfakes")
    ].set_index("detector")
    assert in_domain.loc["meso4", "ffpp"] == pytest.approx(
        clean.set_index("detector").loc["meso4", "AUC"], abs=1e-5
    )
    assert in_domain.loc["meso4", "ffpp/Deepfakes"] == pytest.approx(
        df_only.loc["meso4_ffpp_df", "AUC"], abs=1e-5
    )
    assert in_domain.loc["meso4", "average"] == in_domain.loc["meso4", "ffpp/Deepfakes"]
    for name in ("random_intensity", "efficiency", "efficiency_average"):
        assert (results / "figures" / f"{name}.png").stat().st_size > 1000, name
    report = (results / "report.html").read_text()
    assert "Benchmark Table 4" in report and "Benchmark Fig. 3" in report
