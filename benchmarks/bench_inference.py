"""Inference throughput: the whole scoring path against the forward pass alone.

For each detector (random weights: speed does not depend on them) this measures, in one run:

* ``pipeline``: :func:`fairforge.inference.score_frame` over PNG files written to a temporary
  folder (decode, resize, normalise in DataLoader workers, batches to the device, forward,
  sigmoid), images per second over the whole set after a one-batch warm-up;
* ``forward``: the model alone on the same images already decoded into tensors and moved to
  the device in batches of the same size, images per second after two warm-up batches.

Their ratio says how much of the forward-pass speed the data path delivers. On CUDA both run
in channels_last under bf16 autocast by default (as ``score_frame`` does); ``--no-bf16`` turns
that off for the forward-only numbers only, and ``--bf16`` on a CPU does the same (``score_frame``
uses fp32 there), so the precision column says what the forward-only row used.

    python benchmarks/bench_inference.py --device cpu --size 128 --n-images 256 \\
        --detectors meso4,xception,efficientnet_b4 --markdown benchmarks/results.md
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import torch

from fairforge.data import FaceDataset
from fairforge.detectors import DETECTORS, create_detector, list_detectors
from fairforge.images import write_image
from fairforge.inference import score_frame
from fairforge.runtime import pick_device
from fairforge.seeding import rng_for


def write_images(root: Path, n: int, size: int) -> pd.DataFrame:
    """``n`` textured PNG images of ``size``² (compress like photos, not like flat colour)."""
    rows = []
    for i in range(n):
        rng = rng_for("bench-inference", i)
        base = rng.normal(128, 40, (size // 8, size // 8, 3)).astype(np.float32)
        img = cv2.resize(base, (size, size), interpolation=cv2.INTER_CUBIC)
        img = np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8)
        path = f"img/{i:05d}.png"
        write_image(root / path, img)
        rows.append({"sample_id": f"b{i:05d}", "path": path, "label": i % 2})
    return pd.DataFrame(rows)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def pipeline_rate(model, meta, frame, root, batch_size, workers, device) -> float:
    score_frame(
        model,
        meta,
        frame.head(batch_size),
        root,
        batch_size=batch_size,
        num_workers=0,
        device=device,
        progress=False,
    )  # kernels, cudnn autotuning
    _sync(device)
    start = time.perf_counter()
    score_frame(
        model,
        meta,
        frame,
        root,
        batch_size=batch_size,
        num_workers=workers,
        device=device,
        progress=False,
    )
    _sync(device)
    return len(frame) / (time.perf_counter() - start)


def forward_rate(model, batches, device, bf16: bool) -> float:
    model = model.to(device).eval()
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
        batches = [b.contiguous(memory_format=torch.channels_last) for b in batches]
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    )
    n = sum(len(b) for b in batches)
    with torch.inference_mode(), autocast:
        for b in batches[:2]:
            torch.sigmoid(model(b).float())
        _sync(device)
        start = time.perf_counter()
        for b in batches:
            torch.sigmoid(model(b).float()).cpu()
        _sync(device)
    return n / (time.perf_counter() - start)


def preload(frame, root, size, mean, std, batch_size, device) -> list[torch.Tensor]:
    dataset = FaceDataset(frame, root, size, mean, std)
    images = torch.stack([dataset[i]["image"] for i in range(len(dataset))])
    return [images[i : i + batch_size].to(device) for i in range(0, len(images), batch_size)]


def run(args) -> pd.DataFrame:
    device = pick_device(args.device)
    bf16 = device.type == "cuda" if args.bf16 is None else args.bf16
    torch.set_num_threads(max(1, args.threads))
    names = list_detectors(kind="network") if args.detectors == "all" else args.detectors.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_inference_") as tmp:
        root = Path(tmp)
        frame = write_images(root, args.n_images, args.size)
        for name in names:
            entry = DETECTORS.get(name)
            torch.manual_seed(0)
            model = create_detector(name, input_size=args.size).eval()
            meta = {"input_size": args.size, "mean": list(entry.mean), "std": list(entry.std)}
            batches = preload(
                frame, root, args.size, entry.mean, entry.std, args.batch_size, device
            )
            fwd = forward_rate(model, batches, device, bf16)
            del batches
            pipe = pipeline_rate(model, meta, frame, root, args.batch_size, args.workers, device)
            rows.append(
                {
                    "detector": name,
                    "device": str(device),
                    "size": args.size,
                    "batch": args.batch_size,
                    "workers": args.workers,
                    "n_images": args.n_images,
                    "precision": "bf16" if bf16 else "fp32",
                    "pipeline_img_s": pipe,
                    "forward_img_s": fwd,
                    "pipeline_over_forward": pipe / fwd,
                }
            )
            print(f"{name}: pipeline {pipe:.1f} img/s, forward {fwd:.1f} img/s", file=sys.stderr)
    return pd.DataFrame(rows)


def markdown_table(table: pd.DataFrame) -> str:
    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in table.itertuples(index=False):
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--size", type=int, default=256, help="input side in pixels")
    p.add_argument("--n-images", type=int, default=512)
    p.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bf16 autocast for the forward-only pass (default: on for CUDA)",
    )
    p.add_argument(
        "--detectors",
        default="meso4,xception,efficientnet_b4",
        help="comma-separated names, or 'all'",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=min(4, os.cpu_count() or 1),
        help="DataLoader workers of the pipeline",
    )
    p.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch CPU threads")
    p.add_argument("--markdown", type=Path, default=None, help="append the table to this file")
    return p.parse_args(argv)


def main(argv=None) -> pd.DataFrame:
    args = parse_args(argv)
    table = run(args)
    text = markdown_table(table)
    print(text)
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
        header = (
            f"\n### bench_inference {stamp} ({platform.node()}, {os.cpu_count()} CPUs, "
            f"{gpu}, torch {torch.__version__})\n\n"
        )
        with open(args.markdown, "a") as fh:
            fh.write(header + text + "\n")
    return table


if __name__ == "__main__":
    main()
