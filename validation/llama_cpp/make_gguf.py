"""Write a sparse GGUF for a published config.json, the way llama.cpp's own converter would.

The HF tensor names and shapes come from transformers' model built on the `meta` device; they
are written into a sparse safetensors file (header only, data a hole), and llama.cpp's
convert_hf_to_gguf.py model class converts that directory lazily. The GGUF writer is patched to
write header, metadata and tensor infos but seek over the tensor data, so the GGUF is sparse too.
The vocabulary is replaced by `tokenizer.ggml.model = "none"` plus `<arch>.vocab_size`, which
llama-vocab.cpp accepts.

usage: python make_gguf.py CONFIG.json OUT.gguf [--outtype f16|bf16]
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
from pathlib import Path

LLAMA_CPP_SRC = Path(
    os.environ.get("LLAMA_CPP_SRC", "/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp")
)
sys.path.append(str(LLAMA_CPP_SRC / "gguf-py"))
sys.path.append(str(LLAMA_CPP_SRC))  # after site-packages: its models/ folder would shadow imports

import torch  # noqa: E402

_ST_DTYPE = {torch.bfloat16: ("BF16", 2), torch.float16: ("F16", 2), torch.float32: ("F32", 4)}


# model_types the published config names but transformers has no class for: the class its
# `architectures` entry names in transformers
_HF_MODEL_TYPE = {"kimi_k2": "deepseek_v3"}


def hf_config(config: dict):
    import transformers

    mt = config.get("model_type")
    return transformers.AutoConfig.for_model(**{**config, "model_type": _HF_MODEL_TYPE.get(mt, mt)})


def hf_tensor_shapes(config: dict) -> tuple[str, dict[str, tuple[list[int], torch.dtype]]]:
    """Names, shapes and dtypes of the checkpoint's tensors, from transformers on the meta device."""
    import transformers

    cfg = hf_config(config)
    with torch.device("meta"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        except ValueError:
            model = transformers.AutoModelForImageTextToText.from_config(cfg, dtype=torch.bfloat16)
    out: dict[str, tuple[list[int], torch.dtype]] = {}
    seen: set[int] = set()
    for name, t in model.state_dict(keep_vars=True).items():
        # safetensors stores a tied tensor once (the embedding), as save_pretrained does
        key = id(t)
        if key in seen:
            continue
        seen.add(key)
        out[name] = (list(t.shape), t.dtype)
    return type(model).__name__, out


def unfuse_experts(
    tensors: dict[str, tuple[list[int], torch.dtype]],
) -> dict[str, tuple[list[int], torch.dtype]]:
    """transformers 5 fuses the experts into 3D parameters; published checkpoints keep one tensor
    per expert (`experts.{e}.gate_proj.weight` ...), which is what the converter expects."""
    out: dict[str, tuple[list[int], torch.dtype]] = {}
    for name, (shape, dtype) in tensors.items():
        base, _, leaf = name.rpartition(".")
        if (
            base.endswith("experts")
            and leaf in ("gate_up_proj", "up_proj", "down_proj")
            and len(shape) == 3
        ):
            n_exp = shape[0]
            for e in range(n_exp):
                if leaf == "gate_up_proj":
                    half = [shape[1] // 2, shape[2]]
                    out[f"{base}.{e}.gate_proj.weight"] = (half, dtype)
                    out[f"{base}.{e}.up_proj.weight"] = (half, dtype)
                else:
                    out[f"{base}.{e}.{leaf}.weight"] = (shape[1:], dtype)
        else:
            out[name] = (shape, dtype)
    return out


def gemma3n_shared_kv_tensors(
    tensors: dict[str, tuple[list[int], torch.dtype]],
) -> dict[str, tuple[list[int], torch.dtype]]:
    """transformers 5 builds no k/v projections for Gemma 3n's KV-shared layers, but the published
    checkpoint has them and llama.cpp loads them; add them with layer 0's shapes."""
    import re

    out = dict(tensors)
    first = {
        n.split("layers.0.", 1)[1]: v
        for n, v in tensors.items()
        if re.search(r"layers\.0\.self_attn\.(k_proj|v_proj|k_norm|v_norm)", n)
    }
    prefix = next(n.split("layers.0.", 1)[0] for n in tensors if "layers.0.self_attn.q_proj" in n)
    n_layer = 1 + max(int(m[1]) for n in tensors if (m := re.search(r"layers\.(\d+)\.", n)))
    for il in range(n_layer):
        for leaf, v in first.items():
            out.setdefault(f"{prefix}layers.{il}.{leaf}", v)
    return out


def mixtral_checkpoint_names(
    tensors: dict[str, tuple[list[int], torch.dtype]],
) -> dict[str, tuple[list[int], torch.dtype]]:
    """Mixtral's published checkpoint names its MoE block `block_sparse_moe` with experts w1/w3/w2."""
    ren = {
        ".mlp.gate.": ".block_sparse_moe.gate.",
        "gate_proj.": "w1.",
        "up_proj.": "w3.",
        "down_proj.": "w2.",
    }
    out = {}
    for name, v in tensors.items():
        if ".mlp." in name:
            for a, b in ren.items():
                name = name.replace(a, b)
            name = name.replace(".mlp.experts.", ".block_sparse_moe.experts.")
        out[name] = v
    return out


def write_sparse_safetensors(path: Path, tensors: dict[str, tuple[list[int], torch.dtype]]) -> None:
    header: dict[str, object] = {}
    offset = 0
    for name, (shape, dtype) in tensors.items():
        st_dtype, size = _ST_DTYPE[dtype]
        n = size
        for d in shape:
            n *= d
        header[name] = {"dtype": st_dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        f.truncate(8 + len(blob) + offset)


def patch_writer() -> None:
    import gguf

    def write_tensors_to_file(self, *, progress: bool = False) -> None:
        self.write_ti_data_to_file()
        for fout in self.fout:
            self.write_padding(fout, fout.tell())
        for fout, tensors in zip(self.fout, self.tensors, strict=False):
            end = fout.tell()
            for ti in tensors.values():
                end += ti.nbytes
                end += -ti.nbytes % self.data_alignment
                ti.tensor = None
            fout.truncate(end)
        self.state = gguf.gguf_writer.WriterState.WEIGHTS

    gguf.GGUFWriter.write_tensors_to_file = write_tensors_to_file


VOCAB_SIZE = 0


def fake_vocab(self) -> None:
    vocab_size = VOCAB_SIZE  # rows of the embedding transformers builds
    self.gguf_writer.add_tokenizer_model("none")
    self.gguf_writer.add_vocab_size(vocab_size)


def convert(config_path: Path, out: Path, outtype: str, no_mtp: bool = False) -> None:
    import gguf
    from conversion import ModelType, get_model_architecture, get_model_class
    from conversion.base import ModelBase

    config = json.loads(config_path.read_text())
    patch_writer()
    with tempfile.TemporaryDirectory() as d:
        dir_model = Path(d)
        hf_class, shapes = hf_tensor_shapes(config)
        # a config rebuilt with only the fields some reader needs lacks keys save_pretrained writes
        # (e.g. rms_norm_eps); fill the missing top-level ones from transformers' config class
        for k, v in hf_config(config).to_dict().items():
            config.setdefault(k, v)
        if os.environ.get("UNFUSE_EXPERTS", "1") == "1" and config.get("model_type") not in (
            "gpt_oss",
            "gemma4",
        ):
            shapes = unfuse_experts(shapes)
        if config.get("model_type") in ("gemma3n", "gemma3n_text"):
            shapes = gemma3n_shared_kv_tensors(shapes)
        if config.get("model_type") == "mixtral":
            shapes = mixtral_checkpoint_names(shapes)
        if (
            config.get("model_type") == "lfm2_moe"
        ):  # its checkpoint names the experts' matrices w1/w3/w2
            shapes = {
                n.replace(".gate_proj.", ".w1.")
                .replace(".up_proj.", ".w3.")
                .replace(".down_proj.", ".w2.")
                if ".experts." in n
                else n: v
                for n, v in shapes.items()
            }
        # a config saved without `architectures` names its class through model_type alone
        if not config.get("architectures"):
            config["architectures"] = [hf_class]
        (dir_model / "config.json").write_text(json.dumps(config))
        write_sparse_safetensors(dir_model / "model.safetensors", shapes)
        # Gemma's converter trims token_embd to the tokenizer's length; with no tokenizer we keep
        # vocab_size rows (a stand-in tokenizer.json of that length)
        global VOCAB_SIZE
        VOCAB_SIZE = next(
            shape[0]
            for n, (shape, _) in shapes.items()
            if n.endswith(("embed_tokens.weight", "embeddings.weight"))
        )
        vocab = VOCAB_SIZE
        (dir_model / "tokenizer.json").write_text(
            json.dumps({"model": {"vocab": {f"t{i}": i for i in range(vocab)}}, "added_tokens": []})
        )
        hparams = ModelBase.load_hparams(dir_model, False)
        arch = get_model_architecture(hparams, ModelType.TEXT)
        cls = get_model_class(arch, mmproj=False)
        cls.set_vocab = fake_vocab
        if no_mtp:
            cls.no_mtp = (
                True  # convert_hf_to_gguf.py --no-mtp: transformers builds no MTP weights to export
            )
        ftype = {"f16": gguf.LlamaFileType.MOSTLY_F16, "bf16": gguf.LlamaFileType.MOSTLY_BF16}[
            outtype
        ]
        # The data is a hole, so every tensor reads as zeros: a converter that drops the output
        # head when it equals the embeddings (conversion/mamba.py compares them with
        # torch.equal) would drop it for any untied checkpoint. Only a tied config shares them.
        equal = torch.equal
        if not config.get("tie_word_embeddings", True):
            torch.equal = lambda a, b: False
        try:
            with torch.inference_mode():
                model = cls(dir_model, ftype, out)
                model.write()
        finally:
            torch.equal = equal


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("config", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--outtype", default="f16")
    ap.add_argument("--no-mtp", action="store_true")
    a = ap.parse_args()
    convert(a.config, a.out, a.outtype, a.no_mtp)


if __name__ == "__main__":
    main()
