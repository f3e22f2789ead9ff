"""Traces: capture reading and metadata, synthesizer, rewriting, tcpreplay driver."""
