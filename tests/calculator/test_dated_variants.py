"""A dated release typed by name finds its model's preset, and the page says so (issue 27)."""

import pytest

from calculator.catalogue.selectors import preset_resolve

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("typed", "slug", "dated"),
    [
        ("DeepSeek-V3-0324", "deepseek-v3", "0324"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3", "0324"),
        ("deepseek v3 0324", "deepseek-v3", "0324"),
        # The 2507 updates have presets of their own: the exact alias wins, no note.
        ("Qwen3-235B-A22B-2507", "qwen3-235b-a22b-2507", None),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b-2507", None),
        ("Qwen3-30B-A3B-2507", "qwen3-30b-a3b-2507", None),
        # Kimi-Dev-72B is a fine-tune of Qwen2.5-72B: an alias of that preset.
        ("Kimi-Dev-72B", "qwen2.5-72b", None),
        ("moonshotai/Kimi-Dev-72B", "qwen2.5-72b", None),
        ("Devstral", "devstral-small-2507", None),
        ("mistralai/Devstral-Small-2505", "devstral-small-2507", "2505"),
    ],
)
def test_a_dated_release_finds_its_models_preset(typed, slug, dated):
    match = preset_resolve(text=typed)
    assert match.preset is not None
    assert match.preset.slug == slug
    assert match.dated == dated


@pytest.mark.parametrize("typed", ["Foo-Model-0324", "some-org/DeepSeek-V3-0324"])
def test_a_date_on_an_unknown_name_or_another_organisation_finds_nothing(typed):
    """Only an exact alias of the undated name counts; another organisation's repository of that
    name may be a differently shaped fine-tune (as for undated names)."""
    assert preset_resolve(text=typed).preset is None


def test_the_page_says_the_figures_are_the_undated_models(client):
    body = client.get("/?model=DeepSeek-V3-0324").content.decode()
    assert 'data-testid="preset-note"' in body
    assert "“DeepSeek-V3-0324” is a dated release of DeepSeek-V3 (671B)" in body


def test_an_exact_name_gets_no_note(client):
    body = client.get("/?model=DeepSeek-V3").content.decode()
    assert 'data-testid="preset-note"' not in body


@pytest.mark.parametrize(
    ("typed", "slug"),
    [
        ("gemma 3n e4b", "gemma-3n-e4b"),
        ("google/gemma-3n-E4B-it", "gemma-3n-e4b"),
        ("Gemma-3n-E2B", "gemma-3n-e2b"),
    ],
)
def test_gemma_3n_names_find_their_presets(typed, slug):
    """The walkthrough typed 'gemma 3n' and found nothing (issue 27)."""
    match = preset_resolve(text=typed)
    assert match.preset is not None
    assert match.preset.slug == slug


def test_gemma_3n_alone_suggests_both_sizes():
    slugs = {preset.slug for preset in preset_resolve(text="gemma 3n").suggestions}
    assert {"gemma-3n-e2b", "gemma-3n-e4b"} <= slugs
