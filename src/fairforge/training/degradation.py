"""Training the Exposure paper's near-to-far generator jointly with its far-to-near restorer
(Bulat et al. 2018 style; the networks, and applying them, are
:mod:`fairforge.perturb.learned_degradation`'s).

On two unpaired folders (close-range faces X, far faces Y), each step on a fresh batch of
both (drawn from the step's seed):

- the critics: the 16 px critic compares G(x) with real far faces y, the 64 px critic the
  restored R(G(x)) with the original x (hinge GAN losses);
- G against the 16 px critic plus an MSE term to the 4x average-pooled input that keeps
  content and colour; R against the 64 px critic plus the restoration loss |R(G(x)) - x|
  (L1), which also trains G to keep what R needs; and the cycle on the far side,
  |G(R(y)) - y| (L1), for real far faces.

``restorer=False`` (:class:`HighToLowConfig`) trains G alone. The steps run on
:func:`fairforge.training.loop.run_loop` (one epoch of ``steps`` steps: nothing is validated).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from fairforge.images import write_image
from fairforge.optimizers import make_optimizer
from fairforge.perturb.learned_degradation import (
    HIGH_SIZE,
    LOW_SIZE,
    HighResDiscriminator,
    HighToLowGenerator,
    LowResDiscriminator,
    LowToHighRestorer,
    load_faces,
    sample_sheet_image,
    to_tensor,
)
from fairforge.runtime import pick_device, write_checkpoint
from fairforge.seeding import derive_seed, rng_for
from fairforge.training.loop import run_loop


@dataclass
class HighToLowConfig:
    channels: int = 32
    noise_dim: int = 64
    blocks_per_stage: int = 1
    lr: float = 2e-4
    betas: tuple[float, float] = (0.0, 0.9)
    gan_weight: float = 0.05
    mse_weight: float = 1.0
    restorer: bool = True  # train the far-to-near restorer jointly
    cycle_weight: float = 1.0  # restoration |R(G(x)) - x| and far cycle |G(R(y)) - y|


@dataclass
class TrainResult:
    checkpoint: Path
    sample_sheet: Path
    history: dict[str, list[float]] = field(default_factory=dict)


def face_batch(faces: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` faces drawn with replacement, each flipped left-right with probability 1/2."""
    picked = faces[rng.integers(0, len(faces), size=size)]
    flip = rng.random(size) < 0.5
    picked[flip] = picked[flip, :, ::-1]
    return picked


def train_high_to_low(
    high_dir: str | Path,
    low_dir: str | Path,
    out_ckpt: str | Path,
    steps: int = 2000,
    seed: int = 0,
    batch_size: int = 16,
    device: str | None = "auto",
    config: HighToLowConfig | None = None,
    sample_sheet: str | Path | None = None,
) -> TrainResult:
    """Train the generator from two unpaired folders and save it to ``out_ckpt``.

    ``high_dir``: faces of any size (resized to 64x64); ``low_dir``: real low-resolution
    faces (resized to 16x16). The sample sheet defaults to ``out_ckpt`` with ``.png``.
    """
    config = config or HighToLowConfig()
    dev = pick_device(device)
    high = load_faces(high_dir, HIGH_SIZE)
    low = load_faces(low_dir, LOW_SIZE)

    # Initialise from the seed without touching torch's global generator.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed("high_to_low", seed, "init"))
        gen = HighToLowGenerator(config.channels, config.noise_dim, config.blocks_per_stage)
        disc = LowResDiscriminator(config.channels)
        if config.restorer:
            torch.manual_seed(derive_seed("low_to_high", seed, "init"))
            res = LowToHighRestorer(config.channels, config.blocks_per_stage).to(dev)
            disc_high = HighResDiscriminator(config.channels).to(dev)
    gen, disc = gen.to(dev), disc.to(dev)
    g_params, d_params = list(gen.parameters()), list(disc.parameters())
    if config.restorer:
        g_params += list(res.parameters())
        d_params += list(disc_high.parameters())
    adam = {"optimizer": "adam", "lr": config.lr, "betas": config.betas}
    opt_g, opt_d = make_optimizer(g_params, adam), make_optimizer(d_params, adam)

    def step(epoch, index, _):
        rng = rng_for("high_to_low", seed, "step", index)
        x = to_tensor(face_batch(high, rng, batch_size), dev)
        real = to_tensor(face_batch(low, rng, batch_size), dev)
        z = torch.from_numpy(
            rng.standard_normal((batch_size, config.noise_dim), dtype=np.float32)
        ).to(dev)

        fake = gen(x, z)
        restored = res(fake) if config.restorer else None
        d_loss = F.relu(1.0 - disc(real)).mean() + F.relu(1.0 + disc(fake.detach())).mean()
        if config.restorer:
            # the restorer's critic: original close-range faces against restored ones
            d_loss = d_loss + (
                F.relu(1.0 - disc_high(x)).mean()
                + F.relu(1.0 + disc_high(restored.detach())).mean()
            )
        opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        opt_d.step()

        g_gan = -disc(fake).mean()
        mse = F.mse_loss(fake, F.avg_pool2d(x, 4))
        g_loss = config.gan_weight * g_gan + config.mse_weight * mse
        losses = {"d_loss": d_loss, "g_gan": g_gan, "mse": mse}
        if config.restorer:
            r_gan = -disc_high(restored).mean()
            restoration = F.l1_loss(restored, x)
            far_cycle = F.l1_loss(gen(res(real), z), real)
            g_loss = g_loss + config.gan_weight * r_gan
            g_loss = g_loss + config.cycle_weight * (restoration + far_cycle)
            losses.update(r_gan=r_gan, restoration=restoration, far_cycle=far_cycle)
        opt_g.zero_grad(set_to_none=True)
        g_loss.backward()
        opt_g.step()
        return {name: loss.item() for name, loss in losses.items()}

    outputs = run_loop([0], lambda epoch: range(steps), step, name="high-to-low").outputs
    names = ["d_loss", "g_gan", "mse"] + (
        ["r_gan", "restoration", "far_cycle"] if config.restorer else []
    )
    history = {name: [losses[name] for losses in outputs] for name in names}

    cfg = asdict(config)
    cfg["betas"] = list(config.betas)
    payload = {
        "generator": {k: v.cpu() for k, v in gen.state_dict().items()},
        "discriminator": {k: v.cpu() for k, v in disc.state_dict().items()},
        "config": cfg,
        "train": {
            "steps": steps,
            "seed": seed,
            "batch_size": batch_size,
            "high_dir": str(high_dir),
            "low_dir": str(low_dir),
            "n_high": len(high),
            "n_low": len(low),
        },
        "history": history,
    }
    if config.restorer:
        payload["restorer"] = {k: v.cpu() for k, v in res.state_dict().items()}
        payload["high_discriminator"] = {k: v.cpu() for k, v in disc_high.state_dict().items()}
    out_ckpt = write_checkpoint(out_ckpt, payload)

    sheet_path = Path(sample_sheet) if sample_sheet else out_ckpt.with_suffix(".png")
    write_image(sheet_path, sample_sheet_image(gen.eval(), high[:8], low[:8], seed))
    return TrainResult(out_ckpt, sheet_path, history)


def loss_summary(history: dict[str, list[float]], steps: int) -> list[str]:
    """Loss means over tenths of a run: enough to see whether the critic and the content
    term settled, without one line per step."""
    losses = {name: np.asarray(values) for name, values in history.items()}
    lines = []
    for chunk in np.array_split(np.arange(steps), min(10, steps)):
        means = "  ".join(f"{name} {values[chunk].mean():.4f}" for name, values in losses.items())
        lines.append(f"steps {chunk[0]}-{chunk[-1]}: {means}")
    return lines
