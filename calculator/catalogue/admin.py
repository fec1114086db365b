from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import display_for_field
from django.db import models
from django.db.models import QuerySet
from django.forms.models import model_to_dict
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.template.defaultfilters import filesizeformat, yesno
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.text import Truncator, capfirst, slugify
from django.utils.translation import gettext_lazy as _

from calculator.catalogue.models import (
    GpuSpec,
    ModelAlias,
    ModelPreset,
    PresetOrigin,
    alias_key,
    config_problems,
)
from calculator.catalogue.selectors import preset_alias_owner
from calculator.catalogue.services import preset_aliases_derive
from calculator.estimator import Architecture, ConfigError
from calculator.inputs.uploads import limit_text, oversize_fields

IMPORT_SESSION_KEY = "calculator_preset_import"
MAX_IMPORT_BYTES = 512 * 1024
ROW_VERSION = "row_version"


def value_version(value: Any) -> str:
    """A short digest of one value as the database returns it (and as a form cleans it)."""
    if isinstance(value, Decimal):
        value = format(value.normalize(), "f")  # 24.00 from the database, 24 as typed
    elif isinstance(value, models.Model):
        value = value.pk
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class RowVersionField(forms.CharField):
    """Where a change form carries the version of the row it was opened on."""

    widget = forms.HiddenInput

    def has_changed(self, initial: Any, data: Any) -> bool:
        return False  # not an edit: it must not appear in the history's "Changed …"


class ConflictCheckedForm(forms.ModelForm):  # type: ignore[type-arg]
    """A change form that refuses to write over a save made after it was opened.

    The version it carries is a digest of each value it shows, fields and inline rows alike,
    as they were when it was rendered: what the save would write back. ``updated_at`` alone
    would refuse a save after another that changed nothing, and could not say what changed.
    On a refusal the form comes back with what was typed, the saved values in the fields that
    were not touched, and the row's current version, so that saving again keeps both edits.
    ``ConflictCheckedAdmin`` locks the row first, so the check and the write are one step.
    """

    row_version = RowVersionField(required=False)
    # Set by ConflictCheckedAdmin.get_form: the related managers its inlines write, and the
    # fields of this post left out for their size (calculator.inputs.uploads).
    tracked_related: tuple[str, ...] = ()
    oversize: dict[str, int] = {}
    empty_value_display = "-"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.related_rows: dict[str, list[models.Model]] = {}
        self.saved_versions: dict[str, str] = {}
        if self.instance.pk is not None:
            model_fields = {field.name for field in self.instance._meta.get_fields()}
            for name in self.fields:
                if name in model_fields:
                    self.saved_versions[name] = value_version(self[name].initial)
            for accessor in self.tracked_related:
                rows = list(getattr(self.instance, accessor).order_by("pk"))
                self.related_rows[accessor] = rows
                self.saved_versions[accessor] = value_version(
                    [[row.pk, model_to_dict(row)] for row in rows]
                )
            self.fields[ROW_VERSION].initial = json.dumps(self.saved_versions, sort_keys=True)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.instance.pk is None:
            return cleaned
        opened = self._opened_versions()
        if opened is None:
            self._show_saved_version(theirs_only=[])
            raise forms.ValidationError(
                _(
                    "This form does not say which version it was opened on, so saving it "
                    "could undo someone else's changes. Nothing was saved: check the values, "
                    "then save again."
                ),
                code="no_version",
            )
        changed = [
            name
            for name, now in self.saved_versions.items()
            if opened.get(name) != now
            # Typed as it is saved now (both made the same edit): nothing would be undone.
            and not (name in cleaned and value_version(cleaned[name]) == now)
        ]
        if not changed:
            return cleaned
        theirs_only = [
            name
            for name in changed
            if name in cleaned
            and value_version(cleaned[name]) == opened.get(name)
            and not isinstance(self.fields[name].widget, (forms.MultiWidget, forms.FileInput))
        ]
        errors = [
            forms.ValidationError(
                _(
                    "Someone else saved changes here after you opened this page, so yours "
                    "were not saved yet: they are still in the form. Check what the other "
                    "person changed (listed below), then save again."
                ),
                code="conflict",
            )
        ]
        for name in changed:
            message = (
                _("They changed %(field)s to: %(value)s (now shown in the form).")
                if name in theirs_only
                else _("They changed %(field)s to: %(value)s (the form still shows yours).")
            )
            label, value = self._saved_value(name)
            errors.append(
                forms.ValidationError(
                    message, code="conflict_field", params={"field": label, "value": value}
                )
            )
        self._show_saved_version(theirs_only=theirs_only)
        raise forms.ValidationError(errors)

    def full_clean(self) -> None:
        super().full_clean()
        if not self.is_bound or not self.oversize:
            return
        # A field left out of the post for its size: its message instead of "required", and
        # never a save (a field that may be empty would otherwise be saved empty).
        names = {self.add_prefix(name): name for name in self.fields}
        for sent, size in self.oversize.items():
            message = forms.ValidationError(
                _(
                    "Too large to send: this field held %(size)s, and a form may carry at most "
                    "%(limit)s in all. Nothing was saved; shorten it and save again."
                ),
                code="too_large",
                params={"size": filesizeformat(size), "limit": limit_text()},
            )
            name = names.get(sent)
            if name is None:
                message = forms.ValidationError(
                    _(
                        "Too large to send: “%(field)s” held %(size)s, and a form may carry at "
                        "most %(limit)s in all. Nothing was saved."
                    ),
                    code="too_large",
                    params={"field": sent, "size": filesizeformat(size), "limit": limit_text()},
                )
            else:
                self.errors.pop(name, None)
            self.add_error(name, message)

    def _opened_versions(self) -> dict[str, str] | None:
        try:
            opened = json.loads(self.data.get(self.add_prefix(ROW_VERSION)) or "")
        except ValueError:
            return None
        return opened if isinstance(opened, dict) and opened else None

    def _saved_value(self, name: str) -> tuple[str, str]:
        """The label of a field or inline, and its value as saved now, short."""
        if name in self.related_rows:
            rows = self.related_rows[name]
            meta = getattr(self.instance, name).model._meta
            label = capfirst(str(meta.verbose_name_plural))
            text = ", ".join(str(row) for row in rows) or self.empty_value_display
        else:
            value = self[name].initial
            label = str(self.fields[name].label or name)
            if isinstance(value, bool):
                text = str(yesno(value))
            else:
                field = self.instance._meta.get_field(name)
                text = str(display_for_field(value, field, self.empty_value_display, True))
        return label, Truncator(text).chars(80)

    def _show_saved_version(self, *, theirs_only: list[str]) -> None:
        """Render again with the row's current version, and its saved values in the fields
        that the other save changed and this one did not."""
        data = QueryDict(mutable=True)
        data.update(self.data)
        for name in theirs_only:
            bound = self[name]
            widget = bound.field.widget
            if isinstance(widget, forms.CheckboxInput):
                if bound.initial:
                    data[bound.html_name] = "on"
                else:
                    data.pop(bound.html_name, None)
                continue
            shown = widget.format_value(bound.field.prepare_value(bound.initial))
            if isinstance(shown, list):
                data.setlist(bound.html_name, shown)
            else:
                data[bound.html_name] = "" if shown is None else shown
        data[self.add_prefix(ROW_VERSION)] = json.dumps(self.saved_versions, sort_keys=True)
        self.data = data


class ConflictCheckedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """A model admin whose change form will not silently undo another admin's save."""

    form = ConflictCheckedForm

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        obj = super().get_object(request, object_id, from_field)
        if obj is None or request.method != "POST":
            return obj
        # changeform_view runs a POST in one transaction: the row stays locked from here to
        # the save's commit, so no other save comes between the form's check and its write.
        # (PostgreSQL; SQLite's IMMEDIATE transactions already let one writer in at a time.)
        return self.get_queryset(request).select_for_update().filter(pk=obj.pk).first()

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        assert issubclass(form, ConflictCheckedForm)
        form.tracked_related = self.inline_accessors(request, obj)
        form.oversize = oversize_fields(request)
        form.empty_value_display = str(self.get_empty_value_display())
        return form

    def inline_accessors(self, request: HttpRequest, obj: Any) -> tuple[str, ...]:
        """The related managers (``preset.aliases``) whose rows this admin's inlines edit."""
        accessors = []
        for inline in self.get_inlines(request, obj):
            for field in inline.model._meta.fields:
                if (
                    field.many_to_one
                    and field.related_model is self.model
                    and inline.fk_name in (None, field.name)
                ):
                    accessors.append(field.remote_field.get_accessor_name())
        return tuple(accessors)


class ConfigJSONField(forms.JSONField):
    """The config.json textarea: empty on an add form (not ``null``), and invalid JSON named
    with where it breaks."""

    def prepare_value(self, value: Any) -> Any:
        if value is None:
            return ""
        return super().prepare_value(value)

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except forms.ValidationError:
            try:
                json.loads(value)
            except ValueError as error:
                raise forms.ValidationError(
                    _("This is not valid JSON: %(e)s") % {"e": error}, code="invalid"
                ) from error
            raise


class ModelPresetForm(ConflictCheckedForm):
    """The preset change form: a name that finds another preset is refused next to its field."""

    LOOKUP_FIELDS = ("display_name", "slug", "hf_repo")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name in self.LOOKUP_FIELDS:
            value = cleaned.get(name)
            # Unchanged names are left alone: a clash an edit did not make must not block it.
            if not value or (self.instance.pk is not None and name not in self.changed_data):
                continue
            if name == "slug" and self._slug_taken(value):
                continue  # "… with this Slug already exists" says it better
            other = preset_alias_owner(name=value, preset_id=self.instance.pk)
            if other is not None:
                self.add_error(
                    name,
                    forms.ValidationError(
                        _(
                            "“%(name)s” already finds %(preset)s (one of its aliases): choose "
                            "another, or remove that alias from %(preset)s first."
                        ),
                        code="alias_clash",
                        params={"name": value, "preset": other.display_name},
                    ),
                )
        return cleaned

    def _slug_taken(self, slug: str) -> bool:
        return ModelPreset.objects.filter(slug=slug).exclude(pk=self.instance.pk).exists()


class ModelAliasInline(admin.TabularInline):  # type: ignore[type-arg]
    model = ModelAlias
    extra = 1


class SizeBandFilter(admin.SimpleListFilter):
    title = _("size")
    parameter_name = "size"
    BANDS = {
        "xs": (0, 3e9, _("under 3B")),
        "s": (3e9, 10e9, _("3B–10B")),
        "m": (10e9, 40e9, _("10B–40B")),
        "l": (40e9, 100e9, _("40B–100B")),
        "xl": (100e9, 1e15, _("100B and more")),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [(key, label) for key, (_lo, _hi, label) in self.BANDS.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        band = self.BANDS.get(self.value() or "")
        if band is None:
            return queryset
        return queryset.filter(params_total__gte=band[0], params_total__lt=band[1])


class ConfigImportForm(forms.Form):
    config_text = forms.CharField(
        label=_("Paste config.json"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 18, "cols": 90, "spellcheck": "false"}),
    )
    config_file = forms.FileField(label=_("or upload it"), required=False)
    hf_repo = forms.CharField(
        label=_("Hugging Face repo id (optional)"), required=False, max_length=200
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload = cleaned.get("config_file")
        text = cleaned.get("config_text") or ""
        if upload is not None:
            if upload.size > MAX_IMPORT_BYTES:
                raise forms.ValidationError(_("The file is too large for a config.json."))
            text = upload.read().decode("utf-8", errors="replace")
        if not text.strip():
            raise forms.ValidationError(_("Paste a config.json or upload one."))
        try:
            config = json.loads(text)
        except ValueError as error:
            raise forms.ValidationError(
                _("This is not valid JSON: %(e)s") % {"e": error}
            ) from error
        if not isinstance(config, dict):
            raise forms.ValidationError(_("A config.json is a JSON object ({…})."))
        problems = config_problems(config)
        if problems:
            raise forms.ValidationError(
                [
                    forms.ValidationError(
                        _("The estimator cannot use this config: %(e)s") % {"e": problem}
                    )
                    for problem in problems
                ]
            )
        try:
            arch = Architecture.from_hf_config(config)
        except (ConfigError, ValueError) as error:
            raise forms.ValidationError(
                _("The estimator cannot use this config: %(e)s") % {"e": error}
            ) from error
        cleaned["config"] = config
        cleaned["architecture"] = arch
        return cleaned


def suggested_preset(config: dict[str, Any], arch: Architecture, hf_repo: str) -> dict[str, Any]:
    """Name, slug and aliases an admin probably wants for an imported config."""
    repo = hf_repo or str(config.get("_name_or_path") or "")
    base = repo.split("/")[-1] if repo else f"{arch.model_type} {arch.params_total / 1e9:.1f}B"
    name = base.replace("-", " ").replace("_", " ")
    aliases = [alias for alias in dict.fromkeys([repo, base.lower()]) if alias]
    family = str(config.get("model_type") or arch.model_type).replace("_", " ").title()
    return {
        "display_name": name,
        "slug": slugify(base.replace(".", "-")).replace("--", "-")[:100] or "imported-model",
        "hf_repo": repo if "/" in repo else "",
        "family": family,
        "native_precision": str(config.get("torch_dtype") or config.get("dtype") or "bf16")
        .replace("bfloat16", "bf16")
        .replace("float16", "fp16")
        .replace("float32", "fp32"),
        "config": json.dumps(config, indent=2),
        "aliases": aliases,
    }


@admin.register(ModelPreset)
class ModelPresetAdmin(ConflictCheckedAdmin):
    form = ModelPresetForm
    list_display = (
        "display_name",
        "family",
        "params_billion_display",
        "num_layers",
        "num_kv_heads",
        "max_context",
        "bf16_memory_display",
        "active",
        "review_status",
    )
    list_filter = ("family", SizeBandFilter, "quantization", "active", "origin", "reviewed")
    search_fields = ("display_name", "slug", "hf_repo", "aliases__alias")
    readonly_fields = (
        "params_total",
        "num_layers",
        "num_kv_heads",
        "max_context",
        "updated_at",
        "origin",
        "hub_revision",
        "hub_params_total",
        "hub_dtypes",
        "imported_at",
    )
    inlines = [ModelAliasInline]
    actions = ["mark_reviewed"]
    change_list_template = "admin/calculator/modelpreset/change_list.html"

    @admin.display(description=_("status"), ordering="reviewed")
    def review_status(self, obj: ModelPreset) -> str:
        if obj.origin != PresetOrigin.HUB:
            return ""
        return str(_("imported, reviewed") if obj.reviewed else _("imported, not reviewed"))

    @admin.action(
        description=_("Mark as reviewed (add the imported models to the catalogue)"),
        permissions=["change"],
    )
    def mark_reviewed(self, request: HttpRequest, queryset: QuerySet[ModelPreset]) -> None:
        count = 0
        for preset in queryset.filter(reviewed=False):
            preset.reviewed = True
            preset.save(update_fields=["reviewed", "updated_at"])
            count += 1
        self.message_user(
            request,
            _("Models marked as reviewed: %(count)d.") % {"count": count},
            messages.SUCCESS,
        )

    @admin.display(description=_("parameters (B)"), ordering="params_total")
    def params_billion_display(self, obj: ModelPreset) -> str:
        return f"{obj.params_total / 1e9:,.2f}"

    @admin.display(description=_("weights at BF16 (GiB)"), ordering="params_total")
    def bf16_memory_display(self, obj: ModelPreset) -> str:
        return f"{obj.params_total * 2 / (1 << 30):,.1f}"

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "config":
            kwargs["form_class"] = ConfigJSONField
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """After the inline aliases: the preset's name, slug and repo id find it too
        (``preset_aliases_derive``), and the admin is told by which names and what became of
        the old ones."""
        super().save_related(request, form, formsets, change)
        preset = form.instance
        preset_aliases_derive(preset=preset)
        if change and not set(ModelPresetForm.LOOKUP_FIELDS) & set(form.changed_data):
            return
        keys = set(preset.aliases.values_list("key", flat=True))
        for name in ModelPresetForm.LOOKUP_FIELDS:
            old = form.initial.get(name) or ""
            if not change or name not in form.changed_data or not alias_key(old):
                continue
            if alias_key(old) in keys:
                message = _(
                    "Links that use the old %(field)s “%(old)s” still find this preset: it "
                    "stays an alias (delete it under Aliases to free it)."
                )
            else:
                message = _("The old %(field)s “%(old)s” no longer finds this preset.")
            field = ModelPreset._meta.get_field(name)
            label = field.verbose_name if isinstance(field, models.Field) else name
            self.message_user(request, message % {"field": label, "old": old}, messages.INFO)
        lookup = [getattr(preset, name) for name in ModelPresetForm.LOOKUP_FIELDS]
        aliases = preset.aliases.values_list("alias", flat=True)
        found_by = [name for name in lookup if alias_key(name) in keys] + list(aliases)
        names = ", ".join(f"“{name}”" for name in dict.fromkeys(found_by))
        self.message_user(
            request,
            _(
                "The page and the API find this preset by: %(names)s (in any case, with or "
                "without spaces and hyphens)."
            )
            % {"names": names},
            messages.INFO,
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[ModelPreset], search_term: str
    ) -> tuple[QuerySet[ModelPreset], bool]:
        results, _duplicates = super().get_search_results(request, queryset, search_term)
        return results.distinct(), False

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "import-config/",
                self.admin_site.admin_view(self.import_config_view),
                name="calculator_modelpreset_import",
            )
        ]
        return custom + super().get_urls()

    def import_config_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        form = ConfigImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            request.session[IMPORT_SESSION_KEY] = suggested_preset(
                form.cleaned_data["config"],
                form.cleaned_data["architecture"],
                form.cleaned_data.get("hf_repo") or "",
            )
            return HttpResponseRedirect(reverse("admin:calculator_modelpreset_add") + "?imported=1")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": _("Import a model preset from config.json"),
        }
        return TemplateResponse(request, "admin/calculator/modelpreset/import.html", context)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial = dict(super().get_changeform_initial_data(request))
        if request.GET.get("imported") and IMPORT_SESSION_KEY in request.session:
            imported = dict(request.session[IMPORT_SESSION_KEY])
            imported.pop("aliases", None)
            initial.update(imported)
        return initial

    def get_formset_kwargs(
        self, request: HttpRequest, obj: Any, inline: Any, prefix: str
    ) -> dict[str, Any]:
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        imported = request.session.get(IMPORT_SESSION_KEY) if request.GET.get("imported") else None
        if imported and request.method == "GET" and isinstance(inline, ModelAliasInline):
            kwargs["initial"] = [{"alias": alias} for alias in imported.get("aliases", [])]
        return kwargs

    def get_formsets_with_inlines(self, request: HttpRequest, obj: Any = None) -> Any:
        imported = request.session.get(IMPORT_SESSION_KEY) if request.GET.get("imported") else None
        for formset, inline in super().get_formsets_with_inlines(request, obj):
            if imported and isinstance(inline, ModelAliasInline):
                formset.extra = max(1, len(imported.get("aliases", [])))
            yield formset, inline


@admin.register(GpuSpec)
class GpuSpecAdmin(ConflictCheckedAdmin):
    list_display = (
        "name",
        "vendor",
        "memory_gb",
        "usable_memory_bytes",
        "bandwidth_gb_s",
        "bf16_tflops_dense",
        "fp8_tflops_dense",
        "int8_tops_dense",
        "interconnect",
        "interconnect_gb_s",
        "active",
    )
    list_filter = (
        "vendor",
        "form_factor",
        "interconnect",
        "unified_memory",
        "fp8_support",
        "active",
    )
    search_fields = ("name", "slug")
