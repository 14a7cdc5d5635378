"""Peak memory of what one forgery shard job reads of its manifests: whole files vs its rows.

Synthetic sources, faces and pairs manifests (the workflow's columns and row groups, 68
landmarks per face, no images) for N source images. Each way runs in a fresh interpreter that
reports its peak RSS (ru_maxrss) after the imports and after reading one shard's inputs. The
old way grows with N; reading only the shard's rows must stay flat. The manifests are written
by a child too: a child's ru_maxrss starts at its parent's RSS, so the parent stays small.

    .venv/bin/python benchmarks/bench_memory.py                 # 10k, 100k, 1M images
    .venv/bin/python benchmarks/bench_memory.py --images 100000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.faces.attributes import faces_with_attributes
from fairforge.forgery.shard import read_forgery_shard
from fairforge.manifest import read_manifest, write_manifest
from fairforge.pairs import PAIR_COLUMNS
from fairforge.sharding import shard_slice

GROUPS = ["tone1", "tone2", "tone3", "tone4"]
SPLITS = np.array(["train"] * 6 + ["val"] * 2 + ["test"] * 2)
IMAGES_PER_SUBJECT = 10
FACE_FAILURE_RATE = 0.02


def synthetic_sources(n: int) -> pd.DataFrame:
    ids = [f"img_{i:07d}" for i in range(n)]
    subject = np.arange(n) // IMAGES_PER_SUBJECT
    subjects = [f"subj_{s:06d}" for s in subject]
    groups = [GROUPS[s % len(GROUPS)] for s in subject]
    genders = ["female" if s % 8 < 4 else "male" for s in subject]
    return pd.DataFrame(
        {
            "image_id": ids,
            "dataset": "bench",
            "path": [f"{s}/{i}.jpg" for s, i in zip(subjects, ids)],
            "subject_id": subjects,
            "group": groups,
            "attributes": [json.dumps({"gender": g, "tone": t}) for g, t in zip(genders, groups)],
            "split": SPLITS[subject % len(SPLITS)],
            "width": 400,
            "height": 400,
            "sha256": [hashlib.sha256(i.encode()).hexdigest() for i in ids],
            "ok": True,
            "reason": "",
        }
    )


def synthetic_faces(sources: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """One face per source; failures have no box, landmarks or crop, like the faces stage."""
    n = len(sources)
    ok = rng.random(n) >= FACE_FAILURE_RATE
    template = rng.uniform(20, 108, size=136).astype(np.float32)
    landmarks = template + rng.normal(0, 2, size=(n, 136)).astype(np.float32)
    boxes = rng.integers(80, 200, size=(n, 4))
    crops = "bench/crops/" + sources["subject_id"] + "/" + sources["image_id"] + ".png"
    return pd.DataFrame(
        {
            "image_id": sources["image_id"],
            "ok": ok,
            "reason": np.where(ok, "", "no face detected"),
            "bbox": [b if k else None for b, k in zip(boxes, ok)],
            "det_score": np.where(ok, rng.uniform(0.5, 3.0, n), np.nan),
            "n_faces": ok.astype(np.int64),
            "landmarks": [lm if k else None for lm, k in zip(landmarks, ok)],
            "crop_path": crops.where(ok, None),
            "detector": "hog",
        }
    )


def synthetic_pairs(
    faces: pd.DataFrame, sources: pd.DataFrame, rng: np.random.Generator
) -> pd.DataFrame:
    """Each subject targets another of its group, in random order, so targets of one shard
    lie all over the dataset as with :func:`fairforge.pairs.make_pairs`."""
    meta = sources.loc[faces["ok"].to_numpy(), ["image_id", "subject_id", "group", "split"]]
    subjects = meta.drop_duplicates("subject_id")[["subject_id", "group"]]
    target_of = {}
    for _, part in subjects.groupby("group"):
        order = rng.permutation(part["subject_id"].to_numpy())
        target_of.update(zip(order, np.roll(order, -1)))
    first_image = meta.drop_duplicates("subject_id").set_index("subject_id")["image_id"]
    target_subject = meta["subject_id"].map(target_of)
    return pd.DataFrame(
        {
            "image_id": meta["image_id"],
            "target_image_id": target_subject.map(first_image),
            "source_subject": meta["subject_id"],
            "target_subject": target_subject,
            "group": meta["group"],
            "split": meta["split"],
            "ok": True,
            "reason": "",
        },
        columns=PAIR_COLUMNS,
    )


def write_dataset(workdir: Path, n: int, shard_size: int) -> int:
    """The three manifests as the workflow writes them; returns their size in bytes."""
    rng = np.random.default_rng(0)
    sources = synthetic_sources(n)
    faces = synthetic_faces(sources, rng)
    write_manifest(sources, workdir / "sources.parquet", "sources", row_group_size=shard_size)
    write_manifest(faces, workdir / "faces.parquet", "faces")
    write_manifest(synthetic_pairs(faces, sources, rng), workdir / "pairs.parquet", "pairs")
    return sum(
        (workdir / f"{name}.parquet").stat().st_size for name in ("sources", "faces", "pairs")
    )


def read_whole(workdir: Path, shard: str, shard_size: int):
    """How the forgery job read before: every manifest whole, then the shard's rows."""
    sources = read_manifest(workdir / "sources.parquet", contract="sources")
    faces = faces_with_attributes(
        sources, read_manifest(workdir / "faces.parquet", contract="faces")
    )
    shard_ids = set(shard_slice(sources, shard, shard_size)["image_id"])
    pairs = read_manifest(workdir / "pairs.parquet", contract="pairs")
    return sorted(shard_ids), pairs.loc[pairs["image_id"].isin(shard_ids)], faces


def read_rows_only(workdir: Path, shard: str, shard_size: int):
    return read_forgery_shard(
        workdir / "sources.parquet",
        workdir / "faces.parquet",
        workdir / "pairs.parquet",
        shard,
        shard_size,
    )


WAYS = {"old": read_whole, "new": read_rows_only}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(way: str, workdir: Path, shard: str, shard_size: int) -> dict:
    """Run in a fresh interpreter: a process's peak RSS never goes down."""
    import fairforge.forgery  # noqa: F401  (the job imports it too: same baseline both ways)

    imports = peak_mb()
    start = time.perf_counter()
    shard_ids, pairs, faces = WAYS[way](workdir, shard, shard_size)
    return {
        "imports_mb": imports,
        "peak_mb": peak_mb(),
        "seconds": time.perf_counter() - start,
        "shard_ids": len(shard_ids),
        "pairs": len(pairs),
        "faces": len(faces),
    }


def run_apart(*args: str) -> dict:
    """This script's answer to ``args``, from a fresh interpreter."""
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--shard-size", type=int, default=500)
    parser.add_argument("--write", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--measure", choices=sorted(WAYS), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--shard", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        print(json.dumps({"bytes": write_dataset(args.dir, args.write, args.shard_size)}))
        return
    if args.measure:
        print(json.dumps(measure(args.measure, args.dir, args.shard, args.shard_size)))
        return
    print(
        f"one forgery shard job (shard_size {args.shard_size}): peak RSS in MB, "
        f"seconds and faces rows of reading its manifests"
    )
    print(
        f"{'images':>9} {'files MB':>9} {'imports':>8} {'old MB':>8} {'new MB':>8} "
        f"{'old s':>7} {'new s':>7} {'old rows':>9} {'new rows':>9}"
    )
    size_of = ["--shard-size", str(args.shard_size)]
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        for n in args.images:
            workdir = Path(tmp) / str(n)
            workdir.mkdir()
            size = run_apart("--write", str(n), "--dir", str(workdir), *size_of)["bytes"]
            shard = f"{n // args.shard_size // 2:03d}"
            old, new = (
                run_apart("--measure", way, "--dir", str(workdir), "--shard", shard, *size_of)
                for way in ("old", "new")
            )
            if (old["shard_ids"], old["pairs"]) != (new["shard_ids"], new["pairs"]):
                raise RuntimeError(f"the two ways read different shards: {old} vs {new}")
            print(
                f"{n:>9} {size / 2**20:>9.0f} {new['imports_mb']:>8.0f} "
                f"{old['peak_mb']:>8.0f} {new['peak_mb']:>8.0f} {old['seconds']:>7.2f} "
                f"{new['seconds']:>7.2f} {old['faces']:>9} {new['faces']:>9}",
                flush=True,
            )
            for path in workdir.iterdir():
                path.unlink()


if __name__ == "__main__":
    main()
