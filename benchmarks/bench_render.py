"""Throughput of the synthetic face renderer, and how often dlib's HOG detector finds its faces.

Renders N images spread evenly over the 8 tone x gender groups (``--images-per-subject``
images per subject), times rendering alone (wall and CPU seconds) and PNG writing, then runs
``dlib.get_frontal_face_detector()`` (upsample ``--upsample``) on every image and reports the
detection rate per group.

    .venv/bin/python benchmarks/bench_render.py --n 400 --images-per-subject 10
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from fairforge.images import write_image
from fairforge.sources.synthetic import (
    DEFAULT_GENDERS,
    DEFAULT_TONES,
    image_id_for,
    render_face,
    sample_subject,
    sample_view,
    synthetic_subject_table,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=500, help="number of images")
    parser.add_argument("--images-per-subject", type=int, default=10)
    parser.add_argument("--size", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--upsample", type=int, default=1)
    parser.add_argument(
        "--threads", type=int, default=None, help="OpenCV threads (default: OpenCV's own choice)"
    )
    parser.add_argument("--no-detect", action="store_true", help="skip the dlib check")
    args = parser.parse_args()
    if args.threads is not None:
        cv2.setNumThreads(args.threads)

    groups = len(DEFAULT_TONES) * len(DEFAULT_GENDERS)
    per_subject = max(1, args.images_per_subject)
    subjects_per_group = max(1, math.ceil(args.n / (groups * per_subject)))
    table = synthetic_subject_table(subjects_per_group=subjects_per_group, seed=args.seed)
    # Take subjects round-robin over the groups so any N stays balanced.
    table = table.assign(rank=table.groupby(["tone", "gender"]).cumcount())
    table = table.sort_values(["rank", "subject_id"], kind="stable")
    jobs = []
    for rec in table.itertuples(index=False):
        subject = sample_subject(
            args.seed,
            rec.subject_id,
            rec.tone,
            rec.gender,
            darkness=rec.darkness,
            masculine=rec.masculine,
        )
        for j in range(per_subject):
            jobs.append((f"{rec.tone}/{rec.gender}", subject, image_id_for(rec.subject_id, j)))
    jobs = jobs[: args.n]

    render_face(jobs[0][1], sample_view(args.seed, jobs[0][2]), args.size)  # warm caches
    images = []
    wall, cpu = time.perf_counter(), time.process_time()
    for _, subject, image_id in jobs:
        images.append(render_face(subject, sample_view(args.seed, image_id), args.size))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        for (_, _, image_id), img in zip(jobs, images):
            write_image(Path(tmp) / f"{image_id}.png", img)
        write_s = time.perf_counter() - start

    report = {
        "benchmark": "render",
        "n": len(images),
        "size": args.size,
        "render_s": round(wall, 3),
        "render_cpu_s": round(cpu, 3),
        "images_per_s": round(len(images) / wall, 1),
        "images_per_cpu_s": round(len(images) / cpu, 1),
        "png_write_images_per_s": round(len(images) / write_s, 1),
        "opencv_threads": cv2.getNumThreads(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
    }

    if not args.no_detect:
        import dlib

        detector = dlib.get_frontal_face_detector()
        found: dict[str, list[bool]] = {}
        widths = []
        start = time.perf_counter()
        for (group, _, _), img in zip(jobs, images):
            dets = detector(img, args.upsample)
            found.setdefault(group, []).append(len(dets) > 0)
            widths.extend(d.width() for d in dets[:1])
        report["detect_s"] = round(time.perf_counter() - start, 3)
        report["hog_upsample"] = args.upsample
        report["detection_rate"] = {g: round(float(np.mean(v)), 4) for g, v in found.items()}
        report["detected"] = {g: f"{sum(v)}/{len(v)}" for g, v in found.items()}
        report["min_group_rate"] = min(report["detection_rate"].values())
        report["median_face_box_px"] = float(np.median(widths)) if widths else None
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
