"""Which detector fails whom: every configured backend on every source image, the per-group
table with subject-bootstrap intervals, its figure, and configs/mtcnn.yaml's plan."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skimage.data

from fairforge.faces import Detection, FaceModels
from fairforge.faces.compare import (
    alignment_errors,
    backend_outcome,
    compare_backends,
    compare_options,
    landmark_problem,
)
from fairforge.images import write_image
from fairforge.paths import report_paths
from fairforge.report.figures import face_backends_figure
from fairforge.report.html import _face_backend_parts
from fairforge.tables.face_backends import FACE_BACKEND_COLUMNS, face_detection_by_backend


def _row(image_id, backend, detected, ok=None, points=None, readable=True):
    ok = detected if ok is None else ok
    return {
        "image_id": image_id,
        "backend": backend,
        "readable": readable,
        "detected": detected,
        "landmarks_ok": ok,
        "reason": "",
        "points5": None if points is None else np.asarray(points, float).reshape(-1),
    }


FIVE = np.array([[30, 40], [70, 40], [50, 60], [35, 80], [65, 80]], float)  # iod 40


def test_landmark_problems():
    face = Detection(10, 10, 90, 100, 1.0)
    assert landmark_problem(FIVE, face) == ""
    assert landmark_problem(FIVE + [200, 0], face) == "landmarks outside the face box"
    collapsed = FIVE.copy()
    collapsed[1] = collapsed[0] + 1
    assert landmark_problem(collapsed, face) == "eyes collapsed"
    assert landmark_problem(np.full((5, 2), np.nan), face) == "landmarks not finite"


def test_table_counts_rates_errors_and_intervals():
    # Two groups of two subjects, two images each. hog finds every face; mtcnn misses both
    # images of subject b1 and one landmark set of a2 fails; its points are 4 px (0.1 IOD)
    # off hog's.
    sources = pd.DataFrame(
        {
            "image_id": [f"{s}_{i}" for s in ("a1", "a2", "b1", "b2") for i in (0, 1)],
            "subject_id": [s for s in ("a1", "a2", "b1", "b2") for _ in (0, 1)],
            "group": ["A"] * 4 + ["B"] * 4,
        }
    )
    rows = []
    for image_id in sources["image_id"]:
        rows.append(_row(image_id, "hog", True, points=FIVE))
        if image_id.startswith("b1"):
            rows.append(_row(image_id, "mtcnn", False))
        elif image_id == "a2_1":
            rows.append(_row(image_id, "mtcnn", True, ok=False, points=FIVE))
        else:
            rows.append(_row(image_id, "mtcnn", True, points=FIVE + [4, 0]))
    outcomes = pd.DataFrame(rows)
    errors = alignment_errors(outcomes, "hog")
    assert errors[outcomes["backend"] == "hog"].isna().all()
    np.testing.assert_allclose(errors.dropna(), 0.1)

    table = face_detection_by_backend(outcomes, sources, ["hog", "mtcnn"], n_boot=200, seed=1)
    assert list(table.columns) == list(FACE_BACKEND_COLUMNS)
    cell = table.set_index(["backend", "group"])
    assert list(cell.index) == [(b, g) for b in ("hog", "mtcnn") for g in ("A", "B", "(all)")]
    assert cell.loc[("hog", "(all)"), "detection_rate"] == 1.0
    assert math.isnan(cell.loc[("hog", "A"), "alignment_error"])
    m = cell.loc["mtcnn"]
    assert m.loc["A", "detection_rate"] == 1.0 and m.loc["B", "detection_rate"] == 0.5
    assert m.loc["(all)", "detection_rate"] == 0.75 and m.loc["(all)", "n_subjects"] == 4
    assert m.loc["A", "n_landmark_failures"] == 1 and m.loc["A", "landmark_failure_rate"] == 0.25
    assert m.loc["B", "landmark_failure_rate"] == 0.0
    assert m.loc["A", "n_compared"] == 3 and m.loc["A", "alignment_error"] == pytest.approx(0.1)
    # Group B's rate depends on which of its two subjects are drawn: a real interval.
    assert 0.0 <= m.loc["B", "detection_rate_low"] < 0.5 < m.loc["B", "detection_rate_high"] <= 1
    # Group A never varies: a zero-width interval.
    assert m.loc["A", "detection_rate_low"] == m.loc["A", "detection_rate_high"] == 1.0
    # Deterministic under the seed.
    again = face_detection_by_backend(outcomes, sources, ["hog", "mtcnn"], n_boot=200, seed=1)
    pd.testing.assert_frame_equal(table, again)
    with pytest.raises(ValueError, match="compare_backends is empty"):
        face_detection_by_backend(outcomes, sources, [])


def test_compare_backends_on_real_and_bad_files(tmp_path):
    """hog and mtcnn on the astronaut, a blank image, a tiny image and a missing file."""
    write_image(tmp_path / "astronaut.png", skimage.data.astronaut())
    write_image(tmp_path / "blank.png", np.full((96, 96, 3), 90, np.uint8))
    write_image(tmp_path / "tiny.png", np.zeros((20, 20, 3), np.uint8))
    sources = pd.DataFrame(
        {
            "image_id": ["astronaut", "blank", "missing", "tiny"],
            "path": ["astronaut.png", "blank.png", "missing.png", "tiny.png"],
            "ok": True,
            "reason": "",
            "subject_id": ["s1", "s2", "s3", "s4"],
            "group": ["x", "x", "y", "y"],
        }
    )
    out = compare_backends(sources, tmp_path, ["hog", "mtcnn"], upsample=0)
    assert len(out) == 8 and list(out["backend"]) == ["hog", "mtcnn"] * 4
    by = out.set_index(["image_id", "backend"])
    assert by.loc[("astronaut", "hog"), "landmarks_ok"]
    assert by.loc[("astronaut", "mtcnn"), "landmarks_ok"]
    assert not by.loc[("blank", "mtcnn"), "detected"] and by.loc[("blank", "mtcnn"), "readable"]
    assert not by.loc[("missing", "hog"), "readable"]
    assert "too small" in by.loc[("tiny", "mtcnn"), "reason"]
    errors = alignment_errors(out, "hog").dropna()
    assert len(errors) == 1 and errors.iloc[0] < 0.15  # MTCNN's five points agree with dlib's
    table = face_detection_by_backend(out, sources, ["hog", "mtcnn"], n_boot=20)
    assert table.set_index(["backend", "group"]).loc[("mtcnn", "x"), "detection_rate"] == 0.5
    assert table.set_index(["backend", "group"]).loc[("mtcnn", "y"), "n_unreadable"] == 2
    # The report shows each dataset's figure and table when the comparison is configured.
    paths = report_paths(str(tmp_path), ["synthetic"], face_backends=True)
    table_path = Path(paths["face_backend_tables"][0])
    table_path.parent.mkdir(parents=True)
    table.to_csv(table_path, index=False)
    figure = face_backends_figure(table, paths["face_backend_figures"][0], "synthetic")
    assert figure.stat().st_size > 1000
    shown = "".join(_face_backend_parts(paths))
    assert "Which face detector fails whom" in shown and "data:image/png" in shown
    assert "landmark_failure_rate" in shown
    assert _face_backend_parts(report_paths(str(tmp_path), ["synthetic"])) == []


def test_backend_outcome_and_options():
    opts = compare_options({"compare_backends": ["hog", "mtcnn"], "upsample": 0})
    assert opts["backends"] == ["hog", "mtcnn"] and opts["landmarks"] == "dlib68"
    assert isinstance(opts["models"], FaceModels) and opts["upsample"] == 0
    row = backend_outcome(np.zeros((64, 64, 3), np.uint8), "hog", "dlib68", FaceModels(), 0)
    assert row["reason"] == "no face detected" and not row["detected"]
