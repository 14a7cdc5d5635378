"""UIA-ViT (Zhuang et al., "UIA-ViT: Unsupervised Inconsistency-Aware Method based on Vision
Transformer for Face Forgery Detection", ECCV 2022), evaluated by the Assessment paper.

A ViT-B/16 (timm ``vit_base_patch16_224`` built for ``input_size``, one logit from the class
token) that also learns which patches are consistent with each other, without pixel labels:

* unsupervised patch labels: the patch features after block ``feature_block`` (6 of 12) are
  modelled by two multivariate Gaussians, real (every patch of the real images) and fake (the
  central patches of the fake images, where the face and its manipulation lie), estimated as
  moving averages of the batch statistics during training; a patch of a fake image is
  labelled fake when its Mahalanobis distance to the real Gaussian exceeds that to the fake
  one (the central prior is used until both Gaussians have been seen);
* patch consistency: in each of the last ``consistency_blocks`` blocks, the pre-softmax
  attention score q·k/√d between two patches, averaged over heads and squashed by a sigmoid,
  is the predicted consistency of the pair; averaged over those blocks it is the consistency
  map C (N × N patches);
* consistency loss: L1 between C and its target, off the diagonal: ``c_same`` for two patches
  of one label (every pair of a real image), ``c_cross`` for a real and a fake patch.

Loss = BCE + ``consistency_weight`` · consistency loss. :meth:`UIAViT.manipulation_map`
returns the estimated manipulated area (per patch, the probability that the fake Gaussian
explains it better).

Simplifications: the pre-softmax scores stand in for the softmax attention the paper
supervises (a softmax row sums to one, so absolute targets suit the scores better); the
progressive consistency-weighted assembly (PCWA) of patch features into the classifier is
replaced by the class token; the Gaussians are moving averages, not re-estimated from the
whole training set each epoch; weights start random (``pretrained=False``), the paper starts
from ImageNet-21k weights. The Assessment paper trains it at 300 px (18 × 18 patches: the
last 12 pixels of each side are dropped by the stride-16 patch embedding).
"""

from __future__ import annotations

import timm
import torch
import torch.nn.functional as F

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import register


def mahalanobis(x: torch.Tensor, mean: torch.Tensor, precision: torch.Tensor) -> torch.Tensor:
    """Distances of the rows of ``x`` (…, C) to a Gaussian (mean, precision)."""
    d = x - mean
    return torch.einsum("...i,ij,...j->...", d, precision, d).clamp_min(0).sqrt()


def central_patches(grid: tuple[int, int], device=None) -> torch.Tensor:
    """(h·w,) bool: the patches of the central half of the grid (each side a quarter in)."""
    h, w = grid
    mask = torch.zeros(h, w, dtype=torch.bool, device=device)
    mask[h // 4 : h - h // 4, w // 4 : w - w // 4] = True
    return mask.flatten()


@register("uia_vit")
class UIAViT(AuxiliaryLossDetector):
    default_input_size = 224

    def __init__(
        self,
        input_size: int = 224,
        backbone: str = "vit_base_patch16_224",
        feature_block: int = 6,
        consistency_blocks: int = 4,
        consistency_weight: float = 1.0,
        c_same: float = 0.6,
        c_cross: float = 0.2,
        stat_rate: float = 0.1,
        shrinkage: float = 0.1,
        drop_rate: float = 0.0,
    ):
        super().__init__()
        self.input_size = input_size
        self.vit = timm.create_model(
            backbone, pretrained=False, num_classes=1, img_size=input_size, drop_rate=drop_rate
        )
        depth = len(self.vit.blocks)
        if not 1 <= feature_block <= depth or not 1 <= consistency_blocks <= depth:
            raise ValueError(f"uia_vit: blocks must lie in 1..{depth}")
        self.feature_block = feature_block
        self.consistency_blocks = consistency_blocks
        self.consistency_weight = consistency_weight
        self.c_same, self.c_cross = c_same, c_cross
        self.stat_rate, self.shrinkage = stat_rate, shrinkage
        dim = self.vit.embed_dim
        for label in ("real", "fake"):
            self.register_buffer(f"{label}_mean", torch.zeros(dim))
            self.register_buffer(f"{label}_cov", torch.eye(dim))
            self.register_buffer(f"{label}_seen", torch.zeros((), dtype=torch.bool))

    @property
    def grid(self) -> tuple[int, int]:
        return tuple(self.vit.patch_embed.grid_size)

    @staticmethod
    def _pair_scores(block, x: torch.Tensor, prefix: int) -> torch.Tensor:
        """sigmoid(q·k/√d) between the patch tokens of ``x`` in ``block``, mean over heads."""
        attn = block.attn
        b, n, _ = x.shape
        qkv = attn.qkv(block.norm1(x)).reshape(b, n, 3, attn.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k = attn.q_norm(qkv[0]), attn.k_norm(qkv[1])
        scores = (q @ k.transpose(-2, -1)) * attn.scale
        return torch.sigmoid(scores[..., prefix:, prefix:]).mean(1)

    def _run(self, x: torch.Tensor, consistency: bool):
        net = self.vit
        x = net.norm_pre(net.patch_drop(net._pos_embed(net.patch_embed(x))))
        prefix, depth = net.num_prefix_tokens, len(net.blocks)
        maps, features = [], None
        for i, block in enumerate(net.blocks):
            if consistency and i >= depth - self.consistency_blocks:
                maps.append(self._pair_scores(block, x, prefix))
            x = block(x)
            if i + 1 == self.feature_block:
                features = x[:, prefix:]
        logits = net.forward_head(net.norm(x)).squeeze(1)
        return logits, features, torch.stack(maps).mean(0) if maps else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits, features, consistency = self._run(x, consistency=self.training)
        if not self.training:
            return self._keep(logits)
        return self._keep(logits, features=features, consistency=consistency)

    # --- the unsupervised patch labels -------------------------------------------------------

    def _precision(self, label: str) -> torch.Tensor:
        cov = getattr(self, f"{label}_cov")
        scale = cov.diagonal().mean()
        eye = torch.eye(cov.shape[0], device=cov.device, dtype=cov.dtype)
        return torch.linalg.inv((1 - self.shrinkage) * cov + self.shrinkage * scale * eye)

    @torch.no_grad()
    def _update(self, label: str, patches: torch.Tensor) -> None:
        if len(patches) < 2:
            return
        patches = patches.float()
        mean, cov = patches.mean(0), torch.cov(patches.T)
        seen = getattr(self, f"{label}_seen")
        rate = self.stat_rate if bool(seen) else 1.0
        getattr(self, f"{label}_mean").lerp_(mean, rate)
        getattr(self, f"{label}_cov").lerp_(cov, rate)
        seen.fill_(True)

    @torch.no_grad()
    def patch_fake_probability(self, features: torch.Tensor) -> torch.Tensor:
        """(B, N) probability that a patch is better explained by the fake Gaussian (the central
        prior while either Gaussian is unseen)."""
        if not (bool(self.real_seen) and bool(self.fake_seen)):
            prior = central_patches(self.grid, features.device).float()
            return prior.expand(features.shape[0], -1)
        f = features.float()
        d_real = mahalanobis(f, self.real_mean, self._precision("real"))
        d_fake = mahalanobis(f, self.fake_mean, self._precision("fake"))
        return torch.sigmoid(d_real - d_fake)

    @torch.no_grad()
    def manipulation_map(self, x: torch.Tensor) -> torch.Tensor:
        """The estimated manipulated area, (B, h, w) patches in [0, 1]."""
        _, features, _ = self._run(x, consistency=False)
        return self.patch_fake_probability(features).view(-1, *self.grid)

    def consistency_target(self, patch_fake: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """(B, N, N): ``c_same`` for a pair of one label, ``c_cross`` for a mixed pair; every
        patch of a real image is real."""
        fake = (patch_fake > 0.5) & labels.bool().unsqueeze(1)
        same = fake.unsqueeze(2) == fake.unsqueeze(1)
        return torch.where(same, self.c_same, self.c_cross).to(patch_fake.dtype)

    def consistency_loss(
        self, consistency: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        labels = labels.bool()
        if self.training:
            dim = features.shape[-1]
            self._update("real", features[~labels].detach().reshape(-1, dim))
            centre = central_patches(self.grid, features.device)
            self._update("fake", features[labels][:, centre].detach().reshape(-1, dim))
        target = self.consistency_target(self.patch_fake_probability(features), labels)
        n = consistency.shape[-1]
        off = ~torch.eye(n, dtype=torch.bool, device=consistency.device)
        return (consistency - target).abs()[:, off].mean()

    def loss(self, logits, labels, batch=None):
        out = self._outputs_for(logits)
        loss = F.binary_cross_entropy_with_logits(logits, labels.float())
        if "consistency" in out:
            loss = loss + self.consistency_weight * self.consistency_loss(
                out["consistency"], out["features"], labels
            )
        return loss
