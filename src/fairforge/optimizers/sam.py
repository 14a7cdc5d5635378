"""SAM, what ``sam: true`` in a recipe wraps its optimizer in
(:func:`fairforge.optimizers.make_optimizer`); the one module of the optimizers that needs
torch to be imported."""

from __future__ import annotations

from collections.abc import Callable

import torch


class SAM(torch.optim.Optimizer):
    """Sharpness-Aware Minimization (Foret et al., ICLR 2021) around a base optimizer.

    :meth:`step` takes a closure that recomputes the loss with gradients: the first
    gradient (already in ``.grad``) moves the weights to ``w + rho * g / ||g||``, the
    closure's second forward/backward pass gives the gradient there, the weights go back to
    ``w`` and the base optimizer steps with that gradient. The lr schedule sets the base's
    (shared) ``param_groups``.
    """

    def __init__(self, base: torch.optim.Optimizer, rho: float = 0.05):
        if rho <= 0:
            raise ValueError(f"SAM's rho must be positive, got {rho}")
        self.base = base
        self.rho = rho
        self.param_groups = base.param_groups
        self.state = base.state
        self.defaults = base.defaults

    @torch.no_grad()
    def _ascend(self) -> None:
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        norm = torch.norm(torch.stack([g.norm(2) for g in grads]), 2) if grads else 0.0
        scale = self.rho / (float(norm) + 1e-12)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                e = p.grad * scale
                p.add_(e)
                self.base.state.setdefault(p, {})["sam_e"] = e

    @torch.no_grad()
    def _descend(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                e = self.base.state.get(p, {}).pop("sam_e", None)
                if e is not None:
                    p.sub_(e)
        self.base.step()

    def step(self, closure: Callable[[], torch.Tensor]) -> torch.Tensor:  # type: ignore[override]
        if closure is None:
            raise ValueError("SAM needs a closure that recomputes the loss and its gradient")
        self._ascend()
        with torch.enable_grad():
            loss = closure()
        self._descend()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)
