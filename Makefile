# Everything runs from the project's own virtualenv (.venv), created on first use.
# Works on a fresh machine that has only python3 (and apt-get, when run as root).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# Re-install whenever pyproject.toml changes (new dependency, new console script).
STAMP  := $(VENV)/.tabpilot-installed
LINT_PATHS := src tests $(wildcard bench)
ARGS ?=

.PHONY: install browser lint typecheck test demo bench clean distclean

install: $(STAMP)

# Debian ships python3 without ensurepip; a failed `python3 -m venv` leaves a half-made
# directory behind, so remove it and retry once python3-venv is installed.
$(PIP):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "tabpilot needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	@$(PYTHON) -m venv $(VENV) || { \
		rm -rf $(VENV); \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "python3 -m venv failed; installing python3-venv with apt-get" >&2; \
			apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv && \
			$(PYTHON) -m venv $(VENV); \
		else \
			echo "python3 -m venv failed: install your distribution's venv package (Debian/Ubuntu: sudo apt-get install python3-venv)" >&2; \
			exit 1; \
		fi; }

$(STAMP): pyproject.toml | $(PIP)
	$(PIP) install -q -e '.[test]'
	@touch $@

browser: install
	@# -W: runpy warns because the package __init__ already imported the module; harmless.
	$(PY) -W ignore::RuntimeWarning:runpy -m tabpilot._browser_path --ensure

lint: install
	$(VENV)/bin/ruff check $(LINT_PATHS)

typecheck: install
	$(VENV)/bin/mypy src tests

test: install browser lint typecheck
	$(VENV)/bin/pytest -q

demo: install browser
	$(VENV)/bin/tabpilot demo

bench: install browser
	$(PY) bench/run.py $(ARGS)

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache src/*.egg-info $(STAMP)
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
