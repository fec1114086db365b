"""An unknown model_type is estimated but flagged: on the page, in the CLI's JSON."""

import io
import json

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db

# Standard field names under a model_type no family module registers.
UNKNOWN = {
    "model_type": "brand_new_family",
    "vocab_size": 1000,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
}


def test_page_shows_the_approximate_notice_above_the_total(client):
    page = client.get("/", {"source": "config", "config": json.dumps(UNKNOWN)})
    html = page.content.decode()
    assert 'id="approximate-notice"' in html
    assert html.index('id="approximate-notice"') < html.index('class="headline"')
    as_json = client.get(
        "/", {"source": "config", "config": json.dumps(UNKNOWN), "format": "json"}
    ).json()
    assert as_json["approximate"] is True


def test_known_family_shows_no_notice(client):
    page = client.get("/", {"source": "custom", "params": "7"})
    assert 'id="approximate-notice"' not in page.content.decode()


def test_cli_reports_approximate_with_the_reason(tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"model": {"config": UNKNOWN}}))
    out = io.StringIO()
    call_command("estimate", "--json", str(path), stdout=out)
    result = json.loads(out.getvalue())
    assert result["approximate"] is True
    assert "brand_new_family" in result["approximate_reason"]


def test_notice_quotes_the_measured_generic_reader_error():
    """The page's figures are the ones validation/generic_reader_error.py measured (rounded)."""
    from pathlib import Path

    from calculator.estimator import architecture

    template = (
        Path(__file__).resolve().parents[2] / "templates/jinja2/calculator/_approximate.jinja"
    ).read_text()
    worst = int(architecture.GENERIC_READER_WORST_ERROR_PERCENT + 0.5)
    median = int(architecture.GENERIC_READER_MEDIAN_ERROR_PERCENT + 0.5)
    assert f'worst="{worst}%", median="{median}%"' in template
