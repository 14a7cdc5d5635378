"""Face-forgery detectors, created by name (the timm habit).

    >>> from fairforge.detectors import create_detector, list_detectors
    >>> model = create_detector("meso4", input_size=128)

Every detector is an ``nn.Module`` whose ``forward`` takes a float batch (B, 3, H, W), already
normalised with the detector's ``mean``/``std``, and returns one logit per image (B,).
Detectors with auxiliary objectives override :meth:`Detector.loss`.
"""
from fairforge.detectors.registry import (
    Detector,
    create_detector,
    detector_entry,
    list_detectors,
    register,
)

# Importing the model files registers them.
from fairforge.detectors import (  # noqa: F401,E402
    capsule, core, efficientnet, f3net, ffd, headpose, meso, patch, recce, spsl, srm, ucf,
    xception,
)

__all__ = ["Detector", "create_detector", "detector_entry", "list_detectors", "register"]
