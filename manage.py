#!/usr/bin/env python
import os
import sys
from pathlib import Path


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # Local convenience: `make run` keeps a generated key in var/secret_key; management commands
    # run by hand (createsuperuser, makemigrations) use it when the environment sets none.
    local_key = Path(__file__).resolve().parent / "var" / "secret_key"
    if "DJANGO_SECRET_KEY" not in os.environ and local_key.exists():
        os.environ["DJANGO_SECRET_KEY"] = local_key.read_text().strip()
        os.environ.setdefault("DJANGO_HTTPS", "0")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
