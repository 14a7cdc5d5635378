"""The metric conventions of a run, as one object: the config's ``metrics`` block holds them,
and every table, report and script that measures passes them on together.

* ``threshold``: a sample is predicted fake when its score passes it (FairFD §5.1: 0.5); a
  ``{group: threshold}`` mapping where thresholds are fitted per group (FairFD §5.3.2);
* ``threshold_rule``: ``">"`` (score > threshold, the default) or ``">="`` (FairFD's code);
* ``eer``: ``"interpolated"`` (FNR = FPR on the piecewise-linear ROC curve, the default) or
  ``"nearest"`` (the ROC point nearest to it: DeepfakeBench and FairFD's code);
* ``ur_denominator``: the utility term of the utility-regularized gaps (FairFD §3.4),
  ``"one_plus_acc"`` (1 + mean accuracy, the default) or ``"acc"`` (FairFD's Table 5); the
  metric functions also take several names at once (``("one_plus_acc", "acc")``).

docs/metrics.md sections 1, 3 and 5 define them. The defaults here are the config schema's
(``metrics`` in ``fairforge/schemas/config.schema.yaml``; a test checks that they agree).
The plain metric functions over arrays (:func:`~fairforge.metrics.detection.acc`,
:func:`~fairforge.metrics.detection.detection_metrics`,
:func:`~fairforge.metrics.fairness.accuracy_matrix`, ...) keep their own keywords: a
convention is one of their arguments, as in fairlearn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from .detection import EER_METHODS, THRESHOLD_RULES

UR_DENOMINATORS = ("one_plus_acc", "acc")


def metric_name(metric: str, ur_denominator: str) -> str:
    """The name a metric is reported under: a utility-regularized gap (``UR...``) carries the
    denominator it was computed with (``URDEOdds_one_plus_acc``), other names stay."""
    return f"{metric}_{ur_denominator}" if metric.startswith("UR") else metric


@dataclass(frozen=True)
class Conventions:
    """How predictions are turned into metrics (module docstring)."""

    threshold: float | Mapping[str, float] = 0.5
    threshold_rule: str = ">"
    eer: str = "interpolated"
    ur_denominator: str | tuple[str, ...] = "one_plus_acc"

    def __post_init__(self) -> None:
        if self.threshold_rule not in THRESHOLD_RULES:
            raise ValueError(
                f"threshold_rule must be one of {THRESHOLD_RULES}, got {self.threshold_rule!r}"
            )
        if self.eer not in EER_METHODS:
            raise ValueError(f"eer must be one of {EER_METHODS}, got {self.eer!r}")
        dens = self.ur_denominators
        if not dens or any(d not in UR_DENOMINATORS for d in dens):
            raise ValueError(
                f"ur_denominator must be one or more of {UR_DENOMINATORS}, "
                f"got {self.ur_denominator!r}"
            )

    @property
    def ur_denominators(self) -> tuple[str, ...]:
        """``ur_denominator`` as a tuple of names."""
        d = self.ur_denominator
        return (d,) if isinstance(d, str) else tuple(d)

    @classmethod
    def from_metrics(cls, metrics: Mapping) -> Conventions:
        """The conventions of a config's ``metrics`` block (a missing key keeps its
        default; other keys of the block are not conventions and are ignored)."""
        return cls(**{f.name: metrics[f.name] for f in fields(cls) if f.name in metrics})

    @classmethod
    def from_config(cls, config: Mapping) -> Conventions:
        """The conventions of a whole config (its ``metrics`` block)."""
        return cls.from_metrics(config.get("metrics") or {})

    def metric_name(self, metric: str) -> str:
        """:func:`metric_name` under the one UR denominator of these conventions."""
        if len(self.ur_denominators) != 1:
            raise ValueError(
                f"conventions with several UR denominators {self.ur_denominators} name a UR "
                "metric once per denominator: use metric_name(metric, denominator)"
            )
        return metric_name(metric, self.ur_denominators[0])

    def at(self, threshold: float | Mapping[str, float]) -> Conventions:
        """The same conventions at another threshold (e.g. fitted per group)."""
        return replace(self, threshold=threshold)


#: The defaults, for signatures.
DEFAULT_CONVENTIONS = Conventions()
