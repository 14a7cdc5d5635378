"""Support for detectors whose training loss needs more than the logits.

The training protocol calls ``model.loss(model(images), labels, batch)``. Detectors with
auxiliary objectives (attention maps, reconstructions, patch logits, capsule outputs) keep the
side outputs of their latest forward pass and read them back in :meth:`Detector.loss`; the
identity check on the logits makes a loss computed on stale outputs an error, not a silent bug.
"""

from __future__ import annotations

import torch

from fairforge.detectors.base import Detector


class AuxiliaryLossDetector(Detector):
    """A detector whose ``forward`` keeps side outputs for its ``loss``."""

    _outputs: dict | None = None

    def _keep(self, logits: torch.Tensor, **outputs) -> torch.Tensor:
        self._outputs = {"logits": logits, **outputs}
        return logits

    def _outputs_for(self, logits: torch.Tensor) -> dict:
        outputs = self._outputs
        if outputs is None or outputs["logits"] is not logits:
            raise RuntimeError(
                f"{type(self).__name__}.loss needs the logits returned by its "
                "latest forward pass (the side outputs are kept from it)"
            )
        # Dropped once used, so the model holds no graph and stays deep-copyable.
        self._outputs = None
        return outputs


def batch_mask(batch: dict | None) -> torch.Tensor | None:
    """The (B, 1, H, W) manipulation masks of a batch, or None when the batch has none."""
    if not batch:
        return None
    mask = batch.get("mask")
    return mask if torch.is_tensor(mask) else None
