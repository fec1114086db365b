"""The helpers the result fragment renders with (issue 16 made them cheaper): each is checked
against the Django behaviour it stands in for."""

import pytest
from django.http import QueryDict
from django.utils import translation

from calculator.inputs.forms import LOSS_CHOICES, STACK_CHOICES
from calculator.inputs.l10n import gettext_memo, labels
from calculator.result.formatting import stack_label, urlencoded

QUERIES = [
    "",
    "model=qwen2-7B&mode=lora&seq=1234",
    "model=Llama+3.1+8B&lora_targets=q_proj&lora_targets=v_proj",
    "model=%E9%80%9A%E4%B9%89%E5%8D%83%E9%97%AE&x=a%26b%3Dc&y=%2B%20&z=",
    "hub=https%3A%2F%2Fhuggingface.co%2Fa%2Fb%3Frev%3D1",
]


@pytest.mark.parametrize("query", QUERIES)
def test_urlencoded_is_querydicts_own_encoding(query):
    data = QueryDict(query)
    assert urlencoded(data) == data.urlencode()


@pytest.mark.parametrize("language", ["en", "de", "ja"])
def test_memoised_translations_follow_the_active_language(language):
    """Asked in one language after another, each answer is Django's own for that language."""
    for first in ("fr", language):
        with translation.override(first):
            assert gettext_memo("Share") == translation.gettext("Share")
            assert labels(LOSS_CHOICES) == {value: str(label) for value, label in LOSS_CHOICES}
            assert stack_label("deepspeed") == str(dict(STACK_CHOICES)["deepspeed"])


def test_the_memo_translates():
    with translation.override("de"):
        german = gettext_memo("Share")
    with translation.override("en"):
        english = gettext_memo("Share")
    assert english == "Share"
    assert german != english  # the German catalogue has this message (locale/de)


def django_assumption_text(assumption):
    """The reference: Django's own gettext and number_format, as the filter did before issue 16
    moved it onto the memoised helpers."""
    from django.utils.formats import number_format
    from django.utils.translation import gettext

    params = {
        key: number_format(value, use_l10n=True, force_grouping=True)
        if isinstance(value, int) and not isinstance(value, bool)
        else (gettext(value) if isinstance(value, str) and value else value)
        for key, value in assumption.params.items()
    }
    return str(gettext(assumption.template) % params)


@pytest.mark.parametrize("language", ["en", "de", "fr", "es", "zh-hans", "ja"])
def test_assumption_and_source_texts_are_djangos(language):
    from django.utils.translation import gettext

    from calculator.estimator import EstimateRequest, estimate
    from calculator.inputs.l10n import fragment_language
    from calculator.result.formatting import assumption_text, source_text
    from tests.conftest import load_validation_config

    assumptions = []
    for fields in ({"mode": "lora"}, {"mode": "inference", "seq_len": 32768, "batch_size": 12}):
        request = EstimateRequest.model_validate(
            {"model": {"config": load_validation_config("llama-3.1-8b")}, **fields}
        )
        assumptions += estimate(request).assumptions
    # Whole numbers of four digits and more are grouped in every language but Chinese.
    assert any(
        isinstance(value, int) and value >= 1000 for a in assumptions for value in a.params.values()
    )
    with translation.override(language), fragment_language():
        for assumption in assumptions:
            assert assumption_text(assumption) == django_assumption_text(assumption)
            whole = gettext(assumption.source)
            expected = (
                whole
                if whole != assumption.source
                else "; ".join(gettext(part) for part in assumption.source.split("; "))
            )
            assert source_text(assumption.source) == expected
