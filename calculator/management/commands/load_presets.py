"""``manage.py load_presets``: add new catalogue entries, update unedited ones, keep admin edits."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from calculator.catalogue.models import GpuSpec, ModelAlias, ModelPreset
from calculator.catalogue.services import catalogue_load_gpus, catalogue_load_presets


class Command(BaseCommand):
    help = (
        "Load presets/models/*.json and presets/gpus.json into the database. Rows an admin has "
        "edited since they were seeded are never overwritten."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        presets = catalogue_load_presets(preset_model=ModelPreset, alias_model=ModelAlias)
        gpus = catalogue_load_gpus(gpu_model=GpuSpec)
        self.stdout.write(presets.summary("Model presets"))
        self.stdout.write(gpus.summary("GPUs"))
        for problem in presets.problems + gpus.problems:
            self.stderr.write(f"  skipped: {problem}")
