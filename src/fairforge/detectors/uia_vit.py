"""UIA-ViT (Zhuang et al., "UIA-ViT: Unsupervised Inconsistency-Aware Method based on Vision
Transformer for Face Forgery Detection", ECCV 2022), evaluated by the Assessment paper, as the
authors' code (and DeepfakeBench's copy of it) builds it.

A ViT-B/16 (timm ``vit_base_patch16_224`` built for ``input_size``, without its ImageNet head)
that learns which patches are consistent with each other, without pixel labels:

* unsupervised patch labels: the patch tokens entering block ``feature_block`` + 1 (after 6 of
  12 blocks), normalised by their own LayerNorm (``norm_middle``), are modelled by two
  multivariate Gaussians, real (every patch of the real images) and fake (the central patches
  of the fake images, where the face and its manipulation lie: rows and columns 3..10 of
  14 at 224 px); a patch of a fake image is labelled fake when its Mahalanobis distance to the
  real Gaussian exceeds that to the fake one;
* the attention of the last ``consistency_blocks`` (5) blocks: the pre-softmax scores q·k/√d,
  averaged over blocks and heads and squashed by a sigmoid, are the predicted consistency of
  two patches (the consistency map C, N × N) and, from the class token's row, the
  localisation map (how much each patch matters);
* patch consistency loss (PCL): L1 between C and its target, summed over all pairs and
  divided by the off-diagonal count: for a real image 1 on the diagonal and ``c_real``
  elsewhere; for a fake, ``c_real`` between two real patches, ``c_fake`` between two fake ones
  and ``c_cross`` between a real and a fake patch. The three targets are learnt parameters,
  kept apart by the regulariser ``c_weight`` · (1/|c_real| + 1/|c_fake|) + ``cross_weight`` ·
  |c_cross|;
* progressive consistency weighted assemble (PCWA): the classifier reads the class token and
  the patch tokens averaged with weights that move from uniform toward the localisation map
  as training progresses (uniform for the first eighth, then w = sigmoid(−12 (t − 0.7)) of
  uniform and 1 − w of the map; at evaluation t = 1).

Loss = BCE + ``consistency_weight`` · PCL + the regulariser (0.06, 0.05 and 0.5 as the
authors), from the second epoch on, once both Gaussians have been estimated.
:meth:`UIAViT.manipulation_map` returns the estimated manipulated area (per patch, the
probability that the fake Gaussian explains it better).

Simplifications: the Gaussians are moving averages of batch statistics with a shrunk
covariance, not Ledoit-Wolf fits of the features collected over half an epoch; the training
progress t advances per epoch, not per batch. The authors start from ImageNet-21k weights
(``pretrained:`` the ViT-B/16 file, or ``init: random`` to train without). The Assessment
paper trains it at 300 px (18 × 18 patches: the last 12 pixels of each side are dropped by the
stride-16 patch embedding). DeepfakeBench's checkpoints load exactly
(:mod:`fairforge.detectors.deepfakebench`, two-class head → one logit).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import (
    DETECTORS,
    DeepfakeBenchLayout,
    PretrainedLayout,
    PretrainedTarget,
    stated_start,
)


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


@DETECTORS.register(
    "uia_vit",
    recipe=stated_start(
        "imagenet", "paper:UIA-ViT (Zhuang et al. 2022): ViT-B/16 pre-trained on ImageNet-21k"
    ),
    pretrained=PretrainedLayout(
        (PretrainedTarget("vit"),),
        "ImageNet ViT-B/16 (timm vit_base_patch16_224)",
        "vit_base_patch16_224.augreg_in21k_ft_in1k",
    ),
    deepfakebench={
        "uia_vit": DeepfakeBenchLayout(
            (
                (r"^model\.(head|norm_middle)\.(weight|bias)$", r"\1.\2"),
                (r"^model\.(c_real|c_fake|c_cross)$", r"\1"),
                (r"^model\.(.+)$", r"vit.\1"),
            ),
            head="head",
            # DeepfakeBench keeps its patch Gaussians outside the state dict: they start unseen
            fill=(
                (r"^(real|fake)_mean$", torch.zeros),
                (r"^(real|fake)_cov$", lambda shape: torch.eye(shape[0])),
                (r"^(real|fake)_seen$", lambda shape: torch.zeros(shape, dtype=torch.bool)),
            ),
        )
    },
)
class UIAViT(AuxiliaryLossDetector):
    default_input_size = 224

    def __init__(
        self,
        input_size: int = 224,
        backbone: str = "vit_base_patch16_224",
        feature_block: int = 6,
        consistency_blocks: int = 5,
        consistency_weight: float = 0.06,
        c_weight: float = 0.05,
        cross_weight: float = 0.5,
        pcwa_k: float = 12.0,
        pcwa_threshold: float = 0.7,
        stat_rate: float = 0.1,
        shrinkage: float = 0.1,
        drop_rate: float = 0.0,
    ):
        super().__init__()
        self.input_size = input_size
        import timm  # see fairforge.detectors

        self.vit = timm.create_model(
            backbone, pretrained=False, num_classes=0, img_size=input_size, drop_rate=drop_rate
        )
        depth = len(self.vit.blocks)
        if not 1 <= feature_block < depth or not 1 <= consistency_blocks <= depth:
            raise ValueError(
                f"uia_vit: feature_block must lie in 1..{depth - 1} and consistency_blocks in "
                f"1..{depth}"
            )
        self.feature_block = feature_block
        self.consistency_blocks = consistency_blocks
        self.consistency_weight = consistency_weight
        self.c_weight, self.cross_weight = c_weight, cross_weight
        self.pcwa_k, self.pcwa_threshold = pcwa_k, pcwa_threshold
        self.stat_rate, self.shrinkage = stat_rate, shrinkage
        self.progress = 1.0  # training progress t in [0, 1]; 1 at evaluation
        dim = self.vit.embed_dim
        self.norm_middle = nn.LayerNorm(dim, eps=1e-6)
        self.c_real = nn.Parameter(torch.tensor(0.6))
        self.c_fake = nn.Parameter(torch.tensor(0.6))
        self.c_cross = nn.Parameter(torch.tensor(0.2))
        self.head = nn.Linear(2 * dim, 1)
        for label in ("real", "fake"):
            self.register_buffer(f"{label}_mean", torch.zeros(dim))
            self.register_buffer(f"{label}_cov", torch.eye(dim))
            self.register_buffer(f"{label}_seen", torch.zeros((), dtype=torch.bool))

    @property
    def grid(self) -> tuple[int, int]:
        return tuple(self.vit.patch_embed.grid_size)

    def set_training_progress(self, epoch: int, epochs: int) -> None:
        """The fraction of training done before ``epoch`` (from 1)."""
        self.progress = (epoch - 1) / max(epochs, 1)

    def on_epoch_start(self, epoch: int, epochs: int) -> None:
        self.set_training_progress(epoch, epochs)

    @staticmethod
    def _block_with_scores(block, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """timm's ViT block, also returning its pre-softmax attention scores (B, heads, n, n)."""
        attn = block.attn
        b, n, _ = x.shape
        qkv = attn.qkv(block.norm1(x)).reshape(b, n, 3, attn.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = attn.q_norm(qkv[0]), attn.k_norm(qkv[1]), qkv[2]
        scores = (q @ k.transpose(-2, -1)) * attn.scale
        out = (attn.attn_drop(scores.softmax(dim=-1)) @ v).transpose(1, 2).reshape(b, n, -1)
        out = attn.norm(out)
        if getattr(attn, "gate", None) is not None:
            out = out * attn.gate(block.norm1(x)).sigmoid()
        out = attn.proj_drop(attn.proj(out))
        x = x + block.drop_path1(block.ls1(out))
        x = x + block.drop_path2(block.ls2(block.mlp(block.norm2(x))))
        return x, scores

    def _run(self, x: torch.Tensor):
        """(logits, patch features (B, N, C), mean attention scores (B, 1 + N, 1 + N))."""
        net = self.vit
        x = net.norm_pre(net.patch_drop(net._pos_embed(net.patch_embed(x))))
        prefix, depth = net.num_prefix_tokens, len(net.blocks)
        scores, features = [], None
        for i, block in enumerate(net.blocks):
            if i == self.feature_block:
                features = self.norm_middle(x)[:, prefix:]
            if i >= depth - self.consistency_blocks:
                x, s = self._block_with_scores(block, x)
                scores.append(s)
            else:
                x = block(x)
        x = net.norm(x)
        mean_scores = torch.cat(scores, 1).mean(1)  # over blocks and heads
        cls, patches = x[:, 0], x[:, prefix:]
        weights = self.assembly_weights(mean_scores[:, 0, prefix:])
        pooled = torch.bmm(weights.unsqueeze(1), patches).squeeze(1)
        logits = self.head(torch.cat([cls, pooled], 1)).squeeze(1)
        return logits, features, mean_scores[:, prefix:, prefix:]

    def assembly_weights(self, cls_scores: torch.Tensor) -> torch.Tensor:
        """PCWA: (B, N) patch weights summing to one, from the class token's scores."""
        n = cls_scores.shape[-1]
        uniform = torch.full_like(cls_scores, 1.0 / n)
        t = self.progress if self.training else 1.0
        if t < 1 / 8:
            return uniform
        w = torch.sigmoid(torch.tensor(-self.pcwa_k * (t - self.pcwa_threshold))).item()
        return w * uniform + (1 - w) * torch.sigmoid(cls_scores) / n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits, features, scores = self._run(x)
        if not self.training:
            return self._keep(logits)
        return self._keep(logits, features=features, consistency=torch.sigmoid(scores))

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
        _, features, _ = self._run(x)
        return self.patch_fake_probability(features).view(-1, *self.grid)

    def consistency_target(self, patch_fake: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """(B, N, N): a real image's pairs ``c_real`` (1 on the diagonal); a fake's
        ``c_real`` / ``c_fake`` for two real / fake patches, ``c_cross`` for a mixed pair."""
        n = patch_fake.shape[-1]
        fake = (patch_fake > 0.5) & labels.bool().unsqueeze(1)
        both_fake = fake.unsqueeze(2) & fake.unsqueeze(1)
        both_real = ~fake.unsqueeze(2) & ~fake.unsqueeze(1)
        target = torch.where(
            both_fake, self.c_fake, torch.where(both_real, self.c_real, self.c_cross)
        )
        eye = torch.eye(n, dtype=torch.bool, device=patch_fake.device)
        real_image = ~labels.bool().view(-1, 1, 1)
        return torch.where(real_image & eye, torch.ones_like(target), target)

    def update_gaussians(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        """Move the real and fake Gaussians toward a training batch's patch features."""
        labels = labels.bool()
        dim = features.shape[-1]
        self._update("real", features[~labels].detach().reshape(-1, dim))
        centre = central_patches(self.grid, features.device)
        self._update("fake", features[labels][:, centre].detach().reshape(-1, dim))

    def consistency_loss(
        self, consistency: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """PCL of the consistency map against the targets from the current Gaussians."""
        labels = labels.bool()
        target = self.consistency_target(self.patch_fake_probability(features), labels)
        n = consistency.shape[-1]
        return (consistency - target).abs().sum() / (len(labels) * (n * n - n))

    def loss(self, logits, labels, batch=None):
        out = self._outputs_for(logits)
        loss = F.binary_cross_entropy_with_logits(logits, labels.float())
        if "consistency" not in out:
            return loss
        self.update_gaussians(out["features"], labels)
        if self.progress > 0:  # from the second epoch on, as the authors
            pcl = self.consistency_loss(out["consistency"], out["features"], labels)
            regulariser = self.c_weight * (1 / self.c_real.abs() + 1 / self.c_fake.abs())
            loss = loss + self.consistency_weight * pcl + regulariser
            loss = loss + self.cross_weight * self.c_cross.abs()
        return loss
