"""Peak-memory measurements of real Hugging Face models under FakeTensorMode + MemTracker.

Usage:
    validation/.venv/bin/python validation/measure.py \
        --cases validation/cases.json --out validation/measurements.json [--only ID ...]

Each case is {"id", "config", "request"} where "request" is exactly the estimator's request JSON
minus "model".  See validation/README.md for the semantics of every mode.  A failing case is
recorded with its error and does not stop the run.  With --only, the named cases are re-measured
and merged into an existing --out file (other cases are kept).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import json
import sys
import time
import traceback
import warnings
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.mem_tracker import MemTracker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DTYPES, build_causal_lm, build_config, rel, versions

warnings.filterwarnings("ignore")

ATTN = {"flash": "sdpa", "eager": "eager"}

SEMANTICS_NOTES = [
    "All numbers are MemTracker live-tensor bytes (torch.distributed._tools.mem_tracker) on fake CPU "
    "tensors; no allocator caching/fragmentation, no CUDA context, no cuBLAS/cuDNN workspaces, no 512-byte "
    "rounding (the tracker only rounds on CUDA devices). Compare with torch.cuda.max_memory_allocated, not NVML.",
    "Models are real transformers modelling code, built with AutoModelForCausalLM.from_config directly in the "
    "requested dtype (torch.set_default_dtype + dtype=) on device cpu inside FakeTensorMode.",
    "attention 'flash' is measured with attn_implementation='sdpa' (CPU SDPA kernels: flash-attention CPU kernel "
    "for the forward when no mask tensor is materialised); 'eager' with attn_implementation='eager' "
    "(materialises [B, H, S, S] scores/probs).",
    "inference: model.eval(), torch.no_grad(), ONE forward over int64 zeros input_ids [batch_size, seq_len], "
    "use_cache=True (default DynamicCache), logits_to_keep=1; the output (and so the KV cache) is kept alive "
    "until the peak is read. Peak = weights + KV cache + transient activations of the prefill.",
    "training (full_finetune / pretrain): model.train(); loss = model(input_ids=ids, labels=ids).loss (HF loss, "
    "logits upcast to fp32); loss.backward(); optimizer.step(); optimizer.zero_grad(set_to_none=True). Two steps; "
    "the reported peak is the peak of step 2 only (optimizer states exist from step 1). The peak tracker is "
    "re-based at the start of step 2 (see README 'shims'); step-1 peak is reported separately.",
    "optimizers: torch.optim.AdamW(lr=1e-5) / SGD(lr=1e-3, momentum=0 or 0.9) in the request's optimizer_impl: "
    "fused=True (default; HF Trainer's adamw_torch_fused, CPU kernels in torch 2.13), foreach=True (PyTorch's "
    "CUDA default without fused; the first 48 cases) or foreach=False, fused=False (for_loop).",
    "loss 'chunked': torchtune's CEWithChunkedOutputLoss pattern: base model's hidden states, the LM head on 8 "
    "tensor_split chunks of positions, each chunk upcast to fp32 and reduced with cross_entropy(reduction='sum').",
    "mixed_precision=true: fp32 master weights; forward+loss inside torch.autocast('cpu', dtype=torch.bfloat16); "
    "backward and optimizer step outside autocast (HF Trainer bf16=True).",
    "gradient_checkpointing=true: model.gradient_checkpointing_enable() with transformers' default kwargs, i.e. "
    "torch.utils.checkpoint with use_reentrant=False, on every decoder layer.",
    "lora: base model in `precision`, peft.get_peft_model(LoraConfig(r, lora_alpha=2r, lora_dropout=0, "
    "target_modules, task_type=CAUSAL_LM)) with PEFT's default autocast_adapter_dtype=True (adapters fp32); "
    "AdamW(foreach=True) over trainable params; same 2-step loop.",
    "pretrain differs from full_finetune only in intent (from-scratch init); memory semantics are identical.",
]


# ----------------------------------------------------------------------------------------------
# helpers


def _snapshot_to_plain(snap: dict) -> dict:
    """MemTracker snapshot {device: {_MemRefType|'Total': bytes}} -> {category: bytes} for cpu."""
    out = {}
    for _dev, cats in snap.items():
        for k, v in cats.items():
            name = k if isinstance(k, str) else str(getattr(k, "value", k))
            out[name] = out.get(name, 0) + int(v)
    return out


def _rebase_peak(mt: MemTracker) -> None:
    """Make MemTracker's global peak start again from the current live memory.

    MemTracker.reset_mod_stats() only clears the per-module statistics; the global peak
    (``_peak_mem`` / ``_peak_mem_snap``) keeps step 1.  We re-base it (same thing MemTracker's own
    ``__enter__`` does) so the reported peak is that of step 2 alone.  This changes no allocation.
    """
    mt._peak_mem_snap = mt.get_tracker_snapshot()
    mt._peak_mem = {dev: snap["Total"] for dev, snap in mt._peak_mem_snap.items()}


def _peak_total(mt: MemTracker) -> int:
    return int(sum(mt._peak_mem.values()))


def _cache_bytes(out) -> tuple[int, list]:
    cache = getattr(out, "past_key_values", None)
    if cache is None:
        cache = getattr(out, "cache", None)
    if cache is None:
        return 0, []
    seen = set()
    total = 0
    per_layer = []
    layers = getattr(cache, "layers", None)
    if layers is None:  # legacy tuple cache
        layers = list(cache)
    for layer in layers:
        if isinstance(layer, (tuple, list)):
            ts = list(layer)
            kind = "tuple"
        else:
            ts = [getattr(layer, "keys", None), getattr(layer, "values", None)]
            kind = type(layer).__name__
        lb = 0
        shape = None
        for t in ts:
            if isinstance(t, torch.Tensor) and t.numel() > 0:
                key = (
                    id(t.untyped_storage())
                    if not hasattr(t, "_cdata")
                    else t.untyped_storage()._cdata
                )
                if key in seen:
                    continue
                seen.add(key)
                lb += t.numel() * t.element_size()
                shape = list(t.shape)
        total += lb
        per_layer.append({"type": kind, "key_shape": shape, "bytes": lb})
    return total, per_layer


def _summarise_layers(per_layer: list) -> list:
    """Compress per-layer cache info into runs of identical (type, shape)."""
    runs = []
    for i, layer in enumerate(per_layer):
        sig = (layer["type"], tuple(layer["key_shape"] or ()), layer["bytes"])
        if runs and runs[-1]["sig"] == sig:
            runs[-1]["layers"][1] = i
        else:
            runs.append({"sig": sig, "layers": [i, i]})
    return [
        {
            "layers": r["layers"],
            "type": r["sig"][0],
            "key_shape": list(r["sig"][1]),
            "bytes_per_layer": r["sig"][2],
        }
        for r in runs
    ]


# ----------------------------------------------------------------------------------------------
# shims (each is minimal and changes nothing that is allocated)


@contextlib.contextmanager
def _peft_fake_shims():
    """Shim for PEFT adapter creation under FakeTensorMode.

    PEFT moves/casts each freshly created LoRA module with ``module.to(device, dtype)``
    (``_move_adapter_to_device_of_base_layer``, then the fp32 cast of autocast_adapter_dtype=True).
    For FakeTensor parameters ``nn.Module._apply`` always takes the ``torch.utils.swap_tensors``
    path, which fails under FakeTensorMode ("_apply(): Couldn't swap Linear.weight": the fake mode
    keeps a weakref to every fake tensor).  While PEFT builds its adapters we replace
    ``nn.Module._apply`` by its plain "overwrite" branch: each converted parameter is wrapped in a new
    ``nn.Parameter`` (same requires_grad) and put back in ``module._parameters``; buffers are
    replaced by their converted tensors.  The resulting adapter tensors (shape, dtype, device) are
    exactly what real PEFT produces, nothing extra stays allocated, and this runs before measuring.
    """
    orig = torch.nn.Module._apply

    def _apply_overwrite(self, fn, recurse=True):
        if recurse:
            for child in self.children():
                child._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with torch.no_grad():
                applied = fn(param)
            if applied is param:
                continue
            if param.grad is not None:
                raise RuntimeError("shim does not handle parameters with gradients")
            self._parameters[key] = torch.nn.Parameter(applied, requires_grad=param.requires_grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    torch.nn.Module._apply = _apply_overwrite
    try:
        yield
    finally:
        torch.nn.Module._apply = orig


class FrozenAwareMemTracker(MemTracker):
    """MemTracker that does not try to install gradient hooks on frozen parameters.

    ``MemTracker._track_module_params_and_buffers`` calls ``param.register_hook`` on every
    parameter, which raises "cannot register a hook on a tensor that doesn't require gradient" for
    the frozen base weights of a LoRA model.  A frozen parameter never gets a gradient, so its hook
    would never fire: we skip installing it and keep everything else identical (parameters,
    buffers and existing grads are tracked exactly as upstream does).  Measurement only; it changes
    no allocation.
    """

    def _track_module_params_and_buffers(self, module, install_grad_hooks: bool = True):
        from torch.distributed._tools.mem_tracker import _MemRefType

        def _grad_hook(grad):
            self._update_and_maybe_create_winfos(grad, _MemRefType.GRAD)

        param_memory = 0
        for param in module.parameters():
            winfos = self._update_and_maybe_create_winfos(param, _MemRefType.PARAM)
            param_memory += sum(w.mem_consumed for w in winfos)
            if param.grad is not None:
                self._update_and_maybe_create_winfos(param.grad, _MemRefType.GRAD)
            if (
                param.requires_grad  # <- the only change
                and self._param_to_grad_hook_handles.get(param, None) is None
                and install_grad_hooks
            ):
                h1 = param.register_hook(_grad_hook)
                h2 = param.register_post_accumulate_grad_hook(lambda p: _grad_hook(p.grad))
                self._param_to_grad_hook_handles[param] = (h1, h2)
        buffer_memory = 0
        for buffer in module.buffers():
            winfos = self._update_and_maybe_create_winfos(buffer, _MemRefType.BUFFER)
            buffer_memory += sum(w.mem_consumed for w in winfos)
        return (param_memory, buffer_memory)


# ----------------------------------------------------------------------------------------------
# the measured work


def _make_optimizer(req: dict, params):
    """The optimizer a request names, in the implementation it names (default: fused, as HF
    Trainer's ``adamw_torch_fused``). torch 2.13 has CPU kernels for ``fused=True``."""
    opt = req.get("optimizer", "adamw")
    impl = req.get("optimizer_impl", "fused")
    flags = {
        "fused": {"fused": True},
        "foreach": {"foreach": True},
        "for_loop": {"foreach": False, "fused": False},
    }[impl]
    params = list(params)
    if opt == "adamw":
        return torch.optim.AdamW(params, lr=1e-5, **flags)
    if opt == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.0, **flags)
    if opt == "sgd_momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, **flags)
    raise ValueError(f"unknown optimizer {opt}")


CHUNKS = 8  # torchtune CEWithChunkedOutputLoss(num_output_chunks=8)


class _MemEfficientSDPA(torch.autograd.Function):
    """What CUDA's memory-efficient SDPA kernel allocates, for shapes the CPU cannot run fused.

    MLA (DeepSeek-V2/V3, GLM-4 MoE Lite) attends with a value head narrower than the query/key
    head (128 vs 192). PyTorch's CPU flash kernel needs equal head dims
    (``check_head_dim_size_cpp``, aten/src/ATen/native/transformers/sdp_utils_cpp.cpp), so on the
    CPU SDPA falls back to its math path and holds fp32 ``(batch, heads, seq, seq)`` scores; on a
    GPU the memory-efficient kernel accepts a different value width
    (``check_head_dim_size_mem_efficient`` only asks q and k to agree, cuda/sdp_utils.cpp) and
    holds O(seq) memory. Fake tensors carry no values, so this function allocates exactly the
    kernel's tensors: forward the output ``(b, h, s, dv)`` and the fp32 logsumexp
    ``(b, h, ceil(s/32)·32)`` (``_efficient_attention_forward``), saving q, k, v, output and
    logsumexp; backward the three input gradients and the fp32 ``delta = rowsum(dO·O)``.
    """

    @staticmethod
    def forward(ctx, q, k, v):
        b, h, s, _ = q.shape
        out = q.new_empty(b, h, s, v.shape[-1])
        lse = torch.empty(b, h, -(-s // 32) * 32, dtype=torch.float32, device=q.device)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, _out, lse = ctx.saved_tensors
        delta = torch.empty(lse.shape, dtype=torch.float32, device=q.device)
        grads = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        del delta
        return grads


@contextlib.contextmanager
def _gpu_kernel_for_mla(enabled: bool):
    """Shim: SDPA calls whose value head differs from the query head (MLA) run as CUDA's
    memory-efficient kernel would (``_MemEfficientSDPA``); every other call is untouched."""
    if not enabled:
        yield
        return
    orig = torch.nn.functional.scaled_dot_product_attention

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, **kw):
        if value.shape[-1] == query.shape[-1] or attn_mask is not None or dropout_p:
            return orig(query, key, value, attn_mask, dropout_p, is_causal, **kw)
        return _MemEfficientSDPA.apply(query, key, value)

    torch.nn.functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = orig


@contextlib.contextmanager
def _unpacked_positions(enabled: bool):
    """Shim: the batch is not packed, as a real run finds.

    With no attention mask and no cache (training), transformers' ``create_causal_mask`` asks
    ``masking_utils.find_packed_sequence_indices(position_ids)`` whether several sequences share
    a row; that function cannot read the values of a fake tensor (``is_tracing`` is true for
    FakeTensor) and answers "packed", so the fake run builds a ``(batch, 1, seq, seq)`` boolean
    mask, loses SDPA's causal fast path and repeats K/V to every head, none of which a real run
    with ``position_ids = arange(seq)`` per row does (its check returns None).  Passing
    ``position_ids`` explicitly is not enough (the check runs on them too), so while the forward
    runs the check returns what it returns on real arange positions: None.  Changes what is
    allocated towards the real run only; cases carry ``"real_positions": true`` (issue 27 on).
    """
    if not enabled:
        yield
        return
    from transformers import masking_utils

    orig = masking_utils.find_packed_sequence_indices
    masking_utils.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        masking_utils.find_packed_sequence_indices = orig


def _loss(model, ids, req: dict, positions=None):
    """HF's own loss ("full"), or torchtune's chunked output loss ("chunked"): the LM head runs
    on ``CHUNKS`` slices of the hidden states and each slice is upcast to fp32 and reduced on its
    own (torchtune ``CEWithChunkedOutputLoss`` @ 10ff7cd, ``set_num_output_chunks``).
    ``positions``: explicit ``position_ids`` (``arange(seq)`` per row) or None (the model's own)."""
    extra = {} if positions is None else {"position_ids": positions}
    if req.get("loss", "full") == "full":
        return model(input_ids=ids, labels=ids, **extra).loss
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = base.model(input_ids=ids, **extra).last_hidden_state
    head = base.get_output_embeddings()
    # F.linear with the head's own weight: MemTracker refuses a module called several times in
    # one step; the tensors allocated are the same as head(part).
    chunks = [
        torch.nn.functional.linear(part, head.weight, head.bias)
        for part in hidden.tensor_split(CHUNKS, dim=1)
    ]
    labels = ids.tensor_split(CHUNKS, dim=1)
    total = 0.0
    for logits, target in zip(chunks, labels, strict=True):
        total = total + torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1), reduction="sum"
        )
    return total / ids.numel()


def run_inference(model, req: dict, rec: dict) -> None:
    B, S = int(req["batch_size"]), int(req["seq_len"])
    model.eval()
    ids = torch.zeros((B, S), dtype=torch.long)
    mt = MemTracker()
    mt.track_external(model, ids)
    with mt:
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        peak = _snapshot_to_plain(mt.get_tracker_snapshot("peak"))
        after = _snapshot_to_plain(mt.get_tracker_snapshot("current"))
    kv, per_layer = _cache_bytes(out)
    rec["peak_bytes"] = peak["Total"]
    rec["peak_by_category"] = peak
    rec["live_after_forward_bytes"] = after.get("Total", 0)
    rec["kv_cache_bytes_observed"] = kv
    rec["kv_cache_layout"] = _summarise_layers(per_layer)
    rec["cache_class"] = type(getattr(out, "past_key_values", None)).__name__
    rec["logits_shape"] = list(out.logits.shape)
    rec["logits_dtype"] = str(out.logits.dtype)
    del out


def run_training(model, req: dict, rec: dict, trainable, real_positions: bool = False) -> None:
    B, S = int(req["batch_size"]), int(req["seq_len"])
    mixed = bool(req.get("mixed_precision", False))
    model.train()
    ids = torch.zeros((B, S), dtype=torch.long)
    positions = torch.arange(S).unsqueeze(0).expand(B, S) if real_positions else None
    if real_positions:
        rec["position_ids"] = "explicit arange per row; packed-sequence check answered None"
    optimizer = _make_optimizer(req, trainable)
    mt = FrozenAwareMemTracker()
    mt.track_external(model, optimizer, ids)
    phases = {}
    step1 = None
    with mt:
        for step in range(2):
            if step == 1:
                mt.reset_mod_stats()
                _rebase_peak(mt)
            ctx = (
                torch.autocast(device_type="cpu", dtype=torch.bfloat16)
                if mixed
                else contextlib.nullcontext()
            )
            with ctx, _unpacked_positions(real_positions):
                if mixed and step == 1:
                    rec["autocast_cache_enabled"] = bool(torch.is_autocast_cache_enabled())
                loss = _loss(model, ids, req, positions)
            p_fw = _peak_total(mt)
            live_fw = _snapshot_to_plain(mt.get_tracker_snapshot("current")).get("Total", 0)
            loss.backward()
            p_bw = _peak_total(mt)
            optimizer.step()
            p_opt = _peak_total(mt)
            optimizer.zero_grad(set_to_none=True)
            del loss
            if step == 0:
                step1 = _snapshot_to_plain(mt.get_tracker_snapshot("peak"))
            else:
                phases = {
                    "peak_after_forward": p_fw,
                    "live_after_forward": live_fw,
                    "peak_after_backward": p_bw,
                    "peak_after_optimizer_step": p_opt,
                }
        peak = _snapshot_to_plain(mt.get_tracker_snapshot("peak"))
        end = _snapshot_to_plain(mt.get_tracker_snapshot("current"))
    if phases["peak_after_optimizer_step"] > phases["peak_after_backward"]:
        where = "optimizer_step"
    elif phases["peak_after_backward"] > phases["peak_after_forward"]:
        where = "backward"
    else:
        where = "forward"
    rec["peak_bytes"] = peak["Total"]
    rec["peak_by_category"] = peak
    rec["peak_phase"] = where
    rec["phase_peaks_step2"] = phases
    rec["step1_peak_bytes"] = step1["Total"]
    rec["step1_peak_by_category"] = step1
    rec["live_end_of_step2"] = end
    rec["optimizer_state_bytes"] = int(
        sum(
            t.numel() * t.element_size()
            for st in optimizer.state.values()
            for t in st.values()
            if isinstance(t, torch.Tensor)
        )
    )


def measure_case(case: dict) -> dict:
    req = case["request"]
    rec = {"id": case["id"], "config": case["config"], "request": req}
    t0 = time.time()
    try:
        mode = req["mode"]
        cfg, notes = build_config(case["config"])
        notes = list(notes)
        if req.get("attention", "flash") == "flash" and req["mode"] != "inference":
            # Shim: CUDA's flash / memory-efficient SDPA kernels apply attention-probability
            # dropout inside the kernel (the mask is regenerated from the RNG state, O(1) extra
            # memory); PyTorch's CPU SDPA has no fused dropout and falls back to the math path,
            # which materialises seq x seq tensors a GPU never holds. So 'flash' training cases
            # run with attention-probability dropout off; residual/embedding dropout stay on.
            for name in ("attn_pdrop", "attention_dropout"):
                if getattr(cfg, name, 0):
                    setattr(cfg, name, 0.0)
                    notes.append(f"{name} set to 0 for 'flash' (CUDA kernels fuse it; see shims)")
        if notes:
            rec["notes"] = notes
        rec["model_type"] = cfg.model_type
        attn = ATTN[req.get("attention", "flash")]
        precision = req.get("precision", "bf16")
        mixed = bool(req.get("mixed_precision", False))
        if mode in ("full_finetune", "pretrain") and mixed:
            build_dtype = torch.float32  # fp32 master weights, bf16 autocast compute
        else:
            build_dtype = DTYPES[precision]
        rec["param_dtype"] = str(build_dtype).replace("torch.", "")
        mla = attn == "sdpa" and getattr(cfg, "v_head_dim", None) not in (
            None,
            getattr(cfg, "qk_nope_head_dim", 0) + getattr(cfg, "qk_rope_head_dim", 0),
        )
        if mla:
            rec["sdpa_kernel"] = "CUDA memory-efficient kernel's tensors (MLA value head; shims)"
        with FakeTensorMode(), _gpu_kernel_for_mla(mla):
            model = build_causal_lm(cfg, build_dtype, attn_implementation=attn)
            rec["attn_implementation"] = model.config._attn_implementation
            rec["params_total"] = int(sum(p.numel() for p in model.parameters()))
            if mode == "inference":
                rec["params_trainable"] = 0
                run_inference(model, req, rec)
            elif mode in ("full_finetune", "pretrain"):
                if req.get("gradient_checkpointing"):
                    model.gradient_checkpointing_enable()
                    rec["gradient_checkpointing_use_reentrant"] = False
                trainable = [p for p in model.parameters() if p.requires_grad]
                rec["params_trainable"] = int(sum(p.numel() for p in trainable))
                run_training(model, req, rec, trainable, bool(case.get("real_positions")))
            elif mode == "lora":
                import peft

                lcfg = req["lora"]
                targets = lcfg["targets"]
                with _peft_fake_shims():
                    model = peft.get_peft_model(
                        model,
                        peft.LoraConfig(
                            r=int(lcfg["rank"]),
                            lora_alpha=2 * int(lcfg["rank"]),
                            lora_dropout=0.0,
                            target_modules=targets,
                            task_type="CAUSAL_LM",
                        ),
                    )
                if req.get("gradient_checkpointing"):
                    model.gradient_checkpointing_enable()
                    rec["gradient_checkpointing_use_reentrant"] = False
                trainable = [p for p in model.parameters() if p.requires_grad]
                rec["params_trainable"] = int(sum(p.numel() for p in trainable))
                rec["adapter_dtypes"] = sorted(
                    {str(p.dtype).replace("torch.", "") for p in trainable}
                )
                rec["frozen_dtypes"] = sorted(
                    {
                        str(p.dtype).replace("torch.", "")
                        for p in model.parameters()
                        if not p.requires_grad
                    }
                )
                rec["params_total"] = int(sum(p.numel() for p in model.parameters()))
                run_training(model, req, rec, trainable, bool(case.get("real_positions")))
            else:
                raise ValueError(f"unknown mode {mode}")
            del model
        rec["ok"] = True
    except Exception as e:
        rec["ok"] = False
        rec["error"] = f"{type(e).__name__}: {e}"
        rec["traceback"] = traceback.format_exc()[-3000:]
    finally:
        torch.set_default_dtype(torch.float32)
        gc.collect()
    rec["wall_seconds"] = round(time.time() - t0, 2)
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", default="validation/cases.json")
    ap.add_argument("--out", default="validation/measurements.json")
    ap.add_argument(
        "--only", nargs="*", default=None, help="case ids to (re)measure; merged into --out"
    )
    args = ap.parse_args(argv)

    with open(args.cases) as fh:
        cases = json.load(fh)
    if isinstance(cases, dict):
        cases = cases["cases"]
    todo = [c for c in cases if not args.only or c["id"] in args.only]
    if args.only:
        missing = set(args.only) - {c["id"] for c in todo}
        if missing:
            print("unknown case ids:", sorted(missing), file=sys.stderr)

    existing = {}
    if args.only and Path(args.out).exists():
        with open(args.out) as fh:
            existing = {c["id"]: c for c in json.load(fh).get("cases", [])}

    t_all = time.time()
    results = {}
    order = [c["id"] for c in cases]

    def write() -> dict:
        # After every case, so that a run killed part-way (out of host memory: fake tensors of
        # a large MoE with checkpointing) keeps what it measured.
        merged = {**existing, **results}
        doc = {
            "versions": versions(),
            "command": "validation/.venv/bin/python " + " ".join([rel(sys.argv[0]), *sys.argv[1:]]),
            "generated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "wall_seconds_this_run": round(time.time() - t_all, 1),
            "semantics_notes": SEMANTICS_NOTES,
            "cases": [merged[i] for i in order if i in merged],
        }
        with open(args.out, "w") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
        return doc

    for i, case in enumerate(todo, 1):
        rec = measure_case(case)
        results[case["id"]] = rec
        status = (
            f"{rec['peak_bytes'] / 2**30:9.3f} GiB"
            if rec.get("ok")
            else "ERROR " + rec["error"][:150]
        )
        print(f"[{i}/{len(todo)}] {case['id']:60s} {status}  ({rec['wall_seconds']}s)", flush=True)
        write()

    doc = write()
    out_cases = doc["cases"]
    n_bad = sum(1 for c in out_cases if not c.get("ok"))
    print(
        f"wrote {args.out}: {len(out_cases)} cases, {n_bad} failed, {doc['wall_seconds_this_run']}s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
