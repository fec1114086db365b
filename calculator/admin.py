from django.contrib import admin

from calculator.models import GpuSpec, ModelAlias, ModelPreset


class ModelAliasInline(admin.TabularInline):  # type: ignore[type-arg]
    model = ModelAlias
    extra = 1


@admin.register(ModelPreset)
class ModelPresetAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "display_name",
        "family",
        "params_total",
        "num_layers",
        "num_kv_heads",
        "max_context",
        "active",
    )
    list_filter = ("family", "active")
    search_fields = ("display_name", "slug", "hf_repo", "aliases__alias")
    inlines = [ModelAliasInline]


@admin.register(GpuSpec)
class GpuSpecAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "vendor", "memory_gb", "bandwidth_gb_s", "bf16_tflops_dense", "active")
    list_filter = ("vendor", "form_factor", "active")
    search_fields = ("name", "slug")
