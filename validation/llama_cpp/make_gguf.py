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

LLAMA_CPP_SRC = Path(os.environ.get("LLAMA_CPP_SRC", "/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp"))
sys.path.append(str(LLAMA_CPP_SRC / "gguf-py"))
sys.path.append(str(LLAMA_CPP_SRC))  # after site-packages: its models/ folder would shadow imports

import torch  # noqa: E402

_ST_DTYPE = {torch.bfloat16: ("BF16", 2), torch.float16: ("F16", 2), torch.float32: ("F32", 4)}


def hf_tensor_shapes(config: dict) -> tuple[str, dict[str, tuple[list[int], torch.dtype]]]:
    """Names, shapes and dtypes of the checkpoint's tensors, from transformers on the meta device."""
    import transformers

    cfg = transformers.AutoConfig.for_model(**config)
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
        for fout, tensors in zip(self.fout, self.tensors):
            end = fout.tell()
            for ti in tensors.values():
                end += ti.nbytes
                end += -ti.nbytes % self.data_alignment
                ti.tensor = None
            fout.truncate(end)
        self.state = gguf.gguf_writer.WriterState.WEIGHTS

    gguf.GGUFWriter.write_tensors_to_file = write_tensors_to_file


def fake_vocab(self) -> None:
    vocab_size = self.hparams.get("vocab_size") or self.hparams.get("text_config", {}).get("vocab_size")
    self.gguf_writer.add_tokenizer_model("none")
    self.gguf_writer.add_vocab_size(vocab_size)


def convert(config_path: Path, out: Path, outtype: str) -> None:
    import gguf
    from conversion import ModelType, get_model_architecture, get_model_class
    from conversion.base import ModelBase

    config = json.loads(config_path.read_text())
    patch_writer()
    with tempfile.TemporaryDirectory() as d:
        dir_model = Path(d)
        hf_class, shapes = hf_tensor_shapes(config)
        # a config saved without `architectures` names its class through model_type alone
        config.setdefault("architectures", [hf_class])
        (dir_model / "config.json").write_text(json.dumps(config))
        write_sparse_safetensors(dir_model / "model.safetensors", shapes)
        hparams = ModelBase.load_hparams(dir_model, False)
        arch = get_model_architecture(hparams, ModelType.TEXT)
        cls = get_model_class(arch, mmproj=False)
        cls.set_vocab = fake_vocab
        ftype = {"f16": gguf.LlamaFileType.MOSTLY_F16, "bf16": gguf.LlamaFileType.MOSTLY_BF16}[outtype]
        with torch.inference_mode():
            model = cls(dir_model, ftype, out)
            model.write()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("config", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--outtype", default="f16")
    a = ap.parse_args()
    convert(a.config, a.out, a.outtype)


if __name__ == "__main__":
    main()
