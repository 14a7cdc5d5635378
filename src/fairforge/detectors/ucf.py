"""UCF: uncovering common features (Yan et al., ICCV 2023), as DeepfakeBench builds it.

Two full Xception encoders, each ending in DeepfakeBench's ``adjust_channel`` (1×1 conv to 512
channels + BN + ReLU, applied after ``bn4`` without the final ReLU): ``encoder_f`` extracts the
forgery fingerprint, ``encoder_c`` the content. Two 1×1-conv stacks split the fingerprint into a
method-specific half (``block_spe``) and a common half (``block_sha``), 256 channels each; two
MLP heads classify them: ``head_sha`` real/fake (its two outputs become one logit, fake − real,
so sigmoid(logit) is DeepfakeBench's softmax probability of "fake"), ``head_spe`` the forgery
method (real + one class per training method, labels from the samples' ``method`` column,
which the training loop adds as ``batch["method_label"]``; without it every fake counts as
method 1).
A conditional decoder (``con_gan``: AdaIN at three scales, the style being the concatenated
specific and common features) re-renders an image from content features and a fingerprint.

Training losses (:meth:`UCF.losses`, summed by the training loop with ``loss_weights``,
DeepfakeBench's 1 / 0.1 / 0.3 / 0.05 by default):

``common``
    cross-entropy of the common head (real/fake);
``specific``
    cross-entropy of the specific head over the method classes;
``reconstruction``
    L1 of the self reconstructions (own content + own fingerprint) and the cross
    reconstructions (own content + a partner's fingerprint), each targeting the content image,
    averaged per label and summed over real/fake as DeepfakeBench's four terms;
``contrastive``
    triplet margin losses (margin 3) pulling common features of the same label together and
    apart from the other label, and specific features of the same method together and apart
    from the other label's.

Where it departs from DeepfakeBench, because fairforge's loader does not pair real and fake
images: DeepfakeBench's batches are half real, half fake, row i of one half paired with row i
of the other; here each image's cross-reconstruction partner is the i-th image of the other
label in the batch (cyclically; within the batch when it holds one label only) and triplet
partners are drawn within label (or method) groups. The random draws (partners, DeepfakeBench's
p = 0.7 shuffle of common features within each label before reconstruction) use torch's
generator, which the training loop seeds from the detector's id. Evaluation runs the
fingerprint branch only, with the common loss (DeepfakeBench's test loss). DeepfakeBench starts
both encoders from an ImageNet Xception (``pretrained:``, or ``init: random`` to train without).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import (
    DEEPFAKEBENCH_IMAGENET,
    DETECTORS,
    DeepfakeBenchLayout,
    PretrainedLayout,
    PretrainedTarget,
    stated_start,
    weighted_loss,
)
from fairforge.detectors.xception import (
    ENTRY,
    IMAGENET_XCEPTION,
    MIDDLE,
    STEM,
    XCEPTION_TIMM,
    run_stages,
    xception_net,
)

#: Xception's exit flow up to ``bn4``: DeepfakeBench's ``features`` skips the last ReLU when
#: ``adjust_channel`` follows.
EXIT_NO_RELU = ("block12", "conv3", "bn3", "act3", "conv4", "bn4")

#: DeepfakeBench ``UCFDetector`` state-dict names → ours (regex, replacement), for
#: :mod:`fairforge.detectors.deepfakebench`; every other name is identical.
DEEPFAKEBENCH_RULES = (
    (r"^(encoder_[fc])\.last_linear\.(weight|bias)$", r"\1.fc.\2"),
    (r"^((?:encoder_[fc]|block_(?:spe|sha)|head_(?:spe|sha)|con_gan)\..+)$", r"\1"),
)

DEFAULT_LOSS_WEIGHTS = {"common": 1.0, "specific": 0.1, "reconstruction": 0.3, "contrastive": 0.05}


def encoder(feature_dim: int = 512) -> nn.Module:
    """DeepfakeBench's Xception in ``adjust_channel`` mode: timm's ``legacy_xception`` (same
    parameter names, two-class ``fc`` that UCF never uses) plus the 2048 → 512 reduction."""
    net = xception_net(num_classes=2)
    net.adjust_channel = nn.Sequential(
        nn.Conv2d(2048, feature_dim, 1, 1), nn.BatchNorm2d(feature_dim), nn.ReLU(inplace=False)
    )
    return net


def encode(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return net.adjust_channel(run_stages(net, x, STEM + ENTRY + MIDDLE + EXIT_NO_RELU))


class Conv2d1x1(nn.Module):
    """Three 1×1 convolutions with leaky ReLUs between them."""

    def __init__(self, cin: int, hidden: int, cout: int):
        super().__init__()
        self.conv2d = nn.Sequential(
            nn.Conv2d(cin, hidden, 1),
            nn.LeakyReLU(inplace=True),
            nn.Conv2d(hidden, hidden, 1),
            nn.LeakyReLU(inplace=True),
            nn.Conv2d(hidden, cout, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


class Head(nn.Module):
    """Global average pool, a two-layer MLP, dropout on its outputs; returns (outputs, pooled)."""

    def __init__(self, cin: int, hidden: int, cout: int, drop_rate: float = 0.2):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(cin, hidden), nn.LeakyReLU(inplace=True), nn.Linear(hidden, cout)
        )
        self.do = nn.Dropout(drop_rate)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feat = x.mean(dim=(2, 3))
        return self.do(self.mlp(feat)), feat


def adain(content: torch.Tensor, style: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Give ``content`` the per-channel mean and standard deviation of ``style`` (unbiased
    variances plus ``eps``, as DeepfakeBench's AdaIN)."""
    c, s = content.flatten(2), style.flatten(2)
    c_mean, s_mean = c.mean(-1)[..., None, None], s.mean(-1)[..., None, None]
    c_std = (c.var(-1) + eps).sqrt()[..., None, None]
    s_std = (s.var(-1) + eps).sqrt()[..., None, None]
    return (content - c_mean) / c_std * s_std + s_mean


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1),
        nn.ReLU(inplace=True),
    )


class ConditionalDecoder(nn.Module):
    """DeepfakeBench's ``Conditional_UNet``: the content map is re-styled by AdaIN at three
    scales (the style map goes through the same up-convolutions), then upsampled ×4 to RGB."""

    def __init__(self, cin: int = 512, drop_rate: float = 0.3):
        super().__init__()
        self.dropout = nn.Dropout(drop_rate)
        self.dconv_up3 = _double_conv(cin, 256)
        self.dconv_up2 = _double_conv(256, 128)
        self.dconv_up1 = _double_conv(128, 64)
        self.conv_last = nn.Conv2d(64, 3, 1)

    @staticmethod
    def _up(x: torch.Tensor, factor: int = 2) -> torch.Tensor:
        return F.interpolate(x, scale_factor=factor, mode="bilinear", align_corners=True)

    def forward(self, style: torch.Tensor, content: torch.Tensor, size) -> torch.Tensor:
        x, c = content, style
        for conv in (self.dconv_up3, self.dconv_up2):
            x = conv(self.dropout(self._up(adain(x, c))))
            c = conv(self.dropout(self._up(c)))
        x = self.dconv_up1(self.dropout(self._up(adain(x, c))))
        out = self._up(self.conv_last(x), 4)
        if out.shape[-2:] != tuple(size):  # 256 px gives 256; other sizes are resampled
            out = F.interpolate(out, size=tuple(size), mode="bilinear", align_corners=True)
        return torch.tanh(out)


def _same_group_draw(keys: torch.Tensor) -> torch.Tensor:
    """For each row, a random row with the same key (itself if it is alone)."""
    out = torch.arange(len(keys), device=keys.device)
    for key in keys.unique():
        rows = (keys == key).nonzero().flatten()
        out[rows] = rows[torch.randperm(len(rows)).to(keys.device)]
    return out


def _other_label_rows(labels: torch.Tensor) -> torch.Tensor:
    """For each row, a row of the other label: the i-th real pairs with the i-th fake
    (cyclically); a one-label batch pairs each row with the next."""
    n = len(labels)
    real, fake = (labels == 0).nonzero().flatten(), (labels != 0).nonzero().flatten()
    if len(real) == 0 or len(fake) == 0:
        return torch.arange(n, device=labels.device).roll(-1)
    out = torch.empty(n, dtype=torch.long, device=labels.device)
    out[real] = fake[torch.arange(len(real), device=labels.device) % len(fake)]
    out[fake] = real[torch.arange(len(fake), device=labels.device) % len(real)]
    return out


def _triplet(anchor, positive, negative, margin: float) -> torch.Tensor:
    """Per row: max(0, ‖a − p‖ − ‖a − n‖ + margin)."""
    d_pos = F.pairwise_distance(anchor, positive)
    d_neg = F.pairwise_distance(anchor, negative)
    return (d_pos - d_neg + margin).clamp_min(0.0)


def _mean_per_label(per_image: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean over the real images plus mean over the fake ones (a label absent adds 0)."""
    total = per_image.new_zeros(())
    for mask in (labels == 0, labels != 0):
        if mask.any():
            total = total + per_image[mask].mean()
    return total


@DETECTORS.register(
    "ucf",
    recipe=stated_start("imagenet", DEEPFAKEBENCH_IMAGENET),
    pretrained=PretrainedLayout(
        (
            PretrainedTarget("encoder_f", own=(r"^adjust_channel\.",)),
            PretrainedTarget("encoder_c", own=(r"^adjust_channel\.",)),
        ),
        IMAGENET_XCEPTION + ", into both encoders (their 2048 -> 512 reductions start random)",
        XCEPTION_TIMM,
    ),
    # two-class head kept (fake − real in forward)
    deepfakebench={"ucf": DeepfakeBenchLayout(DEEPFAKEBENCH_RULES)},
)
class UCF(AuxiliaryLossDetector):
    default_input_size = 256
    needs_method_labels = True

    def __init__(
        self,
        input_size: int = 256,
        feature_dim: int = 512,
        num_methods: int = 5,
        margin: float = 3.0,
        shuffle_p: float = 0.7,
        loss_weights: dict | None = None,
    ):
        super().__init__()
        self.input_size = input_size
        self.margin = margin
        self.shuffle_p = shuffle_p
        self.loss_weights = {**DEFAULT_LOSS_WEIGHTS, **(loss_weights or {})}
        half = feature_dim // 2
        self.encoder_f = encoder(feature_dim)
        self.encoder_c = encoder(feature_dim)
        self.block_spe = Conv2d1x1(feature_dim, half, half)
        self.block_sha = Conv2d1x1(feature_dim, half, half)
        self.head_spe = Head(half, feature_dim, num_methods)
        self.head_sha = Head(half, feature_dim, 2)
        self.con_gan = ConditionalDecoder(feature_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fingerprint = encode(self.encoder_f, x)
        f_spe, f_sha = self.block_spe(fingerprint), self.block_sha(fingerprint)
        out_sha, feat_sha = self.head_sha(f_sha)
        logits = out_sha[:, 1] - out_sha[:, 0]
        if not self.training:
            return self._keep(logits)  # scoring needs neither content nor reconstructions
        out_spe, feat_spe = self.head_spe(f_spe)
        return self._keep(
            logits,
            image=x,
            content=encode(self.encoder_c, x),
            f_spe=f_spe,
            f_sha=f_sha,
            out_spe=out_spe,
            feat_sha=feat_sha,
            feat_spe=feat_spe,
        )

    def losses(self, logits, labels, batch=None) -> dict[str, torch.Tensor]:
        out = self._outputs_for(logits)
        common = F.binary_cross_entropy_with_logits(logits, labels.float())
        if "content" not in out:  # eval mode: DeepfakeBench's test loss
            return {"common": common}
        if out["content"].shape[-2:].numel() < 2:
            raise ValueError(
                f"UCF needs inputs of at least 64 px to train (got {tuple(out['image'].shape[-2:])}):"
                " its AdaIN takes channel statistics over a content map of at least 2 positions"
            )
        labels = labels.long()
        methods = (batch or {}).get("method_label")
        if methods is None:  # a caller outside the training loop: every fake is method 1
            methods = (labels != 0).long()
        x = out["image"]
        f_sha = out["f_sha"]
        if float(torch.rand(())) < self.shuffle_p:  # common features swapped within label
            f_sha = f_sha[_same_group_draw(labels != 0)]
        style = torch.cat((out["f_spe"], f_sha), dim=1)
        partner = _other_label_rows(labels)
        size = x.shape[-2:]
        self_recon = self.con_gan(style, out["content"], size)
        cross_recon = self.con_gan(style[partner], out["content"], size)
        l1 = (self_recon - x).abs().flatten(1).mean(1) + (cross_recon - x).abs().flatten(1).mean(1)
        # triplets: positive of the same label (method), negative a random one of the other label
        common_f, spe_f = out["feat_sha"], out["feat_spe"]
        other = _same_group_draw(labels != 0)[partner]
        contrastive = _mean_per_label(
            _triplet(
                common_f, common_f[_same_group_draw(labels != 0)], common_f[other], self.margin
            )
            + _triplet(spe_f, spe_f[_same_group_draw(methods)], spe_f[other], self.margin),
            labels,
        )
        return {
            "common": common,
            "specific": F.cross_entropy(out["out_spe"], methods),
            "reconstruction": _mean_per_label(l1, labels),
            "contrastive": contrastive,
        }

    def loss(self, logits, labels, batch=None):
        """The weighted sum of :meth:`losses` (what the training loop minimises)."""
        return weighted_loss(self, logits, labels, batch)[0]
