"""Forgery methods (FairFD section 3.4): a registry of face manipulations and the shard runner.

>>> from fairforge.forgery import create_method, list_methods
>>> swap = create_method("faceswap")                     # backend="classical" by default
>>> result = swap(src_img, src_lm, tgt_img, tgt_lm, rng)  # ForgeryResult(image, mask, extra)

Methods: ``faceswap`` and ``simswap`` (identity replacement: the source identity in the
target image), ``fastreen`` and ``dualreen`` (reenactment: the source takes the target's
head pose and expression), ``maskgan`` (part editing of the source), ``sbi`` (the source
blended with an augmented copy of itself; :func:`online_blend` draws fresh blends for a
training loop), ``xray`` (another identity's face, nearest in landmarks, blended into the
source), ``fwa`` (the source's face shrunk, blurred and warped back: face-warping
artefacts). Backends: ``classical`` (learning-free), ``onnx`` (a user's model,
:mod:`.learned`), ``official`` (the authors' released network: :mod:`.simswap_official`).
"""

from . import (  # noqa: F401  (registers)
    blend,
    dualreen_official,
    faceswap,
    fastreen_official,
    fwa,
    learned,
    maskgan,
    maskgan_official,
    reenact,
    simswap,
    simswap_official,
)
from .base import (
    FORGERY_METHODS,
    ONLINE_FORGERIES,
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    as_landmarks,
    create_method,
    list_backends,
    list_methods,
    method_key,
    training_methods,
)
from .blend import online_blend, self_blend, xray_blend
from .shard import (
    FORGERY_COLUMNS,
    file_stem,
    forge_shard,
    nearest_targets,
    sample_id_for,
    target_choice,
)

__all__ = [
    "FORGERY_COLUMNS",
    "FORGERY_METHODS",
    "ONLINE_FORGERIES",
    "ForgeryError",
    "ForgeryMethod",
    "ForgeryResult",
    "as_landmarks",
    "create_method",
    "file_stem",
    "forge_shard",
    "list_backends",
    "list_methods",
    "method_key",
    "nearest_targets",
    "online_blend",
    "sample_id_for",
    "self_blend",
    "target_choice",
    "training_methods",
    "xray_blend",
]
