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
    if lora is not None:
        r["lora"] = {"rank": lora[0], "targets": lora[1]}
    return r


def case_id(cfg, r):
    prec = "mixed-bf16" if r["mixed_precision"] else r["precision"]
    parts = [cfg, r["mode"], prec]
    if r["mode"] != "inference":
        parts.append(r["optimizer"])
    if r["mode"] == "lora":
        t = r["lora"]["targets"]
        parts.append(f"r{r['lora']['rank']}-" + (t if isinstance(t, str) else "+".join(t)))
    parts.append(f"b{r['batch_size']}-s{r['seq_len']}")
    parts.append(r["attention"] + ("+gc" if r["gradient_checkpointing"] else ""))
    return "/".join(parts)


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
    ("gemma-2-9b", req("inference", "bf16", b=1, s=8192)),
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
    ("gemma-2-9b", req("full_finetune", "bf16", b=1, s=2048, gc=True)),
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

    cases = SSM_CASES if "--ssm" in sys.argv[1:] else CASES
    out = [{"id": case_id(c, r), "config": c, "request": r} for c, r in cases]
    ids = [c["id"] for c in out]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
