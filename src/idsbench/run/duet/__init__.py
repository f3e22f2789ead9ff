"""Duet mode on this machine: two sensors side by side on one mirrored replay (docs/duet.md). An empty face: import the module you need.

- `place.py`: where each side runs (CPUs, quotas) and the slot swap between samples; pure;
- `session.py`: `DuetSession`, both sensors open around the shared wire, mirror and monitor; one
  `trial` = one replay into both;
- `sample.py`: `DuetSampleRun`, one duet sample: each side's summary and the pair's record;
- `campaign.py`: `run_duet_campaign`, preflight then every pair's samples (resume included).
"""
