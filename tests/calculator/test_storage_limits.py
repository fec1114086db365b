"""What visitors store (pasted configs, saved links) is limited per client, and what one client
stores can never remove what another saved (finding 8 of the security review of 654b6a2: 25
posted configs evicted another visitor's ``cfg=`` link at a cap of 20).

Clients are told apart by their address (``REMOTE_ADDR``; no proxy configured).
"""

import json

import pytest

from calculator.catalogue.models import PastedConfig, SavedResult

pytestmark = pytest.mark.django_db

ALICE = {"REMOTE_ADDR": "10.0.0.1"}
MALLORY = {"REMOTE_ADDR": "10.0.0.66"}


def config_text(llama31_8b: dict, marker: int) -> str:
    """A distinct valid config each time (an unread key), so each is a new row."""
    return json.dumps({**llama31_8b, "_marker": marker})


def paste(client, text: str, who: dict):
    return client.post("/", {"source": "config", "config": text}, HTTP_HX_REQUEST="true", **who)


def linked_id(response) -> str | None:
    url = response.get("HX-Replace-Url", "")
    return url.split("cfg=")[1].split("&")[0] if "cfg=" in url else None


def test_a_flood_of_configs_cannot_evict_someone_elses_link(client, settings, llama31_8b):
    settings.PASTED_CONFIG_MAX_ROWS = 3
    settings.PASTED_CONFIG_MAX_PER_CLIENT = 2
    settings.PASTED_CONFIG_RATE_PER_HOUR = 1_000
    alice_id = linked_id(paste(client, config_text(llama31_8b, 0), ALICE))
    assert alice_id
    for marker in range(1, 26):
        paste(client, config_text(llama31_8b, marker), MALLORY)
    # Mallory's own quota dropped Mallory's own oldest; Alice's row is still there.
    assert PastedConfig.objects.filter(pk=alice_id).exists()
    assert PastedConfig.objects.count() == 3
    opened = client.get("/", {"source": "config", "cfg": alice_id})
    assert "no longer stored" not in opened.content.decode()


def test_a_full_table_refuses_new_configs_but_still_shows_the_result(client, settings, llama31_8b):
    settings.PASTED_CONFIG_MAX_ROWS = 1
    settings.PASTED_CONFIG_RATE_PER_HOUR = 1_000
    paste(client, config_text(llama31_8b, 0), ALICE)
    response = paste(client, config_text(llama31_8b, 1), MALLORY)
    body = response.content.decode()
    assert "storage for pasted configs is full" in body
    assert 'class="total"' in body
    assert linked_id(response) is None
    assert PastedConfig.objects.count() == 1


def test_storing_configs_is_rate_limited_per_client(client, settings, llama31_8b):
    settings.PASTED_CONFIG_RATE_PER_HOUR = 2
    ids = [linked_id(paste(client, config_text(llama31_8b, n), MALLORY)) for n in range(3)]
    assert ids[0]
    assert ids[1]
    assert ids[2] is None
    third = paste(client, config_text(llama31_8b, 3), MALLORY).content.decode()
    assert "many configs were stored from your address" in third
    # Someone else is not affected, and linking a config already stored costs nothing.
    assert linked_id(paste(client, config_text(llama31_8b, 9), ALICE))
    assert linked_id(paste(client, config_text(llama31_8b, 0), MALLORY)) == ids[0]


def test_a_config_two_clients_linked_is_nobodys_to_evict(client, settings, llama31_8b):
    settings.PASTED_CONFIG_MAX_PER_CLIENT = 1
    settings.PASTED_CONFIG_RATE_PER_HOUR = 1_000
    shared = config_text(llama31_8b, 0)
    shared_id = linked_id(paste(client, shared, MALLORY))
    paste(client, shared, ALICE)  # Alice links the same text
    paste(client, config_text(llama31_8b, 1), MALLORY)  # past Mallory's quota of one
    assert PastedConfig.objects.filter(pk=shared_id).exists()


def test_saved_links_of_others_survive_a_full_table(client, settings):
    settings.SAVED_RESULT_MAX_ROWS = 2
    settings.SAVED_RESULT_RATE_PER_HOUR = 1_000
    alice = client.post("/r/", {"query": "model=qwen2-7b"}, **ALICE)
    assert alice.status_code == 302
    alice_id = alice["Location"].rsplit("/", 1)[1]
    statuses = [
        client.post("/r/", {"query": f"model=qwen2-7b&seq={n}"}, **MALLORY).status_code
        for n in (1024, 2048, 4096)
    ]
    # Mallory's second and third saves made room by dropping Mallory's own earlier one.
    assert statuses == [302, 302, 302]
    assert SavedResult.objects.filter(pk=alice_id).exists()
    assert SavedResult.objects.count() == 2
    assert client.get(f"/r/{alice_id}").status_code == 200


def test_a_client_with_no_row_of_its_own_is_refused_when_the_table_is_full(client, settings):
    settings.SAVED_RESULT_MAX_ROWS = 1
    settings.SAVED_RESULT_RATE_PER_HOUR = 1_000
    assert client.post("/r/", {"query": "model=qwen2-7b"}, **ALICE).status_code == 302
    refused = client.post("/r/", {"query": "model=qwen2-7b"}, **MALLORY)
    assert refused.status_code == 503
    assert "storage for saved links is full" in refused.content.decode()
    assert SavedResult.objects.count() == 1
