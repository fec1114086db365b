"""Settings read from the environment (12-factor); see README "Configuration" and .env.example."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("DJANGO_DATA_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no.")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from error


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from error


DEBUG = env_bool("DJANGO_DEBUG", False)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. It is required when DJANGO_DEBUG is off: set it to a "
            "long random string, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(50))'."
        )
    SECRET_KEY = "django-insecure-development-only-key-do-not-use-in-production-0123456789"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
# The container's own health probe calls http://127.0.0.1/healthz.
ALLOWED_HOSTS += [host for host in ("127.0.0.1", "localhost") if host not in ALLOWED_HOSTS]
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "ninja",
    "corsheaders",
    "csp",
    "axes",
    "template_partials.apps.SimpleAppConfig",
    "calculator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "calculator.web.i18n.FirstVisitLanguageMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before anything reads request.POST (the CSRF check): an oversize form post keeps its
    # small fields, and the form names the one that was too long.
    "calculator.inputs.uploads.OversizeFormMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes requires: locks out repeated failed admin logins.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Five failed logins from one client lock it out for an hour (django-axes).
AXES_FAILURE_LIMIT = env_int("DJANGO_AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = env_int("DJANGO_AXES_COOLOFF_HOURS", 1)
AXES_LOCKOUT_PARAMETERS = ["ip_address", ["username", "user_agent"]]
# Reverse proxies in front of the app that append to X-Forwarded-For: the rate limits and the
# admin lockout count the address the outermost of them saw, by one rule (calculator.catalogue.clients;
# axes' own ipware settings read only REMOTE_ADDR unless told otherwise, which behind a proxy
# is the proxy's address: one client's failures then locked every administrator out).
PROXY_COUNT = env_int("DJANGO_PROXY_COUNT", 0)
AXES_CLIENT_IP_CALLABLE = "calculator.catalogue.clients.client_address"
ADMIN_URL = os.environ.get("DJANGO_ADMIN_URL", "admin/").strip("/") + "/"

# No inline script or style anywhere: htmx is configured by a meta tag with its indicator
# styles off, and the only script is a static file.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# What visitors store (saved links, pasted configs): none older than the retention period, at
# most MAX_ROWS in all and MAX_PER_CLIENT from one client. A client past its own quota loses
# its own oldest rows; when the table is full, new rows are refused: one client can never
# evict what other people stored.
SAVED_RESULT_RETENTION_DAYS = env_int("DJANGO_SAVED_RESULT_RETENTION_DAYS", 365)
SAVED_RESULT_MAX_ROWS = env_int("DJANGO_SAVED_RESULT_MAX_ROWS", 100_000)
SAVED_RESULT_MAX_PER_CLIENT = env_int("DJANGO_SAVED_RESULT_MAX_PER_CLIENT", 1_000)
SAVED_RESULT_RATE_PER_HOUR = env_int("DJANGO_SAVED_RESULT_RATE_PER_HOUR", 30)
PASTED_CONFIG_RETENTION_DAYS = env_int("DJANGO_PASTED_CONFIG_RETENTION_DAYS", 365)
PASTED_CONFIG_MAX_ROWS = env_int("DJANGO_PASTED_CONFIG_MAX_ROWS", 100_000)
PASTED_CONFIG_MAX_PER_CLIENT = env_int("DJANGO_PASTED_CONFIG_MAX_PER_CLIENT", 1_000)
PASTED_CONFIG_RATE_PER_HOUR = env_int("DJANGO_PASTED_CONFIG_RATE_PER_HOUR", 60)
# Hub imports a client may start per hour, and unreviewed imports kept in all (past that, new
# repositories get a message until an admin reviews or deletes some).
HUB_IMPORT_RATE_PER_HOUR = env_int("DJANGO_HUB_IMPORT_RATE_PER_HOUR", 20)
HUB_IMPORT_MAX_UNREVIEWED = env_int("DJANGO_HUB_IMPORT_MAX_UNREVIEWED", 10_000)
# /fits/ pages that miss the page cache, per client and minute: each is a search over the whole
# catalogue (about 0.1-1 s of CPU).
FITS_RATE_PER_MINUTE = env_int("DJANGO_FITS_RATE_PER_MINUTE", 30)

# Hugging Face Hub look-ups (calculator/catalogue/hub.py): HF_ENDPOINT and HF_TOKEN are read when a
# look-up runs, as huggingface_hub names them. The timeout bounds each request to the Hub; the
# deadline bounds all of a look-up's requests together (model info, config.json, safetensors
# index and headers), well under gunicorn's 30 s worker timeout.
HUB_TIMEOUT_SECONDS = env_int("DJANGO_HUB_TIMEOUT_SECONDS", 5)
HUB_DEADLINE_SECONDS = env_int("DJANGO_HUB_DEADLINE_SECONDS", 10)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

_TEMPLATE_LOADERS: list[Any] = [
    "django.template.loaders.filesystem.Loader",
    "django.template.loaders.app_directories.Loader",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "calculator.web.i18n.language_links",
            ],
            # Partials as a builtin, so templates are written in Django 6's syntax already.
            "builtins": ["template_partials.templatetags.partials"],
            "loaders": [
                (
                    "template_partials.loader.Loader",
                    _TEMPLATE_LOADERS
                    if DEBUG
                    else [("django.template.loaders.cached.Loader", _TEMPLATE_LOADERS)],
                )
            ],
        },
    },
    {
        # Only the result fragment (config/jinja2.py says why); `{% jinja %}` embeds it.
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {
            "environment": "config.jinja2.environment",
            # None: the recompute's fragment reads only the view's values. (The language
            # switcher, which needs the i18n values, is part of whole pages: app.js keeps its
            # links on the page's current URL.)
            "context_processors": [],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{DATA_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("DJANGO_DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # An unreachable server fails a request in seconds (a 503), not after the worker timeout.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env_int("DJANGO_DB_CONNECT_TIMEOUT_SECONDS", 3)
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The workers of one machine all write this one file (cached pages, rate counters): in WAL
    # mode readers go on during a write and a commit costs no fsync (synchronous=NORMAL is
    # durable across crashes of the app, not of the machine, which is fine for a cache and the
    # catalogue); IMMEDIATE transactions wait for the write lock instead of failing when two
    # workers upgrade a read to a write at once.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        transaction_mode="IMMEDIATE",
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# One cache shared by every worker and every machine, never a per-process one: rendered
# permalinks and rate-limit counters must be the same whichever worker answers. Redis when
# REDIS_URL is set (several machines); otherwise a table in the database above (one machine, no
# extra service; `manage.py createcachetable` creates it).
REDIS_URL = os.environ.get("REDIS_URL", "").strip()
CACHE_KEY_PREFIX = os.environ.get("DJANGO_CACHE_KEY_PREFIX", "vram").strip()
# Every Redis operation (cache and rate counters) gives up after this long: a paused or
# unreachable Redis costs a request this much, not the worker timeout.
REDIS_TIMEOUT_SECONDS = env_float("DJANGO_REDIS_TIMEOUT_SECONDS", 1.0)
CACHES: dict[str, dict[str, Any]] = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {
                "socket_timeout": REDIS_TIMEOUT_SECONDS,
                "socket_connect_timeout": REDIS_TIMEOUT_SECONDS,
            },
        }
        if REDIS_URL
        else {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "calculator_cache",
            "OPTIONS": {"MAX_ENTRIES": env_int("DJANGO_DB_CACHE_MAX_ENTRIES", 5000)},
        }
    )
}
CACHES["default"]["KEY_PREFIX"] = CACHE_KEY_PREFIX

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [
    ("en", _("English")),
    ("es", _("Spanish")),
    ("pt-br", _("Brazilian Portuguese")),
    ("zh-hans", _("Simplified Chinese")),
    ("fr", _("French")),
    ("de", _("German")),
    ("ja", _("Japanese")),
    ("ko", _("Korean")),
]
# DJANGO_LOCALE_PATH lets the i18n test extract messages into a scratch copy.
LOCALE_PATHS = [Path(os.environ.get("DJANGO_LOCALE_PATH", BASE_DIR / "locale"))]
USE_I18N = True
USE_TZ = True
TIME_ZONE = "UTC"

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# HTTPS hardening: on by default in production, off for a plain-HTTP local run (make run sets
# DJANGO_HTTPS=0) and in DEBUG.
HTTPS = env_bool("DJANGO_HTTPS", not DEBUG)
SECURE_SSL_REDIRECT = HTTPS and env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^_ping$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31_536_000) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS and env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = HTTPS and env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
if env_bool("DJANGO_BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SILENCED_SYSTEM_CHECKS: list[str] = [] if HTTPS else ["security.W004", "security.W008"]

# CORS: off unless origins are listed; only the API answers cross-origin requests.
CORS_ALLOWED_ORIGINS = env_list("DJANGO_CORS_ALLOWED_ORIGINS")
CORS_URLS_REGEX = r"^/api/.*$"

# The only request bodies are forms and small JSON documents (a pasted config.json is the
# largest); refuse anything bigger early.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE", 512 * 1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"stdout": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stdout"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
}
