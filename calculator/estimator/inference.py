"""Inference under transformers: one prefill forward pass of the whole batch, with the weights,
the KV cache (and recurrent states) it fills, one layer's activations and the last logits."""

from __future__ import annotations

from calculator.estimator import activations as act
from calculator.estimator.architecture import Architecture, RecurrentState
from calculator.estimator.checkpoint import checkpoint_weight_bytes, note_checkpoint_bytes
from calculator.estimator.kv_cache import (
    cached_tokens,
    kv_bytes_per_token,
    kv_cache_bytes,
    recurrent_layer_bytes,
    recurrent_state_bytes,
)
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.parallelism import Plan
from calculator.estimator.precision import BYTES_PER_ELEMENT, WEIGHT_FORMATS, compute_dtype
from calculator.estimator.result import transformers_result
from calculator.estimator.schemas import (
    Breakdown,
    EstimateRequest,
    EstimateResult,
    Holds,
    LayerKind,
)
from calculator.estimator.weights import WeightBytes, weight_bytes


def _kv_precision(request: EstimateRequest) -> str:
    return request.kv_cache_precision or compute_dtype(request.precision)


def _weights(
    request: EstimateRequest, arch: Architecture, plan: Plan, notes: Notes
) -> tuple[WeightBytes, int | None]:
    """The weights at the request's precision (``weights.weight_bytes``), or a pre-quantized
    checkpoint's own stored bytes when it runs in its format."""
    precision = request.precision
    compute = compute_dtype(precision)
    p = BYTES_PER_ELEMENT[compute]
    quantized = precision not in {"fp32", "fp16", "bf16"}
    stored = checkpoint_weight_bytes(request)
    weights = weight_bytes(
        arch,
        weight_format=precision,
        other_bytes=p if quantized else BYTES_PER_ELEMENT[precision],
        plan=plan,
        stored_bytes=stored,
    )
    if stored is not None:
        note_checkpoint_bytes(notes, request, stored, plan)
    elif quantized:
        notes.add(
            gettext_noop(
                "Weights: %(format)s; embeddings, LM head and norms stay in %(compute)s; "
                "activations computed in %(compute)s."
            ),
            WEIGHT_FORMATS[precision].source,
            format=WEIGHT_FORMATS[precision].label,
            compute=compute,
        )
    return weights, stored


def _cache(
    request: EstimateRequest, arch: Architecture, plan: Plan, notes: Notes
) -> tuple[int, list[LayerKind]]:
    """The KV cache (``kv_cache.kv_cache_bytes``) plus the fixed states of state-space and
    linear-attention layers (``kv_cache.recurrent_state_bytes``), and what each kind of layer
    holds."""
    p = BYTES_PER_ELEMENT[compute_dtype(request.precision)]
    kv_dtype = _kv_precision(request)
    kv = kv_cache_bytes(
        arch,
        batch=request.batch_size,
        seq_len=request.seq_len,
        bytes_per_element=BYTES_PER_ELEMENT[kv_dtype],
        plan=plan,
    )
    layer_kinds = cache_by_layer_kind(
        arch,
        batch=request.batch_size,
        seq_len=request.seq_len,
        kv_bytes=BYTES_PER_ELEMENT[kv_dtype],
        model_bytes=p,
        plan=plan,
    )
    state = recurrent_state_bytes(arch, batch=request.batch_size, model_bytes=p, plan=plan)
    if state:
        recurrent_layers = sum(kind.layers for kind in layer_kinds if "recurrent" in kind.holds)
        notes.add(
            gettext_noop(
                "%(recurrent)s of %(layers)s layers are state-space or linear-attention layers: "
                "each keeps a fixed-size state per sequence (convolution state in %(dtype)s, "
                "recurrent state in fp32), %(mib)s MiB in all, counted with the KV cache; only "
                "the %(attention)s attention layers keep keys and values."
            ),
            "transformers cache_utils.LinearAttentionLayer; Gu & Dao 2023 (arXiv:2312.00752) "
            "§3.3; Yang et al. 2024 (arXiv:2412.06464)",
            recurrent=recurrent_layers,
            layers=arch.num_layers,
            dtype=compute_dtype(request.precision),
            mib=round(state / 2**20, 1),
            attention=arch.attention_layer_count,
        )
        kv += state
    return kv, layer_kinds


def _note_prefill(request: EstimateRequest, arch: Architecture, notes: Notes) -> None:
    notes.add(
        gettext_noop(
            "Prefill of %(batch)s × %(seq)s tokens in one forward pass; the KV cache (%(dtype)s) "
            "holds every token."
        )
        if not arch.sliding_layer_count
        else gettext_noop(
            "Prefill of %(batch)s × %(seq)s tokens in one forward pass; the KV cache (%(dtype)s) "
            "holds every token, sliding-window layers too: transformers keeps their last "
            "%(window)s as a view of the whole prompt's keys and values until the first decode "
            "step."
        ),
        gettext_noop("Kwon et al. 2023 (vLLM, arXiv:2309.06180) §3; transformers DynamicCache"),
        batch=request.batch_size,
        seq=request.seq_len,
        dtype=_kv_precision(request),
        window=arch.sliding_window or 0,
    )
    if arch.attention_kind == "mla":
        notes.add(
            gettext_noop(
                "MLA cache counted as transformers stores it: the compressed latent "
                "(kv_lora_rank + rope dims per token and layer), expanded per head only inside "
                "attention."
            ),
            gettext_noop(
                "DeepSeek-V2 (arXiv:2405.04434) §2.1; transformers modeling_deepseek_v3.py"
            ),
        )


def _note_attention_fallback(request: EstimateRequest, arch: Architecture, notes: Notes) -> None:
    if request.attention == "flash" and act.attention_that_runs(arch, "flash") == "eager":
        notes.add(
            gettext_noop(
                "%(model)s has no SDPA path in transformers: a request for it runs eager "
                "attention, which holds the (batch, heads, seq, seq) scores."
            ),
            "transformers modeling_gpt_oss.py (_supports_sdpa = False)",
            model=arch.model_type,
        )


def _prefill_activations(request: EstimateRequest, arch: Architecture, plan: Plan) -> float:
    """The most one layer's forward holds at once (``activations.inference_layer_peak_bytes``),
    and eager attention's additive causal mask."""
    p = BYTES_PER_ELEMENT[compute_dtype(request.precision)]
    setting = act.Setting(
        batch=request.batch_size,
        seq=request.seq_len,
        act_bytes=p,
        residual_bytes=p,
        autocast=False,
        attention=act.attention_that_runs(arch, request.attention),
        training=False,
        frozen_base=True,
        plan=plan,
    )
    layer_peak = max(
        act.inference_layer_peak_bytes(arch, setting, index) for index in act.layer_samples(arch)
    )
    if setting.attention == "eager":
        # The additive causal masks (``activations.eager_masks``).
        layer_peak += act.eager_masks(arch) * p * request.batch_size * request.seq_len**2
    return layer_peak


def _logits(request: EstimateRequest, arch: Architecture, plan: Plan, notes: Notes) -> int:
    p = BYTES_PER_ELEMENT[compute_dtype(request.precision)]
    notes.add(
        gettext_noop(
            "Logits only for the last position of each sequence (logits_to_keep=1, as generate() "
            "does)."
        ),
        gettext_noop("transformers GenerationMixin"),
    )
    return int(request.batch_size * arch.vocab_size * p / plan.tp)


def estimate_inference(
    request: EstimateRequest, arch: Architecture, plan: Plan, notes: Notes
) -> EstimateResult:
    """Per-GPU memory at the peak of a transformers prefill: weights, cache, one layer's
    activations and the last position's logits."""
    weights, stored = _weights(request, arch, plan, notes)
    kv, layer_kinds = _cache(request, arch, plan, notes)
    _note_prefill(request, arch, notes)
    _note_attention_fallback(request, arch, notes)
    layer_peak = _prefill_activations(request, arch, plan)
    peak_parts = Breakdown(
        weights=weights.data,
        quantization_overhead=weights.quantization_overhead,
        kv_cache=kv,
        activations=int(layer_peak),
        logits=_logits(request, arch, plan, notes),
    )
    result = transformers_result(
        request,
        arch,
        peak_parts,
        phase="prefill forward",
        trainable=0,
        notes=notes,
        training=False,
        layer_kinds=layer_kinds,
    )
    return result.model_copy(update={"checkpoint_weight_bytes": stored}) if stored else result


def cache_by_layer_kind(
    arch: Architecture,
    *,
    batch: int,
    seq_len: int,
    kv_bytes: float,
    model_bytes: float,
    plan: Plan,
) -> list[LayerKind]:
    """Which layers hold what between forward passes: a KV cache on attention layers (the
    window on sliding ones), a fixed state on state-space / linear-attention layers, nothing on
    MLP-only layers (Nemotron-H). Mirrors the layers transformers' ``DynamicCache`` builds per
    layer type (``DynamicLayer``, ``DynamicSlidingWindowLayer``, ``LinearAttentionLayer`` in
    ``cache_utils.py``); the byte counts are those of ``kv_cache_bytes`` and
    ``recurrent_layer_bytes``."""
    per_token = kv_bytes_per_token(arch, bytes_per_element=kv_bytes, plan=plan)
    if not (arch.mixer_kinds or arch.parallel_recurrent or arch.kv_shared_layers):
        # Attention everywhere: after the prefill, sliding layers still hold the whole prompt
        # (``kv_cache.cached_tokens``).
        sliding = arch.sliding_layer_count
        window = seq_len
        summary = []
        if arch.num_layers - sliding:
            full_bytes = int(batch * (arch.num_layers - sliding) * seq_len * per_token)
            summary.append(
                LayerKind(
                    kind="attention",
                    layers=arch.num_layers - sliding,
                    holds="kv_cache",
                    cache_bytes=full_bytes,
                )
            )
        if sliding:
            summary.append(
                LayerKind(
                    kind="sliding_attention",
                    layers=sliding,
                    holds="kv_cache",
                    cache_bytes=int(batch * sliding * window * per_token),
                )
            )
        return summary
    groups: dict[str, list[int]] = {}
    for index in range(arch.num_layers):
        kind = arch.mixer_kind(index)
        if kind == "attention":
            is_sliding = bool(arch.layer_types) and arch.layer_types[index] == "sliding"
            name = "sliding_attention" if is_sliding else "attention"
            if arch.parallel_recurrent is not None:
                name = f"{name}+{arch.parallel_recurrent.kind}"
        elif kind == "none":
            name = "mlp"
        else:
            name = kind
        groups.setdefault(name, []).append(index)
    summary = []
    for name, layers in groups.items():
        kind = arch.mixer_kind(layers[0])
        cache = 0
        if kind == "attention":
            tokens = sum(
                cached_tokens(arch, index, seq_len) for index in layers if arch.keeps_kv(index)
            )
            cache = int(batch * tokens * per_token)
        state: RecurrentState | None = None
        if kind not in {"attention", "none"}:
            state = arch.recurrent_state(kind)
        elif kind == "attention" and arch.parallel_recurrent is not None:
            state = arch.parallel_recurrent
        if state is not None:
            cache += len(layers) * recurrent_layer_bytes(
                arch, state, batch=batch, model_bytes=model_bytes, plan=plan
            )
        holds: Holds
        if kind == "attention":
            holds = "kv_cache+recurrent_state" if state is not None else "kv_cache"
        else:
            holds = "recurrent_state" if state is not None else "nothing"
        summary.append(LayerKind(kind=name, layers=len(layers), holds=holds, cache_bytes=cache))
    return summary
