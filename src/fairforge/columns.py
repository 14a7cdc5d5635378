"""The column contracts of every manifest the stages hand each other: one owner, no logic.

Two kinds of list live here. The ``*_COLUMNS`` lists are what a stage *writes*, in the order
it writes them: manifests are compared byte for byte between runs, so an order here is part
of the output and must not change without reason. :data:`CONTRACTS` holds what a reader may
*require* of each manifest (a subset: extra columns are always allowed), which is what
:func:`fairforge.manifest.check_columns` checks.

Some lists are lists and some tuples because callers concatenate them with lists (``+ extra``)
and tests compare them with ``list(frame.columns)``; keep each type as it is. The tables and
the stages that write them are described in docs/architecture.md, section "Stages and their
manifests".

This module imports nothing from fairforge, so every layer may import it.
"""

from __future__ import annotations

#: The method of a real (pristine) sample: an approach of the fairness metrics like any
#: manipulation (FairFD §3.2), written in the ``method`` column of sources, samples and
#: predictions.
REAL = "real"
#: The variant of an unperturbed sample, written in the ``variant`` column of predictions.
CLEAN = "clean"

# sources: one row per image of a dataset (fairforge.sources.build.build_sources).
SOURCE_COLUMNS = (
    "image_id",
    "dataset",
    "path",
    "subject_id",
    "group",
    "attributes",
    "split",
    "width",
    "height",
    "sha256",
    "ok",
    "reason",
)
# What a dataset adapter returns before groups, splits, sizes and hashes are added.
LISTING_COLUMNS = ("image_id", "path", "subject_id", "attributes", "ok", "reason")
# The frame a row was decoded from, carried by sources and samples of video datasets (absent
# for image datasets).
VIDEO_FRAME_COLUMNS = ("video_id", "frame_index")
# The file the frames were decoded from (relative to the dataset root, or absolute; a folder
# of frames for a dataset shipped as frames), carried by the listing and sources of video
# datasets, not by samples: video operations re-encode it (fairforge.video.frame_variants).
VIDEO_FILE_COLUMN = "video_path"
VIDEO_SOURCE_COLUMNS = (*VIDEO_FRAME_COLUMNS, VIDEO_FILE_COLUMN)
# Labelled datasets (FaceForensics++, Celeb-DF, a csv with label and method columns): what an
# adapter adds to its listing, and sources carry, when the dataset holds fakes of its own.
# label 0 real / 1 fake; method 'real' for real images, the manipulation (an approach of the
# fairness metrics) for fakes; source_subject and target_subject: the identities a fake was
# made from, where the dataset names them ('' otherwise). Absent when every image is real.
LABEL_COLUMNS = ("label", "method", "source_subject", "target_subject")
# Where a fake a dataset ships came from (SourceAdapter.fake_references): the file of the
# manipulation mask the dataset released and the pristine video or image the fake was made
# from (a video file, a folder of frames or an image; '' where none), the fake's frame index
# counting in both.
FAKE_REFERENCE_COLUMNS = ("image_id", "mask_file", "source_file")
# What the video adapter returns: a listing whose rows are decoded frames.
VIDEO_LISTING_COLUMNS = (*LISTING_COLUMNS, *VIDEO_SOURCE_COLUMNS)
# The synthetic clip table: one row per rendered video (fairforge.video.clips).
CLIP_COLUMNS = ["video_id", "subject_id", "path", "tone", "gender", "n_frames", "fps"]

# faces: one row per source image, aligned crop and landmarks (fairforge.faces.stage).
FACES_COLUMNS = (
    "image_id",
    "ok",
    "reason",
    "bbox",
    "det_score",
    "n_faces",
    "landmarks",
    "crop_path",
    "detector",
    # Share of the aligned crop that lies outside the photo (filled by faces.border); last,
    # so that readers of older manifests keep working.
    "outside_fraction",
)

# faces/transforms: the matrix (image pixels to crop pixels, 2x3 row by row) each ok face of
# a faces shard was aligned by, kept beside the manifest for the stages that warp something
# else onto a crop (fairforge.faces.face_transforms).
FACE_TRANSFORM_COLUMNS = ("image_id", "matrix")

# pairs: each source image and the image of its appointed target subject (fairforge.pairs).
PAIR_COLUMNS = [
    "image_id",
    "target_image_id",
    "source_subject",
    "target_subject",
    "group",
    "split",
    "ok",
    "reason",
]

# forgeries/{method}: one row per pair a method tried; method-specific columns follow, sorted.
FORGERY_COLUMNS = [
    "sample_id",
    "method",
    "backend",
    "image_id",
    "target_image_id",
    "path",
    "mask_path",
    "group",
    "subject_id",
    "split",
    "ok",
    "reason",
    "params",
]

# samples: every real crop and every successful fake with its label and origin (ORIGINS);
# VIDEO_FRAME_COLUMNS
# follow for video datasets.
SAMPLE_COLUMNS = [
    "sample_id",
    "dataset",
    "split",
    "label",
    "method",
    "group",
    "subject_id",
    "path",
    "mask_path",
    "image_id",
    "backend",
    "origin",
]
# imported_masks: the manipulation mask of each fake a dataset ships, on its crop, and Face
# X-ray's map of it (fairforge.video.fake_masks); mask_source says how it was made
# ('released', 'difference'); a fake with neither reference is a row with ok=False.
IMPORTED_MASK_COLUMNS = [
    "sample_id",
    "image_id",
    "method",
    "mask_source",
    "mask_path",
    "xray_path",
    "ok",
    "reason",
]
# What the samples of a dataset that ships fakes add: Face X-ray's map of each imported fake's
# mask (its mask_path is the mask; fairforge.samples.build_samples).
XRAY_COLUMN = "xray_path"
# Where a sample comes from: the dataset (its real images and the fakes it ships) or
# fairforge's forgery stage.
ORIGINS = ("imported", "generated")

# predictions/{detector}/{dataset}/{variant}: one score (probability of fake) per sample.
PREDICTION_COLUMNS = [
    "sample_id",
    "dataset",
    "split",
    "label",
    "method",
    "group",
    "subject_id",
    "detector",
    "variant",
    "score",
]

# features: a detector's penultimate features on a seeded sample of the evaluated split
# (fairforge.features; FairFD A.7): who each sample is, and its feature vector (float32).
FEATURE_COLUMNS = [c for c in PREDICTION_COLUMNS if c not in ("variant", "score")] + ["feature"]

# What the CLI's fairness and metrics commands need of a user's predictions file, after
# detector and dataset have defaulted to the file name and "data".
PREDICTION_FILE_COLUMNS = [
    "sample_id",
    "label",
    "method",
    "group",
    "subject_id",
    "detector",
    "score",
]
# What the FairFD and group fairness metrics read of a predictions frame (the subject-level
# bootstrap also needs subject_id): not the predictions contract, only its scored core.
FAIRNESS_INPUT_COLUMNS = ("label", "method", "group", "score")

# efficiency.csv (fairforge.efficiency.efficiency_rows): what a detector's row measures at
# each batch size b, each column written with the suffix _bs{b}, in this order: latency per
# image (the median of the round medians, the 0.1 quantile of every timed batch that the
# same-architecture check compares, the interquartile range of every timed batch, the
# rounds' spread), images per second and peak memory (docs/metrics.md, section 6).
EFFICIENCY_BATCH_COLUMNS = (
    "latency_ms",
    "latency_p10_ms",
    "latency_iqr_ms",
    "latency_spread",
    "images_per_s",
    "peak_mem_mb",
)

# The columns a reader may rely on in each manifest; extra columns are allowed.
CONTRACTS: dict[str, tuple[str, ...]] = {
    "sources": (
        "image_id",
        "dataset",
        "path",
        "subject_id",
        "group",
        "split",
        "width",
        "height",
        "sha256",
        "ok",
        "reason",
    ),
    "faces": (
        "image_id",
        "ok",
        "reason",
        "bbox",
        "det_score",
        "landmarks",
        "crop_path",
        "detector",
    ),
    "pairs": ("image_id", "target_image_id", "source_subject", "target_subject", "group"),
    "face_transforms": FACE_TRANSFORM_COLUMNS,
    "forgery": tuple(c for c in FORGERY_COLUMNS if c != "params"),
    "imported_masks": tuple(IMPORTED_MASK_COLUMNS),
    "samples": ("sample_id", "dataset", "split", "label", "method", "group", "subject_id", "path"),
    "predictions": tuple(PREDICTION_COLUMNS),
    "features": tuple(FEATURE_COLUMNS),
}
