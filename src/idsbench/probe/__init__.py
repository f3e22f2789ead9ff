"""Host probe: every fact about a host that can change a result, the timer-cost check, and diffs.

An empty face: importing a module of this package runs this file, so it re-exports nothing (a reader
of the data model must not load the collectors, and through them the sensor adapters).
- `probe.collect.collect(interfaces=(), netns=None, sensor=True) -> HostProbe` probes this host;
- `probe.diff.load(path) -> HostProbe` reads a probe file or a campaign's probe (`store.reader.read_probe`);
  `probe.diff.diff(a, b) -> list[Difference]`, `diff_paths(a, b)` adds two campaigns' `sensor.set` changes;
- `probe.warnings.warnings(probe) -> list[str]`: known traps (a profiling build under a trapping cpuid, ...);
- `probe.render.summary(probe)`: the text `idsbench probe` prints.
The data model (`HostProbe` …) is the leaf module `idsbench.probemodel`; the TSC measurement is
`idsbench.native.tsc`; the build stamps' parsers are `idsbench.buildstamp`.
"""
