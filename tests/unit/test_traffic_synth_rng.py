"""The synthesizer's flattened Rng draws exactly what random.Random draws (captures depend on it)."""

from __future__ import annotations

import random
from itertools import accumulate

import pytest

from idsbench.traffic.synth.rng import NV_MAGICCONST, Rng


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
def test_rng_matches_random_random(seed):
    ref, fast = random.Random(seed), Rng(seed)
    seqs = [(1,), (1, 2), list(range(5)), list(range(20)), list(range(4096)), "abcdefg"]
    pop, weights = ["a", "b", "c", "d"], [0.3, 0.27, 0.3, 0.13]
    cum = list(accumulate(weights))
    for i in range(3000):
        seq = seqs[i % len(seqs)]
        assert fast.choice(seq) == ref.choice(seq)
        assert fast.randint(1, 1 + i) == ref.randint(1, 1 + i)
        assert fast.randint(32768, 60999) == ref.randint(32768, 60999)
        assert fast.randrange(1 + i * 977) == ref.randrange(1 + i * 977)
        assert fast.randrange(10, 20 + i) == ref.randrange(10, 20 + i)
        assert fast.lognormvariate(3.2, 0.7 + i % 3) == ref.lognormvariate(3.2, 0.7 + i % 3)
        assert fast.weighted(pop, cum) == ref.choices(pop, weights)[0]
    assert fast.getrandbits(64) == ref.getrandbits(64)


def test_rng_errors_like_random_random():
    with pytest.raises(IndexError):
        Rng(1).choice([])
    with pytest.raises(ValueError):
        Rng(1).randrange(0)
    with pytest.raises(ValueError):
        Rng(1).randint(5, 4)


def test_nv_magicconst_is_the_stdlib_value():
    assert NV_MAGICCONST == random.NV_MAGICCONST  # bit-identical: lognormvariate depends on it
