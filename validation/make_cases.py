"""Generate validation/cases.json (the measured case table).

    validation/.venv/bin/python validation/make_cases.py > validation/cases.json

Each case's "request" is exactly the estimator's request JSON minus "model".
"""

import json


def req(
    mode, precision="bf16", mixed=False, opt="adamw", b=1, s=2048, gc=False, attn="flash", lora=None
):
    r = {
        "mode": mode,
        "precision": precision,
        "mixed_precision": mixed,
        "optimizer": opt,
        "batch_size": b,
        "seq_len": s,
        "gradient_checkpointing": gc,
        "attention": attn,
    }
    if mode != "inference":
        # The first table was measured with foreach optimizers (PyTorch's CUDA default).
        r["optimizer_impl"] = "foreach"
    if lora is not None:
        r["lora"] = {"rank": lora[0], "targets": lora[1]}
    return r


def case_id(cfg, r):
    prec = "mixed-bf16" if r["mixed_precision"] else r["precision"]
    parts = [cfg, r["mode"], prec]
    if r["mode"] != "inference":
        impl = r.get("optimizer_impl", "foreach")
        parts.append(r["optimizer"] + ("" if impl == "foreach" else f"-{impl}"))
    if r["mode"] == "lora":
        t = r["lora"]["targets"]
        parts.append(f"r{r['lora']['rank']}-" + (t if isinstance(t, str) else "+".join(t)))
    parts.append(f"b{r['batch_size']}-s{r['seq_len']}")
    suffix = ("+gc" if r["gradient_checkpointing"] else "") + (
        "+chunked" if r.get("loss", "full") == "chunked" else ""
    )
    parts.append(r["attention"] + suffix)
    return "/".join(parts)


# Issue 14: the same cases with fused AdamW (HF Trainer's default), the for-loop step and
# torchtune's chunked loss, appended after the table above (ids of the source cases).
FOR_LOOP_SOURCES = (
    "gpt2/full_finetune/fp32/adamw/b8-s1024/flash",
    "llama-3.1-8b/full_finetune/bf16/adamw/b1-s2048/flash+gc",
    "qwen2.5-7b/full_finetune/mixed-bf16/adamw/b2-s1024/flash+gc",
)
CHUNKED_SOURCES = (
    "qwen2.5-0.5b/full_finetune/bf16/adamw/b4-s1024/flash",
    "llama-3.2-1b/full_finetune/mixed-bf16/adamw/b4-s2048/flash",
    "llama-3.1-8b/full_finetune/bf16/adamw/b1-s2048/flash+gc",
    "llama-3.1-8b/lora/bf16/adamw/r8-q_proj+v_proj/b1-s2048/flash",
)
FUSED_LORA_SOURCES = ("llama-3.2-1b/lora/bf16/adamw/r16-all-linear/b4-s1024/flash",)


def stack_variants(cases):
    by_id = {case_id(c, r): (c, r) for c, r in cases}
    out = []
    for cfg, r in by_id.values():
        if r["mode"] in ("full_finetune", "pretrain") and r["optimizer"] == "adamw":
            out.append((cfg, {**r, "optimizer_impl": "fused"}))
    out += [(by_id[i][0], {**by_id[i][1], "optimizer_impl": "for_loop"}) for i in FOR_LOOP_SOURCES]
    out += [
        (by_id[i][0], {**by_id[i][1], "optimizer_impl": "fused", "loss": "chunked"})
        for i in CHUNKED_SOURCES
    ]
    out += [(by_id[i][0], {**by_id[i][1], "optimizer_impl": "fused"}) for i in FUSED_LORA_SOURCES]
    return out


QV = ["q_proj", "v_proj"]
AL = "all-linear"

CASES = [
    # ---------------- inference ----------------
    ("gpt2", req("inference", "fp32", b=1, s=1024, attn="eager")),
    ("gpt2", req("inference", "bf16", b=16, s=1024)),
    ("qwen2.5-0.5b", req("inference", "bf16", b=4, s=2048)),
    ("qwen2.5-0.5b", req("inference", "fp32", b=1, s=8192)),
    ("llama-3.2-1b", req("inference", "bf16", b=16, s=2048)),
    ("llama-3.2-1b", req("inference", "bf16", b=1, s=2048, attn="eager")),
    ("llama-3.1-8b", req("inference", "bf16", b=1, s=1024)),
    ("llama-3.1-8b", req("inference", "bf16", b=1, s=2048)),
    ("llama-3.1-8b", req("inference", "bf16", b=1, s=4096)),
    ("llama-3.1-8b", req("inference", "bf16", b=4, s=8192)),
    ("llama-3.1-8b", req("inference", "bf16", b=1, s=4096, attn="eager")),
    ("llama-3.1-8b", req("inference", "fp32", b=1, s=2048)),
    ("llama-2-7b", req("inference", "fp16", b=4, s=2048)),
    ("llama-2-7b", req("inference", "bf16", b=1, s=2048, attn="eager")),
    ("mistral-7b-v0.1", req("inference", "bf16", b=1, s=8192)),
    ("mistral-7b-v0.1", req("inference", "bf16", b=1, s=2048)),
    ("qwen2.5-7b", req("inference", "bf16", b=16, s=512)),
    ("qwen3-0.6b", req("inference", "bf16", b=4, s=8192)),
    ("gemma-2-9b", req("inference", "bf16", b=1, s=8192, attn="eager")),
    ("gemma-2-9b", req("inference", "bf16", b=1, s=2048, attn="eager")),
    ("phi-3-mini-4k-instruct", req("inference", "bf16", b=4, s=2048)),
    ("falcon-7b", req("inference", "bf16", b=1, s=2048)),
    ("qwen3-30b-a3b", req("inference", "bf16", b=1, s=2048)),
    ("mixtral-8x7b-v0.1", req("inference", "bf16", b=1, s=2048)),
    # ---------------- full fine-tuning / pretraining ----------------
    ("gpt2", req("full_finetune", "fp32", b=8, s=1024)),
    ("gpt2", req("pretrain", "bf16", mixed=True, b=16, s=1024)),
    ("qwen2.5-0.5b", req("full_finetune", "bf16", b=4, s=1024)),
    ("qwen2.5-0.5b", req("full_finetune", "fp32", opt="sgd", b=4, s=1024, attn="eager")),
    ("llama-3.2-1b", req("full_finetune", "bf16", mixed=True, b=4, s=2048, gc=True)),
    ("llama-3.2-1b", req("full_finetune", "bf16", mixed=True, b=4, s=2048)),
    ("llama-3.2-1b", req("pretrain", "bf16", opt="sgd_momentum", b=8, s=1024)),
    ("qwen3-0.6b", req("full_finetune", "bf16", b=8, s=1024, attn="eager")),
    ("llama-3.1-8b", req("full_finetune", "bf16", b=1, s=2048, gc=True)),
    ("llama-3.1-8b", req("full_finetune", "bf16", b=1, s=2048)),
    ("llama-2-7b", req("full_finetune", "fp32", b=1, s=512, attn="eager")),
    ("qwen2.5-7b", req("full_finetune", "bf16", mixed=True, b=2, s=1024, gc=True)),
    ("mistral-7b-v0.1", req("full_finetune", "bf16", opt="sgd", b=1, s=4096, gc=True)),
    ("gemma-2-9b", req("full_finetune", "bf16", b=1, s=2048, gc=True, attn="eager")),
    (
        "phi-3-mini-4k-instruct",
        req("full_finetune", "bf16", opt="sgd_momentum", b=2, s=2048, gc=True),
    ),
    # ---------------- LoRA ----------------
    ("llama-3.1-8b", req("lora", "bf16", b=1, s=2048, lora=(8, QV))),
    ("llama-3.1-8b", req("lora", "bf16", b=1, s=2048, gc=True, lora=(64, AL))),
    ("qwen2.5-7b", req("lora", "bf16", b=2, s=1024, lora=(64, QV))),
    ("qwen2.5-7b", req("lora", "bf16", b=1, s=2048, gc=True, lora=(8, AL))),
    ("llama-3.2-1b", req("lora", "bf16", b=4, s=1024, lora=(16, AL))),
    ("qwen2.5-0.5b", req("lora", "bf16", b=8, s=512, attn="eager", lora=(8, QV))),
]


# Added after the first run (two Qwen3-30B-A3B MoE training cases, a longer Mixtral prefill).
LATER_CASES = [
    ("qwen3-30b-a3b", req("lora", "bf16", b=1, s=2048, lora=(16, QV))),
    ("qwen3-30b-a3b", req("full_finetune", "bf16", opt="sgd", b=2, s=1024)),
    ("mixtral-8x7b-v0.1", req("inference", "bf16", b=4, s=4096)),
]


def fused(r):
    return {**r, "optimizer_impl": "fused"} if r["mode"] != "inference" else r


# Issue 27: the architectures the first tables missed (MLA, newer MoE, sliding windows longer
# than the prompt, Phi-4's fused projections, OLMo 3, gpt-oss, Llama 4 Scout's text model).
# Training cases run with fused AdamW (HF Trainer's default) and explicit position ids
# ("real_positions": see measure.py, the packed-sequence check under fake tensors).
ISSUE27_CASES = [
    ("preset-deepseek-v2-lite", req("inference", "bf16", b=1, s=8192)),
    ("preset-deepseek-v2-lite", req("inference", "bf16", b=2, s=16384)),
    ("preset-glm-4.7-flash", req("inference", "bf16", b=1, s=8192)),
    ("preset-glm-4.7-flash", req("inference", "bf16", b=4, s=4096)),
    ("llama-4-scout-text", req("inference", "bf16", b=1, s=8192)),
    ("llama-4-scout-text", req("inference", "bf16", b=2, s=2048)),
    ("olmo-3-1125-32b", req("inference", "bf16", b=1, s=16384)),
    ("olmo-3-1125-32b", req("inference", "bf16", b=2, s=2048)),
    ("preset-phi-4", req("inference", "bf16", b=1, s=16384)),
    ("preset-phi-4", req("inference", "bf16", b=4, s=2048)),
    ("preset-gpt-oss-20b", req("inference", "bf16", b=1, s=8192, attn="eager")),
    ("preset-gpt-oss-20b", req("inference", "bf16", b=1, s=8192)),
    ("preset-gpt-oss-20b", req("inference", "bf16", b=2, s=4096, attn="eager")),
    ("mistral-7b-v0.1", req("inference", "bf16", b=4, s=16384)),
    ("preset-gemma-3-1b", req("inference", "bf16", b=2, s=16384)),
    ("preset-command-r7b", req("inference", "bf16", b=1, s=16384)),
    ("preset-gemma-3-1b", fused(req("full_finetune", "bf16", b=4, s=2048))),
    ("preset-phi-4", fused(req("lora", "bf16", b=2, s=2048, lora=(16, ["qkv_proj"])))),
    (
        "preset-phi-4",
        fused(req("lora", "bf16", b=1, s=4096, lora=(8, ["qkv_proj", "gate_up_proj"]))),
    ),
    ("preset-command-r7b", fused(req("lora", "bf16", b=1, s=8192, lora=(16, QV)))),
    ("mistral-7b-v0.1", fused(req("lora", "bf16", b=2, s=8192, lora=(16, QV)))),
    ("olmo-3-1125-32b", fused(req("lora", "bf16", b=2, s=2048, lora=(16, QV)))),
    ("preset-phi-4", fused(req("full_finetune", "bf16", opt="sgd", b=1, s=2048))),
    ("preset-gemma-3-1b", fused(req("lora", "bf16", b=4, s=4096, lora=(16, AL)))),
    ("olmo-3-1125-32b", fused(req("full_finetune", "bf16", opt="sgd", b=1, s=2048))),
    ("llama-4-scout-text", fused(req("lora", "bf16", b=1, s=2048, lora=(16, QV)))),
    (
        "preset-deepseek-v2-lite",
        fused(req("lora", "bf16", b=2, s=2048, lora=(16, ["q_proj", "kv_b_proj"]))),
    ),
    ("preset-gpt-oss-20b", fused(req("lora", "bf16", b=1, s=4096, attn="eager", lora=(16, QV)))),
    (
        "preset-glm-4.7-flash",
        fused(req("lora", "bf16", b=1, s=4096, lora=(16, ["q_b_proj", "kv_b_proj"]))),
    ),
]


# State-space / hybrid cases (issue 12), measured into measurements_ssm.json with
#   validation/.venv/bin/python validation/make_cases.py --ssm > validation/cases_ssm.json
#   validation/.venv/bin/python validation/measure.py --cases validation/cases_ssm.json \
#       --out validation/measurements_ssm.json
# They check the cache (fixed state per sequence, KV only on attention layers); their
# activations run transformers' torch fallback scans, which the estimator does not model.
SSM_CASES = [
    ("defaults-mamba", req("inference", "bf16", b=4, s=2048)),
    ("defaults-lfm2", req("inference", "bf16", b=1, s=2048)),
    ("defaults-qwen3_next", req("inference", "bf16", b=1, s=2048)),
]


def main():
    import sys

    if "--ssm" in sys.argv[1:]:
        out = [{"id": case_id(c, r), "config": c, "request": r} for c, r in SSM_CASES]
    else:
        cases = CASES + LATER_CASES + stack_variants(CASES)
        out = [{"id": case_id(c, r), "config": c, "request": r} for c, r in cases]
        out += [
            {"id": case_id(c, r), "config": c, "request": r, "real_positions": True}
            for c, r in ISSUE27_CASES
        ]
    ids = [c["id"] for c in out]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
