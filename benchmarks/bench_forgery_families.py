"""Are the forgery methods what their names say? The acceptance numbers of issue 17, measured
on fakes of the demo's synthetic world (faces rendered by the synthetic source, aligned by the
faces stage, paired within groups as the workflow pairs them).

Printed per method: fakes made, failures (with their reasons), the share of near-invisible
fakes and the mean change inside the mask (fake vs kept image); for the reenactment methods,
the share of the yaw and pitch gap to the driver they close (landmarks detected again on the
fake, source and driver, pose by :func:`fairforge.forgery.pose.face_pose`); for every two
methods that keep the same image, the mean |A - B| inside the union of their masks over the
mean of their fake-vs-kept differences (acceptance: >= 0.5); for maskgan, how far the mean
LAB colour of the skin moves (:func:`fairforge.forgery.quality.skin_colour_shift`: the whole
skin part, hair excluded; acceptance: within 1 unit).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_forgery_families.py --n 40
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_forgery import build_dataset  # noqa: E402
from fairforge.forgery import (  # noqa: E402
    ForgeryError,
    create_method,
    nearest_targets,
    target_choice,
)
from fairforge.forgery.base import NEAR_INVISIBLE, as_landmarks, change_energy  # noqa: E402
from fairforge.forgery.quality import face_geometry, gap_closed, skin_colour_shift  # noqa: E402
from fairforge.images import read_image  # noqa: E402
from fairforge.pairs import make_pairs  # noqa: E402
from fairforge.seeding import derive_seed  # noqa: E402

METHODS = ["faceswap", "simswap", "fastreen", "dualreen", "maskgan", "sbi", "xray"]
REENACT = ("fastreen", "dualreen")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40, help="faces")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", nargs="*", default=METHODS)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        faces = build_dataset(root, args.n, args.size, args.seed, "synthetic")
        pairs = make_pairs(faces, args.seed)
        loaded = {
            r.image_id: (read_image(root / r.crop_path), as_landmarks(r.landmarks))
            for r in faces.itertuples()
        }
    todo = [(r.image_id, r.target_image_id) for r in pairs.itertuples() if r.ok]
    # Face X-ray's target is the nearest face of another subject, as forge_shard picks it.
    nearest = nearest_targets(faces.set_index("image_id"), [s for s, _ in todo], args.seed, "xray")
    print(f"{len(todo)} pairs of {args.size}px synthetic crops")
    fakes: dict[str, dict] = {}
    for name in args.methods:
        method = create_method(name)
        made, reasons, energy = {}, Counter(), []
        for src, tgt in todo:
            if target_choice(name) == "nearest":
                tgt = nearest[src]
            rng = np.random.default_rng(derive_seed(args.seed, name, src))
            try:
                res = method(*loaded[src], *loaded[tgt], rng)
            except ForgeryError as err:
                reasons[str(err).split("(")[0].strip()] += 1
                continue
            kept = loaded[tgt if method.kept == "target" else src][0]
            energy.append(change_energy(res.image, kept, res.mask))
            made[src] = (res, kept)
        fakes[name] = made
        e = np.asarray(energy)
        print(
            f"{name:9s} made {len(made)}/{len(todo)}  near-invisible "
            f"{np.mean(e < NEAR_INVISIBLE) if len(e) else float('nan'):.1%}  "
            f"change {e.mean() if len(e) else float('nan'):5.1f} grey  failures {dict(reasons)}"
        )
    for name in [m for m in REENACT if m in fakes]:
        geo = {i: face_geometry(img) for i, (img, _) in loaded.items()}
        rows = []
        for src, (res, _) in fakes[name].items():
            tgt = dict(todo)[src]
            fake = face_geometry(res.image)
            if fake["found"] and geo[src]["found"] and geo[tgt]["found"]:
                rows.append(
                    [geo[src][k] for k in ("yaw", "pitch")]
                    + [fake["yaw"], fake["pitch"]]
                    + [geo[tgt][k] for k in ("yaw", "pitch")]
                )
        a = np.asarray(rows, np.float64)
        print(
            f"{name:9s} pose on {len(a)} redetected fakes: yaw gap closed "
            f"{gap_closed(a[:, 0], a[:, 2], a[:, 4]):.2f}, pitch gap closed "
            f"{gap_closed(a[:, 1], a[:, 3], a[:, 5]):.2f} (mean |gap| yaw "
            f"{np.abs(a[:, 4] - a[:, 0]).mean():.1f}, pitch {np.abs(a[:, 5] - a[:, 1]).mean():.1f} deg)"
        )
    if "maskgan" in fakes:
        shifts = [
            skin_colour_shift(res.image, kept, loaded[src][1])
            for src, (res, kept) in fakes["maskgan"].items()
        ]
        s = np.asarray(shifts)
        print(
            f"maskgan   skin colour (skin part less hair, mean LAB) vs the kept image: mean "
            f"{s.mean():.3f}, max {s.max():.3f} LAB units"
        )
    kept_of = {m: create_method(m).kept for m in fakes}
    print("method pair: mean |A-B| in union of masks / mean fake-vs-kept difference")
    for a, b in itertools.combinations(fakes, 2):
        if kept_of[a] != kept_of[b]:
            continue
        ratios = []
        for src in set(fakes[a]) & set(fakes[b]):
            (ra, kept), (rb, _) = fakes[a][src], fakes[b][src]
            union = (ra.mask > 0) | (rb.mask > 0)
            between = np.abs(ra.image.astype(int) - rb.image.astype(int)).mean(2)[union].mean()
            own = 0.5 * (
                change_energy(ra.image, kept, ra.mask) + change_energy(rb.image, kept, rb.mask)
            )
            ratios.append((between, own))
        r = np.asarray(ratios)
        print(
            f"  {a:9s} vs {b:9s}: {r[:, 0].mean():5.1f} / {r[:, 1].mean():5.1f} = {r[:, 0].mean() / r[:, 1].mean():.2f}"
        )


if __name__ == "__main__":
    main()
