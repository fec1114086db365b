# Two commands: `make run` (set up and serve) and `make test` (set up and check everything).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
WEB_CONCURRENCY ?= 2

# What a local user needs with no configuration: a generated secret key kept in var/, plain
# HTTP on loopback. Anything already set in the environment wins.
LOCAL_ENV = DJANGO_SECRET_KEY="$${DJANGO_SECRET_KEY:-$$(cat var/secret_key)}" \
	DJANGO_DEBUG="$${DJANGO_DEBUG:-0}" \
	DJANGO_HTTPS="$${DJANGO_HTTPS:-0}" \
	DJANGO_ALLOWED_HOSTS="$${DJANGO_ALLOWED_HOSTS:-127.0.0.1,localhost,[::1],$(HOST)}"

.PHONY: run setup test test-services bench bench-load bench-live bench-instructions lint typecheck migrations-check messages system-deps browser-deps clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Reinstall only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

var/secret_key:
	mkdir -p var
	$(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@
	chmod 600 $@

system-deps:
	@if ! command -v msgfmt >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq gettext >/dev/null; \
		else echo "gettext (msgfmt) is missing: install it, e.g. 'sudo apt-get install gettext'." >&2; exit 1; fi; \
	fi

# Browser tests: Debian's Chromium, and a CJK font so the zh/ja/ko screenshots show glyphs.
browser-deps:
	@if [ ! -x /usr/bin/chromium ] || ! fc-list 2>/dev/null | grep -qi "zenhei\|noto sans cjk"; then \
		if [ "$$(id -u)" = 0 ]; then echo "Installing Debian's chromium and fonts-wqy-zenhei for the browser tests..."; \
			apt-get update -qq && apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null; \
		else echo "Browser tests need Debian's Chromium at /usr/bin/chromium and a CJK font: run 'sudo apt-get install chromium fonts-wqy-zenhei', then 'make test' again." >&2; exit 1; fi; \
	fi

messages: system-deps var/secret_key
	$(LOCAL_ENV) $(PY) manage.py compilemessages --ignore=.venv --ignore=validation -v 0

setup: $(VENV)/.installed var/secret_key messages
	$(LOCAL_ENV) $(PY) manage.py migrate --noinput -v 0
	$(LOCAL_ENV) $(PY) manage.py createcachetable
	$(LOCAL_ENV) $(PY) manage.py load_presets
	$(LOCAL_ENV) $(PY) manage.py collectstatic --noinput -v 0

run: setup
	@echo "Serving on http://$(HOST):$(PORT)/  (create an admin user: $(PY) manage.py createsuperuser)"
	$(LOCAL_ENV) exec $(VENV)/bin/gunicorn config.wsgi --bind "$(HOST):$(PORT)" \
		--workers $(WEB_CONCURRENCY) --limit-request-line 8190 --access-logfile - --error-logfile -

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed-dev var/secret_key
	$(LOCAL_ENV) $(VENV)/bin/mypy .

migrations-check: $(VENV)/.installed-dev var/secret_key
	$(LOCAL_ENV) $(PY) manage.py makemigrations --check --dry-run

test: $(VENV)/.installed-dev var/secret_key messages browser-deps lint typecheck migrations-check
	$(VENV)/bin/pytest

# The suite again on PostgreSQL and Redis (the machine's, or private ones it starts), with the
# tests of two servers sharing them (tests/services/). Arguments for pytest: ARGS="-x -k rate".
test-services: $(VENV)/.installed-dev var/secret_key messages browser-deps
	.ci/test-services $(ARGS)

# On demand, not part of make test: timings vary between machines (README "Performance").
bench: $(VENV)/.installed-dev setup
	$(LOCAL_ENV) $(VENV)/bin/pytest benchmarks --benchmark-only -s -p no:cacheprovider
	$(LOCAL_ENV) DJANGO_ALLOWED_HOSTS=127.0.0.1 $(PY) benchmarks/recompute_time.py
	$(LOCAL_ENV) $(PY) benchmarks/worst_case.py

bench-load: setup
	$(LOCAL_ENV) $(PY) benchmarks/load.py

# Keystroke to painted figures in headless Chromium on gunicorn (benchmarks/live.py).
bench-live: $(VENV)/.installed-dev setup browser-deps
	$(LOCAL_ENV) $(PY) benchmarks/live.py --rounds 2

# CPU instructions per request (valgrind): the figure that does not move with a machine's load.
bench-instructions: setup
	$(LOCAL_ENV) $(PY) benchmarks/recompute_instructions.py

clean:
	rm -rf $(VENV) staticfiles .mypy_cache .ruff_cache
