"""Conv-LSTM (Güera & Delp, "Deepfake Video Detection Using Recurrent Neural Networks", AVSS
2018), the Benchmark paper's "Conv LSTM": a video-level detector.

Each frame of a clip goes through InceptionV3 (timm ``inception_v3``, no ImageNet head, 2048
pooled features); an LSTM reads the frame features in order and the last hidden state is
classified: one logit per clip.

Input: a float batch of clips ``(B, T, 3, H, W)``, every frame normalised with the detector's
``mean``/``std`` (frames in time order, ``T`` = ``frames`` = 20 by default, the Benchmark
paper's count, at 299 px). A frame batch ``(B, 3, H, W)`` is read as clips of one frame, so
the detector also runs wherever single images are fed (the score is then a per-frame one).
InceptionV3 needs frames of at least 75 px: smaller ones are upsampled bilinearly.

How training and inference feed it (``sequence_input = True``): the frames of a video
(``video_id`` and ``method``, ordered by ``frame_index``) are grouped into sequences of
``frames_per_sequence`` consecutive frames (config; default ``frames``), a short video padded
by repeating its last frame (:func:`fairforge.data.sequence_groups`), stacked to
``(B, T, 3, H, W)`` with the video's label; at test time a video's score is the mean of its
sequences' scores, and the predictions hold one row per video (its first frame's row, with
``video_id``, subject and group, and ``scored_frames``). Samples of an image dataset are
videos of one frame. A video is scored on its ``frames_test`` first frames (a consecutive
clip, :func:`fairforge.data.frames_to_score`), and prediction jobs keep a video's frames in
one shard (:func:`fairforge.sharding.video_shards`), so every video gets exactly one row.

The LSTM is written with two linear gate projections (the same parameters as ``nn.LSTM``:
input and recurrent weights with a bias each), so the FLOP counter sees its multiply-adds;
``hidden`` = 512 is the size the Benchmark paper's parameter count implies (Güera & Delp used
2048 units and a 512-unit dense layer). The network is built with random weights
(``pretrained=False``); the authors start InceptionV3 from ImageNet weights (``pretrained:``, or
``init: random`` to train without).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.base import (
    BENCHMARK_APP_A,
    BENCHMARK_TABLE_3,
    DETECTORS,
    Detector,
    PretrainedLayout,
    PretrainedTarget,
)
from fairforge.recipes import Recipe, cited

MIN_FRAME_SIZE = 75  # the smallest frame InceptionV3's stride-32 layout takes


class LSTM(nn.Module):
    """A single-layer LSTM over (B, T, C); returns the last hidden state (B, hidden)."""

    def __init__(self, in_features: int, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.input_gates = nn.Linear(in_features, 4 * hidden)
        self.hidden_gates = nn.Linear(hidden, 4 * hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        gates_in = self.input_gates(x)  # all time steps at once
        h = x.new_zeros(b, self.hidden)
        c = x.new_zeros(b, self.hidden)
        for step in range(t):
            gates = gates_in[:, step] + self.hidden_gates(h)
            i, f, g, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h


@DETECTORS.register(
    "conv_lstm",
    # App. A's "sequence of 20 images" is the model's ``frames`` (its default)
    recipe=Recipe(
        optimizer="adam",
        lr=1e-5,
        batch_size=4,
        input_size=299,
        init="imagenet",
        source=BENCHMARK_APP_A,
        cite={
            **cited(BENCHMARK_APP_A, "optimizer", "lr", batch_size="4 sequences of 20 frames"),
            **cited(BENCHMARK_TABLE_3, input_size="229.48 GFLOPs per 20 frames: 299 px"),
            "init": "paper:Conv-LSTM (Güera & Delp 2018): ImageNet-pretrained InceptionV3",
        },
    ),
    pretrained=PretrainedLayout(
        (PretrainedTarget("cnn"),),
        "ImageNet InceptionV3 (timm inception_v3)",
        "inception_v3.tv_in1k",
    ),
)
class ConvLSTM(Detector):
    default_input_size = 299
    #: Inputs are clips (B, T, 3, H, W), not frames: the loaders must stack frame sequences.
    sequence_input = True

    def __init__(
        self,
        input_size: int = 299,
        frames: int = 20,
        hidden: int = 512,
        backbone: str = "inception_v3",
        drop_rate: float = 0.5,
    ):
        super().__init__()
        self.input_size = input_size
        self.frames = frames
        import timm  # see fairforge.detectors

        self.cnn = timm.create_model(backbone, pretrained=False, num_classes=0)
        self.lstm = LSTM(self.cnn.num_features, hidden)
        self.head = nn.Sequential(nn.Dropout(drop_rate), nn.Linear(hidden, 1))

    def frame_features(self, frames: torch.Tensor) -> torch.Tensor:
        """(N, 3, H, W) frames → (N, C) InceptionV3 features."""
        if min(frames.shape[-2:]) < MIN_FRAME_SIZE:
            frames = F.interpolate(
                frames, size=(MIN_FRAME_SIZE, MIN_FRAME_SIZE), mode="bilinear", align_corners=False
            )
        return self.cnn(frames)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 4:
            x = x.unsqueeze(1)
        if x.dim() != 5 or x.shape[2] != 3:
            raise ValueError(
                f"conv_lstm takes clips (B, T, 3, H, W) or frames (B, 3, H, W); got {tuple(x.shape)}"
            )
        b, t = x.shape[:2]
        features = self.frame_features(x.flatten(0, 1)).view(b, t, -1)
        return self.head(self.lstm(features)).squeeze(1)
