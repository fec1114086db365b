"""Two admins editing one row: a save made from a form opened before another save is refused,
with what that save changed, instead of silently undoing it (security review, finding 19)."""

import json
import threading
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from calculator.catalogue.admin import GpuSpecAdmin
from calculator.catalogue.models import GpuSpec, ModelAlias, ModelPreset, PresetOrigin
from tests.conftest import load_validation_config

pytestmark = pytest.mark.django_db

CONFLICT = "Someone else saved changes here after you opened this page"


class AdminFormFields(HTMLParser):
    """What a browser sends for the admin's change form on a page: every input, select and
    textarea inside the ``<form id="…_form">``, as it is rendered."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fields: dict[str, str] = {}
        self.in_form = False
        self.select: str | None = None
        self.select_first: str | None = None
        self.textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {key: value or "" for key, value in attrs}
        if tag == "form" and attr.get("id", "").endswith("_form"):
            self.in_form = True
        if not self.in_form or ("name" not in attr and tag != "option"):
            return
        if tag == "input":
            kind = attr.get("type", "text")
            if kind in ("checkbox", "radio"):
                if "checked" in attr:
                    self.fields[attr["name"]] = attr.get("value") or "on"
            elif kind not in ("submit", "button", "reset", "file", "image"):
                self.fields[attr["name"]] = attr.get("value", "")
        elif tag == "select":
            self.select, self.select_first = attr["name"], None
        elif tag == "option" and self.select is not None:
            if self.select_first is None:
                self.select_first = attr.get("value", "")
            if "selected" in attr:
                self.fields[self.select] = attr.get("value", "")
        elif tag == "textarea":
            self.textarea = attr["name"]
            self.fields[self.textarea] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.in_form = False
        elif tag == "select" and self.select is not None:
            self.fields.setdefault(self.select, self.select_first or "")
            self.select = None
        elif tag == "textarea" and self.textarea is not None:
            # A browser drops the newline that follows <textarea>, as HTML says.
            value = self.fields[self.textarea]
            self.fields[self.textarea] = value[1:] if value.startswith("\n") else value
            self.textarea = None

    def handle_data(self, data: str) -> None:
        if self.textarea is not None:
            self.fields[self.textarea] += data


def form_fields(response) -> dict[str, str]:
    parser = AdminFormFields()
    parser.feed(response.content.decode())
    assert parser.fields, "no admin change form on this page"
    return parser.fields


def save(client: Client, url: str, page, **changes: str):
    """Submit the form of ``page`` (a response) with some fields changed, as "Save" does."""
    data = {**form_fields(page), **changes, "_save": "Save"}
    return client.post(url, data)


def admin_client(username: str) -> Client:
    user = User.objects.create_superuser(username, f"{username}@example.com", "pw-for-tests-only")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admins() -> tuple[Client, Client]:
    return admin_client("alice"), admin_client("bob")


def gpu_url(slug: str) -> str:
    return f"/admin/calculator/gpuspec/{GpuSpec.objects.get(slug=slug).pk}/change/"


def test_a_stale_form_cannot_undo_another_admins_save(admins):
    """The review's steps: A and B open the RTX 4090, A saves a bandwidth, B saves a note."""
    alice, bob = admins
    url = gpu_url("rtx-4090-24gb")
    page_a, page_b = alice.get(url), bob.get(url)
    assert save(alice, url, page_a, bandwidth_gb_s="1234.5").status_code == 302

    refused = save(bob, url, page_b, notes="Bob's note.")
    body = refused.content.decode()
    assert refused.status_code == 200
    assert CONFLICT in body
    assert "They changed Memory bandwidth (GB/s) to: 1234.5 (now shown in the form)." in body
    gpu = GpuSpec.objects.get(slug="rtx-4090-24gb")
    assert gpu.bandwidth_gb_s == 1234.5
    assert gpu.notes != "Bob's note."
    shown = form_fields(refused)
    assert shown["notes"] == "Bob's note."  # what Bob typed is still there
    assert shown["bandwidth_gb_s"] == "1234.5"  # a field he left alone shows Alice's value

    # Bob has seen it; the form now carries the row as it is, and saving again keeps both.
    assert save(bob, url, refused).status_code == 302
    gpu.refresh_from_db()
    assert (gpu.bandwidth_gb_s, gpu.notes) == (1234.5, "Bob's note.")


def test_a_single_edit_still_saves_and_logs_only_what_changed(admins):
    alice, _bob = admins
    url = gpu_url("rtx-4090-24gb")
    assert save(alice, url, alice.get(url), bandwidth_gb_s="1010").status_code == 302
    assert GpuSpec.objects.get(slug="rtx-4090-24gb").bandwidth_gb_s == 1010.0
    entry = LogEntry.objects.latest("action_time")
    assert entry.get_change_message() == "Changed Memory bandwidth (GB/s)."


def test_two_changes_to_one_field_keep_mine_in_the_form_and_name_theirs(admins):
    alice, bob = admins
    url = gpu_url("rtx-4090-24gb")
    page_a, page_b = alice.get(url), bob.get(url)
    assert save(alice, url, page_a, bandwidth_gb_s="1234.5").status_code == 302
    refused = save(bob, url, page_b, bandwidth_gb_s="999")
    assert refused.status_code == 200
    assert "They changed Memory bandwidth (GB/s) to: 1234.5" in refused.content.decode()
    assert form_fields(refused)["bandwidth_gb_s"] == "999"
    assert GpuSpec.objects.get(slug="rtx-4090-24gb").bandwidth_gb_s == 1234.5
    # Bob looked and keeps his figure.
    assert save(bob, url, refused).status_code == 302
    assert GpuSpec.objects.get(slug="rtx-4090-24gb").bandwidth_gb_s == 999.0


def test_the_same_edit_made_twice_is_no_conflict(admins):
    alice, bob = admins
    url = gpu_url("rtx-4090-24gb")
    page_a, page_b = alice.get(url), bob.get(url)
    assert save(alice, url, page_a, bandwidth_gb_s="1234.5").status_code == 302
    assert save(bob, url, page_b, bandwidth_gb_s="1234.5", notes="Same.").status_code == 302
    gpu = GpuSpec.objects.get(slug="rtx-4090-24gb")
    assert (gpu.bandwidth_gb_s, gpu.notes) == (1234.5, "Same.")


def test_a_save_that_changed_nothing_does_not_block_the_next_one(admins):
    alice, bob = admins
    url = gpu_url("rtx-4090-24gb")
    page_a, page_b = alice.get(url), bob.get(url)
    assert save(alice, url, page_a).status_code == 302  # updated_at moves, no value does
    assert save(bob, url, page_b, notes="Bob's note.").status_code == 302
    assert GpuSpec.objects.get(slug="rtx-4090-24gb").notes == "Bob's note."


def test_a_form_that_carries_no_version_is_refused_until_it_does(admins):
    """A form opened before this check existed (or a hand-made POST) could undo anything."""
    alice, _bob = admins
    url = gpu_url("rtx-4090-24gb")
    fields = form_fields(alice.get(url))
    del fields["row_version"]
    refused = alice.post(url, {**fields, "notes": "Mine.", "_save": "Save"})
    assert refused.status_code == 200
    assert "This form does not say which version it was opened on" in refused.content.decode()
    assert GpuSpec.objects.get(slug="rtx-4090-24gb").notes != "Mine."
    assert save(alice, url, refused).status_code == 302
    assert GpuSpec.objects.get(slug="rtx-4090-24gb").notes == "Mine."


def test_the_conflict_message_is_translated(admins):
    alice, bob = admins
    url = gpu_url("rtx-4090-24gb")
    german = "/de" + url  # the admin's URLs carry the language, as the site's do
    page_a, page_b = alice.get(url), bob.get(german)
    save(alice, url, page_a, bandwidth_gb_s="1234.5")
    body = save(bob, german, page_b, notes="Bobs Notiz.").content.decode()
    assert "Jemand anderes hat hier gespeichert" in body
    assert "Speicherbandbreite (GB/s)" in body  # the field, in the page's language
    assert CONFLICT not in body


def preset_url(preset: ModelPreset) -> str:
    return f"/admin/calculator/modelpreset/{preset.pk}/change/"


def test_a_stale_alias_inline_cannot_undo_a_renamed_alias(admins):
    """The inline writes its rows in the same save: a stale one would put the old name back."""
    alice, bob = admins
    preset = ModelPreset.objects.get(slug="qwen2-7b")
    url = preset_url(preset)
    page_a, page_b = alice.get(url), bob.get(url)
    aliases = form_fields(page_a)
    index = next(
        key.split("-")[1]
        for key, value in aliases.items()
        if key.endswith("-alias") and value == "Qwen/Qwen2-7B"
    )
    renamed = {f"aliases-{index}-alias": "Qwen/Qwen2-7B-base"}
    assert save(alice, url, page_a, **renamed).status_code == 302

    refused = save(bob, url, page_b, note="Bob was here.")
    body = refused.content.decode()
    assert refused.status_code == 200
    assert CONFLICT in body
    assert "They changed Aliases to:" in body
    assert "Qwen/Qwen2-7B-base" in body
    names = set(ModelAlias.objects.filter(preset=preset).values_list("alias", flat=True))
    assert "Qwen/Qwen2-7B-base" in names
    assert "Qwen/Qwen2-7B" not in names
    assert ModelPreset.objects.get(pk=preset.pk).note != "Bob was here."


def test_the_reviewed_action_is_not_undone_by_a_form_opened_before_it(admins):
    alice, bob = admins
    preset = ModelPreset.objects.create(
        slug="hub-acme-tiny",
        display_name="acme/tiny",
        family="qwen3",
        hf_repo="acme/tiny",
        config=load_validation_config("qwen3-0.6b"),
        origin=PresetOrigin.HUB,
        reviewed=False,
    )
    url = preset_url(preset)
    page_b = bob.get(url)
    changelist = "/admin/calculator/modelpreset/"
    action = {"action": "mark_reviewed", "_selected_action": [str(preset.pk)], "index": "0"}
    assert alice.post(changelist, action).status_code == 302
    refused = save(bob, url, page_b, display_name="Acme Tiny")
    assert refused.status_code == 200
    assert "They changed Reviewed to: yes" in refused.content.decode()
    assert ModelPreset.objects.get(pk=preset.pk).reviewed is True
    # The field Bob left alone now shows the action's result, so saving again keeps it.
    assert save(bob, url, refused).status_code == 302
    preset.refresh_from_db()
    assert (preset.reviewed, preset.display_name) == (True, "Acme Tiny")


def test_an_imported_config_cannot_overwrite_the_preset_with_its_slug(admins):
    """The import only fills the add form; a suggested slug that exists is refused there."""
    alice, _bob = admins
    existing = ModelPreset.objects.get(slug="qwen3-8b")
    config = load_validation_config("qwen3-0.6b")
    imported = alice.post(
        "/admin/calculator/modelpreset/import-config/",
        {"config_text": json.dumps(config), "hf_repo": "Qwen/Qwen3-8B"},
    )
    add_url = imported["Location"]
    add_page = alice.get(add_url)
    assert form_fields(add_page)["slug"] == "qwen3-8b"
    refused = save(alice, add_url, add_page)
    assert refused.status_code == 200
    assert "Model preset with this Slug already exists." in refused.content.decode()
    after = ModelPreset.objects.get(slug="qwen3-8b")
    assert (after.config, after.updated_at) == (existing.config, existing.updated_at)


@pytest.mark.django_db(transaction=True)
def test_two_saves_from_one_version_at_the_same_moment_let_exactly_one_through(monkeypatch):
    """The check and the write are one step: while Alice's save sits between them (held here
    for up to a second), Bob's save of the same version must wait for it, then be refused.

    Without the row lock (PostgreSQL) or IMMEDIATE transactions (SQLite), Bob's request would
    pass the check during that second and both saves would go through, the later one undoing
    the other."""
    gpu = GpuSpec.objects.create(slug="race-gpu", name="Race GPU", vendor="nvidia", memory_gb=8)
    alice, bob = admin_client("alice"), admin_client("bob")
    url = f"/admin/calculator/gpuspec/{gpu.pk}/change/"
    page_a, page_b = alice.get(url), bob.get(url)
    alice_between, bob_between = threading.Event(), threading.Event()
    save_model = GpuSpecAdmin.save_model

    def held_save_model(self, request, obj, form, change):
        if request.user.username == "alice":
            alice_between.set()
            bob_between.wait(timeout=1.0)
        else:
            bob_between.set()
        save_model(self, request, obj, form, change)

    monkeypatch.setattr(GpuSpecAdmin, "save_model", held_save_model)
    statuses: dict[str, int] = {}
    errors: list[BaseException] = []

    def post(name: str, client: Client, page, **changes: str) -> None:
        try:
            statuses[name] = save(client, url, page, **changes).status_code
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)
        finally:
            connection.close()

    first = threading.Thread(target=post, args=("alice", alice, page_a), kwargs={"notes": "A"})
    first.start()
    assert alice_between.wait(timeout=10)
    second = threading.Thread(target=post, args=("bob", bob, page_b), kwargs={"notes": "B"})
    second.start()
    first.join()
    second.join()
    assert errors == []
    assert statuses == {"alice": 302, "bob": 200}
    assert GpuSpec.objects.get(pk=gpu.pk).notes == "A"


@pytest.mark.django_db(transaction=True)
def test_the_catalogue_loader_and_an_admin_save_at_once_lose_neither(monkeypatch, tmp_path):
    """`load_presets` updates a row nobody edited; an admin saving it during that update must
    not be overwritten (and the row then look unedited to every later load). The loader is
    held between its read and its write for up to a second while the admin saves."""
    from calculator.catalogue import services

    entry = {"slug": "race-gpu", "name": "Race GPU", "vendor": "nvidia", "memory_gb": 8}
    seed = tmp_path / "gpus.json"
    seed.write_text(json.dumps({"gpus": [{**entry, "bandwidth_gb_s": 500}]}))
    services.catalogue_load_gpus(gpu_model=GpuSpec, path=seed)
    seed.write_text(json.dumps({"gpus": [{**entry, "bandwidth_gb_s": 600}]}))
    alice = admin_client("alice")
    url = f"/admin/calculator/gpuspec/{GpuSpec.objects.get(slug='race-gpu').pk}/change/"
    page = alice.get(url)

    loader_between, admin_done = threading.Event(), threading.Event()
    row_values = services._row_values

    def held_row_values(row, fields):
        if threading.current_thread().name == "loader":
            loader_between.set()
            admin_done.wait(timeout=1.0)
        return row_values(row, fields)

    monkeypatch.setattr(services, "_row_values", held_row_values)
    results: dict[str, Any] = {}
    errors: list[BaseException] = []

    def run(name: str, work) -> None:
        try:
            results[name] = work()
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)
        finally:
            if name == "admin":
                admin_done.set()
            connection.close()

    loader = threading.Thread(
        name="loader",
        target=run,
        args=("loader", lambda: services.catalogue_load_gpus(gpu_model=GpuSpec, path=seed)),
    )
    loader.start()
    assert loader_between.wait(timeout=10)
    admin = threading.Thread(
        target=run, args=("admin", lambda: save(alice, url, page, notes="Alice's note."))
    )
    admin.start()
    loader.join()
    admin.join()
    assert errors == []
    assert results["loader"].updated == ["race-gpu"]
    refused = results["admin"]
    assert refused.status_code == 200  # opened before the loader's update: shown what changed
    assert "They changed Memory bandwidth (GB/s) to: 600" in refused.content.decode()
    assert form_fields(refused)["notes"] == "Alice's note."
    assert GpuSpec.objects.get(slug="race-gpu").bandwidth_gb_s == 600.0
