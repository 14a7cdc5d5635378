"""Throughput of fairforge image ops against ``imagecorruptions`` on the same images.

    .venv/bin/python benchmarks/bench_perturb.py [--n 32] [--size 256] [--json out.json]

Pairs each op that both libraries have (at a comparable mid severity) and reports images/s
and the ratio ours / theirs (> 1: ours is faster). Without ``imagecorruptions`` (PyPI:
``imagecorruptions-imaug``) it says so and times ours alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import cv2
import numpy as np

from fairforge.perturb import create_op
from fairforge.seeding import rng_for

# (our op, our level, their corruption, their severity 1..5)
PAIRS = [
    ("gaussian_noise", 3, "gaussian_noise", 3),
    ("gaussian_blur", 7, "gaussian_blur", 3),
    ("jpeg", 60, "jpeg_compression", 3),
    ("contrast", 2, "contrast", 3),
    ("brightness", 4, "brightness", 3),
    ("df_pixelate", 3, "pixelate", 3),
    ("poisson_gaussian_noise", 3, "shot_noise", 3),
    ("df_saturation", 3, "saturate", 3),
]


def test_images(n: int, size: int) -> list[np.ndarray]:
    """Smooth random fields with edges: photo-like frequency content, deterministic."""
    images = []
    for i in range(n):
        rng = rng_for("bench_perturb", i)
        base = rng.random((size // 8, size // 8, 3)).astype(np.float32) * 255
        img = cv2.resize(base, (size, size), interpolation=cv2.INTER_CUBIC)
        img += rng.normal(0, 6, img.shape).astype(np.float32)
        images.append(np.clip(img, 0, 255).astype(np.uint8))
    return images


def images_per_second(fn, images: list[np.ndarray], repeats: int = 3) -> float:
    for image in images[:2]:
        fn(image)  # warm-up (JIT, caches)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for image in images:
            fn(image)
        best = min(best, time.perf_counter() - start)
    return len(images) / best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32, help="images per op")
    parser.add_argument("--size", type=int, default=256, help="image side in pixels")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)

    cv2.setNumThreads(1)  # both libraries single-threaded: a like-for-like comparison
    try:
        from imagecorruptions import corrupt
    except ImportError as err:
        corrupt = None
        print(
            f"imagecorruptions not available ({err}); install 'imagecorruptions-imaug' to "
            "compare. Timing fairforge alone.",
            file=sys.stderr,
        )

    images = test_images(args.n, args.size)
    rows = []
    for ours, level, theirs, severity in PAIRS:
        op = create_op(ours, level)
        rng = rng_for("bench", ours)
        row = {
            "op": f"{ours}@{level}",
            "ours_ips": images_per_second(
                lambda im, op=op, rng=rng: op(im, rng), images, args.repeats
            ),
        }
        if corrupt is not None:
            row["theirs"] = f"{theirs}/{severity}"
            row["theirs_ips"] = images_per_second(
                lambda im, name=theirs, s=severity: corrupt(im, corruption_name=name, severity=s),
                images,
                args.repeats,
            )
            row["ratio"] = row["ours_ips"] / row["theirs_ips"]
        rows.append(row)

    print(f"{args.n} images of {args.size}x{args.size}, best of {args.repeats}, 1 thread")
    header = f"{'ours':22s} {'img/s':>9s}"
    if corrupt is not None:
        header += f"  {'imagecorruptions':22s} {'img/s':>9s} {'ours/theirs':>11s}"
    print(header)
    for row in rows:
        line = f"{row['op']:22s} {row['ours_ips']:9.1f}"
        if corrupt is not None:
            line += f"  {row['theirs']:22s} {row['theirs_ips']:9.1f} {row['ratio']:11.2f}"
        print(line)
    result = {"n": args.n, "size": args.size, "compared": corrupt is not None, "rows": rows}
    if corrupt is not None:
        ratios = np.array([row["ratio"] for row in rows])
        result["geometric_mean_ratio"] = float(np.exp(np.log(ratios).mean()))
        result["slowest_ratio"] = float(ratios.min())
        print(
            f"geometric mean ours/theirs {result['geometric_mean_ratio']:.2f}, "
            f"slowest {result['slowest_ratio']:.2f} ({rows[int(ratios.argmin())]['op']})"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return result


if __name__ == "__main__":
    main()
