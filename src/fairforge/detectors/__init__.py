"""Face-forgery detectors of every kind, created by name (the timm habit).

    >>> from fairforge.detectors import create_detector, list_detectors
    >>> model = create_detector("meso4", input_size=128)
    >>> list_detectors(kind="classical")
    ['headpose']

Network detectors are ``nn.Module``s whose ``forward`` takes a float batch (B, 3, H, W),
already normalised with the detector's ``mean``/``std``, and returns one logit per image (B,);
those with auxiliary objectives override :meth:`Detector.loss`. The ``classical`` and
``external`` kinds are described in :mod:`fairforge.detectors.base`.

Every member module is imported here, so timm, torchvision and scikit-learn are imported
inside the functions that build a network or fit an SVM, not at the top of a module: they
take seconds of CPU to load, and every prediction job would pay for them whichever
detector it runs.
"""

# Importing the member modules registers them.
from fairforge.detectors import (  # noqa: F401,E402
    capsule,
    conv_lstm,
    core,
    efficientnet,
    external,
    f3net,
    face_xray,
    ffd,
    fwa,
    headpose,
    meso,
    multi_attention,
    patch,
    recce,
    spsl,
    srm,
    ucf,
    uia_vit,
    xception,
)
from fairforge.detectors.base import (
    DETECTORS,
    KINDS,
    Detector,
    create_detector,
    detector_kind,
    list_detectors,
)

__all__ = [
    "DETECTORS",
    "KINDS",
    "Detector",
    "create_detector",
    "detector_kind",
    "list_detectors",
]
