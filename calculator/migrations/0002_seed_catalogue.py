"""Seed the preset catalogue and GPU specs from presets/ (the same loader as load_presets)."""

from typing import Any

from django.db import migrations


def seed(apps: Any, schema_editor: Any) -> None:
    from calculator.catalogue.services import catalogue_load_gpus, catalogue_load_presets

    catalogue_load_presets(
        preset_model=apps.get_model("calculator", "ModelPreset"),
        alias_model=apps.get_model("calculator", "ModelAlias"),
    )
    catalogue_load_gpus(gpu_model=apps.get_model("calculator", "GpuSpec"))


class Migration(migrations.Migration):
    dependencies = [("calculator", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
