"""Many `rng.randrange(bound)` draws at once, the same numbers and the same generator state
after as drawing them one by one (RandomFit scores every node of the cluster for every pod).

CPython's `randrange(n)` is `_randbelow(n)`: `getrandbits(k)` with `k = n.bit_length()`, drawn
again while it is `>= n`; `getrandbits(k)` for `k <= 32` is one 32-bit output of the Mersenne
Twister shifted right by `32 - k`, and `getrandbits(32 * m)` is the next `m` outputs as one
little-endian number. So `m` outputs drawn at once, shifted and filtered, are the next
accepted draws; drawing exactly as many outputs as draws are still missing never draws past
the last one needed. A property test (tests/lab/test_gpushare_scores.py) compares both ways.
"""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt


def draws_below(rng: random.Random, bound: int, count: int) -> npt.NDArray[np.int64]:
    """`[rng.randrange(bound) for _ in range(count)]` as an array, leaving `rng` in the same
    state; one by one where the generator is not a plain `random.Random`."""
    bits = bound.bit_length()
    if type(rng) is not random.Random or not 0 < bound <= 1 << 31 or count <= 0:
        return np.fromiter(
            (rng.randrange(bound) for _ in range(count)), dtype=np.int64, count=max(count, 0)
        )
    shift = 32 - bits
    found: list[npt.NDArray[np.int64]] = []
    missing = count
    while missing:
        words = np.frombuffer(
            rng.getrandbits(32 * missing).to_bytes(4 * missing, "little"), dtype="<u4"
        )
        values = (words >> shift).astype(np.int64)
        accepted = values[values < bound]
        found.append(accepted)
        missing -= len(accepted)
    return found[0] if len(found) == 1 else np.concatenate(found)
