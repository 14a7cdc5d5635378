"""ForgeryNet (``forgerynet``) in its released layout: an image track and a video track, each
with a label list per part.

::

    {root}/Training/image_list.txt    <image_name> <binary_cls_label> <triple_cls_label> <16cls_label>
    {root}/Training/image/<image_name>
    {root}/Training/video_list.txt    <segments> <video_name> [<start> <frames> <fake|real>]... <binary> <triple> <16cls>
    {root}/Training/video/<video_name>
    {root}/Validation/...             the same (the Test part's labels are not public)

A label line's 16-class label names the manipulation: 0 real, 1-15 the approaches of
:data:`FORGERYNET_METHODS` (identity-replaced 1-6 and 9, identity-remained the others), each a
method; a line whose binary label disagrees with it stays as a row with ``ok=False`` and the
reason. An image is listed as a one-frame video, a video is sampled into ``frames_per_video``
frames that carry the video's label: a fake video whose forged segments cover only part of it
gives frames of its real part the fake label too (the Benchmark scores ForgeryNet's frames by
their video's label). ``tracks`` picks ``image``, ``video`` or both (default), ``parts`` the
part folders (default: ``Training`` and ``Validation``, those present), ``image_list`` and
``video_list`` the label files' names in each part.

ForgeryNet names no identities: every image and video is its own subject. ``split:
official`` is the release's parts, Training train and Validation test (the Benchmark's
ForgeryNet split is 48:3:7, Table 1: ``split.val_from_train`` carves a val part out of
Training). ``attributes``: a csv with ``id`` (an item's id as listed) and attribute
columns; without it every item is in group ``all``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairforge.sources.base import (
    ADAPTERS,
    REAL_METHOD,
    SourceError,
    count_csv_rows,
    image_id_from_path,
)
from fairforge.sources.split import most_frames
from fairforge.sources.videos import (
    DEFAULT_FRAMES_PER_VIDEO,
    LabelledVideoDataset,
    attributes_for,
    read_attributes,
    video_row,
)

# The 16-class labels' approaches (ForgeryNet, CVPR 2021), named without spaces.
FORGERYNET_METHODS = {
    1: "FaceShifter",
    2: "FS-GAN",
    3: "DeepFakes",
    4: "BlendFace",
    5: "MMReplacement",
    6: "DeepFakes-StarGAN-Stack",
    7: "Talking-Head-Video",
    8: "ATVG-Net",
    9: "StarGAN-BlendFace-Stack",
    10: "First-Order-Motion",
    11: "StyleGAN2",
    12: "MaskGAN",
    13: "StarGAN2",
    14: "SC-FEGAN",
    15: "DiscoFaceGAN",
}
FORGERYNET_PARTS = {"Training": "train", "Validation": "test"}
FORGERYNET_TRACKS = ("image", "video")
LABEL_LISTS = {"image": "image_list.txt", "video": "video_list.txt"}


def parse_label_line(line: str, track: str) -> tuple[str, int, int, str]:
    """(item name, binary label, 16-class label, reason) of one label-list line (an image
    line, or a video line with its segments before the labels); a line that does not parse
    gives labels -1 and the reason."""
    tokens = line.split()
    name = tokens[1 if track == "video" else 0] if len(tokens) > 1 else ""
    try:
        labels = tokens[2 + 3 * int(tokens[0]) :] if track == "video" else tokens[1:]
        binary, _, cls = (int(x) for x in labels)
    except ValueError:
        return name, -1, -1, f"malformed ForgeryNet {track} list line {line.strip()!r}"
    if cls != 0 and cls not in FORGERYNET_METHODS:
        return name, binary, cls, f"unknown ForgeryNet 16-class label {cls}"
    if binary != int(cls != 0):
        return name, binary, cls, f"binary label {binary} disagrees with 16-class label {cls}"
    return name, binary, cls, ""


@ADAPTERS.register("forgerynet")
class ForgeryNet(LabelledVideoDataset):
    """ForgeryNet in its released layout (module docstring); options ``tracks``, ``parts``,
    ``image_list``, ``video_list``, ``attributes``, ``frames_per_video``."""

    def label_lists(self, dataset: Path, parts, tracks, image_list, video_list):
        """(part, track, label file, item folder) of every list to read."""
        unknown = sorted(set(tracks) - set(FORGERYNET_TRACKS))
        if unknown or not tracks:
            raise SourceError(
                f"ForgeryNet tracks {list(tracks)}: expected some of {list(FORGERYNET_TRACKS)}"
            )
        names = {
            "image": image_list or LABEL_LISTS["image"],
            "video": video_list or LABEL_LISTS["video"],
        }
        chosen = list(parts) if parts else [p for p in FORGERYNET_PARTS if (dataset / p).is_dir()]
        lists = []
        for part in chosen:
            for track in tracks:
                path = dataset / part / names[track]
                if not path.is_file():
                    raise SourceError(f"ForgeryNet {track} label list not found: {path}")
                folder = dataset / part / track
                lists.append((part, track, path, folder if folder.is_dir() else dataset / part))
        if not lists:
            raise SourceError(
                f"no ForgeryNet part folders ({', '.join(FORGERYNET_PARTS)}) under {dataset}"
            )
        return lists

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        options = self.listing_options(name, dataset_cfg)
        n = most_frames(options.get("frames_per_video"), DEFAULT_FRAMES_PER_VIDEO)
        lists = self.label_lists(
            Path(options["folder"]),
            options.get("parts"),
            options.get("tracks", FORGERYNET_TRACKS),
            options.get("image_list"),
            options.get("video_list"),
        )
        # Label lists have no header: every line is an item.
        return sum(
            (count_csv_rows(path) + 1) * (1 if track == "image" else n)
            for _, track, path, _ in lists
        )

    def videos(
        self,
        dataset: Path,
        *,
        tracks: Sequence[str] = FORGERYNET_TRACKS,
        parts: Sequence[str] | None = None,
        image_list: str | None = None,
        video_list: str | None = None,
        attributes: str | None = None,
    ) -> pd.DataFrame:
        notes = read_attributes(attributes, dataset)
        rows = []
        for part, track, path, folder in self.label_lists(
            dataset, parts, tracks, image_list, video_list
        ):
            for line in path.read_text().splitlines():
                if not line.strip():
                    continue
                name, binary, cls, why = parse_label_line(line, track)
                item = folder / name
                vid = image_id_from_path(Path(part, name).with_suffix(""))
                if not why and not item.is_file():
                    why = f"{track} not found: {item}"
                fake = binary == 1
                rows.append(
                    video_row(
                        vid,
                        item,
                        vid,
                        attributes_for(notes, vid),
                        int(fake),
                        FORGERYNET_METHODS.get(cls, "unknown") if fake else REAL_METHOD,
                        "",
                        vid if fake else "",
                        why,
                    )
                )
        return pd.DataFrame(rows)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        return list(FORGERYNET_METHODS.values())

    def official_split(self, listing: pd.DataFrame, root: Path, **options) -> pd.Series:
        part = listing["video_id"].astype(str).str.split("__").str[0]
        return part.map(FORGERYNET_PARTS).fillna("").astype(object)
