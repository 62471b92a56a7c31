# Two commands: `make run` (predictorx up) and `make test` (the whole suite).
# Each bootstraps .venv on first use and again whenever pyproject.toml (or agents-room's) changes.
# agents-room is its own distribution (agents-room/, GPL-3.0-or-later); both go into .venv.
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed-$(shell $(PYTHON) -c "import hashlib;print(hashlib.sha256(open('pyproject.toml','rb').read()).hexdigest()[:12])")

.PHONY: run test bench clean

$(STAMP): pyproject.toml agents-room/pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check -e './agents-room[dev]' -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

run: $(STAMP)
	$(VENV)/bin/predictorx up $(ARGS)

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(VENV)/bin/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache
