"""Command line: the stages a user may want outside Snakemake.

fairforge fairness --predictions P.parquet [P2 ...] --out table.csv [--standing standing.csv]
fairforge metrics  --predictions P.parquet --out detection.csv
fairforge faces    --sources sources.parquet --root DIR --results results --out faces.parquet
fairforge forge    --method faceswap --faces faces.parquet --pairs pairs.parquet --results results --out fakes.parquet
fairforge predict  --checkpoint model.pt --samples samples.parquet --results results --out preds.parquet
fairforge convert-release simswap-arcface arcface_checkpoint.tar arcface.pth
fairforge convert-release hific hific_low.pt weights/hific/hific-low.pth
fairforge protocol --configfile configs/benchmark_paper.yaml [MORE.yaml ...] [--format json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from fairforge.columns import PREDICTION_FILE_COLUMNS
from fairforge.metrics.conventions import DEFAULT_CONVENTIONS, UR_DENOMINATORS, Conventions
from fairforge.metrics.detection import EER_METHODS, THRESHOLD_RULES

# The config's metrics keys that decide which detectors and forgeries a fairness table can
# judge (fairforge.tables.standing); unset on the command line, their schema defaults apply.
STANDING_BARS = ("min_val_auc", "max_constant_share", "min_forgery_success")


def _read_predictions(paths: list[str]) -> pd.DataFrame:
    from fairforge.manifest import ManifestError

    frames = []
    for path in paths:
        frame = pd.read_csv(path) if path.endswith(".csv") else pd.read_parquet(path)
        for column, default in (("detector", Path(path).stem), ("dataset", "data")):
            if column not in frame.columns:
                frame[column] = default
        missing = [c for c in PREDICTION_FILE_COLUMNS if c not in frame.columns]
        if missing:
            raise ManifestError(f"{path}: missing prediction column(s) {missing}")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _conventions(args) -> Conventions:
    """The metric conventions the command line gives (``--ur-denominator`` where the
    command has it)."""
    return Conventions(
        threshold=args.threshold,
        threshold_rule=args.threshold_rule,
        eer=args.eer,
        ur_denominator=getattr(args, "ur_denominator", DEFAULT_CONVENTIONS.ur_denominator),
    )


def _convention_arguments(p: argparse.ArgumentParser) -> None:
    """The options of :func:`_conventions` but ``--ur-denominator``, defaults from
    :class:`~fairforge.metrics.conventions.Conventions`."""
    d = DEFAULT_CONVENTIONS
    p.add_argument("--threshold", type=float, default=d.threshold)
    p.add_argument(
        "--threshold-rule",
        choices=list(THRESHOLD_RULES),
        default=d.threshold_rule,
        help="fake when score > or >= t",
    )
    p.add_argument("--eer", choices=list(EER_METHODS), default=d.eer)


def cmd_fairness(args) -> int:
    from fairforge.tables import fairness_outputs, read_failures, training_records

    preds = _read_predictions(args.predictions)
    if args.split and "split" in preds.columns:
        preds = preds.loc[preds["split"] == args.split]
    bars = {bar: getattr(args, bar) for bar in STANDING_BARS}
    out = fairness_outputs(
        preds,
        _conventions(args),
        bootstrap=args.bootstrap,
        training=training_records(args.training_logs),
        failures=read_failures(args.failures) if args.failures else None,
        **{bar: value for bar, value in bars.items() if value is not None},
    )
    out["table"].to_csv(args.out, index=False, float_format="%.6g")
    if args.standing:
        out["standing"].to_csv(args.standing, index=False, float_format="%.6g")
    if args.per_group:
        out["per_group"].to_csv(args.per_group, index=False, float_format="%.6g")
    if args.ci:
        if not args.bootstrap:
            raise ValueError("--ci needs --bootstrap N (N > 0)")
        out["ci"].to_csv(args.ci, index=False, float_format="%.6g")
    print(out["table"].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


def cmd_metrics(args) -> int:
    from fairforge.metrics.detection import detection_metrics

    preds = _read_predictions(args.predictions)
    if args.split and "split" in preds.columns:
        preds = preds.loc[preds["split"] == args.split]
    c = _conventions(args)
    rows = []
    for det, part in preds.groupby("detector", sort=True):
        rows.append(
            {
                "detector": det,
                **detection_metrics(
                    part["label"].to_numpy(),
                    part["score"].to_numpy(),
                    threshold=c.threshold,
                    threshold_rule=c.threshold_rule,
                    eer=c.eer,
                ),
            }
        )
    table = pd.DataFrame(rows)
    table.to_csv(args.out, index=False, float_format="%.6g")
    print(table.to_string(index=False))
    return 0


def cmd_faces(args) -> int:
    from fairforge.faces import process_faces
    from fairforge.manifest import read_manifest, write_manifest

    sources = read_manifest(args.sources, contract="sources")
    faces = process_faces(
        sources,
        args.root,
        args.results,
        args.crop_dir,
        crop_size=args.crop_size,
        detector=args.detector,
    )
    write_manifest(faces, args.out, contract="faces")
    print(f"{int(faces['ok'].sum())}/{len(faces)} faces aligned -> {args.out}")
    return 0


def cmd_forge(args) -> int:
    from fairforge.forgery import forge_shard
    from fairforge.manifest import read_manifest, write_manifest

    faces = read_manifest(args.faces)
    pairs = read_manifest(args.pairs, contract="pairs")
    fakes = forge_shard(
        args.method,
        args.backend,
        pairs,
        faces,
        args.results,
        f"{args.out_dir}/{args.method}",
        seed=args.seed,
        options={},
    )
    write_manifest(fakes, args.out, contract="forgery")
    print(f"{int(fakes['ok'].sum())}/{len(fakes)} fakes -> {args.out}")
    return 0


def cmd_predict(args) -> int:
    from fairforge.detector_kinds import predict
    from fairforge.manifest import read_manifest, write_manifest

    samples = read_manifest(args.samples, contract="samples")
    preds = predict(
        args.checkpoint,
        samples,
        args.results,
        args.detector or Path(args.checkpoint).parent.name,
        variant=args.variant,
        batch_size=args.batch_size,
        device=args.device,
        num_workers=args.num_workers,
        frames_test=args.frames_test,
        frames_test_pick=args.frames_test_pick,
    )
    write_manifest(preds, args.out, contract="predictions")
    print(f"{len(preds)} predictions -> {args.out}")
    return 0


def cmd_convert_release(args) -> int:
    from fairforge.forgery.releases import convert_release

    summary = convert_release(args.release, args.src, args.dst)
    print(f"{args.release}: {summary}")
    return 0


def cmd_protocol(args) -> int:
    from fairforge.protocol import layered_config, protocol_card, render

    card = protocol_card(layered_config(args.configfile))
    sys.stdout.write(render(card, args.format))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fairforge", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fairness", help="FairFD and textbook fairness metrics from predictions")
    p.add_argument("--predictions", nargs="+", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--per-group", help="also write the per-group table here")
    p.add_argument(
        "--ur-denominator",
        choices=list(UR_DENOMINATORS),
        default=DEFAULT_CONVENTIONS.ur_denominator,
    )
    _convention_arguments(p)
    p.add_argument("--split", default=None, help="keep only this split (e.g. test)")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        help="subject-level bootstrap resamples for confidence intervals",
    )
    p.add_argument("--ci", help="write the bootstrap intervals here (needs --bootstrap)")
    p.add_argument(
        "--standing",
        help="write whether each detector can be judged here (fairness_standing.csv)",
    )
    p.add_argument(
        "--training-logs",
        nargs="+",
        default=[],
        metavar="LOG",
        help="models/{detector}/training_log.csv files: each detector's validation AUC",
    )
    p.add_argument(
        "--failures",
        nargs="+",
        default=[],
        metavar="CSV",
        help="{dataset}/failures.csv files: forgery methods short of --min-forgery-success",
    )
    for bar in STANDING_BARS:
        p.add_argument(
            "--" + bar.replace("_", "-"), type=float, help=f"default: metrics.{bar}'s default"
        )
    p.set_defaults(func=cmd_fairness)

    p = sub.add_parser("metrics", help="detection metrics (AUC, ACC, AP, EER) per detector")
    p.add_argument("--predictions", nargs="+", required=True)
    p.add_argument("--out", required=True)
    _convention_arguments(p)
    p.add_argument("--split", default=None)
    p.set_defaults(func=cmd_metrics)

    p = sub.add_parser("faces", help="detect, landmark and align faces of a sources manifest")
    p.add_argument("--sources", required=True)
    p.add_argument("--root", required=True, help="folder the source paths are relative to")
    p.add_argument("--results", default="results")
    p.add_argument("--crop-dir", default="crops", help="crop folder, relative to --results")
    p.add_argument("--crop-size", type=int, default=256)
    p.add_argument("--detector", choices=["hog", "cnn"], default="hog")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_faces)

    p = sub.add_parser("forge", help="run one forgery method over a pairs manifest")
    p.add_argument("--method", required=True)
    p.add_argument("--backend", default="classical")
    p.add_argument("--faces", required=True, help="faces manifest with subject_id, group, split")
    p.add_argument("--pairs", required=True)
    p.add_argument("--results", default="results")
    p.add_argument("--out-dir", default="forgeries", help="relative to --results")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_forge)

    p = sub.add_parser("predict", help="score a samples manifest with a checkpoint")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--samples", required=True)
    p.add_argument("--results", default="results")
    p.add_argument("--detector", default=None)
    p.add_argument("--variant", default="clean")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument(
        "--frames-test",
        type=int,
        default=None,
        help="frames scored per video (default: every frame)",
    )
    p.add_argument(
        "--frames-test-pick",
        default=None,
        help="spaced (evenly over the video) or first (default: first for a video detector, "
        "else spaced)",
    )
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser(
        "convert-release",
        help="convert a released pickled model or checkpoint to the weights-only file that "
        "an official backend or an operation (hific) reads",
    )
    p.add_argument(
        "release",
        help="which release (fairforge.forgery.releases.CONVERSIONS): simswap-arcface, hific",
    )
    p.add_argument("src", help="the file as released")
    p.add_argument("dst", help="the state dict to write (weights_only)")
    p.set_defaults(func=cmd_convert_release)

    p = sub.add_parser(
        "protocol",
        help="the training protocol a config resolves to, per detector and dataset, with the "
        "source of every value",
    )
    p.add_argument(
        "--configfile",
        nargs="+",
        required=True,
        help="config files as Snakemake takes them: the first replaces config.yaml, the "
        "others merge over it in order; select: applies",
    )
    p.add_argument("--format", choices=["table", "csv", "json", "markdown"], default="table")
    p.set_defaults(func=cmd_protocol)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"fairforge {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
