"""Networks of the released forgery generators (``backend: official``), written in torch.

Each module re-implements one author's network so that their released checkpoint loads
as published (:func:`fairforge.checkpoints.read_state_dict` with ``weights_only=True``,
then :func:`fairforge.checkpoints.load_exact`). The methods that use them register in
``fairforge.forgery`` and import these modules only when built, so planning a run never
imports torch.
"""


def load_released(build, state: dict, what: str, device: str = "cpu"):
    """``build()`` made without initialising its parameters (on the meta device, then
    allocated on ``device``), filled from ``state`` by :func:`fairforge.checkpoints.load_exact`
    (every key and shape must match), in eval mode. Skipping the random initialisation
    that loading overwrites saves seconds on the large released networks."""
    import torch

    from fairforge.checkpoints import load_exact

    with torch.device("meta"):
        module = build()
    module = module.to_empty(device=device)
    load_exact(module, state, what)
    return module.eval()
