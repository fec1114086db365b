"""Reads: catalogue look-ups the views and the API share."""

from __future__ import annotations

import difflib
import logging
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from calculator.catalogue.models import (
    GPU_BOUNDS,
    GpuSpec,
    Interconnect,
    ModelAlias,
    ModelPreset,
    alias_key,
    gpu_figure,
)
from calculator.estimator import ConfigModel
from calculator.estimator.speed import GpuPerformance

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PresetMatch:
    preset: ModelPreset | None
    suggestions: list[ModelPreset]
    # The release date a typed name carried beyond the preset's own names ('0324' of
    # 'DeepSeek-V3-0324'): the preset is that model's architecture, not that very checkpoint.
    dated: str | None = None


# A release date at the end of a model name: -MMDD (DeepSeek-V3-0324), -YYMM
# (Magistral-Small-2509), -YYYYMMDD; what is left is looked up by its exact alias.
_DATED = re.compile(r"[-_ .](\d{4}|\d{8})$")


def _dated_variant(text: str) -> PresetMatch | None:
    """A dated checkpoint of a catalogue model: the name without its date finds a preset by an
    exact alias (a date changes the weights, not the architecture, in every such release the
    catalogue has: Qwen3-235B-A22B and its 2507 update, DeepSeek-V3 and V3-0324)."""
    dated = _DATED.search(text.strip())
    if dated is None:
        return None
    undated = text.strip()[: dated.start()]
    key = alias_key(undated)
    if not key:
        return None
    alias = (
        ModelAlias.objects.filter(key=key, preset__active=True, preset__reviewed=True)
        .select_related("preset")
        .first()
    )
    if alias is None or _another_organisation(undated, alias.preset):
        return None
    return PresetMatch(alias.preset, [], dated=dated.group(1))


def preset_resolve(*, text: str) -> PresetMatch:
    """Find the preset a typed name means; when none matches exactly, the closest names.

    Only reviewed presets take part (a Hub import answers its own repository id, through
    ``calculator.catalogue.hub``, until an admin reviews it). An exact alias key wins; then a
    dated release of a preset's model (``_dated_variant``, said in ``dated``); otherwise a
    single preset whose key starts with the typed key (so
    'mixtral' finds Mixtral 8x7B when it is the only Mixtral); otherwise no guess, only
    suggestions ranked by similarity.
    """
    key = alias_key(text)
    if not key:
        return PresetMatch(None, [])
    exact = (
        ModelAlias.objects.filter(key=key, preset__active=True, preset__reviewed=True)
        .select_related("preset")
        .first()
    )
    if exact is not None:
        if _another_organisation(text, exact.preset):
            # 'some-org/Qwen2-7B-Instruct' is some-org's repository (a fine-tune may differ in
            # shape), not the catalogue's Qwen/Qwen2-7B, though their alias keys agree.
            return PresetMatch(None, [exact.preset])
        return PresetMatch(exact.preset, [])
    dated = _dated_variant(text)
    if dated is not None:
        return dated
    prefixed = list(
        ModelPreset.objects.filter(
            active=True, reviewed=True, aliases__key__startswith=key
        ).distinct()[:10]
    )
    if len(prefixed) == 1 and not _another_organisation(text, prefixed[0]):
        return PresetMatch(prefixed[0], [])
    return PresetMatch(None, preset_suggest(text=text, limit=6) if not prefixed else prefixed[:6])


_ORGANISATION = re.compile(r"^([^/\s]+)/[^/\s]+$")


def _another_organisation(text: str, preset: ModelPreset) -> bool:
    """Whether ``text`` is an ``organisation/name`` of another organisation than the preset's
    repository and none of its aliases spells it so."""
    typed = _ORGANISATION.match(text.strip())
    if typed is None:
        return False
    organisation = typed.group(1).lower()
    if preset.hf_repo.lower().split("/", 1)[0] == organisation:
        return False
    return not preset.aliases.filter(alias__iexact=text.strip()).exists()


def preset_alias_owner(*, name: str, preset_id: int | None) -> ModelPreset | None:
    """The other preset (not ``preset_id``) that ``name`` already finds through an alias."""
    key = alias_key(name)
    if not key:
        return None
    clash = ModelAlias.objects.filter(key=key).exclude(preset_id=preset_id).select_related("preset")
    first = clash.first()
    return first.preset if first is not None else None


# difflib's similarity of two alias keys: a suggestion from SUGGEST_RATIO up; when none is, the
# SUGGEST_LOOSE_LIMIT nearest from SUGGEST_LOOSE_RATIO up ('devstral' is 0.59 from
# 'mistral7bv01'; 'xyz' is under 0.3 from every catalogue name).
SUGGEST_RATIO = 0.6
SUGGEST_LOOSE_RATIO = 0.5
SUGGEST_LOOSE_LIMIT = 3


def preset_suggest(*, text: str, limit: int = 8) -> list[ModelPreset]:
    """Presets whose aliases contain or resemble what was typed, best first."""
    key = alias_key(text)
    if not key:
        return []
    rows = list(
        ModelAlias.objects.filter(preset__active=True, preset__reviewed=True).values_list(
            "key", "preset_id"
        )
    )
    scores: dict[int, float] = {}
    for alias, preset_id in rows:
        if key in alias:
            score = 2.0 + len(key) / len(alias)
        else:
            score = difflib.SequenceMatcher(None, key, alias).ratio()
            if score < SUGGEST_LOOSE_RATIO:
                continue
        scores[preset_id] = max(scores.get(preset_id, 0.0), score)
    close = [pid for pid in scores if scores[pid] >= SUGGEST_RATIO]
    if close:
        scores = {pid: scores[pid] for pid in close}
    else:
        # Nothing close ('Devstral'): the few nearest still beat an empty "did you mean".
        limit = min(limit, SUGGEST_LOOSE_LIMIT)
    best = sorted(scores, key=lambda pid: -scores[pid])[:limit]
    presets = ModelPreset.objects.in_bulk(best)
    return [presets[pid] for pid in best if pid in presets]


def preset_description(*, preset: ModelPreset) -> ConfigModel:
    """The estimator's description of a preset: its config.json and, for a checkpoint whose
    safetensors dtypes were read from the Hub, those element counts (so a pre-quantized
    checkpoint in its own format weighs exactly what it stores). Counts an admin edited into
    something other than whole non-negative numbers are left out rather than guessed. A config
    that is not a JSON object (the admin refuses one; SQL may not) is read as an empty one, so
    the estimator names what is missing instead of the page failing."""
    config = preset.config
    if not isinstance(config, dict):
        logger.warning("Preset %s: config is not a JSON object, read as {}", preset.slug)
        config = {}
    dtypes = preset.hub_dtypes if isinstance(preset.hub_dtypes, dict) else {}
    valid = all(
        isinstance(count, int) and not isinstance(count, bool) and count >= 0
        for count in dtypes.values()
    )
    return ConfigModel(
        config=config,
        checkpoint_dtypes={str(k): int(v) for k, v in dtypes.items()} if dtypes and valid else None,
    )


def gpu_list() -> QuerySet[GpuSpec]:
    """Active GPUs whose memory is within ``GPU_BOUNDS`` (the admin refuses any other; a row
    written past it is left out rather than break every page: see ``gpu_problems``)."""
    low, high = GPU_BOUNDS["memory_gb"]
    return GpuSpec.objects.filter(active=True, memory_gb__gte=low, memory_gb__lte=high).order_by(
        "-memory_gb", "name"
    )


def gpu_problems() -> list[str]:
    """The figures of active GPUs outside ``GPU_BOUNDS``, which the estimates ignore (a GPU
    whose memory is out of bounds is left out): each as 'slug: field = value'."""
    problems = []
    for gpu in GpuSpec.objects.filter(active=True).order_by("slug"):
        for name in GPU_BOUNDS:
            value = getattr(gpu, name)
            if value is not None and gpu_figure(value, name) is None:
                problems.append(f"{gpu.slug}: {name} = {value!r}")
        usable = gpu_figure(gpu.usable_memory_bytes, "usable_memory_bytes")
        if usable and gpu_figure(gpu.memory_gb, "memory_gb") and usable > gpu.nominal_bytes:
            problems.append(f"{gpu.slug}: usable_memory_bytes = {usable!r} > memory_gb")
    return problems


def gpu_performance(*, gpu: GpuSpec, count: int = 1) -> GpuPerformance | None:
    """What the speed estimate needs from a catalogue GPU (``count`` of them); None when the
    catalogue has no memory bandwidth for it, since every speed figure starts from that. A
    figure outside ``GPU_BOUNDS`` counts as unknown."""
    bandwidth = gpu_figure(gpu.bandwidth_gb_s, "bandwidth_gb_s")
    if not bandwidth:
        return None
    vendor = gpu.vendor if gpu.vendor in {"nvidia", "amd", "intel", "apple"} else "other"
    bf16 = gpu_figure(gpu.bf16_tflops_dense, "bf16_tflops_dense")
    interconnect = gpu.interconnect if gpu.interconnect in Interconnect.values else ""
    return GpuPerformance(
        bandwidth_gb_s=bandwidth,
        bf16_tflops=bf16,
        fp16_tflops=gpu_figure(gpu.fp16_tflops_dense, "fp16_tflops_dense") or bf16,
        fp8_tflops=gpu_figure(gpu.fp8_tflops_dense, "fp8_tflops_dense"),
        int8_tops=gpu_figure(gpu.int8_tops_dense, "int8_tops_dense"),
        interconnect=interconnect or "pcie",  # type: ignore[arg-type]
        interconnect_gb_s=gpu_figure(gpu.interconnect_gb_s, "interconnect_gb_s"),
        count=count,
        unified_memory=gpu.unified_memory,
        vendor=vendor,  # type: ignore[arg-type]
        memory_type=gpu.memory_type,
    )


def preset_list() -> QuerySet[ModelPreset]:
    """The catalogue: active presets, less Hub imports nobody has reviewed yet."""
    return ModelPreset.objects.filter(active=True, reviewed=True).order_by("-params_total")


def catalogue_version() -> str:
    """Changes whenever a catalogue preset or a GPU is saved or deleted: part of every cached
    result's key.

    Hub imports nobody has reviewed are not part of it: every visitor can import one, and
    each import would otherwise empty every cached page (a page showing an import is not
    cached: views._index). Reviewing one (or any admin edit of a reviewed row) changes it.
    One small SQL statement, since it runs on every request (the ORM's aggregate machinery
    costs more than the query itself); the (reviewed, updated_at) index answers its first two
    parts.
    """
    presets, gpus = ModelPreset._meta.db_table, GpuSpec._meta.db_table
    reviewed = connection.ops.quote_name("reviewed")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT MAX(updated_at) FROM {presets} WHERE {reviewed}),"
            f" (SELECT COUNT(*) FROM {presets} WHERE {reviewed}),"
            f" (SELECT MAX(updated_at) FROM {gpus}), (SELECT COUNT(*) FROM {gpus})"
        )
        row = cursor.fetchone()
    return "/".join(str(value) for value in row)


class CatalogueSnapshot:
    """Per-process memo of catalogue reads, valid for one catalogue version.

    A recompute reads the same presets and GPUs again and again; they change only when an admin
    saves one, which changes ``catalogue_version()``, which empties this memo.
    """

    def __init__(self) -> None:
        self.version: str | None = None
        self.gpus: list[GpuSpec] = []
        self.matches: dict[str, PresetMatch] = {}
        self.descriptions: dict[tuple[int, Any], ConfigModel] = {}
        self.families: dict[str, list[ModelPreset]] = {}
        self._presets: list[ModelPreset] | None = None
        self._derived: OrderedDict[Any, Any] = OrderedDict()

    def refresh(self, version: str) -> CatalogueSnapshot:
        if version != self.version:
            self.version = version
            self.gpus = list(gpu_list())
            for problem in gpu_problems():
                logger.warning("GPU figure out of bounds, not used: %s", problem)
            self.matches = {}
            self.descriptions = {}
            self.families = {}
            self._presets = None
            self._derived = OrderedDict()
        return self

    def presets(self) -> list[ModelPreset]:
        """The catalogue (``preset_list``), read once per version."""
        if self._presets is None:
            self._presets = list(preset_list())
        return self._presets

    def derived(self, key: Any, compute: Callable[[], Any]) -> Any:
        """An answer computed from this version of the catalogue (the fits page's searches),
        kept until the version changes; the ``DERIVED_LIMIT`` most recently used."""
        if key in self._derived:
            self._derived.move_to_end(key)
            return self._derived[key]
        value = compute()
        self._derived[key] = value
        if len(self._derived) > DERIVED_LIMIT:
            self._derived.popitem(last=False)
        return value

    def resolve(self, text: str) -> PresetMatch:
        key = alias_key(text)
        if key not in self.matches:
            if len(self.matches) > 10_000:
                self.matches.clear()
            self.matches[key] = preset_resolve(text=text)
        return self.matches[key]

    def gpu(self, slug: str, default: str) -> GpuSpec | None:
        by_slug = {gpu.slug: gpu for gpu in self.gpus}
        return by_slug.get(slug) or by_slug.get(default)

    def description(self, preset: ModelPreset) -> ConfigModel:
        """The preset's model description, shared so its architecture is parsed once. Keyed by
        the row's last save too: a Hub import stored during this request (after the version was
        read) may reuse the id of a row deleted before."""
        key = (preset.pk, preset.updated_at)
        if key not in self.descriptions:
            self.descriptions[key] = preset_description(preset=preset)
        return self.descriptions[key]

    def family(self, preset: ModelPreset) -> list[ModelPreset]:
        """The catalogue presets of the preset's family, largest first. Reviewed ones only:
        an import's family is what its own config.json says, which anyone can choose."""
        if preset.family not in self.families:
            self.families[preset.family] = list(
                ModelPreset.objects.filter(
                    active=True, reviewed=True, family=preset.family
                ).order_by("-params_total")
            )
        return self.families[preset.family]


# Fits-page answers kept per process: each is a table of a few kilobytes.
DERIVED_LIMIT = 256
SNAPSHOT = CatalogueSnapshot()


def pasted_config_text(*, config_id: str) -> str | None:
    """The text of a stored pasted config, or None once it has been pruned."""
    from calculator.catalogue.models import PastedConfig

    return PastedConfig.objects.filter(pk=config_id).values_list("text", flat=True).first()
