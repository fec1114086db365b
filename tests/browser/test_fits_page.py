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


def test_training_switches_appear_for_training_and_reach_the_calculator(page, live_server):
    # Issue 25, misleads 7: /fits/ had no gradient checkpointing or training stack for QLoRA.
    page.goto(live_server.url + "/fits/?gpu=rtx-4060-laptop-8gb")
    assert not page.is_visible("#id_ckpt")  # inference reads neither
    page.select_option("#id_mode", "qlora")
    assert page.is_visible("#id_ckpt")
    assert page.is_visible("#id_stack")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.input_value("#id_ckpt") == "on"  # the default for QLoRA, shown in the form
    first = page.locator("#own-title ~ .table-wrap tbody th a").first
    name = first.inner_text()
    with page.expect_navigation():
        first.click()
    assert page.input_value("#id_mode") == "qlora"
    assert page.input_value("#id_act_ckpt") == "full"
    assert name in page.locator("#result").inner_text()
    assert page.server_errors == []


def test_full_fine_tuning_keeps_the_trainers_default_when_the_mode_is_switched(page, live_server):
    page.goto(live_server.url + "/fits/?gb=80")
    page.select_option("#id_mode", "full_finetune")
    with page.expect_navigation():
        page.click("button[type=submit]")
    # TrainingArguments.gradient_checkpointing defaults to False.
    assert page.input_value("#id_ckpt") == "off"
