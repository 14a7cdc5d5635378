"""Angular-margin heads that train a face encoder to tell identities apart, by name
(:data:`MARGIN_HEADS`).

A head scores the normalised embedding against one learned weight per identity (the
cosines) and changes the target's logit, and for NPCFace the hard negatives', before the
softmax cross-entropy:

- ``arcface``: additive angular margin, the target logit is s·cos(θ_y + m) (s=64, m=0.5);
- ``npcface``: the Exposure paper's (NPCFace): hard negatives, those with
  cos θ_j > cos(θ_y + m), are emphasised to t·cos θ_j + a, and the positive margin grows with
  how hard they are, m_i = m0 + m1 · mean hard-negative cosine, applied where cos θ_y > 0;
  m0=0.4, m1=0.2, t=1.1, a=0.2, as in the NPCFace authors' code.

A head is built as ``MARGIN_HEADS.create(name, embedding_dim, n_classes, scale, margin)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.registry import Registry

MARGIN_HEADS: Registry = Registry("margin head")


@MARGIN_HEADS.register("arcface")
class ArcFaceHead(nn.Module):
    """Additive angular margin: the target logit is s·cos(θ_y + m)."""

    def __init__(
        self, embedding_dim: int, n_classes: int, scale: float = 64.0, margin: float = 0.5
    ):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_classes, embedding_dim))
        nn.init.xavier_uniform_(self.weight)
        self.scale = float(scale)
        self.margin = float(margin)

    def cosines(self, emb: torch.Tensor) -> torch.Tensor:
        return F.linear(F.normalize(emb), F.normalize(self.weight)).clamp(-1.0, 1.0)

    @staticmethod
    def _add_margin(cos_y: torch.Tensor, margin: torch.Tensor | float) -> torch.Tensor:
        margin = torch.as_tensor(margin, dtype=cos_y.dtype, device=cos_y.device)
        sin_y = torch.sqrt((1.0 - cos_y * cos_y).clamp_min(1e-7))
        shifted = cos_y * torch.cos(margin) - sin_y * torch.sin(margin)
        # Past θ_y = π − m, cos(θ_y + m) would rise again; keep it decreasing in θ_y
        # (insightface's fallback) so the margin never rewards a worse angle.
        return torch.where(
            cos_y > torch.cos(math.pi - margin), shifted, cos_y - margin * torch.sin(margin)
        )

    def forward(self, emb: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cos = self.cosines(emb)
        target = cos.gather(1, labels[:, None])
        logits = cos.scatter(1, labels[:, None], self._add_margin(target, self.margin))
        return logits * self.scale


@MARGIN_HEADS.register("npcface")
class NPCFaceHead(ArcFaceHead):
    """NPCFace: hard negatives emphasised, and a positive margin that grows with them."""

    def __init__(
        self,
        embedding_dim: int,
        n_classes: int,
        scale: float = 64.0,
        margin: float = 0.5,
        m0: float = 0.4,
        m1: float = 0.2,
        t: float = 1.1,
        a: float = 0.2,
    ):
        super().__init__(embedding_dim, n_classes, scale, margin)
        self.m0, self.m1, self.t, self.a = float(m0), float(m1), float(t), float(a)

    @staticmethod
    def _plain_margin(cos_y: torch.Tensor, margin: torch.Tensor | float) -> torch.Tensor:
        margin = torch.as_tensor(margin, dtype=cos_y.dtype, device=cos_y.device)
        sin_y = torch.sqrt((1.0 - cos_y * cos_y).clamp_min(1e-7))
        return cos_y * torch.cos(margin) - sin_y * torch.sin(margin)

    def forward(self, emb: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # As the NPCFace authors' code (FaceX-Zoo): a negative is hard when cos θ_j exceeds
        # cos(θ_y + m); the positive gets cos(θ_y + m_i) only where cos θ_y > 0, and keeps
        # cos θ_y elsewhere.
        cos = self.cosines(emb)
        target = cos.gather(1, labels[:, None])
        is_target = torch.zeros_like(cos, dtype=torch.bool).scatter(1, labels[:, None], True)
        hard = (cos > self._plain_margin(target, self.margin)) & ~is_target
        with torch.no_grad():
            n_hard = hard.sum(1, keepdim=True)
            mean_hard = (cos * hard).sum(1, keepdim=True) / n_hard.clamp_min(1)
            margin_i = self.m0 + self.m1 * mean_hard
        positive = torch.where(target > 0, self._plain_margin(target, margin_i), target)
        negatives = torch.where(hard, self.t * cos + self.a, cos)
        logits = negatives.scatter(1, labels[:, None], positive)
        return logits * self.scale
