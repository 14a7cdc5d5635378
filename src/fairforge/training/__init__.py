"""Training: every trainer of the package, on one loop.

- :mod:`~fairforge.training.loop`: epochs of steps, validation, the best epoch, early
  stopping and the checkpoint of the best, with hooks (:func:`~fairforge.training.loop.run_loop`);
- :mod:`~fairforge.training.detector`: the network detectors (FairFD's protocol, the recipes
  of :mod:`fairforge.recipes`), their training and validation sets and checkpoints;
- :mod:`~fairforge.training.encoder`: the face encoders of the ranking study (the Exposure
  paper's recipe and margin heads);
- :mod:`~fairforge.training.degradation`: the Exposure paper's near-to-far generator with its
  far-to-near restorer (the networks, and applying them, stay in
  :mod:`fairforge.perturb.learned_degradation`).

They build their optimizers and learning-rate schedules from one registry
(:mod:`fairforge.optimizers`) and choose the device and read checkpoints through
:mod:`fairforge.runtime`, as inference does.
"""
