"""Face encoders by name: images in, L2-normalised embeddings out.

Every encoder is a small class with ``dim`` (embedding size), ``input_size`` (the square side,
in pixels, it looks at) and ``embed(images) -> float32 (N, dim)`` whose rows have unit norm,
so that cosine similarity is a dot product::

    enc = create_encoder("dlib_resnet")
    emb = enc.embed([rgb_uint8, ...])

Registered: ``dlib_resnet`` (the default; dlib's ResNet with its 5-point chip),
``onnx_arcface`` (an ArcFace-style ONNX model from a configured path),
``insightface_arcface`` (an insightface model pack's recognition model, via its model zoo) and the trainable
encoders (``mobilefacenet``, ``resnet``, ``resnet152``, ``attentionnet``, ``resnest``,
``repvgg``, ``hrnet``; :mod:`fairforge.encoders.trainable`), which load a checkpoint written by
:func:`fairforge.training.encoder.train_encoder`. Their networks register on
:data:`~fairforge.encoders.base.BACKBONES` (one module per network family: ``mobilefacenet``,
``iresnet``, ``attentionnet``; timm builds the others), their margin heads on
:data:`fairforge.encoders.heads.MARGIN_HEADS`.
"""

# Importing the member modules registers them (none imports torch before an encoder is
# built); the trainable encoders' backbones are BACKBONES' deferred modules.
from fairforge.encoders import (  # noqa: E402,F401
    dlib_resnet,
    insightface_arcface,
    onnx_arcface,
    trainable,
)
from fairforge.encoders.base import (
    DEFAULT_ENCODER,
    ENCODERS,
    EncoderError,
    FaceEncoder,
    as_image_list,
    create_encoder,
    embed_in_batches,
    l2_normalise,
    list_encoders,
)

__all__ = [
    "DEFAULT_ENCODER",
    "ENCODERS",
    "EncoderError",
    "FaceEncoder",
    "as_image_list",
    "create_encoder",
    "embed_in_batches",
    "l2_normalise",
    "list_encoders",
]
