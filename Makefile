# Cairn — `make run` serves the demo, `make test` runs every test. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
DOCS_PORT ?= 8001

.PHONY: run test lint format bench security docs docs-build clean lock

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Cairn needs Python 3.11+")'
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[server,dev]'
	touch $(STAMP)

# The newest releases pyproject.toml's ranges admit, installed into .venv and written to constraints.txt.
lock:
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[server,dev]'
	{ sed -n '/^#/p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	touch $(STAMP)

.env:
	@echo "Writing .env with a fresh SECRET_KEY (kept out of git)."
	@printf 'SECRET_KEY=%s\nDEBUG=true\n' "$$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))')" > .env

# Web + celery worker + celery beat (filesystem broker, or Redis when REDIS_URL is set); Ctrl-C stops all.
# `serve --seed-demo` runs seed_demo first, so the admin login and API key end up in the final banner.
run: $(STAMP) .env
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py serve --seed-demo --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Cairn against raw psycopg and LangGraph's AsyncPostgresSaver on the production setup (needs DATABASE_URL and
# REDIS_URL; creates and drops its own database). `make bench BENCH_ARGS=--quick` is a smoke run.
bench: $(STAMP) .env
	$(BIN)/python manage.py bench $(BENCH_ARGS)

# Static security analysis: bandit, clean (remaining findings are justified inline with `# nosec <id> - why`).
security: $(STAMP)
	$(BIN)/bandit -c pyproject.toml -r checkpoints project -q

# The documentation site (MkDocs + Material): `make docs` serves it at http://127.0.0.1:8001 with live reload,
# `make docs-build` builds it into site/ and fails on any warning (a broken link, a page missing from the nav).
docs: $(STAMP)
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

docs-build: $(STAMP)
	$(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	SECRET_KEY=type-checking-only $(BIN)/mypy .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .cairn .pytest_cache .mypy_cache .ruff_cache staticfiles site build/openapi.json
