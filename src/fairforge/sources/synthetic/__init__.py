"""The synthetic face world, the embedded default source: identities drawn from seeds
(:mod:`.identities`), a procedural renderer of photo-like faces (:mod:`.renderer`), the
balanced dataset listed and rendered image by image (:mod:`.listing`), and the defaults they
share (:mod:`.defaults`)."""

from fairforge.sources.synthetic.defaults import (
    DEFAULT_GENDERS,
    DEFAULT_SIZE,
    DEFAULT_TONES,
    SYNTHETIC_DEFAULTS,
    synthetic_options,
)
from fairforge.sources.synthetic.identities import (
    SubjectParams,
    ViewParams,
    sample_subject,
    sample_view,
    tone_darkness,
)
from fairforge.sources.synthetic.listing import (
    image_id_for,
    render_listed,
    render_synthetic,
    subject_id_for,
    subject_traits,
    synthetic_listing,
    synthetic_sources,
    synthetic_subject_table,
)
from fairforge.sources.synthetic.renderer import render_face

__all__ = [
    "DEFAULT_GENDERS",
    "DEFAULT_SIZE",
    "DEFAULT_TONES",
    "SYNTHETIC_DEFAULTS",
    "SubjectParams",
    "ViewParams",
    "image_id_for",
    "render_face",
    "render_listed",
    "render_synthetic",
    "sample_subject",
    "sample_view",
    "subject_id_for",
    "subject_traits",
    "synthetic_listing",
    "synthetic_options",
    "synthetic_sources",
    "synthetic_subject_table",
    "tone_darkness",
]
