"""The calculator form cleans only the fields a request reads (issue 16), straight from the data.

The reference for what a cleaned field is: Django's own ``Form._clean_fields`` (through a
BoundField per field), run here on the same data and restricted to the same fields.
"""

import pytest
from django import forms
from django.http import QueryDict

from calculator.inputs.forms import CUSTOM_FIELDS, LLAMA_CPP_FIELDS, VLLM_FIELDS, CalculatorForm
from calculator.web.views import form_data

QUERIES = [
    "model=qwen2-7B&mode=lora&seq=1234",
    "model=qwen2-7B&mode=inference&runtime=llama_cpp&ubatch=256&ctk=q8_0",
    "model=qwen2-7B&mode=inference&runtime=vllm&util=0.85&max_seqs=64",
    "model=qwen2-7B&mode=full_finetune&mixed=on&stack=deepspeed&zero=3&gpus=8",
    "source=custom&params=7&layers=32&hidden=4096&mode=qlora",
    "source=config&config=%7B%7D&mode=pretrain&train_b=100",
    # invalid values in fields the request reads
    "model=qwen2-7B&mode=inference&runtime=llama_cpp&ubatch=zero&seq=-5",
    "model=qwen2-7B&mode=lora&lora_rank=abc&precision=int3",
    "source=custom&params=-1&mode=banana",
]


def _reference_form(read: set[str]) -> type[forms.Form]:
    """A plain Django form with the calculator's fields that a request reads: Django cleans it
    the standard way, through a BoundField per field."""
    fields = {name: field for name, field in CalculatorForm.base_fields.items() if name in read}
    return type("Reference", (forms.Form,), fields)


@pytest.mark.parametrize("query", QUERIES)
def test_the_fields_read_are_cleaned_as_django_cleans_them(query):
    data = form_data(QueryDict(query))
    form = CalculatorForm(data)
    form.is_valid()
    unread = form.unread_fields()
    reference = _reference_form(set(form.fields) - unread)(data)
    reference.is_valid()
    for name in reference.fields:
        if name in reference.errors:
            # The form's own clean() may add a message after the field's own ones.
            expected = list(reference.errors[name])
            assert list(form.errors[name])[: len(expected)] == expected
        elif name not in {"source", "runtime"}:  # clean() fills these two when left empty
            assert form.cleaned_data[name] == reference.cleaned_data[name], name
    for name in unread:
        assert name not in form.cleaned_data
        assert name not in form.errors


def test_the_form_has_nothing_the_direct_cleaning_leaves_out():
    """What Django's cleaning handles and the form's own does not: none of it is used."""
    form = CalculatorForm(form_data(QueryDict("")))
    assert form.prefix is None
    assert not form.files
    for name, field in form.fields.items():
        assert not field.disabled, name
        assert not isinstance(field, forms.FileField), name
        assert not hasattr(form, f"clean_{name}"), name


def test_unread_fields_follow_the_mode_runtime_and_source():
    lora = CalculatorForm(form_data(QueryDict("model=qwen2-7B&mode=lora"))).unread_fields()
    assert set(LLAMA_CPP_FIELDS) | set(VLLM_FIELDS) | set(CUSTOM_FIELDS) | {"config"} <= lora
    assert {"runtime", "mode", "model", "seq", "batch", "lora_rank", "optimizer"}.isdisjoint(lora)
    llama = CalculatorForm(form_data(QueryDict("model=qwen2-7B&runtime=llama_cpp"))).unread_fields()
    assert set(LLAMA_CPP_FIELDS).isdisjoint(llama)
    assert set(VLLM_FIELDS) <= llama
    custom = CalculatorForm(form_data(QueryDict("source=custom&params=7"))).unread_fields()
    assert set(CUSTOM_FIELDS).isdisjoint(custom)


@pytest.mark.django_db
def test_a_bad_value_in_a_hidden_field_does_not_fail_the_form(client):
    """The page hides llama.cpp's options under transformers and disables their inputs, so a
    browser never sends them; a hand-edited link that does gets the result, not a message it
    cannot see. Where the field is shown, the same value is a message next to it."""
    hidden = client.get("/?model=qwen2-7B&mode=lora&ubatch=zero", HTTP_HX_REQUEST="true")
    assert 'class="total"' in hidden.content.decode()
    assert "HX-Reswap" not in hidden
    shown = client.get(
        "/?model=qwen2-7B&mode=inference&runtime=llama_cpp&ubatch=zero", HTTP_HX_REQUEST="true"
    )
    assert shown["HX-Reswap"] == "none"  # the last result stays; only the messages change
    assert 'id="errors_ubatch"' in shown.content.decode()
    assert "Enter a whole number." in shown.content.decode()
