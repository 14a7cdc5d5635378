"""SPSL: spatial-phase shallow learning (Liu et al., CVPR 2021).

The phase spectrum of the grey image is turned back into an image with unit amplitude
(real part of IFFT(exp(i·phase))), which keeps edges and up-sampling artefacts and drops the
content's amplitude; it is stacked with RGB into a 4-channel Xception.

``shallow=True`` gives the paper's shallow network (the middle flow, blocks 4–11, is skipped;
they are then not built, so the state dict differs from DeepfakeBench's); the default is the
full Xception, as DeepfakeBench runs SPSL, so its checkpoints load.
"""

from __future__ import annotations

import torch

from fairforge.detectors.base import DEEPFAKEBENCH_IMAGENET, DETECTORS, Detector, stated_start
from fairforge.detectors.xception import (
    ENTRY,
    EXIT,
    MIDDLE,
    STEM,
    XCEPTION_DFB,
    XCEPTION_PRETRAINED,
    run_stages,
    xception_net,
)


def phase_image(x: torch.Tensor) -> torch.Tensor:
    """(B, 1, H, W): the grey image rebuilt from its Fourier phase alone."""
    grey = x.float().mean(dim=1, keepdim=True)
    phase = torch.angle(torch.fft.fft2(grey))
    return torch.fft.ifft2(torch.exp(1j * phase)).real.to(x.dtype)


@DETECTORS.register(
    "spsl",
    recipe=stated_start("imagenet", DEEPFAKEBENCH_IMAGENET),
    pretrained=XCEPTION_PRETRAINED,
    deepfakebench={"spsl": XCEPTION_DFB},
)
class SPSL(Detector):
    default_input_size = 256
    precision = "fp32"  # phase spectrum

    def __init__(self, input_size: int = 256, shallow: bool = False, drop_rate: float = 0.0):
        super().__init__()
        self.input_size = input_size
        self.shallow = shallow
        self.backbone = xception_net(in_chans=4, drop_rate=drop_rate)
        self.stages = STEM + ENTRY + (() if shallow else MIDDLE) + EXIT
        if shallow:
            for name in MIDDLE:
                delattr(self.backbone, name)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = run_stages(self.backbone, torch.cat([x, phase_image(x)], dim=1), self.stages)
        return self.backbone.forward_head(f).squeeze(1)
