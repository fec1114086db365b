import pytest
from django.contrib.auth.models import User

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def test_admin_preset_list_in_a_real_browser(page, live_server):
    User.objects.create_superuser("curator", "curator@example.com", "a-long-test-password-42")
    page.goto(live_server.url + "/admin/login/")
    page.fill("#id_username", "curator")
    page.fill("#id_password", "a-long-test-password-42")
    page.click("input[type=submit]")
    page.goto(live_server.url + "/admin/calculator/modelpreset/?q=qwen2.5")
    header = page.locator("#result_list thead").inner_text()
    for column in (
        "PARAMETERS (B)",
        "LAYERS",
        "KV HEADS",
        "CONTEXT LENGTH",
        "WEIGHTS AT BF16 (GIB)",
    ):
        assert column in header.upper()
    rows = page.locator("#result_list tbody tr")
    assert rows.count() >= 5
    assert "Qwen2.5 7B" in page.locator("#result_list").inner_text()
    screenshot(page, "admin-presets")
    page.goto(live_server.url + "/admin/calculator/modelpreset/")
    # The filter is a link: wait for the page it opens, not the one it leaves (CI once read a
    # half-loaded table here).
    with page.expect_navigation():
        page.click("text=100B and more")
    page.wait_for_load_state()
    listed = page.locator("#result_list").inner_text()
    assert "DeepSeek-V3" in listed
    assert "Qwen2.5 7B" not in listed
