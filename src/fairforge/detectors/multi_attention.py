"""Multiple-attention (Zhao et al., "Multi-attentional Deepfake Detection", CVPR 2021).

On the authors' EfficientNet-B4 (efficientnet_pytorch's, built from timm's
``tf_efficientnet_b4``: TF "same" padding fixed for the input size, BatchNorm eps 1e-3; see
:mod:`fairforge.detectors.efficientnet`), no ImageNet head. As the authors' code (and
DeepfakeBench's copy of it) walks the backbone's modules, the stem's and the head's BatchNorm
are not followed by their swish.

* multiple spatial attention heads: from the features after stage 5 (160 channels, stride 16)
  a 3×3 conv + BN + ReLU and a 1×1 conv + BN give ``num_attentions`` (M = 4) non-negative maps
  (ELU + 1), times the authors' border mask (a 24 × 24 grid with its outer two cells zero,
  resized nearest to the map);
* textural feature enhancement on the shallow features after stage 2 (32 channels, stride 4):
  local average pooling to the attention grid, its residual (the texture), then a densely
  connected block of three 3×3 convs and a 1×1 conv to 4 × 32 channels;
* bilinear attention pooling (BAP): each attention map pools the enhanced texture into one
  L2-normalised vector (the textural feature matrix P, M × 128), and the sum of the maps pools
  the final 1792-channel features (the global feature G, normalised by the attention mass);
* an ensemble classifier on [projection(P), projection(G)] (Hardswish MLPs of ``mid_dim``);
  dropout on P (``drop_rate``) and before the classifier (``drop_rate_final``, which
  DeepfakeBench builds but does not apply).

The regional independence loss (RIL) pulls each attention's pooled texture (the non-textural
average D pooled by the same map) toward a per-attention centre within a margin (0.05 for real,
0.1 for fake: fakes vary more) and pushes the centres apart beyond ``inter_margin``; the
centres are a moving average (``centre_rate``) updated in training, training state that is not
saved with the weights (as in DeepfakeBench, where they live in the loss).

Training follows the authors' code and DeepfakeBench's copy of it:

* **warm-up** (``warmup_epochs``, DeepfakeBench's ``backbone_nEpochs`` = 10; the authors
  pretrain the backbone in a run of its own): in the first epochs only the plain backbone
  trains, scored by its own head on the average-pooled final features (``warmup_head``: the
  EfficientNet's two-class ``last_layer`` as one logit), with BCE alone; the attention, texture
  and classifier modules are not run, so their weights, BatchNorm statistics and the RIL
  centres stay as they were. From epoch ``warmup_epochs + 1`` the whole model trains. The
  training loop tells the model the epoch (:meth:`Detector.on_epoch_start`); a model never
  told one trains whole. A warm-up as long as the run (nothing left for the attention head)
  is an error. Validation scores with the attention head throughout, so early stopping
  (``patience``) should exceed the warm-up.
* **attention-guided data augmentation** (AGDA, :func:`agda`): after the first pass, each
  image gets a second one in which the region of one of its attention maps (drawn with
  probability ∝ √(attention mass + 1)) is replaced by a blurred, noisy copy of the image: the
  image at half size (``agda_scale_factor``), Gaussian blur (``agda_kernel_size`` 11,
  ``agda_sigma`` 7), Gaussian noise (``agda_noise_rate`` 0.1, in the model's normalised input
  space), back to full size, blended in by the map normalised to its maximum and passed
  through a soft threshold (sigmoid((a − t)·z), rescaled to 0 at a = 0; t drawn from
  ``agda_threshold`` (0.4, 0.6), z from ``agda_zoom`` (3, 5), once per batch): where the map is
  zero the image is unchanged. The second pass adds its BCE (weight ``agda_weight`` 1) and the
  match loss (weight ``match_weight`` 0.1): the mean distance between the two passes' pooled
  non-textural features over the attentions that were not dropped. The draws come from the
  batch's seed (``batch["seed"]``, which the training loop derives per epoch and batch; seed 0
  outside it). ``agda_weight = match_weight = 0`` turns AGDA off. As in the authors' code, the second pass's
  RIL is left out of the loss (it is not computed).

Loss = BCE + ``ril_weight`` · RIL + ``agda_weight`` · BCE(AGDA) + ``match_weight`` · match
(:meth:`MultiAttention.losses`, one term each). Differences from the authors' code: the RIL
centres' rate does not decay (``alpha_decay``), the authors' attention dropout (whole maps
dropped) is DeepfakeBench's element-wise dropout on P. The authors start from an ImageNet
EfficientNet-B4 (``pretrained:``, or ``init: random`` to train without).
DeepfakeBench trains on the AGDA images instead of the originals (one pass, no match loss);
here the authors' two passes are used for both forms. The default input is the authors' 380 px
(DeepfakeBench uses 256, the Benchmark paper's cost table 299); any size ≥ 64 px works.

``multi_attention_dfb`` is DeepfakeBench's form (its EfficientNet's unpadded stem and paddings
for 380 px, mean = std = 0.5, 256 px); its checkpoints load exactly
(:mod:`fairforge.detectors.deepfakebench`), the EfficientNet's own two-class head
(``backbone.last_layer``, trained only in the warm-up epochs) becoming ``warmup_head``.
DeepfakeBench's model scores with that head, not the attention head, for its first
``backbone_nEpochs × batch_per_epoch`` forward passes, including those of a freshly loaded
checkpoint in its test script; fairforge scores with the attention head at evaluation, and
with the warm-up head only in the training passes of the warm-up epochs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import (
    DEEPFAKEBENCH_IMAGENET,
    DETECTORS,
    IMAGENET_MEAN,
    IMAGENET_STD,
    DeepfakeBenchLayout,
    stated_start,
    weighted_loss,
)
from fairforge.detectors.efficientnet import (
    EFFICIENTNET_PRETRAINED,
    EFFICIENTNET_PYTORCH_SIZE,
    EFFNET_DFB_RULES,
    PADDINGS,
    static_padding,
)
from fairforge.recipes import Recipe

SHALLOW_STAGES = 2  # texture from the end of stage 2 (stride 4)
ATTENTION_STAGES = 5  # attention from the end of stage 5 (stride 16)


class AttentionMap(nn.Module):
    """M non-negative spatial attention maps from deep features, with the authors' border
    mask: a 24 × 24 grid whose outer two cells are zero, resized (nearest) to the map."""

    def __init__(self, channels: int, num_attentions: int):
        super().__init__()
        self.conv_extract = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, num_attentions, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(num_attentions)
        mask = torch.zeros(1, 1, 24, 24)
        mask[..., 2:-2, 2:-2] = 1.0
        self.register_buffer("mask", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.bn2(self.conv2(F.relu(self.bn1(self.conv_extract(x)))))
        a = F.elu(a) + 1.0
        return a * F.interpolate(self.mask, size=a.shape[-2:], mode="nearest").to(a.dtype)


class TextureEnhance(nn.Module):
    """Local-average residual of shallow features and a 3-conv dense block (4× the channels)."""

    def __init__(self, channels: int):
        super().__init__()
        n = channels
        self.out_channels = 4 * n
        self.conv0 = nn.Conv2d(n, n, 1)
        self.bn1, self.conv1 = nn.BatchNorm2d(n), nn.Conv2d(n, n, 3, padding=1)
        self.bn2, self.conv2 = nn.BatchNorm2d(2 * n), nn.Conv2d(2 * n, n, 3, padding=1)
        self.bn3, self.conv3 = nn.BatchNorm2d(3 * n), nn.Conv2d(3 * n, n, 3, padding=1)
        self.bn4, self.conv_last = nn.BatchNorm2d(4 * n), nn.Conv2d(4 * n, 4 * n, 1)
        self.bn_last = nn.BatchNorm2d(4 * n)

    def forward(self, x: torch.Tensor, grid: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(enhanced texture, D: the features' local averages on the attention ``grid``)."""
        d = F.adaptive_avg_pool2d(x, grid)
        x = x - F.interpolate(d, size=x.shape[-2:], mode="nearest")
        f = self.conv0(x)
        f = torch.cat([f, self.conv1(F.relu(self.bn1(f)))], 1)
        f = torch.cat([f, self.conv2(F.relu(self.bn2(f)))], 1)
        f = torch.cat([f, self.conv3(F.relu(self.bn3(f)))], 1)
        return self.bn_last(self.conv_last(F.relu(self.bn4(f)))), d


def attention_pool(features: torch.Tensor, attentions: torch.Tensor, norm: str) -> torch.Tensor:
    """Bilinear attention pooling: (B, M, C), one feature vector per attention map.

    ``norm="l2"`` normalises each vector (textures), ``"mass"`` divides it by the map's total
    attention (an attention-weighted average; deep features)."""
    if attentions.shape[-2:] != features.shape[-2:]:
        attentions = F.interpolate(
            attentions, size=features.shape[-2:], mode="bilinear", align_corners=True
        )
    pooled = torch.einsum("bmhw,bchw->bmc", attentions, features)
    if norm == "l2":
        return F.normalize(pooled, p=2, dim=-1)
    # DeepfakeBench's authors add the epsilon to every pixel of the map before summing it
    mass = (attentions + 1e-8).sum(dim=(2, 3)).unsqueeze(-1)
    return pooled / mass


def gaussian_blur(x: torch.Tensor, kernel_size: int, sigma: float) -> torch.Tensor:
    """A separable Gaussian blur of (B, C, H, W) images with reflected borders (kornia's
    ``GaussianBlur2d``, which the authors' AGDA uses)."""
    half = (kernel_size - 1) / 2
    t = torch.arange(kernel_size, device=x.device, dtype=x.dtype) - half
    k = torch.exp(-(t**2) / (2.0 * sigma**2))
    k = k / k.sum()
    c, p = x.shape[1], kernel_size // 2
    x = F.pad(x, (p, p, p, p), mode="reflect")
    x = F.conv2d(x, k.view(1, 1, 1, -1).expand(c, 1, 1, -1), groups=c)
    return F.conv2d(x, k.view(1, 1, -1, 1).expand(c, 1, -1, 1), groups=c)


def agda(
    images: torch.Tensor,
    attentions: torch.Tensor,
    generator: torch.Generator,
    kernel_size: int = 11,
    sigma: float = 7.0,
    threshold: tuple[float, float] = (0.4, 0.6),
    zoom: tuple[float, float] = (3.0, 5.0),
    scale_factor: float = 0.5,
    noise_rate: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention-guided data augmentation (the authors' "soft" mode): per image, one attention
    map drawn with probability ∝ √(its mass + 1) is resized to the image, normalised to its
    maximum and softly thresholded; inside it the image is blended toward a blurred, noisy
    copy made at ``scale_factor`` of the size. Where the map is zero the image is unchanged.
    Every draw (the maps, the threshold and zoom of the batch, the noise) comes from
    ``generator`` (on the images' device). Returns (augmented images, the maps' indices)."""
    with torch.no_grad():
        b, _, h, w = images.shape
        weights = torch.sqrt(attentions.float().sum(dim=(2, 3)) + 1.0)
        index = torch.multinomial(weights, 1, generator=generator).squeeze(1)
        maps = F.interpolate(attentions.float(), (h, w), mode="bilinear", align_corners=True)
        a = maps.gather(1, index.view(-1, 1, 1, 1).expand(-1, 1, h, w))
        a = a / (a.amax(dim=(2, 3), keepdim=True) + 1e-8)
        u = torch.rand(2, generator=generator, device=images.device, dtype=torch.float32)
        t = threshold[0] + (threshold[1] - threshold[0]) * u[0]
        z = zoom[0] + (zoom[1] - zoom[0]) * u[1]
        bottom = torch.sigmoid(-t * z)
        a = ((torch.sigmoid((a - t) * z) - bottom) / (1.0 - bottom)).to(images.dtype)
        small = F.interpolate(
            images, scale_factor=scale_factor, mode="bilinear", align_corners=True
        )
        small = gaussian_blur(small, kernel_size, sigma)
        noise = torch.randn(
            small.shape, generator=generator, device=images.device, dtype=torch.float32
        )
        small = small + noise.to(small.dtype) * noise_rate
        blurred = F.interpolate(small, (h, w), mode="bilinear", align_corners=True)
        return images * (1.0 - a) + blurred * a, index


def _keep_old_checkpoints_loading(module, state_dict, prefix, *args) -> None:
    """A multi-attention state dict from before the warm-up head existed loads with the head
    as built (evaluation never uses it)."""
    if not any(k.startswith(prefix + "backbone.") for k in state_dict):
        return
    for name, value in module.warmup_head.state_dict().items():
        state_dict.setdefault(f"{prefix}warmup_head.{name}", value.detach().clone())


@DETECTORS.register(
    "multi_attention",
    # Benchmark App. A states the backbone and SL_t, SL_a (the architecture's stages), no
    # training value
    recipe=Recipe(
        input_size=380,
        init="imagenet",
        source="paper:Multiple-attention (Zhao et al. 2021)",
        cite={
            "input_size": "paper:Multiple-attention (Zhao et al. 2021), the authors' 380 px",
            "init": "paper:Multiple-attention (Zhao et al. 2021): ImageNet-pretrained "
            "EfficientNet-B4",
        },
    ),
    pretrained=EFFICIENTNET_PRETRAINED,
)
class MultiAttention(AuxiliaryLossDetector):
    default_input_size = 380
    mean = IMAGENET_MEAN
    std = IMAGENET_STD

    def __init__(
        self,
        input_size: int = 380,
        backbone: str = "tf_efficientnet_b4",
        num_attentions: int = 4,
        mid_dim: int = 256,
        ril_weight: float = 1.0,
        inter_margin: float = 0.2,
        intra_margins: tuple[float, float] = (0.05, 0.1),
        centre_rate: float = 0.05,
        drop_rate: float = 0.25,
        drop_rate_final: float = 0.5,
        padding: str = "same",
        warmup_epochs: int = 10,
        agda_weight: float = 1.0,
        match_weight: float = 0.1,
        agda_kernel_size: int = 11,
        agda_sigma: float = 7.0,
        agda_threshold: tuple[float, float] = (0.4, 0.6),
        agda_zoom: tuple[float, float] = (3.0, 5.0),
        agda_scale_factor: float = 0.5,
        agda_noise_rate: float = 0.1,
    ):
        super().__init__()
        if int(warmup_epochs) != warmup_epochs or warmup_epochs < 0:
            raise ValueError(
                f"multi_attention warmup_epochs must be an integer ≥ 0, got {warmup_epochs}"
            )
        if agda_kernel_size < 1 or agda_kernel_size % 2 == 0:
            raise ValueError(
                f"multi_attention agda_kernel_size must be odd, got {agda_kernel_size}"
            )
        for name, pair in (("agda_threshold", agda_threshold), ("agda_zoom", agda_zoom)):
            if len(pair) != 2 or pair[0] > pair[1]:
                raise ValueError(f"multi_attention {name} must be a (low, high) range, got {pair}")
        self.warmup_epochs = int(warmup_epochs)
        self.warming_up = False  # set per epoch by on_epoch_start
        self.agda_weight = agda_weight
        self.match_weight = match_weight
        self.agda_options = dict(
            kernel_size=int(agda_kernel_size),
            sigma=float(agda_sigma),
            threshold=tuple(agda_threshold),
            zoom=tuple(agda_zoom),
            scale_factor=float(agda_scale_factor),
            noise_rate=float(agda_noise_rate),
        )
        self.loss_weights = {"ril": ril_weight, "agda_bce": agda_weight, "match": match_weight}
        if padding not in PADDINGS:
            raise ValueError(f"multi_attention padding must be one of {PADDINGS}, got {padding!r}")
        if not backbone.startswith("tf_efficientnet"):
            raise ValueError(f"multi_attention needs a tf_efficientnet_* backbone, got {backbone}")
        self.input_size = input_size
        self.padding = padding
        self.ril_weight = ril_weight
        self.inter_margin = inter_margin
        self.intra_margins = tuple(intra_margins)
        self.centre_rate = centre_rate
        self.centres: torch.Tensor | None = None  # RIL state, as DeepfakeBench: not saved
        import timm  # see fairforge.detectors

        net = timm.create_model(backbone, pretrained=False, num_classes=0)
        if padding == "deepfakebench":
            net = static_padding(net, EFFICIENTNET_PYTORCH_SIZE.get(backbone, 380), True)
        else:
            net = static_padding(net, input_size)
        # the authors' feature loop runs the stem and head BatchNorms without their swish
        net.bn1.act = nn.Identity()
        net.bn2.act = nn.Identity()
        self.backbone = net
        # the plain backbone's own head, trained (and used) only in the warm-up epochs
        self.warmup_head = nn.Linear(net.num_features, 1)
        info = net.feature_info
        shallow = _stage_channels(info, SHALLOW_STAGES)
        deep = _stage_channels(info, ATTENTION_STAGES)
        self.attention_generation = AttentionMap(deep, num_attentions)
        self.texture_enhance = TextureEnhance(shallow)
        self.dropout = nn.Dropout(drop_rate)
        self.projection_local = nn.Sequential(
            nn.Linear(num_attentions * self.texture_enhance.out_channels, mid_dim),
            nn.Hardswish(),
            nn.Linear(mid_dim, mid_dim),
            nn.Hardswish(),
        )
        self.projection_final = nn.Sequential(nn.Linear(net.num_features, mid_dim), nn.Hardswish())
        self.dropout_final = nn.Dropout(drop_rate_final)
        self.ensemble_classifier_fc = nn.Sequential(
            nn.Linear(2 * mid_dim, mid_dim), nn.Hardswish(), nn.Linear(mid_dim, 1)
        )
        self.register_load_state_dict_pre_hook(_keep_old_checkpoints_loading)

    def on_epoch_start(self, epoch: int, epochs: int) -> None:
        """Warm-up: epochs 1 … ``warmup_epochs`` train the plain backbone only."""
        if self.warmup_epochs and self.warmup_epochs >= epochs:
            raise ValueError(
                f"{type(self).__name__}: warmup_epochs={self.warmup_epochs} leaves none of the "
                f"{epochs} training epochs to the attention head: set the detector's "
                "model: {warmup_epochs: N} below its epochs"
            )
        self.warming_up = epoch <= self.warmup_epochs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and self.warming_up:
            final = self._backbone(x)[-1]
            logits = self.warmup_head(final.mean(dim=(2, 3))).squeeze(1)
            return self._keep(logits, warmup=True)
        out = self._heads(x)
        return self._keep(out["logits"], attentions=out["attentions"], d=out["d"], image=x)

    def _backbone(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The EfficientNet's (shallow, attention-layer, final) features: the ends of stages 2
        and 5 and the head conv + BatchNorm (no swish, as the authors' feature loop)."""
        net = self.backbone
        x = net.bn1(net.conv_stem(x))
        for i, stage in enumerate(net.blocks):
            x = stage(x)
            if i + 1 == SHALLOW_STAGES:
                shallow = x
            if i + 1 == ATTENTION_STAGES:
                deep = x
        return shallow, deep, net.bn2(net.conv_head(x))

    def _heads(self, x: torch.Tensor) -> dict:
        """The attention model's logits, attention maps and non-textural features D."""
        shallow, deep, final = self._backbone(x)
        attentions = self.attention_generation(deep)
        texture, d = self.texture_enhance(shallow, attentions.shape[-2:])
        p = self.dropout(attention_pool(texture, attentions, "l2")).flatten(1)
        g = attention_pool(final, attentions.sum(1, keepdim=True), "mass").squeeze(1)
        features = torch.cat([self.projection_local(p), F.hardswish(self.projection_final(g))], 1)
        logits = self.ensemble_classifier_fc(self.dropout_final(features)).squeeze(1)
        return {"logits": logits, "attentions": attentions, "d": d}

    def regional_independence(
        self, d: torch.Tensor, attentions: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """RIL on the non-textural features ``d`` pooled by each attention map; in training
        the centres first move toward the batch (moving average, no gradient)."""
        v = attention_pool(d, attentions, "l2")  # (B, M, C)
        centres = self.centres
        if centres is None or centres.shape != v.shape[1:] or centres.device != v.device:
            centres = torch.zeros(v.shape[1:], device=v.device, dtype=torch.float32)
        if self.training:
            with torch.no_grad():
                centres = centres + self.centre_rate * (v.detach() - centres).mean(0)
        self.centres = centres
        margins = torch.tensor(self.intra_margins, device=v.device)[labels.long()].unsqueeze(1)
        intra = F.relu((v - centres).norm(dim=-1) - margins).mean()
        m = centres.shape[0]
        gaps = torch.cdist(centres, centres)[torch.triu_indices(m, m, 1).unbind(0)]
        inter = F.relu(self.inter_margin - gaps).sum() / m
        return intra + inter

    def losses(self, logits, labels, batch=None) -> dict[str, torch.Tensor]:
        """In the warm-up, the backbone head's BCE alone; then BCE, RIL and, in training
        with AGDA on, the AGDA pass's BCE and the match loss (weighted by
        :attr:`loss_weights`). AGDA draws from ``batch["seed"]`` (0 without one)."""
        out = self._outputs_for(logits)
        bce = F.binary_cross_entropy_with_logits(logits, labels.float())
        if out.get("warmup"):
            return {"loss": bce}
        terms = {"bce": bce, "ril": self.regional_independence(out["d"], out["attentions"], labels)}
        if self.training and (self.agda_weight or self.match_weight):
            terms.update(self._agda_terms(out, labels, batch))
        return terms

    def _agda_terms(self, out: dict, labels, batch) -> dict[str, torch.Tensor]:
        """The second pass on the AGDA images: its BCE and the match loss."""
        image, attentions = out["image"], out["attentions"]
        seed = int(batch["seed"]) if batch and "seed" in batch else 0
        generator = torch.Generator(device=image.device).manual_seed(seed)
        augmented, index = agda(image, attentions.detach(), generator, **self.agda_options)
        second = self._heads(augmented)
        first_v = attention_pool(out["d"], attentions, "l2")
        second_v = attention_pool(second["d"], second["attentions"], "l2")
        kept = 1.0 - F.one_hot(index, attentions.shape[1]).to(first_v.dtype)
        return {
            "agda_bce": F.binary_cross_entropy_with_logits(second["logits"], labels.float()),
            "match": ((second_v - first_v).norm(dim=-1) * kept).mean(),
        }

    def loss(self, logits, labels, batch=None):
        """The weighted sum of :meth:`losses`."""
        return weighted_loss(self, logits, labels, batch)[0]


@DETECTORS.register(
    "multi_attention_dfb",
    recipe=stated_start("imagenet", DEEPFAKEBENCH_IMAGENET),
    pretrained=EFFICIENTNET_PRETRAINED,
    deepfakebench={
        "multi_attention": DeepfakeBenchLayout(
            (
                *EFFNET_DFB_RULES,
                (
                    r"^(attention_generation|texture_enhance|projection_local|projection_final"
                    r"|ensemble_classifier_fc)\.(.+)$",
                    r"\1.\2",
                ),
                # the EfficientNet's own head, trained only in the warm-up epochs
                (r"^backbone\.last_layer\.(weight|bias)$", r"warmup_head.\1"),
            ),
            head=("ensemble_classifier_fc.2", "warmup_head"),
        )
    },
)
class MultiAttentionDFB(MultiAttention):
    """DeepfakeBench's ``multi_attention``: its EfficientNet-B4 (unpadded stem,
    efficientnet_pytorch's paddings for 380 px, ``padding="deepfakebench"``), mean = std = 0.5,
    256 px."""

    default_input_size = 256
    mean = (0.5, 0.5, 0.5)
    std = (0.5, 0.5, 0.5)

    def __init__(self, input_size: int = 256, padding: str = "deepfakebench", **kwargs):
        super().__init__(input_size=input_size, padding=padding, **kwargs)


def _stage_channels(feature_info, stages: int) -> int:
    """Channels at the end of the first ``stages`` EfficientNet stages."""
    for entry in feature_info:
        if entry["module"] == f"blocks.{stages - 1}":
            return int(entry["num_chs"])
    raise ValueError(f"the backbone has no stage {stages} in its feature_info")
