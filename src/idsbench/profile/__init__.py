"""Profiling a sensor during a sample (`[profile]`): where its CPU time goes, by function
(`perf record`), by thread (/proc), and the hardware counters the host exposes (`perf stat`)."""
