"""A Hugging Face Hub repository id typed into the model field, in real headless Chromium, with
the local Hub stand-in (tests/hub_standin.py) answering for the Hub."""

import json

import pytest

from calculator.catalogue.models import ModelPreset, PresetOrigin
from tests.browser.conftest import screenshot
from tests.browser.test_calculator_page import wait_for_recompute
from tests.conftest import closed_port, load_validation_config
from tests.hub_standin import Repo

pytestmark = pytest.mark.browser

REPO_ID = "standin/qwen2.5-0.5b-copy"


def test_typing_a_hub_id_imports_the_model(page, live_server, hub):
    # Qwen/Qwen2.5-0.5B's published config.json (validation/configs/SOURCES.md); transformers
    # counts 494,032,768 parameters for it (tests/estimator/data/transformers_param_counts.json).
    config = json.dumps(load_validation_config("qwen2.5-0.5b")).encode()
    hub.add(REPO_ID, Repo(files={"config.json": config}, safetensors={"BF16": 494_032_768}))
    page.goto(live_server.url + "/")
    wait_for_recompute(page, lambda: page.fill("#id_model", REPO_ID))
    # Typed in one go, the id is looked up once the typing pauses (800 ms, app.js "settle").
    page.wait_for_function(
        "() => document.querySelector('#result').innerText.includes('standin/qwen2.5-0.5b-copy')"
    )
    result = page.locator("#result").inner_text()
    assert "0.49B parameters" in result
    assert "from the Hugging Face Hub, not reviewed" in result
    assert page.server_errors == []
    screenshot(page, "calculator-hub-import")
    preset = ModelPreset.objects.get(hf_repo=REPO_ID)
    assert (preset.origin, preset.reviewed) == (PresetOrigin.HUB, False)


def test_an_unreachable_hub_gives_a_message_next_to_the_model_field(page, live_server, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    page.goto(live_server.url + "/")
    wait_for_recompute(page, lambda: page.fill("#id_model", "standin/anything"))
    errors = page.locator("#errors_model")
    errors.wait_for()
    page.wait_for_function(
        "() => document.querySelector('#errors_model').innerText.includes('could not be reached')"
    )
    assert "Hugging Face Hub could not be reached" in errors.inner_text()
    assert page.server_errors == []
