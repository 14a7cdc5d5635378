"""Throughput of the forgery methods on 256x256 crops, per backend, next to the I/O floor of
the same run.

For every method (``faceswap``: its classical backend; ``simswap/official``: another one) it
reports
- ``compute``: images/s of the method call alone, one face at a time (decoded crops in
  memory);
- ``batch``: images/s of ``forge_batch`` with ``--batch`` faces per network pass, for the
  backends that have it (the official networks); blank for the others;
- ``shard``: images/s of :func:`fairforge.forgery.forge_shard` end to end (decode the source
  and target crops, forge, encode the fake and its mask as PNG, plus any extra map);
and once, ``io floor``: images/s of decoding the same two crops and encoding two PNGs per
sample with no forgery in between, the ceiling any method's ``shard`` number can reach.

Faces are the parametric template faces (exact landmarks, no detector) by default, or the
synthetic renderer's faces aligned by the faces stage with ``--faces synthetic``. A learned
backend takes its options (its files) from ``--options`` (YAML: ``{simswap/official:
{generator_path: ..., arcface_path: ...}}``); ``--random-weights`` writes random weights in
its release's layout instead (:data:`RANDOM_RELEASES`: speed does not depend on the values).

    .venv/bin/python benchmarks/bench_forgery.py --n 32 --threads 1
    .venv/bin/python benchmarks/bench_forgery.py --methods simswap simswap/official \
        --random-weights --n 8 --threads 2 --batch 4
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import yaml

from fairforge.forgery import FORGERY_METHODS, create_method, forge_shard
from fairforge.forgery.base import as_landmarks
from fairforge.forgery.template import template_face
from fairforge.images import read_image, write_image
from fairforge.pairs import make_pairs
from fairforge.seeding import derive_seed

METHODS = ["faceswap", "simswap", "fastreen", "dualreen", "maskgan", "sbi", "xray"]


def template_faces(n: int, size: int, seed: int):
    for i in range(n):
        rng = np.random.default_rng(derive_seed(seed, "bench", i))
        yield template_face(
            size,
            seed=derive_seed(seed, "face", i),
            mouth_open=float(rng.uniform(0, 0.3)),
            eye_open=float(rng.uniform(0.5, 1.1)),
            brow_raise=float(rng.uniform(-0.05, 0.12)),
            angle_deg=float(rng.uniform(-8, 8)),
            scale=float(rng.uniform(0.52, 0.62)),
        )


def synthetic_faces(n: int, size: int, seed: int):
    from fairforge.faces.stage import detect_and_align
    from fairforge.sources.synthetic import render_face, sample_subject, sample_view

    tones = ["tone1", "tone2", "tone3", "tone4"]
    made, i = 0, 0
    while made < n and i < 4 * n:
        sid = f"b{i}"
        img = render_face(
            sample_subject(seed, sid, tones[i % 4], ("female", "male")[i % 2]),
            sample_view(seed, f"{sid}_0"),
            400,
        )
        i += 1
        face = detect_and_align(img, crop_size=size)
        if face.ok:
            made += 1
            yield face.crop, face.landmarks


def build_dataset(root: Path, n: int, size: int, seed: int, kind: str) -> pd.DataFrame:
    """n crops on disk, two images per subject, subjects in two groups."""
    gen = template_faces if kind == "template" else synthetic_faces
    rows = []
    for i, (img, lm) in enumerate(gen(n, size, seed)):
        subject = f"s{i // 2:03d}"
        image_id = f"{subject}_{i % 2}"
        rel = f"faces/{image_id}.png"
        write_image(root / rel, img)
        rows.append(
            {
                "image_id": image_id,
                "ok": True,
                "reason": "",
                "subject_id": subject,
                "group": f"g{(i // 2) % 2}",
                "split": "test",
                "crop_path": rel,
                "landmarks": lm.reshape(-1).tolist(),
            }
        )
    return pd.DataFrame(rows)


def random_simswap(folder: Path, threads: int) -> dict:
    """SimSwap's 224 release as laid out (9 ID-injection blocks, the ResNet-101 ArcFace
    default), random weights."""
    import torch

    from fairforge.forgery.nets.arcface import SimSwapArcFace
    from fairforge.forgery.nets.simswap import SimSwapGenerator

    folder.mkdir(parents=True, exist_ok=True)
    torch.save(SimSwapGenerator(224).state_dict(), folder / "latest_net_G.pth")
    torch.save(SimSwapArcFace().state_dict(), folder / "arcface.pth")
    return {
        "generator_path": str(folder / "latest_net_G.pth"),
        "arcface_path": str(folder / "arcface.pth"),
        "threads": threads,
    }


def random_maskgan(folder: Path, threads: int) -> dict:
    """MaskGAN's demo generator at the released sizes and the BiSeNet parser, random weights
    written by tests/helpers/maskgan_reference.py, whose parser is tilted to parse a face into skin
    and parts (an untrained one finds no part to edit, and no face would reach the
    generator)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
    import maskgan_reference

    return {**maskgan_reference.random_release(folder, full=True), "threads": threads}


# method/backend -> writes random weights in its release's layout, returns its options
RANDOM_RELEASES = {
    "simswap/official": random_simswap,
    "maskgan/official": random_maskgan,
}


def io_floor(root: Path, pairs: pd.DataFrame, faces: pd.DataFrame, repeats: int) -> float:
    crop = faces.set_index("image_id")["crop_path"]
    todo = [(r.image_id, r.target_image_id) for r in pairs.itertuples() if r.ok]
    out = root / "io_floor"
    t0 = time.perf_counter()
    for _ in range(repeats):
        for k, (src, tgt) in enumerate(todo):
            a = read_image(root / crop[src])
            read_image(root / crop[tgt])
            write_image(out / f"{k}.png", a)
            write_image(out / f"{k}_mask.png", ((a[..., 0] > 127) * 255).astype(np.uint8))
    return repeats * len(todo) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=32, help="crops (images)")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1, help="OpenCV threads")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--faces", choices=["template", "synthetic"], default="template")
    ap.add_argument(
        "--methods", nargs="*", default=METHODS, help="method or method/backend (registered)"
    )
    ap.add_argument("--options", type=Path, help="YAML: {method/backend: {option: value}}")
    ap.add_argument(
        "--random-weights", action="store_true", help="random release files where not given"
    )
    ap.add_argument("--batch", type=int, default=8, help="faces per pass of forge_batch")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    cv2.setNumThreads(args.threads)
    keys = [m if "/" in m else f"{m}/classical" for m in args.methods]
    for key in keys:
        FORGERY_METHODS.check(key)
    given = yaml.safe_load(args.options.read_text()) if args.options else {}

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        faces = build_dataset(root, args.n, args.size, args.seed, args.faces)
        pairs = make_pairs(faces, args.seed)
        loaded = {
            r.image_id: (read_image(root / r.crop_path), as_landmarks(r.landmarks))
            for r in faces.itertuples()
        }
        todo = [(r.image_id, r.target_image_id) for r in pairs.itertuples() if r.ok]
        floor = io_floor(root, pairs, faces, args.repeats)
        print(
            f"{len(todo)} pairs of {args.size}px crops ({args.faces} faces), "
            f"OpenCV threads {args.threads}, batch {args.batch}"
        )
        print(
            f"{'method':18s} {'compute img/s':>14s} {'batch img/s':>12s} {'shard img/s':>12s} {'ok':>6s}"
        )
        print(f"{'io floor':18s} {'':>14s} {'':>12s} {floor:12.1f}")
        results = {
            "io_floor": floor,
            "n": len(todo),
            "size": args.size,
            "threads": args.threads,
            "faces": args.faces,
            "batch": args.batch,
            "methods": {},
        }
        for key in keys:
            name, backend = key.split("/")
            options = dict(given.get(key, {}))
            if not options and args.random_weights and key in RANDOM_RELEASES:
                options = RANDOM_RELEASES[key](root / "releases" / name, args.threads)
            if "batch" in FORGERY_METHODS.get(key).defaults:
                options.setdefault("batch", args.batch)
            method = create_method(name, backend, **options)
            src, tgt = todo[0]
            method(*loaded[src], *loaded[tgt], np.random.default_rng(0))  # warm-up (LUTs)
            t0 = time.perf_counter()
            for _ in range(args.repeats):
                for k, (src, tgt) in enumerate(todo):
                    try:
                        method(*loaded[src], *loaded[tgt], np.random.default_rng(k))
                    except Exception:  # a failed face still costs its time
                        pass
            compute = args.repeats * len(todo) / (time.perf_counter() - t0)
            batch = None
            if hasattr(method, "forge_batch"):
                items = [(*loaded[src], *loaded[tgt]) for src, tgt in todo]
                t0 = time.perf_counter()
                for _ in range(args.repeats):
                    for i in range(0, len(items), args.batch):
                        method.forge_batch(items[i : i + args.batch])
                batch = args.repeats * len(items) / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            out = forge_shard(
                name, backend, pairs, faces, root, f"forgeries/{name}_{backend}", args.seed, options
            )
            shard = len(out) / (time.perf_counter() - t0)
            ok = f"{int(out.ok.sum())}/{len(out)}"
            shown = "" if batch is None else f"{batch:.2f}"
            print(f"{key:18s} {compute:14.2f} {shown:>12s} {shard:12.2f} {ok:>6s}")
            results["methods"][key] = {
                "compute_img_s": compute,
                "batch_img_s": batch,
                "shard_img_s": shard,
                "ok": int(out.ok.sum()),
                "rows": len(out),
            }
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
