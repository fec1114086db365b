"""The helpers the result fragment renders with (issue 16 made them cheaper): each is checked
against the Django behaviour it stands in for."""

import pytest
from django.http import QueryDict
from django.utils import translation

from calculator.forms import LOSS_CHOICES, STACK_CHOICES
from calculator.templatetags.calculator_format import (
    gettext_memo,
    labels,
    stack_label,
    urlencoded,
)

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
