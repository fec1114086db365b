"""A saved result rebuilt as the calculation it froze.

A snapshot's page and exports are rendered by the live page's code (``Calculation``) from what
was stored when it was saved: the request, the result, the speed, the card's memory and the
preset's names. Nothing is recomputed with today's catalogue, so an admin's later edit of the
preset or the GPU does not change what the link shows.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import transaction
from pydantic import BaseModel, ConfigDict

from calculator.catalogue.models import ModelPreset, PresetOrigin, SavedResult, config_hash
from calculator.catalogue.services import make_room, stored_rows_prune
from calculator.estimator import EstimateRequest, EstimateResult
from calculator.estimator.speed import SpeedResult
from calculator.result.calculation import Calculation, Card, OwnCard, own_card

GIB = 1 << 30


class SavedFigures(BaseModel):
    """What a snapshot keeps besides its request and result (``SavedResult.calculation_json``).
    Rows saved before it was kept have none of it: each field has the default that leaves its
    part out of the page."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    speed: dict[str, Any] | None = None
    # Why there was no speed (Calculation.speed_unavailable); None with a speed, or for rows
    # saved before it was kept (then derived from the stored verdict).
    speed_unavailable: str | None = None
    host_ram_gb: float | None = None
    gpu_slug: str = ""
    # The memory typed as "my card's memory": the card's name is written in the reader's language.
    own_card_gb: float | None = None
    preset_slug: str = ""
    preset_hf_repo: str = ""
    preset_unreviewed: bool = False
    # The decoding speed with llama.cpp's --fit placement (Calculation.llama_fit).
    fit_tokens_per_s: float | None = None


def saved_figures(calculation: Calculation) -> dict[str, Any]:
    """The figures of a live calculation that a snapshot stores beside its request and result."""
    gpu, preset, speed = calculation.gpu, calculation.preset, calculation.speed
    return SavedFigures(
        speed=speed.model_dump(mode="json") if speed is not None else None,
        speed_unavailable=calculation.speed_unavailable,
        host_ram_gb=calculation.host_ram_gb,
        gpu_slug=(gpu.slug or "") if gpu is not None else "",
        own_card_gb=gpu.gb if isinstance(gpu, OwnCard) else None,
        preset_slug=preset.slug if preset is not None else "",
        preset_hf_repo=(preset.hf_repo or "") if preset is not None else "",
        preset_unreviewed=bool(preset is not None and preset.is_unreviewed_import),
        fit_tokens_per_s=(calculation.llama_fit or {}).get("tokens_per_s"),
    ).model_dump(mode="json")


class SavedCalculation(Calculation):
    """A calculation whose result and speed come from a snapshot instead of the estimator and
    today's GPU figures; everything the page derives from them is the live page's code."""

    def __init__(
        self,
        request: EstimateRequest,
        *,
        result: EstimateResult,
        speed: SpeedResult | None,
        speed_unavailable: str | None = None,
        gpu: Card | None,
        preset: ModelPreset | None,
        host_ram_gb: float | None,
        preset_current: bool = True,
        fit_tokens_per_s: float | None = None,
    ) -> None:
        super().__init__(request, gpu=gpu, preset=preset, host_ram_gb=host_ram_gb, result=result)
        self.saved_fit_tokens_per_s = fit_tokens_per_s
        self.saved_speed = speed
        self.saved_speed_unavailable = speed_unavailable
        self.preset_current = preset_current

    @property
    def model_named(self) -> bool:
        # The name of a preset edited or withdrawn since would ask for another config (or for
        # none): the request carries the one saved.
        return self.preset is not None and self.preset_current

    @cached_property
    def speed(self) -> SpeedResult | None:
        return self.saved_speed

    def _fit_tokens_per_s(self, request: EstimateRequest, estimate: EstimateResult) -> float | None:
        return self.saved_fit_tokens_per_s

    @cached_property
    def speed_unavailable(self) -> str | None:
        if self.saved_speed is not None:
            return None
        if self.saved_speed_unavailable is not None:
            return self.saved_speed_unavailable
        # An older row: a card with no stored speed was a memory amount, or did not run.
        run = self.run_verdict
        if run is not None and not run.runs:
            return run.fit_state
        return "no_catalogue_gpu"


def saved_calculation(*, snapshot: SavedResult) -> SavedCalculation | None:
    """The snapshot as a calculation; None when this version cannot read what an older one
    stored (its request or result no longer validates)."""
    figures = _figures(snapshot)
    try:
        request = EstimateRequest.model_validate_json(json.dumps(snapshot.request_json))
        result = EstimateResult.model_validate_json(json.dumps(snapshot.result_json))
        return SavedCalculation(
            request,
            result=result,
            speed=_speed(figures),
            speed_unavailable=figures.speed_unavailable,
            gpu=_card(snapshot, figures),
            preset=_preset(snapshot, figures),
            host_ram_gb=figures.host_ram_gb,
            preset_current=not preset_changed(snapshot)
            and snapshot.preset is not None
            and snapshot.preset.active,
            fit_tokens_per_s=figures.fit_tokens_per_s,
        )
    except ValueError:  # pydantic's validation errors and the estimator's ConfigError
        return None


def preset_changed(snapshot: SavedResult) -> bool:
    """Whether the snapshot's preset was edited or deleted since it was saved."""
    if not snapshot.preset_name:
        return False
    preset = snapshot.preset
    return preset is None or config_hash(preset.config) != snapshot.preset_config_hash


def _figures(snapshot: SavedResult) -> SavedFigures:
    try:
        return SavedFigures.model_validate(snapshot.calculation_json or {})
    except ValueError:
        return SavedFigures()


def _speed(figures: SavedFigures) -> SpeedResult | None:
    if figures.speed is None:
        return None
    try:
        return SpeedResult.model_validate_json(json.dumps(figures.speed))
    except ValueError:  # stored by a version whose speed had other fields: left out
        return None


def _card(snapshot: SavedResult, figures: SavedFigures) -> OwnCard | None:
    """The card as it was when the link was saved: its name and its memory."""
    if not snapshot.gpu_usable_bytes:
        return None
    nominal = snapshot.gpu_nominal_bytes or 0
    if figures.own_card_gb is not None:
        name = own_card(figures.own_card_gb).name
    else:
        name = snapshot.gpu_name
    return OwnCard(
        gb=figures.own_card_gb if figures.own_card_gb is not None else nominal / GIB,
        name=name,
        usable_bytes=snapshot.gpu_usable_bytes,
        nominal_bytes=nominal,
        slug=figures.gpu_slug,
        memory_only=figures.own_card_gb is not None,
    )


def _preset(snapshot: SavedResult, figures: SavedFigures) -> ModelPreset | None:
    """The preset's names as they were saved (an unsaved stand-in: never written, never
    read back). Rows saved before the names were kept take them from the preset itself."""
    if not snapshot.preset_name:
        return None
    slug, hf_repo = figures.preset_slug, figures.preset_hf_repo
    if not snapshot.calculation_json and snapshot.preset is not None:
        slug, hf_repo = snapshot.preset.slug, snapshot.preset.hf_repo
    return ModelPreset(
        display_name=snapshot.preset_name,
        slug=slug,
        hf_repo=hf_repo,
        origin=PresetOrigin.HUB if figures.preset_unreviewed else PresetOrigin.CATALOGUE,
        reviewed=not figures.preset_unreviewed,
    )


def saved_result_create(*, query: str, calculation: Calculation, owner: str) -> SavedResult:
    """Freeze a result behind an unguessable short id, with everything its page shows (the
    speed, the card, the RAM given: ``calculator.result.snapshots``); later edits of the catalogue
    cannot change what it shows. Raises ``StorageFull`` when no row can be stored for this
    client."""
    request, result = calculation.request, calculation.result
    preset, gpu = calculation.preset, calculation.gpu
    stored_rows_prune()
    with transaction.atomic():
        make_room(
            SavedResult,
            owner=owner,
            age_field="created_at",
            max_rows=settings.SAVED_RESULT_MAX_ROWS,
            per_client=settings.SAVED_RESULT_MAX_PER_CLIENT,
        )
        return SavedResult.objects.create(
            query=query,
            request_json=request.model_dump(mode="json"),
            result_json=result.model_dump(mode="json"),
            preset=preset,
            preset_name=preset.display_name if preset else "",
            preset_config_hash=config_hash(preset.config) if preset else "",
            gpu_name=str(gpu.name) if gpu else "",
            gpu_usable_bytes=gpu.usable_bytes if gpu else None,
            gpu_nominal_bytes=gpu.nominal_bytes if gpu else None,
            calculation_json=saved_figures(calculation),
            owner=owner,
        )
