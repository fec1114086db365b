"""A Hub (or a mirror, or a repository's author) that misbehaves: bodies too large or too slow,
redirects, renamed repositories, odd model info, configs the database cannot keep. Each answer
comes from the local stand-in (tests/hub_standin.py, ``Hostile``); none reaches the network.

Every failure must be a ``HubError`` (a message next to the model field, a 4xx in the API),
never a 500, fast (``HUB_DEADLINE_SECONDS`` for the whole look-up), and must store nothing.
"""

import gzip
import json
import time

import pytest
from django.db import DataError, IntegrityError
from django.utils import translation

import calculator.catalogue.hub as hub_module
from calculator.catalogue.hub import HubError, hub_model_import
from calculator.catalogue.models import ModelAlias, ModelPreset
from tests.calculator.test_hub import QWEN25_05B_PARAMS, QWEN_COPY, post, serve_qwen
from tests.conftest import load_validation_config
from tests.hub_standin import (
    Hostile,
    HubStandIn,
    Repo,
    Server,
    safetensors_file,
    safetensors_header,
)

pytestmark = pytest.mark.django_db

MiB = 1 << 20
INT64_MAX = (1 << 63) - 1


def qwen_config(**changes) -> dict:
    """Qwen/Qwen2.5-0.5B's published config.json (validation/configs/SOURCES.md), changed."""
    return {**load_validation_config("qwen2.5-0.5b"), **changes}


def serve_config(hub, config_text: bytes, repo_id=QWEN_COPY, **kwargs) -> Repo:
    kwargs.setdefault("safetensors", {"BF16": QWEN25_05B_PARAMS})
    return hub.add(repo_id, Repo(files={"config.json": config_text}, **kwargs))


def failed_import(repo_id=QWEN_COPY) -> HubError:
    with pytest.raises(HubError) as error:
        hub_model_import(repo_id=repo_id)
    assert not ModelPreset.objects.filter(hf_repo__iexact=repo_id).exists()
    assert not ModelAlias.objects.filter(alias__iexact=repo_id).exists()
    return error.value


def shards(count: int) -> dict[str, bytes]:
    """A sharded checkpoint: an index and ``count`` one-tensor shards (BF16 [2, 3] each)."""
    names = [f"model-{i:05d}-of-{count:05d}.safetensors" for i in range(1, count + 1)]
    files = {name: safetensors_file({f"t{i}": ("BF16", [2, 3])}) for i, name in enumerate(names)}
    index = {"weight_map": {f"t{i}": name for i, name in enumerate(names)}}
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    return files


@pytest.fixture
def elsewhere():
    """A second stand-in on another port: another origin, as a CDN or a hostile host is."""
    other = HubStandIn()
    with Server(other):
        yield other


# --- finding 4: a config.json too large is refused without being read --------------------------


def test_a_huge_config_is_refused_from_its_content_length_before_the_body(hub):
    # 300 MiB announced, and the body held back 5 s: refusing must not wait for it.
    serve_config(hub, b"{}").hostile["config.json"] = Hostile(size=300 * MiB, body_delay_seconds=5)
    started = time.monotonic()
    error = failed_import()
    assert time.monotonic() - started < 2
    assert error.kind == "malformed"
    assert "is larger than 1 MiB" in error.message


def test_a_huge_config_without_content_length_is_read_no_further_than_the_cap(hub):
    serve_config(hub, b"{}").hostile["config.json"] = Hostile(size=128 * MiB, chunked=True)
    error = failed_import()
    assert error.kind == "malformed"
    assert "is larger than 1 MiB" in error.message
    # What the stand-in managed to write before the reader hung up: the cap plus what the
    # sockets buffer (a few MiB on loopback), not the 128 MiB.
    sent = sum(n for path, n in hub.sent.items() if path.endswith("/config.json"))
    assert sent < 32 * MiB


def test_a_huge_index_is_read_no_further_than_the_cap_and_the_import_goes_on(hub):
    repo = serve_qwen(hub, safetensors=None)
    repo.files["model.safetensors.index.json"] = b"{}"
    repo.hostile["model.safetensors.index.json"] = Hostile(size=128 * MiB, chunked=True)
    preset = hub_model_import(repo_id=QWEN_COPY)
    assert preset.hub_dtypes == {}
    assert preset.params_total == QWEN25_05B_PARAMS
    sent = sum(n for path, n in hub.sent.items() if path.endswith("index.json"))
    assert sent < 32 * MiB


def test_a_compressed_answer_the_client_did_not_ask_for_is_not_inflated(hub):
    # gzip of 64 MiB of spaces is 64 kB: inflated, the cap would count the wrong bytes.
    config = b"{" + b" " * (64 * MiB) + b"}"
    repo = serve_config(hub, gzip.compress(config))
    repo.hostile["config.json"] = Hostile(headers=(("Content-Encoding", "gzip"),))
    error = failed_import()
    assert error.kind == "offline"
    assert hub.headers[-1]["accept-encoding"] == "identity"


# --- finding 15: one deadline for the whole look-up ---------------------------------------------


@pytest.mark.parametrize("answer", ["info", "config.json"])
def test_a_trickling_answer_ends_at_the_deadline(hub, settings, answer):
    # One byte every 20 ms: each read returns well within the per-request timeout, the whole
    # answer would take seconds.
    settings.HUB_DEADLINE_SECONDS = 1
    serve_qwen(hub).hostile[answer] = Hostile(trickle_seconds=0.02)
    started = time.monotonic()
    error = failed_import()
    assert time.monotonic() - started < 2.5
    assert error.kind == "offline"
    assert "did not answer in time" in error.message


def test_slow_shard_headers_end_at_the_deadline(hub, settings):
    # No safetensors summary and 16 shards, each answering after 0.4 s (6.4 s in all).
    settings.HUB_DEADLINE_SECONDS = 1.5
    repo = serve_qwen(hub, safetensors=None)
    repo.files.update(shards(16))
    repo.hostile.update(
        {name: Hostile(delay_seconds=0.4) for name in repo.files if name.startswith("model-")}
    )
    started = time.monotonic()
    error = failed_import()
    assert time.monotonic() - started < 3
    assert error.kind == "offline"
    assert "did not answer in time" in error.message


def test_a_spent_deadline_makes_no_request(hub, settings):
    settings.HUB_DEADLINE_SECONDS = 0
    serve_qwen(hub)
    assert failed_import().kind == "offline"
    assert hub.requests == []


def test_shard_headers_within_the_deadline_are_still_summed(hub):
    repo = serve_qwen(hub, safetensors=None)
    repo.files.update(shards(3))
    assert hub_model_import(repo_id=QWEN_COPY).hub_dtypes == {"BF16": 3 * 6}


# --- finding 15: redirects ---------------------------------------------------------------------


def test_redirects_are_followed_a_bounded_number_of_times(hub):
    repo = serve_qwen(hub)
    repo.hostile["info"] = Hostile(redirect=f"/api/models/{QWEN_COPY}")  # to itself, forever
    error = failed_import()
    assert error.kind == "offline"
    assert len(hub.requests) == hub_module.MAX_REDIRECTS + 1


def test_the_token_does_not_follow_a_redirect_to_another_host(hub, elsewhere, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_real")
    repo = serve_qwen(hub)
    elsewhere.add(QWEN_COPY, Repo(files=dict(repo.files)))
    path = f"/{QWEN_COPY}/resolve/{repo.sha}/config.json"
    repo.hostile["config.json"] = Hostile(redirect=elsewhere.url + path)
    preset = hub_model_import(repo_id=QWEN_COPY)
    assert preset.params_total == QWEN25_05B_PARAMS
    assert elsewhere.requests == [("GET", path)]
    assert "authorization" not in elsewhere.headers[0]
    # The Hub itself got the token with each request.
    assert all(h["authorization"] == "Bearer hf_test_token_not_real" for h in hub.headers)


def test_the_token_follows_a_redirect_on_the_hub_itself(hub, monkeypatch):
    # A renamed repository: the Hub redirects its old id to the new one.
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_real")
    serve_qwen(hub, repo_id="standin/new-name")
    old = serve_qwen(hub, repo_id="standin/old-name")
    old.hostile["info"] = Hostile(redirect="/api/models/standin/new-name")
    preset = hub_model_import(repo_id="standin/old-name")
    assert preset.hf_repo == "standin/new-name"
    assert [path for _, path in hub.requests][1].startswith("/api/models/standin/new-name")
    assert hub.headers[1]["authorization"] == "Bearer hf_test_token_not_real"


# --- finding 10: the Hub answers with another canonical id ----------------------------------


def test_a_renamed_repository_is_stored_once_and_then_found_by_its_typed_id(client, hub):
    serve_qwen(hub, repo_id="standin/old-name", info={"id": "standin/new-name"})
    assert post(client, {"model": {"hub": "standin/old-name"}}).status_code == 200
    seen = len(hub.requests)
    for _ in range(2):
        response = post(client, {"model": {"hub": "standin/old-name"}})
        assert response.status_code == 200, response.content
    assert len(hub.requests) == seen  # found by its typed id: no request
    preset = ModelPreset.objects.get(hf_repo="standin/new-name")
    assert sorted(a.alias for a in preset.aliases.all()) == ["standin/new-name", "standin/old-name"]


def test_another_typed_id_of_a_stored_repository_gets_the_same_row(hub):
    serve_qwen(hub, repo_id="standin/old-name", info={"id": "standin/new-name"})
    serve_qwen(hub, repo_id="standin/older-name", info={"id": "standin/new-name"})
    first = hub_model_import(repo_id="standin/old-name")
    assert hub_model_import(repo_id="standin/older-name").pk == first.pk
    assert ModelPreset.objects.filter(hf_repo="standin/new-name").count() == 1


def test_a_withdrawn_canonical_repository_stays_withdrawn_under_another_id(hub):
    serve_qwen(hub, repo_id="standin/new-name")
    serve_qwen(hub, repo_id="standin/old-name", info={"id": "standin/new-name"})
    withdrawn = hub_model_import(repo_id="standin/new-name")
    ModelPreset.objects.filter(pk=withdrawn.pk).update(active=False)
    with pytest.raises(HubError) as error:
        hub_model_import(repo_id="standin/old-name")
    assert error.value.kind == "withdrawn"


def test_slugs_do_not_collide_when_a_row_lost_its_aliases(hub):
    # Admins may delete aliases: the same canonical id is then stored again, under a new slug.
    serve_qwen(hub, repo_id="standin/old-name", info={"id": "standin/new-name"})
    slugs = set()
    for _ in range(3):
        preset = hub_model_import(repo_id="standin/old-name")
        slugs.add(preset.slug)
        ModelAlias.objects.all().delete()
        ModelPreset.objects.filter(pk=preset.pk).update(hf_repo="")
    assert len(slugs) == 3


def test_model_info_without_an_id_imports_under_the_typed_id(hub):
    serve_qwen(hub, info_without=("id",))
    preset = hub_model_import(repo_id=QWEN_COPY)
    assert preset.hf_repo == QWEN_COPY


@pytest.mark.parametrize(
    "info",
    [
        {"id": "a" * 150 + "/" + "b" * 150},  # longer than the 200-character column
        {"id": "not a repository id"},
        {"id": 42},
        {"sha": ["not", "a", "commit"]},
        {"sha": "../../etc"},
        {"safetensors": "none"},
        {"safetensors": {"parameters": {"BF16": "many"}}},
        {"safetensors": {"parameters": {"BF16": -1}}},
        {"safetensors": {"parameters": {"BF\u0000": 5}}},
        {"safetensors": {"parameters": {"BF16": 1 << 64}}},  # beyond a bigint
        {"safetensors": {"parameters": {"BF16": INT64_MAX, "F32": INT64_MAX}}},  # their sum
    ],
)
def test_unusable_model_info_is_refused(hub, info):
    serve_qwen(hub, info=info)
    error = failed_import()
    assert error.kind == "malformed"


def test_safetensors_headers_with_huge_shapes_are_refused(hub):
    repo = serve_qwen(hub, safetensors=None)
    header, _data_bytes = safetensors_header({"w": ("BF16", [1 << 40, 1 << 40])})
    repo.files["model.safetensors"] = header  # only the header is ever read
    error = failed_import()
    assert error.kind == "malformed"


# --- finding 5: configs the estimator or the database cannot keep ---------------------------


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("config_text", "words"),
    [
        (json.dumps(qwen_config(note="a\u0000b")), "NUL"),
        (json.dumps(qwen_config(**{"k\u0000": 1})), "NUL"),
        (json.dumps(qwen_config(extra=nested(300))), "deeper than 20 levels"),
        (json.dumps(qwen_config(extra=nested(20))), "deeper than 20 levels"),  # 21 with the top
        (json.dumps(qwen_config(extra=[1 << 64])), "64-bit"),
        (json.dumps(qwen_config(extra={"x": -(1 << 63) - 1})), "64-bit"),
        (json.dumps(qwen_config(vocab_size=1 << 64)), "64-bit"),
        (json.dumps(qwen_config(hidden_size=float("inf"))), "cannot be used"),
        (json.dumps(qwen_config(hidden_size=float("nan"))), "cannot be used"),
        (json.dumps(qwen_config(hidden_size=1e300)), "cannot be used"),
        # Each field within 64 bits, the parameter count beyond them.
        (json.dumps(qwen_config(vocab_size=1 << 62)), "cannot be used"),
    ],
)
def test_configs_that_cannot_be_kept_are_refused_before_storing(client, hub, config_text, words):
    serve_config(hub, config_text.encode())
    response = post(client, {"model": {"hub": QWEN_COPY}})
    assert response.status_code == 422, response.content
    assert words in response.json()["errors"][0]["message"]
    assert not ModelPreset.objects.filter(hf_repo=QWEN_COPY).exists()
    # The next look-up asks again (failures are not cached) and fails the same way.
    assert post(client, {"model": {"hub": QWEN_COPY}}).status_code == 422


def test_a_config_twenty_levels_deep_is_kept(hub):
    serve_config(hub, json.dumps(qwen_config(extra=nested(19))).encode())
    assert hub_model_import(repo_id=QWEN_COPY).config["extra"] == nested(19)


@pytest.mark.parametrize(
    "refusal",
    [
        DataError("value too long for type character varying(200)"),
        OverflowError("Python int too large to convert to SQLite INTEGER"),
        IntegrityError("UNIQUE constraint failed: calculator_modelpreset.slug"),
    ],
)
def test_a_row_the_database_refuses_is_a_hub_error_and_leaves_nothing(hub, monkeypatch, refusal):
    serve_qwen(hub)

    def refuse(*args, **kwargs):
        raise refusal

    # The preset is saved, then its second write (the alias) is refused: nothing may remain.
    monkeypatch.setattr(ModelAlias, "save", refuse)
    error = failed_import()
    assert error.kind == "malformed"
    assert not ModelPreset.objects.filter(origin="hub").exists()


# --- messages ------------------------------------------------------------------------------------


def hub_failures(settings) -> list[str]:
    """One message of each new kind: too large, too deep, odd model info, too slow."""
    messages = [failed_import(r).message for r in ("standin/huge", "standin/deep", "standin/odd")]
    settings.HUB_DEADLINE_SECONDS = 0
    messages.append(failed_import("standin/huge").message)
    settings.HUB_DEADLINE_SECONDS = 10
    return messages


@pytest.mark.parametrize("language", ["es", "pt-br", "zh-hans", "fr", "de", "ja", "ko"])
def test_the_new_messages_are_translated(hub, settings, language):
    serve_config(hub, b"{}", repo_id="standin/huge").hostile["config.json"] = Hostile(size=2 * MiB)
    serve_config(hub, json.dumps(nested(30)).encode(), repo_id="standin/deep")
    serve_qwen(hub, repo_id="standin/odd", info={"id": 42})
    with translation.override("en"):
        english = hub_failures(settings)
    with translation.override(language):
        translated = hub_failures(settings)
    fragments = ["larger than 1 MiB", "deeper than 20", "model information", "did not answer"]
    for fragment, in_english, message in zip(fragments, english, translated, strict=True):
        assert fragment in in_english
        assert fragment not in message
        assert "standin/" in message  # the placeholder survived
