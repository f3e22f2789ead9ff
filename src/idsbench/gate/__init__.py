"""`idsbench gate`: a per-change gate for Suricata (issue 43). sides.py (BASE/HEAD: tree, REPO@REF,
engine), plan.py (options, the arms' specs), run.py (builds, offline pass, load probe, rounds of duets with
an A/A arm), verdict.py (the stopping rule and verdicts, pure), diffs.py (alerts, event types, counters,
resources, pure), offline.py (each side's `suricata -r`), model.py (gate.json), render.py (gate.md),
outputs.py (the files), bisect.py (`--bisect`)."""
