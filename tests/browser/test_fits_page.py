import pytest

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def test_fits_page_shows_the_table_and_links_into_the_calculator(page, live_server):
    page.goto(live_server.url + "/fits/?gpu=rtx-4090-24gb")
    assert page.locator(".tier-table tbody tr").count() == 12
    screenshot(page, "fits-table")
    first_example = page.locator(".tier-table .examples a").first
    name = first_example.inner_text()
    first_example.click()
    page.wait_for_url("**/?model=**")
    assert name in page.locator("#result").inner_text()
    assert page.server_errors == []


def test_fits_page_passes_an_accessibility_check(page, live_server):
    from axe_playwright_python.sync_playwright import Axe

    page.goto(live_server.url + "/fits/?gb=24&count=2")
    results = Axe().run(page)
    # Moderate issues count too (issue 17 tightened the check), not only serious and critical.
    found = [v for v in results.response["violations"] if v["impact"] != "minor"]
    assert found == [], results.generate_report()
