"""Lossless-throughput and minimum-CPU search: trials over the same stages as a sample."""
