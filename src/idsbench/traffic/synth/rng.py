"""`random.Random` with its hot methods flattened into single frames.

Each override draws exactly what the CPython 3.11 method it replaces draws, in the same order, and
computes the same value (same float operations), so captures stay byte-identical; it only saves the
nested Python calls (`choice` -> `_randbelow` -> `getrandbits`). `weighted` is `choices(...)[0]`
with precomputed cumulative weights.
"""

from __future__ import annotations

import random
from bisect import bisect
from collections.abc import Sequence
from math import exp, log, sqrt
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import SupportsLenAndGetItem

_T = TypeVar("_T")

NV_MAGICCONST = 4 * exp(-0.5) / sqrt(2.0)  # random.NV_MAGICCONST, computed alike (it is not in the stubs)


class Rng(random.Random):
    def choice(self, seq: SupportsLenAndGetItem[_T]) -> _T:
        n = len(seq)
        if not n:
            raise IndexError("Cannot choose from an empty sequence")
        getrandbits = self.getrandbits
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return seq[r]

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        if step != 1 or type(start) is not int or (stop is not None and type(stop) is not int):
            return super().randrange(start, stop, step)
        n = start if stop is None else stop - start
        if n <= 0:
            return super().randrange(start, stop, step)  # raises the stdlib's error
        getrandbits = self.getrandbits
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return r if stop is None else start + r

    def randint(self, a: int, b: int) -> int:
        if type(a) is not int or type(b) is not int or b < a:
            return super().randint(a, b)
        n = b - a + 1
        getrandbits = self.getrandbits
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return a + r

    def lognormvariate(self, mu: float, sigma: float) -> float:
        random_ = self.random
        while True:  # normalvariate (Kinderman and Monahan), as in the stdlib
            u1 = random_()
            u2 = 1.0 - random_()
            z = NV_MAGICCONST * (u1 - 0.5) / u2
            zz = z * z / 4.0
            if zz <= -log(u2):
                break
        return exp(mu + z * sigma)

    def weighted(self, population: Sequence[_T], cum_weights: Sequence[float]) -> _T:
        """`choices(population, cum_weights=cum_weights)[0]`."""
        return population[bisect(cum_weights, self.random() * (cum_weights[-1] + 0.0), 0, len(cum_weights) - 1)]
