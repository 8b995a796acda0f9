# The README's two commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
FLASK  := $(BIN)/flask --app app
HOST   ?= 127.0.0.1
PORT   ?= 5000
PYTEST_ARGS ?=

.PHONY: run test lint bench fuzz setup seed clean assets translations bytecode

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-install whenever the dependency list changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

## Front-end libraries from npm (package-lock.json) copied into the ignored static/vendor/: no CDN at run time
VENDOR := static/vendor
$(VENDOR)/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	rm -rf $(VENDOR) && mkdir -p $(VENDOR)/bootstrap $(VENDOR)/bootstrap-icons
	cp node_modules/htmx.org/dist/htmx.min.js $(VENDOR)/
	cp node_modules/socket.io-client/dist/socket.io.min.js $(VENDOR)/
	cp node_modules/bootstrap/dist/css/bootstrap.min.css node_modules/bootstrap/dist/js/bootstrap.bundle.min.js $(VENDOR)/bootstrap/
	cp -r node_modules/bootstrap-icons/font/bootstrap-icons.min.css node_modules/bootstrap-icons/font/fonts $(VENDOR)/bootstrap-icons/
	cp node_modules/axe-core/axe.min.js $(VENDOR)/
	cp node_modules/sortablejs/Sortable.min.js $(VENDOR)/
	cp node_modules/chart.js/dist/chart.umd.min.js $(VENDOR)/
	touch $@

assets: $(VENDOR)/.installed

## Compiled message catalogues (Spanish, English) from the committed .po files
translations: $(VENV)/.installed
	$(BIN)/pybabel compile -d translations -f >/dev/null

## The project's own bytecode, written even where PYTHONDONTWRITEBYTECODE is set (CI machines set it):
## Python still reads .pyc files there, and without them every process compiles ~200 modules (0.5 s).
bytecode: $(VENV)/.installed
	$(BIN)/python -m compileall -q -j 0 app.py core blueprints >/dev/null

setup: $(VENV)/.installed assets translations bytecode
	$(FLASK) setup

seed: setup
	$(FLASK) demo seed

## Serve the whole product with demo data on http://$(HOST):$(PORT)
run: seed
	$(FLASK) serve --host $(HOST) --port $(PORT)

## Install what the tests need and run them (SQLite; set TEST_DATABASE_URL for PostgreSQL)
test: $(VENV)/.installed-dev assets translations bytecode
	$(BIN)/pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## Many generated requests per route (valid and invalid) against /openapi.json: no answer may be a 5xx
fuzz: $(VENV)/.installed-dev
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-100} $(BIN)/pytest -q tests/test_fuzz_api.py

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) instance node_modules $(VENDOR)
