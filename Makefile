# idsbench: `make demo` runs the quick benchmark and prints where the report is; `make test` runs
# the test suite. Both install what they need first (system packages as root, then .venv).
VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed

.PHONY: setup system venv demo test unit integration bench clean-results

setup: system venv

system:
	@bash scripts/install-system.sh

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

demo: setup
	@$(VENV)/bin/idsbench run examples/quick.toml

test: setup
	@$(VENV)/bin/pytest -rs -q tests

unit: venv
	@$(VENV)/bin/pytest -rs -q tests/unit

integration: setup
	@$(VENV)/bin/pytest -rs -q -m integration tests

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(VENV)/bin/python $$b || exit 1; done
