"""FWA: face-warping artefacts (Li & Lyu, "Exposing DeepFake Videos By Detecting Face Warping
Artifacts", CVPR workshops 2019), the Benchmark paper's "FWA-Resnet50".

A ResNet-50 (timm ``resnet50``, one logit) trained to tell real faces from the same real
faces with a face-warping artefact: the face shrunk, blurred and warped back
(:func:`fairforge.forgery.fwa.warp_artefact`). The fakes need no forgery method at all, which
is the point of the paper: a detector of the resolution mismatch every affine-warped
synthetic face carries.

``online_forgery = "fwa"``: as in the paper, the training loop makes the fakes on the fly from
the real training faces and their landmarks, a new artefact each epoch
(:class:`fairforge.data.OnlineForgeryDataset`); ``online_forgery: none`` with
``train_methods: [fwa]`` trains on the forgery stage's offline fakes instead, one artefact
per real face. The network is built with random weights (``pretrained=False``); the paper
starts from ImageNet weights (``pretrained:``, or ``init: random`` to train without). The
paper's 224 px input is the default. Its recipe is the Benchmark paper's reading (App. A) of
the fine-tuning stage; the hard-mining stage that follows (lr 1e-4) is not run.
"""

from __future__ import annotations

import torch

from fairforge.detectors.base import (
    BENCHMARK_APP_A,
    BENCHMARK_TABLE_3,
    DETECTORS,
    IMAGENET_MEAN,
    IMAGENET_STD,
    Detector,
    PretrainedLayout,
    PretrainedTarget,
)
from fairforge.recipes import Recipe, cited


@DETECTORS.register(
    "fwa",
    recipe=Recipe(
        lr=1e-3,
        batch_size=64,
        schedule="step",
        gamma=0.95,
        input_size=224,
        init="imagenet",
        source=BENCHMARK_APP_A,
        cite={
            **cited(
                BENCHMARK_APP_A,
                "batch_size",
                "gamma",
                lr="fine-tuning stage; hard mining from 1e-4 is not run",
                schedule="decay rate 0.95 every adaptive number of steps",
            ),
            **cited(BENCHMARK_TABLE_3, input_size="8.24 GFLOPs: 224 px"),
            "init": "paper:FWA (Li & Lyu 2019): ImageNet-pretrained ResNet-50",
        },
    ),
    pretrained=PretrainedLayout(
        (PretrainedTarget("backbone"),), "ImageNet ResNet-50 (timm resnet50)", "resnet50.tv_in1k"
    ),
)
class FWA(Detector):
    default_input_size = 224
    mean = IMAGENET_MEAN
    std = IMAGENET_STD
    #: The forgery method whose fakes this detector is trained on, generated from real faces.
    online_forgery = "fwa"

    def __init__(self, input_size: int = 224, backbone: str = "resnet50", drop_rate: float = 0.0):
        super().__init__()
        self.input_size = input_size
        import timm  # see fairforge.detectors

        self.backbone = timm.create_model(
            backbone, pretrained=False, num_classes=1, drop_rate=drop_rate
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x).squeeze(1)
