"""The forgery quality card on a cut of the demo's synthetic world, without the workflow.

Renders ``--subjects`` subjects per skin tone (the demo's groups; genders alternate) with
``--views`` images each, aligns them with the faces stage, pairs them within groups, forges
every method with :func:`fairforge.forgery.forge_shard` and summarises the per-fake measures
(:func:`fairforge.tables.forgery_quality.measure_method`, dlib ResNet identities on
``--identity`` fakes per method and group) and the method separation
(:func:`fairforge.forgery.quality.method_separation`) into the card
(:func:`fairforge.tables.forgery_quality.quality_card`). Prints per method and group the
numbers the README quotes.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_forgery_card.py --subjects 6 --views 2
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from fairforge.faces.stage import detect_and_align
from fairforge.forgery import forge_shard
from fairforge.forgery.quality import method_separation
from fairforge.images import write_image
from fairforge.pairs import make_pairs
from fairforge.sources.synthetic import render_face, sample_subject, sample_view
from fairforge.tables.forgery_quality import measure_method, quality_card

METHODS = ["faceswap", "simswap", "fastreen", "dualreen", "maskgan", "sbi", "xray"]
TONES = ["tone1", "tone2", "tone3", "tone4"]
SHOWN = {
    "change_energy": "change",
    "near_invisible": "invis",
    "pose_distance": "pose",
    "source_pose_distance": None,
    "id_sim_source": "id_src",
    "id_sim_target": "id_tgt",
    "boundary_gradient": "seam",
    "redetected": "found",
    "skin_colour_shift": "skin",
    "yaw_gap_closed": "yaw_gap",
    "pitch_gap_closed": "pitch_gap",
    "separation": "sep",
    "separation_from": "sep_from",
}


def faces_table(root: Path, subjects: int, views: int, size: int, seed: int) -> pd.DataFrame:
    rows = []
    for tone in TONES:
        for k in range(subjects):
            sid = f"{tone}_s{k}"
            subject = sample_subject(seed, sid, tone, ("female", "male")[k % 2])
            for v in range(views):
                image_id = f"{sid}_{v}"
                face = detect_and_align(
                    render_face(subject, sample_view(seed, image_id), 400), crop_size=size
                )
                rel = f"faces/{image_id}.png"
                if face.ok:
                    write_image(root / rel, face.crop)
                rows.append(
                    {
                        "image_id": image_id,
                        "ok": bool(face.ok),
                        "reason": face.reason if not face.ok else "",
                        "subject_id": sid,
                        "group": tone,
                        "split": "test",
                        "crop_path": rel if face.ok else "",
                        "landmarks": face.landmarks.reshape(-1).tolist() if face.ok else None,
                    }
                )
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--subjects", type=int, default=6, help="per tone")
    ap.add_argument("--views", type=int, default=2)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--identity", type=int, default=10, help="identity fakes per group")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", nargs="*", default=METHODS)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        faces = faces_table(root, args.subjects, args.views, args.size, args.seed)
        pairs = make_pairs(faces, args.seed)
        per_fake, manifests = [], {}
        for m in args.methods:
            fakes = forge_shard(m, "classical", pairs, faces, root, f"forgeries/{m}", args.seed)
            manifests[m] = fakes
            per_fake.append(
                measure_method(
                    fakes, faces, root, "demo", args.seed, identity_per_group=args.identity
                )
            )
        separation = method_separation(manifests, faces, root, "demo")
    card = quality_card(
        pd.concat(per_fake, ignore_index=True), n_boot=200, seed=args.seed, separation=separation
    )
    print(f"{int(faces.ok.sum())}/{len(faces)} faces, {args.subjects} subjects per tone")
    cols = {k: v for k, v in SHOWN.items() if v and k in card.columns}
    view = card[["method", "group", "n_fakes", *cols, "differs"]].rename(columns=cols)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(view.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
