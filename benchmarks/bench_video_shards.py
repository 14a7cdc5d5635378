"""Time and peak memory of placing one prediction shard of a video dataset.

Prediction shards keep a video whole (``fairforge.sharding.prediction_shard_ids``), which
reads the ``image_id`` and ``video_id`` columns of every sources row; row shards
(``shard_image_ids``) read one row group. A synthetic sources manifest of N frames (32 per
video, the workflow's columns and row groups) is written by a child process; each way then
runs in a fresh interpreter that reports its wall time and peak RSS (ru_maxrss) after the
imports and after placing the middle shard.

    .venv/bin/python benchmarks/bench_video_shards.py                  # 100k and 1M frames
    .venv/bin/python benchmarks/bench_video_shards.py --frames 100000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

FRAMES_PER_VIDEO = 32
SHARD_SIZE = 30_000  # inference.shard_size's default


def synthetic_video_sources(n: int) -> pd.DataFrame:
    video = np.arange(n) // FRAMES_PER_VIDEO
    index = np.arange(n) % FRAMES_PER_VIDEO
    videos = [f"clip_{v:06d}" for v in video]
    ids = [f"{v}_f{i:04d}" for v, i in zip(videos, index)]
    return pd.DataFrame(
        {
            "image_id": ids,
            "dataset": "bench",
            "path": [f"frames/{v}/{i}.png" for v, i in zip(videos, ids)],
            "subject_id": [f"subj_{v // 2:06d}" for v in video],
            "group": "tone1",
            "attributes": "{}",
            "split": "test",
            "width": 256,
            "height": 256,
            "sha256": "0" * 64,
            "ok": True,
            "reason": "",
            "video_id": videos,
            "frame_index": index.astype(np.int64),
        }
    )


def child(args) -> None:
    if args.child == "write":
        from fairforge.manifest import write_manifest

        frame = synthetic_video_sources(args.frames)
        write_manifest(frame, args.path, row_group_size=SHARD_SIZE)
        return
    from fairforge.sharding import prediction_shard_ids, shard_ids, shard_image_ids

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    shards = shard_ids(args.frames, SHARD_SIZE)
    shard = shards[len(shards) // 2]
    place = prediction_shard_ids if args.child == "whole_videos" else shard_image_ids
    start = time.perf_counter()
    ids = place(args.path, shard, SHARD_SIZE)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"ids": len(ids), "seconds": seconds, "base_mb": base, "peak_mb": peak}))


def run(way: str, frames: int, path: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", way, "--frames", str(frames), "--path", str(path)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1]) if way != "write" else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--child", default=None)
    parser.add_argument("--path", default=None)
    args = parser.parse_args()
    if args.child:
        args.frames = args.frames[0]
        return child(args)
    print("frames   way           ids    seconds  peak MB (after imports)")
    for n in args.frames:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "sources.parquet"
            run("write", n, path)
            for way in ("row_shards", "whole_videos"):
                r = run(way, n, path)
                print(
                    f"{n:<8d} {way:<12s} {r['ids']:>6d} {r['seconds']:>9.3f}  "
                    f"{r['peak_mb']:.0f} ({r['base_mb']:.0f})"
                )


if __name__ == "__main__":
    main()
