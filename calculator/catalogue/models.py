from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import secrets
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from calculator.estimator import Architecture, ConfigError
from calculator.inputs.l10n import catalogue_name

slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9.\-]*$",
    _("Use lowercase letters, digits, dots and hyphens."),
)

hf_repo_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$",
    _("A Hugging Face repo id is organisation/name, in letters, digits, '-', '_' and '.'."),
)

_ORG_PREFIX = re.compile(r"^[^/\s]+/")
_SUFFIXES = re.compile(r"(?:[-_ .](?:instruct|chat|it|hf|base))+$")
_SEPARATORS = re.compile(r"[\s\-_.:/]+")


def alias_key(text: str) -> str:
    """What two spellings of a model name share: 'Qwen/Qwen2-7B-Instruct' → 'qwen27b'.

    Case, separators, an organisation prefix and -Instruct/-Chat/-it/-hf suffixes do not matter.
    """
    value = text.strip().lower()
    value = _ORG_PREFIX.sub("", value)
    value = _SUFFIXES.sub("", value)
    return _SEPARATORS.sub("", value)


def validate_findable_name(value: str) -> None:
    """A name that finds its preset needs something an alias key keeps (``alias_key``)."""
    if not alias_key(value):
        raise ValidationError(_("A name needs at least one letter or digit."), code="no_key")


# Stand-ins for the fields a config lacks while the rest of it is checked: Llama 3.1 8B's values
# (its published config.json, validation/configs/llama-3.1-8b.json), or 1 for any other field.
_CONFIG_STAND_INS: dict[str, Any] = {
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}
MAX_CONFIG_PROBLEMS = 20


def config_problems(config: Any) -> list[str]:
    """Every reason the estimator cannot read ``config`` (empty when it can), not only the first.

    The estimator's reader stops at the first problem, so each field it names is given a
    stand-in value (``_CONFIG_STAND_INS``) and the config is read again. A later message that a
    stand-in may have caused (about a field given one, or not about a field's own value as
    typed) ends the search rather than being shown.
    """
    if not isinstance(config, Mapping):
        return [str(ConfigError("The config must be a JSON object."))]
    probe = dict(config)
    problems: list[str] = []
    stood_in: set[str] = set()
    for _attempt in range(MAX_CONFIG_PROBLEMS):
        name: str | None
        try:
            Architecture.from_hf_config(probe)
            break
        except ConfigError as error:
            message, name = str(error), error.field
        except (ValueError, TypeError) as error:
            message, name = str(error), None
        if stood_in and not _typed_problem(message, name, config, stood_in):
            break
        problems.append(message)
        if name is None or name in stood_in:
            break
        stood_in.add(name)
        probe[name] = _CONFIG_STAND_INS.get(name, 1)
    return problems


def _typed_problem(
    message: str, name: str | None, config: Mapping[str, Any], stood_in: set[str]
) -> bool:
    """Whether a problem found after stand-ins is the config's own: a field it lacks, or a
    field's value as typed (the reader's messages quote it: "…, got -32.")."""
    if name is None or name in stood_in:
        return False
    if config.get(name) is None:
        return message.startswith("Config is missing the field")
    return ", got " in message


def validate_config(value: Any) -> None:
    """A config.json the estimator can read; otherwise each problem, as the reader words it."""
    problems = config_problems(value)
    if problems:
        raise ValidationError([ValidationError(problem, code="config") for problem in problems])


class Quantization(models.TextChoices):
    NONE = "", _("None (full precision release)")
    FP8 = "fp8", _("FP8")
    MXFP4 = "mxfp4", _("MXFP4")
    AWQ_INT4 = "awq-int4", _("AWQ int4")
    GPTQ_INT4 = "gptq-int4", _("GPTQ int4")


class PresetOrigin(models.TextChoices):
    CATALOGUE = "catalogue", _("catalogue")
    HUB = "hub", _("imported from the Hugging Face Hub")


class ModelPreset(models.Model):
    slug = models.CharField(
        _("slug"),
        max_length=100,
        unique=True,
        validators=[slug_validator],
        help_text=_("Typed on the page or in the API, it finds this preset (kept as an alias)."),
    )
    display_name = models.CharField(
        _("display name"),
        max_length=200,
        validators=[validate_findable_name],
        help_text=_(
            "The page and the API find this preset by this name, its slug, its Hugging Face "
            "repo id and its aliases below; saving keeps each of the first three as an alias. "
            "After a rename the old name stays an alias, so links that use it still find this "
            "preset (delete that alias to free the name)."
        ),
    )
    family = models.CharField(_("family"), max_length=100, db_index=True)
    hf_repo = models.CharField(
        _("Hugging Face repo id"),
        max_length=200,
        blank=True,
        validators=[hf_repo_validator],
        help_text=_("Typed on the page or in the API, it finds this preset (kept as an alias)."),
    )
    config = models.JSONField(
        _("architecture (config.json)"),
        validators=[validate_config],
        help_text=_("The model's config.json fields as published on the Hugging Face hub."),
    )
    params_total = models.BigIntegerField(_("parameters"), editable=False, default=0)
    num_layers = models.PositiveIntegerField(_("layers"), editable=False, default=0)
    num_kv_heads = models.PositiveIntegerField(_("KV heads"), editable=False, default=0)
    max_context = models.PositiveIntegerField(_("context length"), null=True, editable=False)
    release_date = models.DateField(_("release date"), null=True, blank=True)
    license = models.CharField(_("licence"), max_length=100, blank=True)
    native_precision = models.CharField(_("native precision"), max_length=20, default="bf16")
    quantization = models.CharField(
        _("pre-quantized release"), max_length=20, choices=Quantization.choices, blank=True
    )
    official_params = models.CharField(_("official parameter count"), max_length=200, blank=True)
    source = models.TextField(_("sources"), blank=True)
    note = models.TextField(_("note"), blank=True)
    active = models.BooleanField(_("active"), default=True)
    origin = models.CharField(
        _("origin"), max_length=20, choices=PresetOrigin.choices, default=PresetOrigin.CATALOGUE
    )
    reviewed = models.BooleanField(
        _("reviewed"),
        default=True,
        help_text=_(
            "Reviewed presets are part of the catalogue (suggestions, lists, the fits page); "
            "an imported preset is only used for its own repository id until reviewed."
        ),
    )
    hub_revision = models.CharField(_("Hub commit"), max_length=64, blank=True)
    hub_params_total = models.BigIntegerField(
        _("parameters stored (safetensors)"),
        null=True,
        blank=True,
        help_text=_("Tensor elements in the checkpoint, from the Hub's safetensors metadata."),
    )
    hub_dtypes = models.JSONField(
        _("stored dtypes (safetensors)"),
        default=dict,
        blank=True,
        help_text=_("Tensor elements per stored dtype, from the Hub's safetensors metadata."),
    )
    imported_at = models.DateTimeField(_("imported at"), null=True, blank=True)
    seed_fingerprint = models.CharField(max_length=64, blank=True, editable=False)
    # Indexed: `selectors.catalogue_version` reads its maximum on every request.
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["family", "params_total", "display_name"]
        verbose_name = _("model preset")
        verbose_name_plural = _("model presets")
        # `selectors.catalogue_version` counts the reviewed rows and reads their newest edit
        # on every request: this index answers both without reading the table.
        indexes = [models.Index(fields=["reviewed", "updated_at"], name="preset_reviewed_updated")]

    def __str__(self) -> str:
        return self.display_name

    @property
    def local_name(self) -> str:
        """The name as the page shows it (a qualifier in the page's language); links and the
        model field keep ``display_name``, which finds the preset."""
        return catalogue_name(self.display_name)

    def architecture(self) -> Architecture:
        return Architecture.from_hf_config(self.config)

    def clean(self) -> None:
        super().clean()
        try:
            arch = self.architecture()
        except (ConfigError, ValueError, TypeError):
            return  # validate_config names every problem next to the field
        self._apply_architecture(arch)

    def _apply_architecture(self, arch: Architecture) -> None:
        self.params_total = arch.params_total
        self.num_layers = arch.num_layers
        self.num_kv_heads = arch.num_kv_heads
        self.max_context = arch.max_position_embeddings

    def save(self, *args: Any, **kwargs: Any) -> None:
        self._apply_architecture(self.architecture())
        # Published configs may hold Infinity or NaN (Python's json writes them; Nemotron-H's
        # time_step_limit is [0.0, Infinity]); a JSON column accepts neither.
        self.config = json_safe(self.config)
        super().save(*args, **kwargs)

    @property
    def params_billion(self) -> float:
        return self.params_total / 1e9

    @property
    def is_unreviewed_import(self) -> bool:
        return self.origin == PresetOrigin.HUB and not self.reviewed


class ModelAlias(models.Model):
    preset = models.ForeignKey(ModelPreset, on_delete=models.CASCADE, related_name="aliases")
    alias = models.CharField(_("alias"), max_length=200)
    key = models.CharField(max_length=200, db_index=True, editable=False)

    class Meta:
        ordering = ["alias"]
        constraints = [
            models.UniqueConstraint(fields=["preset", "alias"], name="unique_alias_per_preset")
        ]
        verbose_name = _("alias")
        verbose_name_plural = _("aliases")

    def __str__(self) -> str:
        return self.alias

    def clean(self) -> None:
        super().clean()
        self.key = alias_key(self.alias)
        if not self.key:
            raise ValidationError({"alias": _("An alias needs at least one letter or digit.")})
        clash = ModelAlias.objects.filter(key=self.key).exclude(pk=self.pk).select_related("preset")
        other = clash.first()
        if other is not None and other.preset_id != self.preset_id:
            raise ValidationError(
                {
                    "alias": _("“%(alias)s” is already an alias of %(preset)s.")
                    % {"alias": self.alias, "preset": other.preset.display_name}
                }
            )

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.key = alias_key(self.alias)
        super().save(*args, **kwargs)


class Vendor(models.TextChoices):
    NVIDIA = "nvidia", "NVIDIA"
    AMD = "amd", "AMD"
    INTEL = "intel", "Intel"
    APPLE = "apple", "Apple"


# A driver reports slightly less than the marketed size; without a published readout we keep
# 98.5% of the marketed GiB (an H100 80GB shows 81,559 MiB = 99.6%, an A10G 23,028 of 24,576 MiB
# = 93.7%; both published nvidia-smi readouts, cited in presets/GPUS_SOURCES.md).
DEFAULT_USABLE_FRACTION = Decimal("0.985")


class Interconnect(models.TextChoices):
    NVLINK = "nvlink", "NVLink"
    INFINITY_FABRIC = "infinity_fabric", "Infinity Fabric"
    PCIE = "pcie", "PCIe"
    ETHERNET = "ethernet", _("Ethernet (RoCE)")
    NONE = "none", _("none (single device)")


def latest_release_year() -> int:
    """The latest plausible release year: parts are announced up to about two years ahead."""
    return date.today().year + 2


# Bounds on a GPU's figures: positive, and at most ten times the largest figure in
# presets/gpus.json (B200 SXM: 8,000 GB/s, 2,250 dense BF16/FP16 TFLOPS, 4,500 dense FP8
# TFLOPS and INT8 TOPS, 900 GB/s NVLink; Apple M3 Ultra: 512 GB), so that a slipped digit or
# sign is refused and the next generations still fit. The minima sit far below the smallest
# catalogued part (224 GB/s, 18.2 TFLOPS, 63 GB/s PCIe). Release years start with the GeForce
# 256 (1999), the first part sold as a "GPU". Read back defensively as well (``gpu_figure``):
# a row written past the admin (SQL, a fixture) loses the figure, not the page.
GPU_BOUNDS: dict[str, tuple[float, float]] = {
    "memory_gb": (0.5, 5_120),
    "usable_memory_bytes": (1, 5_120 * 2**30),
    "bandwidth_gb_s": (1, 80_000),
    "bf16_tflops_dense": (0.1, 22_500),
    "fp16_tflops_dense": (0.1, 22_500),
    "fp8_tflops_dense": (0.1, 45_000),
    "int8_tops_dense": (0.1, 45_000),
    "interconnect_gb_s": (1, 9_000),
    "unified_usable_fraction": (0.01, 1),
    "release_year": (1999, 2100),
}


def _bounded(name: str) -> list[Any]:
    low, high = GPU_BOUNDS[name]
    if name == "memory_gb":
        return [MinValueValidator(Decimal(str(low))), MaxValueValidator(Decimal(str(high)))]
    if name == "release_year":
        return [MinValueValidator(int(low)), MaxValueValidator(latest_release_year)]
    return [MinValueValidator(low), MaxValueValidator(high)]


def gpu_figure(value: Any, name: str) -> Any:
    """``value`` when it is a finite number within ``GPU_BOUNDS[name]``, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    low, high = GPU_BOUNDS[name]
    number = float(value)
    return value if math.isfinite(number) and low <= number <= high else None


class GpuSpec(models.Model):
    slug = models.CharField(_("slug"), max_length=100, unique=True, validators=[slug_validator])
    name = models.CharField(_("name"), max_length=200)
    vendor = models.CharField(_("vendor"), max_length=20, choices=Vendor.choices)
    memory_gb = models.DecimalField(
        _("memory (GB, as marketed)"),
        max_digits=8,
        decimal_places=2,
        validators=_bounded("memory_gb"),
    )
    usable_memory_bytes = models.BigIntegerField(
        _("usable memory (bytes, as the driver reports)"),
        null=True,
        blank=True,
        validators=_bounded("usable_memory_bytes"),
        help_text=_("At most the marketed memory (in GiB)."),
    )
    memory_type = models.CharField(_("memory type"), max_length=40, blank=True)
    bandwidth_gb_s = models.FloatField(
        _("memory bandwidth (GB/s)"), null=True, blank=True, validators=_bounded("bandwidth_gb_s")
    )
    bf16_tflops_dense = models.FloatField(
        _("dense BF16 TFLOPS"), null=True, blank=True, validators=_bounded("bf16_tflops_dense")
    )
    fp16_tflops_dense = models.FloatField(
        _("dense FP16 TFLOPS"), null=True, blank=True, validators=_bounded("fp16_tflops_dense")
    )
    fp8_support = models.BooleanField(_("FP8 support"), default=False)
    fp8_tflops_dense = models.FloatField(
        _("dense FP8 TFLOPS"), null=True, blank=True, validators=_bounded("fp8_tflops_dense")
    )
    int8_tops_dense = models.FloatField(
        _("dense INT8 TOPS"), null=True, blank=True, validators=_bounded("int8_tops_dense")
    )
    interconnect = models.CharField(
        _("GPU-to-GPU interconnect"), max_length=20, choices=Interconnect.choices, blank=True
    )
    interconnect_gb_s = models.FloatField(
        _("interconnect bandwidth (GB/s, one direction)"),
        null=True,
        blank=True,
        validators=_bounded("interconnect_gb_s"),
    )
    form_factor = models.CharField(_("form factor"), max_length=40, blank=True)
    unified_memory = models.BooleanField(_("unified memory"), default=False)
    unified_usable_fraction = models.FloatField(
        _("usable share of unified memory"),
        null=True,
        blank=True,
        validators=_bounded("unified_usable_fraction"),
    )
    release_year = models.PositiveIntegerField(
        _("release year"), null=True, blank=True, validators=_bounded("release_year")
    )
    source = models.TextField(_("sources"), blank=True)
    notes = models.TextField(_("notes"), blank=True)
    active = models.BooleanField(_("active"), default=True)
    seed_fingerprint = models.CharField(max_length=64, blank=True, editable=False)
    # Indexed: `selectors.catalogue_version` reads its maximum on every request.
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-memory_gb", "name"]
        verbose_name = _("GPU")
        verbose_name_plural = _("GPUs")

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        usable, memory = self.usable_memory_bytes, self.memory_gb
        if usable is not None and memory is not None and usable > self.nominal_bytes:
            raise ValidationError(
                {
                    "usable_memory_bytes": _(
                        "A driver cannot report more than the marketed %(gb)s GB "
                        "(%(bytes)s bytes); check the figure."
                    )
                    % {"gb": f"{Decimal(memory).normalize():f}", "bytes": self.nominal_bytes}
                }
            )

    @property
    def usable_bytes(self) -> int:
        """Memory a process can use: the driver's figure, or a default share of the marketed size.
        A figure outside ``GPU_BOUNDS``, or over the marketed size, is not used."""
        usable = gpu_figure(self.usable_memory_bytes, "usable_memory_bytes")
        if usable and usable <= self.nominal_bytes:
            return int(usable)
        nominal = Decimal(self.memory_gb) * (1 << 30)
        if self.unified_memory:
            fraction = gpu_figure(self.unified_usable_fraction, "unified_usable_fraction")
            return int(nominal * Decimal(str(fraction or 0.75)))
        return int(nominal * DEFAULT_USABLE_FRACTION)

    @property
    def local_name(self) -> str:
        """The name as the page shows it: a qualifier in the page's language."""
        return catalogue_name(self.name)

    @property
    def display_label(self) -> str:
        """'NVIDIA H100 SXM 80GB (80 GB)': the name with the marketed memory."""
        memory = f"{Decimal(self.memory_gb).normalize():f}"
        if f"{memory}gb" in self.name.lower().replace(" ", ""):
            return self.local_name
        return f"{self.local_name} ({memory} GB)"

    @property
    def nominal_bytes(self) -> int:
        return int(Decimal(self.memory_gb) * (1 << 30))


def new_saved_id() -> str:
    """22 URL-safe characters from 128 random bits: unguessable, short enough to share."""
    return secrets.token_urlsafe(16)


class SavedResult(models.Model):
    """A frozen snapshot behind a shared link: the request with its resolved architecture, the
    result as computed then, the GPU it was checked against and the rest of what the page
    showed (``calculation_json``)."""

    id = models.CharField(primary_key=True, max_length=32, default=new_saved_id, editable=False)
    query = models.TextField(_("permalink query"))
    request_json = models.JSONField()
    result_json = models.JSONField()
    preset = models.ForeignKey(ModelPreset, null=True, blank=True, on_delete=models.SET_NULL)
    preset_name = models.CharField(max_length=200, blank=True)
    preset_config_hash = models.CharField(max_length=64, blank=True)
    gpu_name = models.CharField(max_length=200, blank=True)
    gpu_usable_bytes = models.BigIntegerField(null=True, blank=True)
    gpu_nominal_bytes = models.BigIntegerField(null=True, blank=True)
    # The rest of what the live page showed: the speed, the RAM given, the card's slug, the
    # preset's names (calculator.result.snapshots.SavedFigures; empty: saved before they were kept).
    calculation_json = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Who saved it (calculator.catalogue.clients.owner_key; empty: saved before owners were kept). Only
    # the same client's quota may remove it before its retention ends.
    owner = models.CharField(max_length=32, blank=True, db_index=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("saved result")
        verbose_name_plural = _("saved results")

    def __str__(self) -> str:
        return self.id


def json_safe(value: Any) -> Any:
    """The same value with non-finite floats written as the strings JSON writers use for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    return value


def config_hash(config: Any) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


class RateCounter(models.Model):
    """Requests one client made in its current rate-limit window (see ``calculator.catalogue.ratelimit``,
    used when no Redis is configured). Rows are counters, not history: one per client and
    bucket, reset when its window has passed."""

    slot = models.CharField(primary_key=True, max_length=255)
    count = models.PositiveIntegerField(default=0)
    expires_unix_s = models.FloatField(db_index=True)

    def __str__(self) -> str:
        return f"{self.slot}: {self.count}"


class PastedConfig(models.Model):
    """A config.json pasted on the page, stored once under its content hash so that the
    permalink carries a short id instead of the text (a URL has a length limit; a config
    does not)."""

    id = models.CharField(primary_key=True, max_length=32, editable=False)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(auto_now=True, db_index=True)
    # The client that stored it (calculator.catalogue.clients.owner_key), or empty once a second client
    # linked the same text (or for rows stored before owners were kept): then no one client's
    # quota can remove it.
    owner = models.CharField(max_length=32, blank=True, db_index=True, editable=False)

    class Meta:
        verbose_name = _("pasted config")
        verbose_name_plural = _("pasted configs")

    def __str__(self) -> str:
        return self.id


def pasted_config_id(text: str) -> str:
    """22 URL-safe characters of the text's SHA-256: the same config always gets the same id."""
    digest = hashlib.sha256(text.encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")
