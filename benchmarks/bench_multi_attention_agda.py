"""The cost of multi_attention's published training phases: seconds per training step (one
:func:`fairforge.training.detector.train_step` with Adam) in the warm-up (plain backbone and its head),
after it without AGDA (``agda_weight = match_weight = 0``), and with AGDA (a second pass), and
the cost of the AGDA image operation alone. Random weights and images: speed does not depend
on them.

    python benchmarks/bench_multi_attention_agda.py --device cpu --size 128 --batch 4 \\
        --backbone tf_efficientnet_b0 --steps 3
"""

from __future__ import annotations

import argparse
import time

import torch

from fairforge.detectors import create_detector
from fairforge.detectors.multi_attention import agda
from fairforge.training.detector import train_step


def step_seconds(model, batch: dict, steps: int, device) -> float:
    """Median seconds per training step after one warm-up step."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    times = []
    for i in range(steps + 1):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        train_step(model, {**batch, "seed": i}, opt)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sorted(times[1:])[len(times[1:]) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--backbone", default="tf_efficientnet_b0")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    gen = torch.Generator().manual_seed(0)
    images = torch.randn(args.batch, 3, args.size, args.size, generator=gen).to(device)
    batch = {"image": images, "label": (torch.arange(args.batch) % 2).to(device)}
    rows = []
    for phase, kwargs, epoch in (
        ("warm-up", {}, 1),
        ("no AGDA", {"agda_weight": 0.0, "match_weight": 0.0}, 2),
        ("AGDA", {}, 2),
    ):
        torch.manual_seed(0)
        model = create_detector(
            "multi_attention",
            input_size=args.size,
            backbone=args.backbone,
            warmup_epochs=1,
            **kwargs,
        ).to(device)
        model.train().on_epoch_start(epoch, 2)
        rows.append((phase, step_seconds(model, batch, args.steps, device)))
    model.eval()
    with torch.no_grad():
        model(images)
        attentions = model._outputs["attentions"]
        start = time.perf_counter()
        for i in range(args.steps):
            agda(images, attentions, torch.Generator(device=device).manual_seed(i))
        if device.type == "cuda":
            torch.cuda.synchronize()
        rows.append(("AGDA image op", (time.perf_counter() - start) / args.steps))
    print(
        f"multi_attention, {args.backbone}, {args.size} px, batch {args.batch}, "
        f"{device}, {args.threads} thread(s)"
    )
    print("| phase | seconds per step |\n|---|---|")
    for phase, seconds in rows:
        print(f"| {phase} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
