"""Writes: seeding the catalogue from ``presets/``."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from calculator.catalogue.models import (
    ModelAlias,
    PastedConfig,
    SavedResult,
    alias_key,
    json_safe,
    pasted_config_id,
)
from calculator.estimator import Architecture, ConfigError

PRESETS_DIR = Path(settings.BASE_DIR) / "presets"

PRESET_FIELDS = (
    "display_name",
    "family",
    "hf_repo",
    "config",
    "release_date",
    "license",
    "native_precision",
    "quantization",
    "official_params",
    "source",
    "note",
    "active",
)
GPU_FIELDS = (
    "name",
    "vendor",
    "memory_gb",
    "usable_memory_bytes",
    "memory_type",
    "bandwidth_gb_s",
    "bf16_tflops_dense",
    "fp16_tflops_dense",
    "fp8_support",
    "fp8_tflops_dense",
    "int8_tops_dense",
    "interconnect",
    "interconnect_gb_s",
    "form_factor",
    "unified_memory",
    "unified_usable_fraction",
    "release_year",
    "source",
    "notes",
    "active",
)
# The GPU fields seeded before migration 0008 added the performance figures; 0008 uses them to
# tell rows an admin edited from rows still as seeded.
GPU_FIELDS_BEFORE_0008 = tuple(
    name
    for name in GPU_FIELDS
    if name not in {"fp8_tflops_dense", "int8_tops_dense", "interconnect", "interconnect_gb_s"}
)


@dataclass
class LoadReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept_edited: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def summary(self, what: str) -> str:
        line = (
            f"{what}: {len(self.created)} created, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.kept_edited)} kept (edited by an admin)"
        )
        if self.kept_edited:
            line += ": " + ", ".join(self.kept_edited)
        return line


def _normalise(value: Any) -> Any:
    """Numbers compare by value (the database may return 3350.0 for a seeded 3350)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {key: _normalise(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(item) for item in value]
    return str(value)


def fingerprint(values: dict[str, Any]) -> str:
    """A stable hash of the seeded values; a row whose hash no longer matches was edited."""
    text = json.dumps(_normalise(values), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _preset_values(entry: dict[str, Any], family: str) -> dict[str, Any]:
    sources = [entry.get("config_source"), entry.get("official_params_source")]
    return {
        "display_name": entry["display_name"],
        "family": family,
        "hf_repo": entry.get("hf_repo") or "",
        "config": json_safe(entry["config"]),
        "release_date": entry.get("release_date") or None,
        "license": entry.get("license") or "",
        "native_precision": entry.get("native_precision") or "bf16",
        "quantization": entry.get("quantization") or "",
        "official_params": entry.get("official_params") or "",
        "source": "\n".join(str(s) for s in sources if s),
        "note": entry.get("note") or "",
        "active": bool(entry.get("active", True)),
    }


def _row_values(row: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    values = {name: getattr(row, name) for name in fields}
    for name in ("release_date",):
        if name in values and values[name] is not None:
            values[name] = str(values[name])
    if "memory_gb" in values:
        values["memory_gb"] = float(values["memory_gb"])
    return values


def preset_lookup_names(*, slug: str, display_name: str, hf_repo: str) -> list[str]:
    """The names a preset is found by without hand-made aliases: its slug, display name and
    Hugging Face repo id (those with a letter or digit), each once."""
    names = [slug, display_name, hf_repo]
    return [name for name in dict.fromkeys(names) if name and alias_key(name)]


def _seed_aliases(entry: dict[str, Any]) -> list[str]:
    names = [
        *preset_lookup_names(
            slug=entry["slug"],
            display_name=entry["display_name"],
            hf_repo=entry.get("hf_repo") or "",
        ),
        *entry.get("aliases", []),
    ]
    return [name for name in dict.fromkeys(names) if name and alias_key(name)]


def preset_aliases_derive(*, preset: Any, alias_model: Any = ModelAlias) -> list[str]:
    """Give ``preset`` an alias for each of its lookup names that no alias of it spells yet
    (as an alias key: ``alias_key``), so that its name, slug and repo id find it. Existing
    aliases are kept, a previous name's too: links that use it still find the preset. A name
    that is already another preset's alias is skipped (the admin form refuses it first).
    Returns the aliases added. The model is passed in so a data migration can use its own."""
    added = []
    own = set(alias_model.objects.filter(preset_id=preset.pk).values_list("key", flat=True))
    for name in preset_lookup_names(
        slug=preset.slug, display_name=preset.display_name, hf_repo=preset.hf_repo
    ):
        key = alias_key(name)
        if key in own:
            continue
        if alias_model.objects.filter(key=key).exclude(preset_id=preset.pk).exists():
            continue
        alias_model.objects.create(preset_id=preset.pk, alias=name[:200], key=key)
        own.add(key)
        added.append(name)
    return added


def catalogue_load_presets(
    *, preset_model: Any, alias_model: Any, directory: Path | None = None
) -> LoadReport:
    """Add new presets, update ones nobody edited, never touch a row an admin has changed.

    A row counts as edited when the hash of its seeded fields no longer equals the fingerprint
    the loader stored when it last wrote them (``seed_fingerprint``). Model classes are passed in
    so the data migration can use its historical models.
    """
    report = LoadReport()
    for path in sorted((directory or PRESETS_DIR / "models").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for entry in data["presets"]:
            try:
                arch = Architecture.from_hf_config(entry["config"])
            except (ConfigError, ValueError) as error:
                report.problems.append(f"{entry.get('slug')}: {error}")
                continue
            values = _preset_values(entry, data["family"])
            _upsert(
                preset_model,
                entry["slug"],
                values,
                PRESET_FIELDS,
                report,
                extra=_arch_fields(arch),
                aliases=(alias_model, _seed_aliases(entry)),
            )
    return report


def _arch_fields(arch: Architecture) -> dict[str, Any]:
    return {
        "params_total": arch.params_total,
        "num_layers": arch.num_layers,
        "num_kv_heads": arch.num_kv_heads,
        "max_context": arch.max_position_embeddings,
    }


def catalogue_load_gpus(*, gpu_model: Any, path: Path | None = None) -> LoadReport:
    report = LoadReport()
    data = json.loads((path or PRESETS_DIR / "gpus.json").read_text(encoding="utf-8"))
    # A data migration passes the model as of its own point in history, which may predate some
    # fields; seed only the ones that model has.
    known = {f.name for f in gpu_model._meta.get_fields()}
    fields = tuple(name for name in GPU_FIELDS if name in known)
    for entry in data["gpus"]:
        values = {name: entry.get(name) for name in fields}
        values["source"] = entry.get("source") or ""
        values["notes"] = entry.get("notes") or ""
        values["memory_type"] = entry.get("memory_type") or ""
        values["form_factor"] = entry.get("form_factor") or ""
        if "interconnect" in values:
            values["interconnect"] = entry.get("interconnect") or ""
        values["fp8_support"] = bool(entry.get("fp8_support"))
        values["unified_memory"] = bool(entry.get("unified_memory"))
        values["active"] = bool(entry.get("active", True))
        values["memory_gb"] = float(entry["memory_gb"])
        _upsert(gpu_model, entry["slug"], values, fields, report)
    return report


def catalogue_refingerprint_gpus(*, gpu_model: Any) -> int:
    """Rows still as seeded under the pre-0008 fields get a fingerprint over today's fields, so
    the next load fills their new performance figures; admin-edited rows keep theirs (and their
    edits). Returns how many rows were re-fingerprinted."""
    known = {f.name for f in gpu_model._meta.get_fields()}
    now = tuple(name for name in GPU_FIELDS if name in known)
    count = 0
    for row in gpu_model.objects.all():
        if fingerprint(_row_values(row, GPU_FIELDS_BEFORE_0008)) == row.seed_fingerprint:
            row.seed_fingerprint = fingerprint(_row_values(row, now))
            row.save(update_fields=["seed_fingerprint"])
            count += 1
    return count


@transaction.atomic
def _upsert(
    model: Any,
    slug: str,
    values: dict[str, Any],
    fields: tuple[str, ...],
    report: LoadReport,
    *,
    extra: dict[str, Any] | None = None,
    aliases: tuple[Any, list[str]] | None = None,
) -> None:
    seed_hash = fingerprint(values)
    # Locked to the commit: an admin save landing between this read and the write below would
    # be overwritten, and its row then look unedited (PostgreSQL; SQLite's IMMEDIATE
    # transactions already keep other writers out).
    row = model.objects.select_for_update().filter(slug=slug).first()
    if row is None:
        row = model(slug=slug, seed_fingerprint=seed_hash, **values, **(extra or {}))
        row.save()
        report.created.append(slug)
    else:
        current = fingerprint(_row_values(row, fields))
        if current != row.seed_fingerprint:
            report.kept_edited.append(slug)
            return
        if current == seed_hash:
            report.unchanged.append(slug)
        else:
            for name, value in {**values, **(extra or {})}.items():
                setattr(row, name, value)
            row.seed_fingerprint = seed_hash
            row.save()
            report.updated.append(slug)
    if aliases is not None:
        alias_model, names = aliases
        for name in names:
            key = alias_key(name)
            if alias_model.objects.filter(key=key).exclude(preset_id=row.pk).exists():
                report.problems.append(f"{slug}: alias {name!r} already belongs to another preset")
            elif not alias_model.objects.filter(preset_id=row.pk, alias=name).exists():
                alias_model.objects.create(preset=row, alias=name, key=key)


class StorageFull(Exception):
    """The table already holds its maximum of rows and this client has none of its own to
    give up: the new row is refused rather than someone else's removed."""


def make_room(model: Any, *, owner: str, age_field: str, max_rows: int, per_client: int) -> None:
    """Room for one more row of ``owner``: past its own quota its oldest rows go; when the
    table is full, only rows of the same owner may make room (``StorageFull`` otherwise)."""
    own = model.objects.filter(owner=owner) if owner else model.objects.none()
    excess_own = own.count() - per_client + 1
    if excess_own > 0:
        oldest = own.order_by(age_field).values_list("pk", flat=True)[:excess_own]
        model.objects.filter(pk__in=list(oldest)).delete()
    if model.objects.count() >= max_rows:
        oldest = own.order_by(age_field).values_list("pk", flat=True)[:1]
        if not model.objects.filter(pk__in=list(oldest)).delete()[0]:
            raise StorageFull


def stored_rows_prune(*, now: datetime | None = None) -> int:
    """Drop saved links and pasted configs past their retention period (settings
    SAVED_RESULT_RETENTION_DAYS, PASTED_CONFIG_RETENTION_DAYS; a pasted config counts from
    its last use). Returns how many rows went."""
    now = now or timezone.now()
    saved_cutoff = now - timedelta(days=settings.SAVED_RESULT_RETENTION_DAYS)
    config_cutoff = now - timedelta(days=settings.PASTED_CONFIG_RETENTION_DAYS)
    removed, _ = SavedResult.objects.filter(created_at__lt=saved_cutoff).delete()
    more, _ = PastedConfig.objects.filter(used_at__lt=config_cutoff).delete()
    return int(removed + more)


def pasted_config_stored(*, text: str, owner: str) -> str | None:
    """The id of this text when it is stored already (marking it used, and shared once a second
    client links it, so that neither client's quota can remove it); None when it is not."""
    config_id = pasted_config_id(text)
    now = timezone.now()
    if PastedConfig.objects.filter(pk=config_id, owner__in=["", owner]).update(used_at=now):
        return config_id
    if PastedConfig.objects.filter(pk=config_id).update(used_at=now, owner=""):
        return config_id
    return None


def pasted_config_store(*, text: str, owner: str) -> str:
    """Keep a pasted config under its content id (idempotent) and return the id. Bounded like
    saved links (``make_room``; raises ``StorageFull``)."""
    known = pasted_config_stored(text=text, owner=owner)
    if known is not None:
        return known
    config_id = pasted_config_id(text)
    stored_rows_prune()
    with transaction.atomic():
        make_room(
            PastedConfig,
            owner=owner,
            age_field="used_at",
            max_rows=settings.PASTED_CONFIG_MAX_ROWS,
            per_client=settings.PASTED_CONFIG_MAX_PER_CLIENT,
        )
        _, created = PastedConfig.objects.get_or_create(
            pk=config_id, defaults={"text": text, "owner": owner}
        )
    if not created:  # another request stored the same text a moment ago
        pasted_config_stored(text=text, owner=owner)
    return config_id
