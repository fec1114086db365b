"""What llama.cpp's ``--fit`` (on by default since December 2025) would set: the context, ``-ngl``,
``-ts`` and the ``-ot`` expert placement that leave ``--fit-target`` (1 GiB) free on every GPU.

Mirrors ``common_params_fit_impl`` in common/fit.cpp of ggml-org/llama.cpp @ 0c1e57098 (the
llama.cpp that llama-cpp-python 0.3.36 ships), with our buffers standing in for its dry-run
allocation (``no_alloc``), read for facts, not copied:

1. Measure the user's settings. Every device keeps its target free: nothing changes.
2. With ``-c`` unset (``n_ctx_auto``), shrink the context: linearly between ``--fit-ctx`` (4096)
   and the training context, per stream, rounded down to ``256 × streams``; with several devices
   less by ``(devices + 1) × model bytes per layer / (2 dense | 6 MoE)``. One device: done.
3. Give up, changing nothing, where the user set ``-ngl``, ``-ts`` (several devices) or any tensor
   override (``-ot``, ``--cpu-moe``, ``--n-cpu-moe``).
4. Fill the devices back to front with whole layers (a MoE model: with every routed expert in
   RAM), by the method of false position on each device's bytes per layer.
5. A MoE model whose dense part fits: move experts back onto the GPUs front to back, device 0
   first, and try one more layer with part of its feed-forward on the GPU (``UP``: attention
   and up projection; ``GATE``: and the gate; else ``ATTN``: attention alone).

The experts left in RAM are those of each device's last layers (the opposite of
``--n-cpu-moe``, which keeps the first N). Not modelled: step 5's overflow into the next GPU
(a partial layer on a device before the last overflows to the CPU here), and the extra models
(draft, MTP, ``--mmproj``) that ``--fit`` charges to every device.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from calculator.estimator.architecture import Architecture
from calculator.estimator.runtimes.commands import llama_split_flags, override_tensors_text
from calculator.estimator.runtimes.llama_cpp import (
    FFN_EXPS_PATTERN,
    MIB,
    GgufLayout,
    LlamaCppOptions,
    LlamaCppResult,
    TensorOverride,
    estimate_llama_cpp,
    gguf_layout,
    kv_streams,
)

# common/common.h: fit_params_target (1024 MiB per device) and fit_params_min_ctx.
FIT_TARGET_BYTES = 1024 * MIB
FIT_CTX_MIN = 4096

# common/fit.cpp get_overflow_pattern: what of a partial layer stays off the GPU.
_OVERFLOW_PATTERNS = {
    "moe": FFN_EXPS_PATTERN,  # the routed experts
    "up": r"\.ffn_(gate|gate_up|down).*",  # attention and the up projection on the GPU
    "gate": r"\.ffn_down.*",  # attention, up and gate on the GPU
    "attn": r"\.ffn_(gate|up|gate_up|down).*",  # attention alone
}
Overflow = Literal["moe", "up", "gate", "attn"]
FitStatus = Literal["unchanged", "context", "fitted", "refused"]


@dataclass(frozen=True)
class _Layers:
    """One device's share: ``n_layer`` slots, of which the last ``n_part`` keep part of their
    feed-forward in RAM (the first of them by ``overflow``, the rest their routed experts)."""

    n_layer: int = 0
    n_part: int = 0
    overflow: Overflow = "moe"

    @property
    def n_full(self) -> int:
        return self.n_layer - self.n_part


class FitDevice(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    free_bytes: int = Field(description="Free memory --fit plans against (after the CUDA context).")
    used_bytes: int = Field(description="Its buffers with the fitted settings.")
    layers: int = Field(description="Layer slots it holds, the output layer counting as one.")
    partial_layers: int = Field(description="Of those, the layers with experts left in RAM.")


class FitResult(BaseModel):
    """What ``--fit`` lands on, as the flags it amounts to and the buffers they give."""

    model_config = ConfigDict(frozen=True)

    status: FitStatus = Field(
        description="unchanged: the settings fit as they are; context: a shorter -c was "
        "enough; fitted: layers or experts were moved; refused: --fit gives up and loads the "
        "settings as given (see reason)"
    )
    reason: Literal["n_gpu_layers", "tensor_split", "overrides"] | None = None
    options: LlamaCppOptions = Field(description="The settings llama.cpp runs with.")
    result: LlamaCppResult
    devices: tuple[FitDevice, ...]
    margin_bytes: int

    @property
    def fits(self) -> bool:
        """Whether every device keeps its margin free."""
        return all(d.free_bytes - d.used_bytes >= self.margin_bytes for d in self.devices)

    @property
    def experts_in_ram_layers(self) -> int:
        """Layers whose routed experts (all or part of their feed-forward) --fit leaves in RAM."""
        return sum(device.partial_layers for device in self.devices)

    def flags(self) -> list[str]:
        """The flags ``llama-fit-params`` prints for this result (``-c``, ``-ngl``, ``-ts``,
        ``-ot``), the per-layer overrides folded into one pattern each."""
        options = self.options
        words = ["-c", str(options.n_ctx)]
        words += ["-ngl", "all" if options.n_gpu_layers is None else str(options.n_gpu_layers)]
        words += llama_split_flags(options, len(self.devices))
        if options.override_tensors:
            words += ["-ot", override_tensors_text(options.override_tensors)]
        return words


class _Fitter:
    """One search: the architecture, the file and the devices' free memory."""

    def __init__(
        self,
        arch: Architecture,
        layout: GgufLayout,
        free: Sequence[int],
        margins: Sequence[int],
    ) -> None:
        self.arch, self.layout = arch, layout
        self.free, self.margins = list(free), list(margins)
        self.devices = len(free)
        self.slots = arch.num_layers + 1  # hp_ngl + 1: the output layer counts as one
        self.made: dict[tuple[object, ...], LlamaCppResult] = {}

    def estimate(self, options: LlamaCppOptions) -> LlamaCppResult:
        return estimate_llama_cpp(self.arch, options, layout=self.layout, devices=self.devices)

    def used(self, result: LlamaCppResult) -> list[int]:
        """Each device's buffers (model, KV, RS, compute), as --fit's measurement totals them."""
        if not result.devices:
            return [0] * self.devices
        return [device.total for device in result.devices]

    def partial_blocks(self, layers: Sequence[_Layers]) -> list[int]:
        """Per device, the blocks whose feed-forward is partly in RAM: its partial layers less
        the output layer's slot, which a ``blk\\.<n_layer>`` pattern does not reach."""
        first = self.slots - sum(share.n_layer for share in layers)
        counts = []
        for share in layers:
            start = first + share.n_full
            stop = min(start + share.n_part, self.arch.num_layers)
            counts.append(max(stop - start, 0))
            first += share.n_layer
        return counts

    def placed(
        self, layers: Sequence[_Layers], base: LlamaCppOptions
    ) -> tuple[LlamaCppOptions, LlamaCppResult]:
        """``set_ngl_tensor_split_tbo``: -ngl the sum, -ts the layers per device, one override
        per partial layer. Layer indices run from ``slots - ngl``; a device's partial layers
        follow its full ones (an index past the last block names no tensor)."""
        ngl = sum(share.n_layer for share in layers)
        first = self.slots - ngl
        overrides = []
        for share in layers:
            first += share.n_full
            for il in range(first, first + share.n_part):
                kind = share.overflow if il == first else "moe"
                overrides.append(TensorOverride(pattern=rf"blk\.{il}{_OVERFLOW_PATTERNS[kind]}"))
            first += share.n_part
        update: dict[str, object] = {"n_gpu_layers": ngl, "override_tensors": tuple(overrides)}
        if self.devices > 1:
            update["tensor_split"] = tuple(float(share.n_layer) for share in layers)
        options = base.model_copy(update=update)
        key = (ngl, tuple(layers), base.n_ctx)
        if key not in self.made:
            self.made[key] = self.estimate(options)
        return options, self.made[key]


def fit_params(
    arch: Architecture,
    options: LlamaCppOptions,
    free_bytes: Sequence[int],
    *,
    margin_bytes: int = FIT_TARGET_BYTES,
    n_ctx_auto: bool = False,
    n_ctx_train: int | None = None,
    n_ctx_min: int = FIT_CTX_MIN,
    layout: GgufLayout | None = None,
) -> FitResult:
    """What ``--fit`` sets for ``options`` on GPUs with ``free_bytes`` free each (the card less
    its CUDA context), keeping ``margin_bytes`` (``--fit-target``) free on each. ``n_ctx_auto``:
    ``-c`` was not given, so the context may shrink from ``n_ctx_train`` per stream (default:
    the architecture's) down to ``n_ctx_min`` per stream. ``-sm none`` fits its main GPU alone."""
    options = options.for_model(arch)
    if layout is None:
        layout = gguf_layout(arch, options.file_type(arch))
    if options.split_mode == "none" and len(free_bytes) > 1:
        free_bytes = [free_bytes[min(options.main_gpu, len(free_bytes) - 1)]]
        options = options.model_copy(update={"main_gpu": 0, "device_memory_bytes": None})
    if len(free_bytes) > 1 and options.device_memory_bytes is None and options.tensor_split is None:
        options = options.model_copy(update={"device_memory_bytes": tuple(free_bytes)})
    fitter = _Fitter(arch, layout, free_bytes, [margin_bytes] * len(free_bytes))
    streams = kv_streams(options)
    n_ctx_max = (n_ctx_train or arch.max_position_embeddings or options.n_ctx) * streams
    if n_ctx_auto:
        options = options.model_copy(update={"n_ctx": n_ctx_max})

    def done(
        status: FitStatus,
        chosen: LlamaCppOptions,
        result: LlamaCppResult,
        shares: Sequence[_Layers] | None = None,
        **extra: object,
    ) -> FitResult:
        used = fitter.used(result)
        slots = [device.layers for device in result.devices] or [0] * fitter.devices
        partial = fitter.partial_blocks(shares) if shares else [0] * fitter.devices
        devices = tuple(
            FitDevice(
                name=f"CUDA{i}",
                free_bytes=free,
                used_bytes=used[i],
                layers=slots[i],
                partial_layers=partial[i],
            )
            for i, free in enumerate(fitter.free)
        )
        return FitResult(
            status=status,
            options=chosen,
            result=result,
            devices=devices,
            margin_bytes=margin_bytes,
            **extra,  # type: ignore[arg-type]
        )

    # Step 1: the settings as given.
    full = fitter.estimate(options)
    used = fitter.used(full)
    targets = [free - margin for free, margin in zip(fitter.free, fitter.margins, strict=True)]
    if all(u <= t for u, t in zip(used, targets, strict=True)):
        return done("unchanged", options, full)

    # Step 2: a shorter context, when -c was left to --fit.
    surplus = sum(targets) - sum(used)
    if surplus < 0 and n_ctx_auto and n_ctx_max > n_ctx_min * streams:
        low_ctx = n_ctx_min * streams
        target_total = sum(targets)
        if fitter.devices > 1:
            # -ngl left at auto (-1, read unsigned): every repeating layer.
            per_layer = sum(d.model for d in full.devices) // arch.num_layers
            target_total -= (fitter.devices + 1) * per_layer // (6 if arch.is_moe else 2)
        at_min = options.model_copy(update={"n_ctx": low_ctx})
        used_min = sum(fitter.used(fitter.estimate(at_min)))
        if target_total > used_min:
            n_ctx = low_ctx + (n_ctx_max - low_ctx) * (target_total - used_min) // (
                sum(used) - used_min
            )
            align = 256 * streams
            n_ctx = max(n_ctx - n_ctx % align, low_ctx)
            options = options.model_copy(update={"n_ctx": n_ctx})
            if fitter.devices == 1:
                return done("context", options, fitter.estimate(options))
        else:
            options = at_min

    # Step 3: what --fit will not change.
    if options.n_gpu_layers is not None:
        return done("refused", options, fitter.estimate(options), reason="n_gpu_layers")
    if fitter.devices > 1 and options.tensor_split is not None:
        return done("refused", options, fitter.estimate(options), reason="tensor_split")
    if options.has_tensor_overrides:
        return done("refused", options, fitter.estimate(options), reason="overrides")
    layers = _fill_back_to_front(fitter, options, targets)
    if arch.is_moe and _dense_part_fits(fitter, options):
        layers = _experts_front_to_back(fitter, options, targets, layers)
    chosen, result = fitter.placed(layers, options)
    return done("fitted", chosen, result, layers)


def _dense_part_fits(fitter: _Fitter, base: LlamaCppOptions) -> bool:
    """Whether, with every routed expert in RAM and every layer offloaded, the devices together
    have room left beyond their margins (``global_surplus_cpu_moe > 0``)."""
    trial = base.model_copy(
        update={"override_tensors": (TensorOverride(pattern=r"blk\.\d+" + FFN_EXPS_PATTERN),)}
    )
    used = fitter.used(fitter.estimate(trial))
    return sum(fitter.free) - sum(used) - sum(fitter.margins) > 0


def _fill_back_to_front(
    fitter: _Fitter, base: LlamaCppOptions, targets: Sequence[int]
) -> list[_Layers]:
    """Step 4: each device from the last, as many whole layers as fit (a MoE model's with their
    experts in RAM: every slot partial but the last device's first)."""
    nd = fitter.devices
    moe = fitter.arch.is_moe
    layers = [_Layers() for _ in range(nd)]
    _options, result = fitter.placed(layers, base)
    used = fitter.used(result)
    for device in range(nd - 1, -1, -1):
        unassigned = fitter.slots - sum(share.n_layer for share in layers[device + 1 :])
        high = list(layers)
        n_part = (unassigned if device < nd - 1 else unassigned - 1) if moe else 0
        high[device] = _Layers(unassigned, max(n_part, 0))
        if unassigned == 0:
            continue
        _options, result = fitter.placed(high, base)
        used_high = fitter.used(result)
        if used_high[device] <= targets[device]:
            layers, used = high, used_high
            continue
        delta = high[device].n_layer - layers[device].n_layer
        while delta > 1:
            step = _false_position(delta, targets[device], used[device], used_high[device])
            trial = list(layers)
            current = trial[device]
            extra_part = step
            if moe and device == nd - 1 and current.n_part == 0:
                extra_part = step - 1  # the last device's first slot stays full
            trial[device] = _Layers(
                current.n_layer + step, current.n_part + (extra_part if moe else 0)
            )
            _options, result = fitter.placed(trial, base)
            used_trial = fitter.used(result)
            if used_trial[device] <= targets[device]:
                layers, used = trial, used_trial
            else:
                high, used_high = trial, used_trial
            delta = high[device].n_layer - layers[device].n_layer
    return layers


def _false_position(delta: int, target: int, low: int, high: int) -> int:
    """The step toward ``target`` that a straight line between ``low`` and ``high`` gives, at
    least 1 and short of ``delta``."""
    step = delta * (target - low) // (high - low) if high != low else 1
    return min(max(step, 1), delta - 1)


def _experts_front_to_back(
    fitter: _Fitter, base: LlamaCppOptions, targets: Sequence[int], layers: list[_Layers]
) -> list[_Layers]:
    """Step 5: turn the dense-only layers at the back into full layers at the front, device 0
    first, then try to fit part of one more layer."""
    nd = fitter.devices
    _options, result = fitter.placed(layers, base)
    used = fitter.used(result)
    dense_start = nd
    for device in range(nd - 1, -1, -1):
        if layers[device].n_layer > 0:
            dense_start = device
            continue
        break
    if dense_start >= nd:
        return layers
    for device in range(dense_start + 1):
        high = list(layers)
        for other in range(dense_start, nd):
            move = high[other].n_layer if other < nd - 1 else high[other].n_layer - 1
            high[device] = replace(high[device], n_layer=high[device].n_layer + move)
            high[other] = _Layers(high[other].n_layer - move, 0, high[other].overflow)
        dense_start_high = nd - 1
        _options, result = fitter.placed(high, base)
        used_high = fitter.used(result)
        if used_high[device] > targets[device]:
            delta = high[device].n_full - layers[device].n_full
            while delta > 1:
                step = _false_position(delta, targets[device], used[device], used_high[device])
                trial = list(layers)
                start = dense_start
                converted = 0
                while start < nd:
                    convert = min(step - converted, trial[start].n_part)
                    trial[start] = replace(
                        trial[start],
                        n_layer=trial[start].n_layer - convert,
                        n_part=trial[start].n_part - convert,
                    )
                    trial[device] = replace(trial[device], n_layer=trial[device].n_layer + convert)
                    converted += convert
                    if trial[start].n_part > 0:
                        break
                    start += 1
                _options, result = fitter.placed(trial, base)
                used_trial = fitter.used(result)
                if used_trial[device] <= targets[device]:
                    layers, used, dense_start = trial, used_trial, start
                else:
                    high, used_high, dense_start_high = trial, used_trial, start
                delta = high[device].n_full - layers[device].n_full
        else:
            layers, used, dense_start = high, used_high, dense_start_high
        layers, used, dense_start = _one_more_layer(
            fitter, base, targets, layers, used, device, dense_start
        )
    return layers


def _one_more_layer(
    fitter: _Fitter,
    base: LlamaCppOptions,
    targets: Sequence[int],
    layers: list[_Layers],
    used: list[int],
    device: int,
    dense_start: int,
) -> tuple[list[_Layers], list[int], int]:
    """Try a layer with part of its feed-forward on ``device``: ``up`` then ``gate`` when the
    up projection fits, else ``attn``. Before the last device llama.cpp overflows the rest into
    the next GPU; here into RAM (see the module's note)."""
    nd = fitter.devices
    if dense_start >= nd or layers[dense_start].n_layer <= (0 if device < nd - 1 else 1):
        return layers, used, dense_start
    trial = list(layers)
    donor = trial[dense_start]
    trial[dense_start] = replace(donor, n_layer=donor.n_layer - 1, n_part=donor.n_part - 1)
    start = dense_start + 1 if trial[dense_start].n_part == 0 else dense_start
    mine = trial[device]
    for kinds in (("up", "gate"), ("attn",)):
        accepted = None
        for kind in kinds:
            trial[device] = _Layers(mine.n_layer + 1, mine.n_part + 1, kind)
            _options, result = fitter.placed(trial, base)
            used_trial = fitter.used(result)
            ok = used_trial[device] < targets[device] and (
                device + 1 == nd or used_trial[device + 1] < targets[device + 1]
            )
            if not ok:
                break
            accepted = (list(trial), used_trial)
        if accepted is not None:
            return accepted[0], accepted[1], start
    return layers, used, dense_start
