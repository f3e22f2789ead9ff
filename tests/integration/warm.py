"""Test helpers that keep campaigns run back to back from paying twice for the same preflight step.

Every campaign's preflight busy-loops the sensor's CPUs for its quietness probe (probe/noise.py: PIECES
pieces of the trial's length, 6-12 s) and has the engine test-load every ruleset (`suricata -T`: ~13 s
for ET Open). A test that runs several campaigns of the same host, engine and rules one after the other
measures the host once and test-loads each ruleset once; everything else in the preflight (the warnings
and labels the noise figures give, the campaign's probe.json with that measurement, the ground truth, …)
runs as it does for a user. The whole integration session shares the noise probe (conftest); the real
probe is checked by test_probe_real, the real config test by every campaign test outside one_preflight."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from idsbench.probemodel import NoiseProbe
from idsbench.run import hostprobe
from idsbench.sensors.base import SensorOptions
from idsbench.sensors.snort import Snort
from idsbench.sensors.suricata import Suricata

# The probe itself, before any test replaced it (test_host_noise_probe measures with it).
REAL_MEASURE_NOISE = hostprobe.measure_noise


@contextmanager
def shared_noise_probe() -> Iterator[None]:
    """Within the block the quietness probe is measured once per set of CPUs (again only for a trial
    shorter than the pieces it measured) and reused by the later campaigns. A probe of shorter pieces serves
    a longer trial: the loop's CV falls as pieces grow (probe/noise.py), so it never calls the host quieter
    than a probe at the trial's own scale would."""
    real_noise = hostprobe.measure_noise
    noise: dict[tuple[int, ...], NoiseProbe] = {}

    def measure_once(cpus: Any = None, piece_s: float = 1.0) -> NoiseProbe:
        key = tuple(cpus or ())
        if key not in noise or (noise[key].piece_s or 1.0) > piece_s:
            noise[key] = real_noise(cpus, piece_s)
        return noise[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hostprobe, "measure_noise", measure_once)
        yield


@contextmanager
def one_preflight() -> Iterator[None]:
    """Within the block: the quietness probe is shared (`shared_noise_probe`) and each (engine, options)
    pair is config-tested once; the results are reused by the later campaigns."""
    tested: set[str] = set()

    def config_test_once(real: Any) -> Any:
        def config_test(self: Any, options: SensorOptions, workdir: Path, *args: Any, **kwargs: Any) -> None:
            # the engine (which binary, which build, profiling or not) and everything it is asked to load
            key = repr((type(self).__qualname__, getattr(self, "binary", None), getattr(self, "ref", None),
                        getattr(self, "profiling", None), options))
            if key not in tested:
                real(self, options, workdir, *args, **kwargs)  # raises when the config does not load
                tested.add(key)
        return config_test

    with shared_noise_probe(), pytest.MonkeyPatch.context() as mp:
        for cls in (Suricata, Snort):
            mp.setattr(cls, "config_test", config_test_once(cls.config_test))
        yield
