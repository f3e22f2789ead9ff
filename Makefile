# idsbench: `make demo` runs the quick benchmark and prints where the report is; `make test` runs
# the test suite. Both install what they need first (system packages as root, then .venv).
VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed

.PHONY: setup system venv native snort suricata-src builds lint docs demo test unit integration bench bench-quick clean-results vfio-lab vfio-diag

setup: system venv native

system:
	@bash scripts/install-system.sh

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -e '.[test,hosts]'
	@touch $(STAMP)

native: venv
	@$(VENV)/bin/python -m idsbench.native

# Snort 3 and libdaq from ../shared/src into the cache, once per machine (~8-10 min on 2 cores the first time).
snort: system
	@bash scripts/build-snort.sh

# Suricata 8.0.6 from ../shared/src, with rule profiling compiled in (scripts/build-suricata.sh; ~6-11 min
# on 2 idle cores): `sensor.engine = "suricata@8.0.6"` / "suricata@8.0.6+profiling"
suricata-src: system
	@bash scripts/build-suricata.sh --version 8.0.6 --options profiling

demo: setup
	@$(VENV)/bin/idsbench run examples/quick.toml

lint: venv
	@$(VENV)/bin/ruff check src tests benchmarks
	@$(VENV)/bin/mypy

# docs/spec.md, the spec reference, generated from the spec model (src/idsbench/spec.py); a unit test fails
# when it is stale.
docs: venv
	@$(VENV)/bin/idsbench spec-reference > docs/spec.md.tmp && mv docs/spec.md.tmp docs/spec.md

# Both builds side by side (`make builds`): on 2 cores either alone leaves a core idle for minutes (configure
# scripts, cargo's last crates, links), so together they take ~2/3 of the time one after the other.
builds: system
	@bash scripts/build-snort.sh >/dev/null & snort=$$!; \
	bash scripts/build-suricata.sh --version 8.0.6 --options profiling >/dev/null; rc=$$?; \
	wait $$snort || rc=1; exit $$rc

# The whole suite; with CI=true (or IDSBENCH_STRICT=1) a test that cannot run fails instead of skipping.
# The source builds (Suricata 8.0.6, Snort 3: ~17 min on a fresh 2-core machine, seconds once cached) run in
# the background at the lowest CPU priority (SCHED_IDLE, nice 19: they take only CPU time the tests leave).
# Beside them: the lint and the unit tests (2 processes), then the integration tests that need no build, one
# at a time, with IDSBENCH_BUILDS_PENDING=1 (a test that reaches for a build is refused by name: it must
# carry the `builds` marker); then, once the builds are done, the tests marked `builds`.
IDLE := nice -n 19 chrt --idle 0
test: setup
	@$(IDLE) bash scripts/build-snort.sh >/dev/null & snort=$$!; \
	$(IDLE) bash scripts/build-suricata.sh --version 8.0.6 --options profiling >/dev/null & suricata=$$!; \
	{ $(VENV)/bin/ruff check src tests benchmarks && $(VENV)/bin/mypy; } & lint=$$!; \
	rc=0; $(VENV)/bin/pytest -rfEs -q -n 2 --durations=10 tests/unit || rc=1; \
	wait $$lint || rc=1; \
	if [ $$rc != 0 ]; then echo "make test: the lint or the unit tests failed (above): no integration tests"; \
		wait $$snort; wait $$suricata; exit 1; fi; \
	IDSBENCH_BUILDS_PENDING=1 $(VENV)/bin/pytest -rfEs -q --durations=30 -m "not builds" tests/integration || rc=1; \
	builds=0; wait $$snort || builds=1; wait $$suricata || builds=1; \
	if [ $$builds != 0 ]; then echo "make test: a source build failed (above; its log is in the cache)"; exit 1; fi; \
	$(VENV)/bin/pytest -rfEs -q --durations=30 -m builds tests/integration || rc=1; \
	exit $$rc

unit: venv
	@$(VENV)/bin/pytest -rs -q -n 2 tests/unit

integration: setup
	@$(VENV)/bin/pytest -rs -q -m integration tests

# Every benchmark in one run, to its end (benchmarks/run_all.py): each prints its figures beside their
# references; one that misses a target, fails or overruns is listed and the next one runs; at the end a table
# of times and outcomes, and make fails if any missed. `make bench` takes ~5 h on the 2-core VM,
# `make bench-quick` (each benchmark's quickest mode) ~1.5 h; `benchmarks/run_all.py --list` gives each one's.
bench: setup
	@$(VENV)/bin/python benchmarks/run_all.py

bench-quick: setup
	@$(VENV)/bin/python benchmarks/run_all.py --quick

# The nested VFIO lab (README, "vm-vfio"): a virtio VM and a VFIO VM on an emulated SR-IOV NIC, inside an
# outer VM under TCG. Not part of `make test`: it took 90 min here (TCG inside TCG).
vfio-lab: setup
	@$(VENV)/bin/idsbench lab vfio examples/vfio-lab.toml --out results/vfio-lab

# Its data path alone in ~5 min (scripts/vfio_diag.py): the VF on igbvf, on vfio-pci from userspace, and in a
# minimal nested VM, with the lab's IOMMU and wire.
vfio-diag: setup
	@$(VENV)/bin/python scripts/vfio_diag.py base --wire --mtu 1508 --out results/vfio-diag
