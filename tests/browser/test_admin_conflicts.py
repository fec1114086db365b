import pytest
from django.contrib.auth.models import User

from calculator.catalogue.models import GpuSpec
from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def log_in(page, url: str, username: str) -> None:
    User.objects.create_superuser(username, f"{username}@example.com", "a-long-test-password-42")
    page.goto(url + "/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "a-long-test-password-42")
    page.click("input[type=submit]")


def test_two_admins_on_one_gpu_keep_both_edits(page, browser, live_server):
    """Finding 19 in Chromium: B's stale save is refused with what A changed, then kept."""
    other = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    bob = other.new_page()
    try:
        log_in(page, live_server.url, "alice")
        log_in(bob, live_server.url, "bob")
        gpu = GpuSpec.objects.get(slug="rtx-4090-24gb")
        change = f"{live_server.url}/admin/calculator/gpuspec/{gpu.pk}/change/"
        page.goto(change)
        bob.goto(change)
        page.fill("#id_bandwidth_gb_s", "1234.5")
        page.click("input[name=_save]")
        bob.fill("#id_notes", "Bob's note.")
        bob.click("input[name=_save]")

        errors = bob.locator("ul.errorlist.nonfield")
        assert "Someone else saved changes here" in errors.inner_text()
        assert "Memory bandwidth (GB/s) to: 1234.5" in errors.inner_text()
        assert bob.input_value("#id_notes") == "Bob's note."
        assert bob.input_value("#id_bandwidth_gb_s") == "1234.5"
        screenshot(bob, "admin-conflict")
        bob.click("input[name=_save]")
        assert "was changed successfully" in bob.locator(".messagelist").inner_text()
        gpu.refresh_from_db()
        assert (gpu.bandwidth_gb_s, gpu.notes) == (1234.5, "Bob's note.")
        assert page.server_errors == []
    finally:
        other.close()
