"""Networks of the released forgery generators (``backend: official``), written in torch.

Each module re-implements one author's network so that their released checkpoint loads
as published (:func:`fairforge.checkpoints.read_state_dict` with ``weights_only=True``,
then :func:`fairforge.checkpoints.load_exact`). The methods that use them register in
``fairforge.forgery`` and import these modules only when built, so planning a run never
imports torch.
"""
