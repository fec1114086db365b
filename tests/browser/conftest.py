"""Real headless Chromium (Debian's package) driven by Playwright against pytest-django's live server."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

# Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the tests
# themselves are still synchronous and safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).parent / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium package.")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def catalogue(transactional_db) -> None:
    """The live server's tests flush the database between tests; seed it again."""
    call_command("load_presets", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115


@pytest.fixture
def page(browser, live_server, catalogue):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    page.server_errors = []
    page.on(
        "response",
        lambda response: (
            page.server_errors.append(response.url) if response.status >= 500 else None
        ),
    )
    yield page
    context.close()


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
