"""Exact parameter counts of Hugging Face causal-LM architectures, built on the meta device.

Usage:
    validation/.venv/bin/python validation/count_params.py \
        [--out tests/estimator/data/transformers_param_counts.json] [extra_config.json ...]

For every config in validation/configs/*.json (plus any config.json files given on the command
line; the model name is the file stem) we build ``AutoModelForCausalLM.from_config(config)`` on
the ``meta`` device and count ``sum(p.numel() for p in model.parameters())``.
``nn.Module.parameters()`` yields every Parameter object once, so tied weights (lm_head tied to
embed_tokens) are counted once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CONFIG_DIR, build_causal_lm, build_config, rel, versions

DEFAULT_OUT = (
    Path(__file__).resolve().parent.parent / "tests/estimator/data/transformers_param_counts.json"
)


def count(name: str) -> dict:
    cfg, notes = build_config(name)
    model = build_causal_lm(cfg, torch.float32, device="meta")
    total = sum(p.numel() for p in model.parameters())
    emb = model.get_input_embeddings().weight
    out_emb = model.get_output_embeddings()
    tied = bool(out_emb is not None and out_emb.weight is emb)
    rec = {
        "model_type": cfg.model_type,
        "params_total": int(total),
        "params_embedding": int(emb.numel()),
        "tied": tied,
    }
    if out_emb is not None and not tied:
        rec["params_lm_head"] = int(out_emb.weight.numel())
    if notes:
        rec["notes"] = notes
    nextn = getattr(cfg, "num_nextn_predict_layers", None)
    if nextn:
        rec.setdefault("notes", []).append(
            f"config has num_nextn_predict_layers={nextn}; transformers does not build the MTP "
            "layer(s), they are not counted"
        )
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("configs", nargs="*", help="extra config.json files (name = file stem)")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--no-defaults", action="store_true", help="skip validation/configs/*.json")
    args = ap.parse_args(argv)

    names: list[tuple[str, str]] = []
    if not args.no_defaults:
        names += [(p.stem, p.stem) for p in sorted(CONFIG_DIR.glob("*.json"))]
    names += [(Path(c).stem, c) for c in args.configs]

    v = versions()
    result = {
        "transformers_version": v["transformers"],
        "torch_version": v["torch"],
        "command": "validation/.venv/bin/python " + " ".join([rel(sys.argv[0]), *sys.argv[1:]]),
        "method": (
            "AutoModelForCausalLM.from_config(config) on the meta device; params_total = "
            "sum(p.numel() for p in model.parameters()) (parameters() deduplicates tied weights); "
            "params_embedding = input embedding numel; quantization_config dropped before building"
        ),
        "models": {},
        "errors": {},
    }
    for name, src in names:
        t = time.time()
        try:
            result["models"][name] = count(src)
            print(
                f"{name:28s} {result['models'][name]['params_total']:>16,d}  ({time.time() - t:.1f}s)"
            )
        except Exception as e:  # keep going
            result["errors"][name] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
    if not result["errors"]:
        del result["errors"]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1, sort_keys=False)
        fh.write("\n")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
