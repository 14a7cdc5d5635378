"""Seeds derived from ids, never from global random state.

Every random choice in fairforge takes a ``numpy.random.Generator`` built from a seed that is a
hash of the global seed and the ids of the thing being made (a subject, an image, a
(sample_id, variant) pair). The same config therefore gives the same files whatever the job
order, the shard size or the number of workers.
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any sequence of printable parts (order matters)."""
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 1


def rng_for(*parts: object) -> np.random.Generator:
    """A PCG64 generator seeded by :func:`derive_seed` of ``parts``."""
    return np.random.default_rng(derive_seed(*parts))
