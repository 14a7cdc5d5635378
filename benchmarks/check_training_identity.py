"""Do the three trainers still train exactly as a reference commit did?

Tiny runs of each trainer, on data made here from fixed seeds, written to a folder:

* detectors (through :func:`fairforge.detector_kinds.train_detector`, as the training rule
  calls it): meso4 for one epoch on six random 48 px images (what tests/unit/test_training.py
  trains, with the bf16 check), meso4 for two epochs on synthetic face-like crops by the
  default recipe, and meso4 for three epochs by SGD wrapped in SAM with a warm-up, linear
  decay, SDAug, class-balanced batches and early stopping; and the demo's two detectors
  with config.yaml's resolved settings (its recipe, SDAug after 5 clean epochs) for 7 of its
  20 epochs on those crops; each writes its checkpoint and training_log.csv;
* encoders: MobileFaceNet with the NPCFace head by Adam for six steps (tests/unit/test_encoders.py's
  run), and with the ArcFace head by SGD whose lr decays after the first and the second
  epoch (0.11 x 0.3 x 0.3: chained, as torch's MultiStepLR does, differs in its last bit from
  0.11 x 0.3²), with held-out images and early stopping; each writes its checkpoint and loss table;
* the high-to-low GAN (generator, restorer and both critics) for three steps; it writes its
  checkpoint and sample sheet.

``compare`` then checks two such folders: every tensor of every checkpoint equal (and every
other payload value), the logs equal but for the ``seconds`` column, the sample sheets and
loss tables byte-equal; it also says which checkpoint files are byte-equal as files.
``--against REV`` does it all in one go: the sources of ``REV`` (``git archive``) and the
working tree's each train in their own process, then the two are compared.

    python benchmarks/check_training_identity.py --against main
    python benchmarks/check_training_identity.py run /tmp/ref     # with PYTHONPATH=<old>/src
    python benchmarks/check_training_identity.py compare /tmp/ref /tmp/new
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMING_COLUMNS = ("seconds",)


# --------------------------------------------------------------------------- the runs


def _trainers():
    """TrainConfig, train_encoder and train_high_to_low wherever the sources at hand keep
    them: the reference side may run a commit from before the training package
    (fairforge.training, encoders.trainable and perturb.learned_degradation held them)."""
    try:
        from fairforge.training.degradation import train_high_to_low
        from fairforge.training.detector import TrainConfig
        from fairforge.training.encoder import train_encoder
    except ImportError:
        from fairforge.encoders.trainable import train_encoder
        from fairforge.perturb.learned_degradation import train_high_to_low
        from fairforge.training import TrainConfig
    return TrainConfig, train_encoder, train_high_to_low


def _noise_images(root: Path, n: int, size: int, seed: int):
    """``n`` random RGB images of ``size``² under ``root``; their relative paths."""
    import numpy as np

    from fairforge.images import write_image

    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        path = f"img{seed}/{i:03d}.png"
        write_image(root / path, rng.integers(0, 256, (size, size, 3), dtype=np.uint8))
        paths.append(path)
    return paths


def _faces(root: Path, n: int, size: int, seed: int):
    """``n`` face-like crops (a skin-toned ellipse with eyes on a textured background): the
    fakes' eyes are shifted and their skin blurred, so a detector has something to learn."""
    import cv2
    import numpy as np

    from fairforge.images import write_image

    rng = np.random.default_rng(seed)
    paths, labels = [], []
    for i in range(n):
        fake = i % 2
        img = rng.normal(110, 30, (size, size, 3)).clip(0, 255).astype(np.uint8)
        c = size // 2
        tone = tuple(int(v) for v in rng.integers(90, 230, 3))
        cv2.ellipse(img, (c, c), (size // 3, int(size / 2.4)), 0, 0, 360, tone, -1)
        dy = int(rng.integers(2, 5)) if fake else 0
        for x in (c - size // 7, c + size // 7):
            cv2.circle(img, (x, c - size // 8 + dy), max(1, size // 20), (30, 30, 30), -1)
        if fake:
            img = cv2.GaussianBlur(img, (5, 5), 1.2)
        path = f"faces{seed}/{i:03d}.png"
        write_image(root / path, img)
        paths.append(path)
        labels.append(fake)
    return paths, labels


def _samples(paths, labels, val_every: int = 3):
    import pandas as pd

    rows = []
    for i, (path, label) in enumerate(zip(paths, labels)):
        rows.append(
            {
                "sample_id": f"s{i:03d}",
                "path": path,
                "label": int(label),
                "split": "val" if i % val_every == 0 else "train",
                "method": "faceswap" if label else "real",
                "group": ["A", "B"][(i // 2) % 2],
            }
        )
    return pd.DataFrame(rows)


def run_detectors(out: Path, data: Path) -> None:
    import pandas as pd

    from fairforge.detector_kinds import train_detector

    TrainConfig = _trainers()[0]
    # tests/unit/test_training.py's run: six images, each in train and in val
    paths = _noise_images(data, 6, 48, seed=0)
    rows = [
        {"sample_id": f"{split}s{i}", "path": p, "label": i % 2, "split": split, "group": "g"}
        for split in ("train", "val")
        for i, p in enumerate(paths)
    ]
    tiny = pd.DataFrame(rows).assign(method=lambda d: d["label"].map({0: "real", 1: "faceswap"}))
    runs = {
        "detector_tiny": (
            tiny,
            dict(arch="meso4", input_size=32, epochs=1, batch_size=4, device="cpu"),
        ),
    }
    faces = _samples(*_faces(data, 36, 64, seed=1))
    runs["detector_meso4"] = (
        faces,
        dict(arch="meso4", input_size=64, epochs=2, batch_size=8, device="cpu", seed=3),
    )
    runs["detector_sam"] = (
        faces,
        dict(
            arch="meso4",
            input_size=48,
            epochs=3,
            batch_size=8,
            device="cpu",
            seed=4,
            optimizer="sgd",
            sam=True,
            lr=0.05,
            momentum=0.8,
            weight_decay=1e-4,
            schedule="linear_decay",
            decay_start=0.5,
            warmup_epochs=1,
            augment="sdaug",
            augment_prob=0.7,
            balanced_batches=True,
            patience=1,
            precision="fp32",
        ),
    )
    # the demo's two detectors as config.yaml resolves them, for 7 epochs (SDAug waits 5)
    from fairforge.config import load_config
    from fairforge.workflow import detector_settings

    demo = load_config(REPO / "config.yaml")
    for name in ("meso4", "meso4_sdaug"):
        settings = {**detector_settings(demo, name), "epochs": 7, "device": "cpu"}
        runs[f"demo_{name}"] = (faces, settings)
    for name, (samples, settings) in runs.items():
        folder = out / name
        train_detector(
            samples, data, TrainConfig(**settings), folder / "model.pt", folder / "training_log.csv"
        )


def run_encoders(out: Path) -> None:
    import cv2
    import numpy as np

    from fairforge.seeding import rng_for

    train_encoder = _trainers()[1]
    images, labels = [], []
    for c in range(3):  # tests/unit/test_encoders.py's identities
        rng = rng_for("toy-ids", c)
        base = cv2.resize(
            rng.integers(0, 256, (4, 4, 3), dtype=np.uint8),
            (32, 32),
            interpolation=cv2.INTER_NEAREST,
        )
        for _ in range(10):
            noisy = base.astype(np.int16) + rng.integers(-25, 26, base.shape)
            images.append(np.clip(noisy, 0, 255).astype(np.uint8))
            labels.append(f"id{c}")
    runs = {
        "encoder_adam": dict(
            epochs=10, head="npcface", input_size=32, embedding_dim=64, batch_size=12,
            max_steps=6, seed=1, optimizer="adam", lr=1e-3, weight_decay=5e-4, val_fraction=0.0,
        ),
        "encoder_sgd": dict(
            epochs=7, head="arcface", input_size=32, embedding_dim=32, batch_size=8, seed=2,
            optimizer="sgd", lr=0.11, momentum=0.85, weight_decay=1e-5, milestones=(1, 2),
            lr_decay=0.3, patience=3, val_fraction=0.2,
        ),
    }  # fmt: skip
    for name, kwargs in runs.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        trained = train_encoder(
            images, labels, "mobilefacenet", out_path=folder / "model.pt", device="cpu", **kwargs
        )
        trained.loss_table().to_csv(folder / "losses.csv", index=False)


def run_degradation(out: Path, data: Path) -> None:
    train_high_to_low = _trainers()[2]
    high = _noise_images(data, 5, 40, seed=7)
    low = _noise_images(data, 5, 12, seed=8)
    folder = out / "high_to_low"
    train_high_to_low(
        data / Path(high[0]).parent,
        data / Path(low[0]).parent,
        folder / "generator.pt",
        steps=3,
        seed=5,
        batch_size=2,
        device="cpu",
        sample_sheet=folder / "samples.png",
    )


def run(out: Path) -> None:
    """Train every run into ``out``; the data are made in a temporary folder, entered, so
    that the paths a checkpoint records are the same on both sides."""
    import torch

    torch.set_num_threads(1)
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            run_detectors(out, Path("data"))
            run_encoders(out)
            run_degradation(out, Path("data"))
        finally:
            os.chdir(here)
    print(f"trained into {out}")


# --------------------------------------------------------------------------- comparing


def _differences(a, b, where: str) -> list[str]:
    import torch

    if torch.is_tensor(a) or torch.is_tensor(b):
        if not (torch.is_tensor(a) and torch.is_tensor(b)):
            return [f"{where}: tensor against {type(b).__name__}"]
        if a.dtype != b.dtype or a.shape != b.shape:
            return [f"{where}: {a.dtype}{tuple(a.shape)} against {b.dtype}{tuple(b.shape)}"]
        return [] if torch.equal(a, b) else [f"{where}: tensors differ"]
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{where}: keys {list(a)} against {list(b)}"]
        return [d for k in a for d in _differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return [f"{where}: {type(a).__name__}[{len(a)}] against {type(b).__name__}[{len(b)}]"]
        return [
            d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")
        ]
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return []
    if type(a) is not type(b) or a != b:
        return [f"{where}: {a!r} against {b!r}"]
    return []


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compare(ref: Path, new: Path) -> bool:
    import pandas as pd
    import torch

    files = sorted(p.relative_to(ref) for p in ref.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(new) for p in new.rglob("*") if p.is_file())
    same = files == theirs
    if not same:
        print(f"different files: {sorted(set(files) ^ set(theirs))}")
    for rel in [f for f in files if f in theirs]:
        a, b = ref / rel, new / rel
        if rel.suffix == ".pt":
            diffs = _differences(
                torch.load(a, map_location="cpu", weights_only=True),
                torch.load(b, map_location="cpu", weights_only=True),
                rel.stem,
            )
            n = sum(1 for _ in _tensors(torch.load(a, map_location="cpu", weights_only=True)))
            note = "file byte-equal" if _sha(a) == _sha(b) else "file bytes differ"
            verdict = f"{n} tensors and every other value equal ({note})"
        elif rel.name == "training_log.csv":
            one, two = pd.read_csv(a), pd.read_csv(b)
            timing = [c for c in TIMING_COLUMNS if c in one.columns]
            try:
                pd.testing.assert_frame_equal(one.drop(columns=timing), two.drop(columns=timing))
                diffs = [] if list(one.columns) == list(two.columns) else ["columns differ"]
            except AssertionError as err:
                diffs = [str(err).splitlines()[0]]
            verdict = f"{len(one)} epochs equal but for {', '.join(timing) or 'nothing'}"
        else:
            diffs = [] if _sha(a) == _sha(b) else ["bytes differ"]
            verdict = "byte-equal"
        same &= not diffs
        print(f"{'ok  ' if not diffs else 'DIFF'} {rel}: " + ("; ".join(diffs[:5]) or verdict))
    print("identical" if same else "NOT identical")
    return same


def _tensors(obj):
    import torch

    if torch.is_tensor(obj):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


def extract(rev: str, dest: Path, *paths: str) -> None:
    """The files of ``rev`` (those under ``paths``, or all) written below ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, *paths], check=True, capture_output=True
    ).stdout
    with tempfile.NamedTemporaryFile(suffix=".tar") as fh:
        fh.write(archive)
        fh.flush()
        with tarfile.open(fh.name) as tar:
            tar.extractall(dest, filter="data")


def against(rev: str, keep: Path | None) -> bool:
    """Train with the sources of ``rev`` and with the working tree's, then compare."""
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="training-identity-"))
    base = work / "base"
    extract(rev, base, "src")
    for name, src in (("ref", base / "src"), ("new", REPO / "src")):
        env = {**os.environ, "PYTHONPATH": str(src)}
        subprocess.run([sys.executable, __file__, "run", str(work / name)], check=True, env=env)
    print(f"reference: {rev} ({work / 'ref'}); new: working tree ({work / 'new'})")
    return compare(work / "ref", work / "new")


def command_line(doc: str, run_options=None) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    """The arguments of an identity check: ``--against REV [--keep DIR]``, ``run OUT`` (with
    ``run_options(parser)`` adding its own) or ``compare REF NEW``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", help="run REV's sources and ours")
    parser.add_argument("--keep", type=Path, help="with --against: the folder to run into")
    sub = parser.add_subparsers(dest="command")
    one = sub.add_parser("run")
    one.add_argument("out", type=Path)
    if run_options is not None:
        run_options(one)
    cmp = sub.add_parser("compare")
    cmp.add_argument("ref", type=Path)
    cmp.add_argument("new", type=Path)
    return parser.parse_args(), parser


def finish(args, parser, compare, against) -> None:
    """Compare, or run both sides and compare, as ``args`` say; exits 1 when they differ."""
    if args.command == "compare":
        sys.exit(0 if compare(args.ref, args.new) else 1)
    elif args.against:
        sys.exit(0 if against(args.against, args.keep) else 1)
    else:
        parser.error("give --against REV, or run / compare")


def main() -> None:
    args, parser = command_line(__doc__)
    if args.command == "run":
        run(args.out)
    else:
        finish(args, parser, compare, against)


if __name__ == "__main__":
    main()
