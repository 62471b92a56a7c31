# Two commands: `make run` (predictorx up) and `make test` (the whole suite); `make test-fast` for the edit loop,
# `make test-long` (CI) for the whole suite with the long fuzz run.
# Each bootstraps .venv on first use and again whenever pyproject.toml (or agents-room's) or
# requirements.lock (the exact versions, pip constraints) changes.
# agents-room is its own distribution (agents-room/, GPL-3.0-or-later); both go into .venv.
PYTHON ?= python3
VENV   := .venv
# The installs (.venv, the Python agent CLIs' venvs) are made by uv, pinned here and fetched from PyPI
# with pip into .tools/ once: pip spent 149 CPU-s and 2:40 on them on 2 cores (a new machine, cold
# caches), uv installs the same exact pins from its cache in a fraction of that. Where uv cannot be
# fetched, pip does the installs as before. uv does not read pip's config (pip.conf, PIP_*): it takes
# the system's CA store (UV_SYSTEM_CERTS) or SSL_CERT_FILE's bundle, and PyPI or UV_INDEX_URL.
UV_VERSION := 0.13.9
UV         := .tools/uv-$(UV_VERSION)/bin/uv
export UV_SYSTEM_CERTS ?= 1
export UV_PYTHON_DOWNLOADS ?= never
UV_FAILED  := echo "uv could not install from PyPI (its error is above): check that pypi.org is reachable; behind a TLS-inspecting proxy set SSL_CERT_FILE to its CA bundle (uv does not read pip.conf)" >&2; exit 1
STAMP  := $(VENV)/.installed-$(shell $(PYTHON) -c "import hashlib;print(hashlib.sha256(open('pyproject.toml','rb').read()).hexdigest()[:12])")
# The real agent CLIs the end-to-end tests drive (R-EX-9), pinned by tests/realcli/package-lock.json
# and installed again whenever that lock changes. Only the two install scripts the CLIs need are
# run (they link the native binary from its platform package); others (node-gyp builds) are not.
# They run with a throwaway HOME and XDG dirs: OpenCode's and Kilo's also make their data and
# cache folders, which a person's own home would keep.
CLIS      := tests/realcli
CLI_STAMP := $(CLIS)/node_modules/.installed-$(shell $(PYTHON) -c "import hashlib;print(hashlib.sha256(open('$(CLIS)/package-lock.json','rb').read()).hexdigest()[:12])")

# Pinned npm packages the tests use (tests/<area>/package.json + package-lock.json), installed
# with `npm ci` when the lock file changes (the real CLIs have their own rule below).
NPM_LOCKS := $(filter-out $(CLIS)/package-lock.json,$(wildcard tests/*/package-lock.json))
NPM_STAMPS := $(NPM_LOCKS:package-lock.json=node_modules/.installed)

.PHONY: run test test-long test-fast bench clean record-transcripts

tests/%/node_modules/.installed: tests/%/package-lock.json
	@command -v npm >/dev/null || { echo "npm is needed for the tests (axe-core): install node and npm" >&2; exit 1; }
	@echo "installing the pinned npm packages of tests/$* (npm ci)"
	@npm ci --prefix tests/$* --no-audit --no-fund --ignore-scripts --loglevel=error
	@touch $@

# uv itself: a static binary from its PyPI wheel (pip, ~2 s); a machine without it falls back to pip.
$(UV):
	@mkdir -p .tools && $(PYTHON) -m pip install -q --disable-pip-version-check \
	  --target $(dir $(@D)) uv==$(UV_VERSION) >.tools/uv-install.log 2>&1 \
	  || echo "uv $(UV_VERSION) could not be fetched with pip (why: .tools/uv-install.log): installing with pip instead (slower)" >&2

$(STAMP): pyproject.toml agents-room/pyproject.toml requirements.lock | $(UV)
	@if test -x $(VENV)/bin/python; then echo "pyproject.toml changed: updating .venv (Predictor X, agents-room and their pinned dependencies; under a minute)"; \
	 else echo "first run: creating .venv and installing Predictor X, agents-room and their pinned dependencies from PyPI (under a minute; once)"; fi
	@if test -x $(UV); then \
	  { test -x $(VENV)/bin/python || $(UV) venv -q --seed --python $(PYTHON) $(VENV); } && \
	  $(UV) pip install -q --compile-bytecode --python $(VENV)/bin/python -c requirements.lock \
	    -e './agents-room[dev]' -e '.[dev,postgres]' || { $(UV_FAILED); }; \
	else \
	  { test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV); } && \
	  $(VENV)/bin/python -m pip install -q --disable-pip-version-check --upgrade pip && \
	  $(VENV)/bin/python -m pip install -q --disable-pip-version-check -c requirements.lock -e './agents-room[dev]' -e '.[dev,postgres]'; \
	fi
	@rm -f $(VENV)/.installed-* && touch $@
	@echo "installed into .venv; the commands are .venv/bin/predictorx and .venv/bin/agents-room"

$(CLI_STAMP): $(CLIS)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  cd $(CLIS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error && \
	  scratch=$$(mktemp -d) && \
	  HOME=$$scratch XDG_CACHE_HOME=$$scratch/.cache XDG_DATA_HOME=$$scratch/.local/share \
	    XDG_STATE_HOME=$$scratch/.local/state XDG_CONFIG_HOME=$$scratch/.config npm_config_update_notifier=false \
	    npm rebuild --loglevel=error @anthropic-ai/claude-code opencode-ai @kilocode/cli && \
	  rm -rf $$scratch && \
	  rm -f node_modules/.installed-* && touch $(notdir $(CLI_STAMP)) && mv $(notdir $(CLI_STAMP)) node_modules/; \
	else echo "npm not found: the real-CLI tests will be skipped (install nodejs and npm)" >&2; fi

# Our own modules compiled ahead (0.2 s when nothing changed): the daemon, agents-room's hooks
# and MCP servers start many short Python processes, and where PYTHONDONTWRITEBYTECODE is set
# (as on CI machines) each would otherwise compile what it imports from source on every start.
COMPILE = $(VENV)/bin/python -m compileall -q -j 0 src agents-room/src >/dev/null

run: $(STAMP)
	@$(COMPILE)
	$(VENV)/bin/predictorx up $(ARGS)

# The whole suite in PYTEST_WORKERS processes (pytest-xdist): most tests wait on servers, daemons,
# agent CLIs, git and a browser, so more processes than cores pay off. Each worker has its own temp
# dirs, state dir and databases (conftest.py, tests/databases.py); the longest tests start first.
# PYTHONDONTWRITEBYTECODE (set on CI machines) is cleared for pytest alone: it keeps the test modules
# and plugins it rewrote, which it would otherwise rewrite again in every worker and inner run.
# The fuzz tests (tests/api/test_fuzz.py, tests/web/test_fuzz_web.py) send FUZZ_EXAMPLES cases per
# operation, and tests marked `long` (scale and long-run tests: every migration up and down, the
# whole harness flow, inner parallel pytest runs — the marker's list is in pyproject.toml) are
# deselected; `make test-long` (what CI runs) is the whole suite: every test, the long fuzz run.
PYTEST_WORKERS ?= 4
FUZZ_EXAMPLES  ?= 10
TEST_MARKS     ?= not long
PYTEST = PYTHONDONTWRITEBYTECODE= $(VENV)/bin/python -m pytest -q -p xdist -n $(PYTEST_WORKERS) --dist worksteal
# The installs run side by side (npm's downloads and uv's overlap; each is in its own folder).
TEST_DEPS := $(STAMP) $(NPM_STAMPS) $(CLI_STAMP) pyagents
.PHONY: test-deps
test-deps: $(TEST_DEPS)
test:
	@$(MAKE) --no-print-directory -j 4 test-deps
	@$(COMPILE)
	PREDICTORX_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PYTEST) -m "$(TEST_MARKS)" $(PYTEST_ARGS)

test-long:
	$(MAKE) test FUZZ_EXAMPLES=50 TEST_MARKS=

# The edit loop (≤ 3 min on 2 cores): unit and API tests on SQLite, agents-room's, the static gate;
# no browser, real agent CLI, end-to-end process or fuzz run (`make test` and CI run those).
FAST_SKIP := --ignore=tests/web --ignore=tests/e2e --ignore=tests/realcli --ignore=tests/api/test_fuzz.py
test-fast: $(STAMP) $(NPM_STAMPS)
	@$(COMPILE)
	PREDICTORX_TEST_POSTGRES_URL= PREDICTORX_REQUIRE_POSTGRES= $(PYTEST) $(FAST_SKIP) -m "not long" $(PYTEST_ARGS)

# Re-record the golden transcripts (tests/fixtures/transcripts/) from the pinned real CLIs,
# after a version bump in tests/realcli/package.json.
record-transcripts: $(STAMP) $(CLI_STAMP)
	PREDICTORX_RECORD_TRANSCRIPTS=1 $(VENV)/bin/python -m pytest -q tests/realcli/test_end_to_end.py

bench: $(STAMP)
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check -e './agents-room[dev]' -c requirements.lock -e '.[dev,postgres,bench]'
	@$(COMPILE)
	$(VENV)/bin/python bench/report.py $(ARGS)

clean:
	rm -rf $(VENV) .venv-agents .tools .pytest_cache $(CLIS)/node_modules

# The Python-packaged agent CLIs of the real-CLI tests (gptme, Mistral Vibe, fast-agent): a venv each in
# .venv-agents/ from the exact pins in tests/realcli/pyagents/*.txt, again when a pin file changes
# (install.py keeps a stamp per file; a Python >= the file's floor is found on the machine; the three
# install side by side, with uv where it was fetched, else with pip).
PYAGENTS_PINS := $(wildcard tests/realcli/pyagents/*.txt)
.PHONY: pyagents
pyagents: $(PYAGENTS_PINS) | $(UV)
	@$(PYTHON) tests/realcli/pyagents/install.py $(if $(wildcard $(UV)),--uv=$(UV))
record-transcripts: pyagents
