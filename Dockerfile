# Production image: gunicorn serving the app; static files and translations built at build time.
# Release step (run once per deploy, not at every start; compose.yaml's "release" service):
#   docker run --rm --env-file .env IMAGE python manage.py migrate
#   docker run --rm --env-file .env IMAGE python manage.py createcachetable
#   docker run --rm --env-file .env IMAGE python manage.py load_presets
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_DATA_DIR=/app/var \
    WEB_CONCURRENCY=2 \
    PORT=8000

RUN apt-get update \
    && apt-get install -y --no-install-recommends gettext curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 app

WORKDIR /app

# Dependencies first, from pyproject.toml, so code changes do not reinstall them.
COPY pyproject.toml README.md ./
RUN mkdir -p config calculator && touch config/__init__.py calculator/__init__.py \
    && pip install . && pip uninstall -y llm-vram-calculator

COPY . .
RUN pip install --no-deps . \
    && DJANGO_SECRET_KEY=build-only DJANGO_DEBUG=0 python manage.py compilemessages --ignore=.venv \
    && DJANGO_SECRET_KEY=build-only DJANGO_DEBUG=0 python manage.py collectstatic --noinput -v 0 \
    && mkdir -p /app/var && chown -R app:app /app/var

USER app
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD curl -fsS "http://127.0.0.1:${PORT}/healthz" || exit 1
CMD ["sh", "-c", "exec gunicorn config.wsgi --bind 0.0.0.0:${PORT} --workers ${WEB_CONCURRENCY} --limit-request-line 8190 --access-logfile - --error-logfile -"]
