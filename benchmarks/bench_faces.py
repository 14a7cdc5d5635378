"""Throughput of the faces stage (detect, 68 landmarks, align, write PNG crop).

Renders N synthetic 400x400 faces (the size of RFW images), warms the dlib models up on
one image, then times :func:`fairforge.faces.process_faces` over all N in one process.

    .venv/bin/python benchmarks/bench_faces.py --n 64 --detector hog --upsample 1
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

from fairforge.faces import process_faces
from fairforge.sources.synthetic import synthetic_sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="number of images")
    parser.add_argument("--detector", choices=["hog", "cnn"], default="hog")
    parser.add_argument("--upsample", type=int, default=1)
    parser.add_argument("--size", type=int, default=400, help="input image side in px")
    parser.add_argument("--crop-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "images"
        subjects = math.ceil(args.n / 16)  # 8 groups x 2 images per subject
        table = synthetic_sources(
            root, subjects_per_group=subjects, images_per_subject=2, seed=args.seed, size=args.size
        ).head(args.n)
        sources = table.assign(ok=True, reason="")
        options = dict(crop_size=args.crop_size, detector=args.detector, upsample=args.upsample)
        process_faces(sources.head(1), root, Path(tmp) / "warm", **options)
        start = time.perf_counter()
        faces = process_faces(sources, root, Path(tmp) / "out", **options)
        seconds = time.perf_counter() - start

    report = {
        "benchmark": "faces",
        "detector": args.detector,
        "upsample": args.upsample,
        "input_size": args.size,
        "crop_size": args.crop_size,
        "n": len(sources),
        "detected": int(faces["ok"].sum()),
        "seconds": round(seconds, 3),
        "images_per_s": round(len(sources) / seconds, 2),
        "cpu": platform.processor() or platform.machine(),
        "threads": os.cpu_count(),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
