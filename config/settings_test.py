"""Test settings: the production module with a fixed key and fast password hashing."""

import os
import tempfile
from pathlib import Path

os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key-not-used-anywhere-else-0123456789")
os.environ.setdefault("DJANGO_HTTPS", "0")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# whitenoise warns about a missing STATIC_ROOT; tests serve static files from the finders.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
# A test database in a file, not SQLite's shared in-memory one: threads and worker processes
# then wait for each other's writes as they do in production, instead of failing at once with
# "database table is locked". One file per test process, removed when the run ends.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": str(Path(tempfile.gettempdir()) / f"vram-test-{os.getpid()}.sqlite3")
    }
