"""Synthetic talking-face clips: the synthetic face world, animated and encoded as H.264.

A clip is one subject of :mod:`fairforge.sources.synthetic` seen from one base view
(``sample_view(seed, video_id)``: pose, light, background, camera) whose expression and
pose move over time: the mouth opens and closes at a syllable rate inside phrase envelopes,
smile and brows drift, the eyes blink, the head turns and tilts a few degrees and the sensor
noise changes every frame. Every curve is a sum of sinusoids (and blink pulses) whose
frequencies and phases come from ``rng_for(seed, "clip", video_id)``, so a clip is a pure
function of (seed, subject, video_id, fps, length, size).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.columns import CLIP_COLUMNS
from fairforge.seeding import rng_for
from fairforge.sources.synthetic import (
    DEFAULT_GENDERS,
    DEFAULT_TONES,
    SubjectParams,
    ViewParams,
    render_face,
    sample_subject,
    sample_view,
    synthetic_subject_table,
)
from fairforge.video.ffmpeg import DEFAULT_FPS, write_video


def video_id_for(subject_id: str, index: int) -> str:
    return f"{subject_id}_v{index:02d}"


def _waves(
    rng: np.random.Generator, t: np.ndarray, freqs: Sequence[float], amps: Sequence[float]
) -> np.ndarray:
    """Sum of sinusoids, each frequency jittered by +-20 % and with a random phase."""
    out = np.zeros_like(t)
    for f, a in zip(freqs, amps):
        out += a * np.sin(2 * np.pi * f * rng.uniform(0.8, 1.2) * t + rng.uniform(0, 2 * np.pi))
    return out


def talking_motion(rng: np.random.Generator, n_frames: int, fps: float) -> dict[str, np.ndarray]:
    """Per-frame expression and pose offsets of a talking head (one array per field)."""
    t = np.arange(n_frames, dtype=np.float64) / fps
    # Phrases (~0.4 Hz) gate syllables (~4 Hz): the mouth rests between phrases.
    phrase = np.clip(0.7 + _waves(rng, t, [0.35, 0.9], [0.6, 0.25]), 0.0, 1.0)
    syllable = 0.5 + 0.5 * np.sin(2 * np.pi * rng.uniform(3.2, 4.8) * t + rng.uniform(0, 2 * np.pi))
    mouth = phrase * (0.75 * syllable + 0.25 * np.clip(_waves(rng, t, [6.5], [1.0]), 0, 1))
    mouth_open = np.clip(rng.uniform(0.5, 0.9) * mouth, 0.0, 1.0)
    smile = _waves(rng, t, [0.15, 0.4], [0.18, 0.08])
    brow = np.clip(_waves(rng, t, [0.3, 0.7], [0.35, 0.15]), 0.0, None) ** 1.5
    # Blinks: ~every 2-4 s, 150 ms each.
    blink = np.zeros_like(t)
    when = rng.uniform(0.2, 1.5)
    while when < t[-1] + 0.2:
        blink = np.maximum(blink, np.exp(-(((t - when) / 0.05) ** 2)))
        when += rng.uniform(2.0, 4.0)
    nod = 1.2 * phrase * np.sin(2 * np.pi * rng.uniform(1.5, 2.5) * t + rng.uniform(0, 6.3))
    return {
        "mouth_open": mouth_open,
        "smile": smile,
        "brow_raise": brow,
        "blink": blink,
        "yaw": _waves(rng, t, [0.2, 0.55], [4.0, 1.5]),
        "pitch": _waves(rng, t, [0.25], [1.5]) + nod,
        "roll": _waves(rng, t, [0.18, 0.45], [2.0, 0.8]),
        "shift_x": _waves(rng, t, [0.12], [2.0]),
        "shift_y": _waves(rng, t, [0.17], [1.2]),
    }


def clip_views(
    base: ViewParams, motion: dict[str, np.ndarray], rng: np.random.Generator
) -> list[ViewParams]:
    """The base view animated frame by frame (expression fields stay in [0, 1])."""
    n = len(motion["mouth_open"])
    noise = rng.integers(0, 128, size=(n, 2))
    views = []
    for i in range(n):
        views.append(
            dataclasses.replace(
                base,
                image_id=f"{base.image_id}_f{i:04d}",
                mouth_open=float(motion["mouth_open"][i]),
                smile=float(np.clip(base.smile * 0.6 + motion["smile"][i] + 0.1, 0, 1)),
                brow_raise=float(np.clip(base.brow_raise * 0.5 + motion["brow_raise"][i], 0, 1)),
                eye_closure=float(np.clip(min(base.eye_closure, 0.3) + motion["blink"][i], 0, 1)),
                yaw=float(base.yaw + motion["yaw"][i]),
                pitch=float(base.pitch + motion["pitch"][i]),
                roll=float(base.roll + motion["roll"][i]),
                shift_x=float(base.shift_x + motion["shift_x"][i]),
                shift_y=float(base.shift_y + motion["shift_y"][i]),
                noise_offset=(int(noise[i, 0]), int(noise[i, 1])),
            )
        )
    return views


def render_clip(
    subject: SubjectParams,
    seed: int,
    video_id: str,
    *,
    n_frames: int,
    fps: float = DEFAULT_FPS,
    size: int = 256,
) -> np.ndarray:
    """Frames (T, size, size, 3) uint8 RGB of ``subject`` talking in clip ``video_id``."""
    if n_frames < 1:
        raise ValueError(f"n_frames must be >= 1, got {n_frames}")
    rng = rng_for(seed, "clip", video_id)
    motion = talking_motion(rng, n_frames, fps)
    views = clip_views(sample_view(seed, video_id), motion, rng)
    return np.stack([render_face(subject, v, size) for v in views])


def synthetic_videos(
    out_dir: str | Path,
    *,
    subjects_per_group: int,
    clips_per_subject: int,
    seed: int,
    seconds: float = 2.0,
    fps: float = DEFAULT_FPS,
    size: int = 256,
    tones: Sequence[str] = DEFAULT_TONES,
    genders: Sequence[str] = DEFAULT_GENDERS,
    crf: int = 18,
) -> pd.DataFrame:
    """Render the balanced synthetic world as talking clips, ``{subject}/{video_id}.mp4``.

    Returns one row per clip (:data:`fairforge.columns.CLIP_COLUMNS`), paths relative to ``out_dir``. Clips
    are H.264 (yuv420p) at ``crf``; the default 18 keeps the sources close to visually
    lossless so that compression variants start from a clean clip.
    """
    if clips_per_subject < 1:
        raise ValueError("clips_per_subject must be >= 1")
    if seconds <= 0 or fps <= 0:
        raise ValueError(f"seconds and fps must be > 0, got {seconds}, {fps}")
    n_frames = max(1, int(round(seconds * fps)))
    out_dir = Path(out_dir)
    subjects = synthetic_subject_table(
        subjects_per_group=subjects_per_group, seed=seed, tones=tones, genders=genders
    )
    rows = []
    for rec in subjects.itertuples(index=False):
        subject = sample_subject(
            seed,
            rec.subject_id,
            rec.tone,
            rec.gender,
            darkness=rec.darkness,
            masculine=rec.masculine,
        )
        for k in range(clips_per_subject):
            video_id = video_id_for(rec.subject_id, k)
            rel = f"{rec.subject_id}/{video_id}.mp4"
            frames = render_clip(subject, seed, video_id, n_frames=n_frames, fps=fps, size=size)
            write_video(out_dir / rel, frames, fps=fps, crf=crf)
            rows.append(
                {
                    "video_id": video_id,
                    "subject_id": rec.subject_id,
                    "path": rel,
                    "tone": rec.tone,
                    "gender": rec.gender,
                    "n_frames": n_frames,
                    "fps": float(fps),
                }
            )
    return pd.DataFrame(rows, columns=CLIP_COLUMNS)
