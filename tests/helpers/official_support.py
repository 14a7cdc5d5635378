"""What the tests of the official forgery backends share: random weights for the restated
releases (tests/*_reference.py) and two real photographs.

:func:`random_state` fills a module's state dict from a seed without running the module's own
initialisation (built on the meta device, so the large released networks cost only their
random numbers): weights ~ N(0, 2 / fan_in), biases and other vectors ~ N(0, 0.1²), the
scales of normalisation layers 1 + N(0, 0.1²), running variances in [0.5, 1.5].
"""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.InstanceNorm2d)


def empty(build):
    """``build()`` on the meta device: shapes without storage."""
    with torch.device("meta"):
        return build()


def random_state(module: nn.Module, seed: int, gain: float = 1.0) -> dict:
    """``gain`` scales the weights (deep residual stacks need less than 1 to stay finite)."""
    g = torch.Generator().manual_seed(seed)
    scales = {f"{n}.weight" for n, m in module.named_modules() if isinstance(m, NORMS)}
    state = {}
    for name, t in module.state_dict().items():
        shape = tuple(t.shape)
        if name.endswith("num_batches_tracked"):
            state[name] = torch.zeros((), dtype=torch.long)
        elif name.endswith("running_var"):
            state[name] = 0.5 + torch.rand(shape, generator=g)
        elif name in scales:
            state[name] = 1 + 0.1 * torch.randn(shape, generator=g)
        elif len(shape) >= 2:
            fan_in = math.prod(shape[1:])
            state[name] = torch.randn(shape, generator=g) * gain * math.sqrt(2.0 / fan_in)
        else:
            state[name] = 0.1 * torch.randn(shape, generator=g)
    return state


def loaded(build, state: dict) -> nn.Module:
    """``build()`` filled with ``state`` (strict), in eval mode, without initialising first."""
    module = empty(build).to_empty(device="cpu")
    module.load_state_dict(state)
    return module.eval()


@functools.lru_cache(maxsize=1)
def photographs():
    """(source, driver): matplotlib's Grace Hopper and scikit-image's astronaut, detected,
    given 68 landmarks and aligned to 256 px crops by fairforge's faces stage."""
    import skimage.data
    from matplotlib import cbook

    from fairforge.faces import detect_and_align
    from fairforge.images import load_image

    hopper = load_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))
    source = detect_and_align(hopper, crop_size=256)
    driver = detect_and_align(skimage.data.astronaut(), crop_size=256)
    assert source.ok and driver.ok
    return source, driver
