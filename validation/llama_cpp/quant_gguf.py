"""Write a sparse quantized GGUF with the per-tensor types llama-quantize would choose.

`llama-quantize --dry-run IN.gguf TYPE` prints, per tensor, the type it would write (it reads no
tensor data in that mode, so it runs on the sparse F16 file). This copies IN's metadata and tensor
infos with those types and the quantized file type into a new sparse GGUF.

usage: python quant_gguf.py IN.gguf OUT.gguf Q4_K_M
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

LLAMA_CPP_SRC = Path(
    os.environ.get("LLAMA_CPP_SRC", "/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp")
)
BUILD = Path(os.environ.get("LLAMA_CPP_BUILD", "/tmp/lcp/build"))
sys.path.append(str(LLAMA_CPP_SRC / "gguf-py"))

import gguf  # noqa: E402
import numpy as np  # noqa: E402

_LINE = re.compile(r"\]\s+(\S+)\s+- \[.*?\], type = +(\w+), size = .*?(?:\((\w+)\))?$")


def chosen_types(src: Path, qtype: str) -> dict[str, str]:
    p = subprocess.run(
        [str(BUILD / "bin" / "llama-quantize"), "--dry-run", str(src), qtype],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    out: dict[str, str] = {}
    for ln in (p.stdout + p.stderr).splitlines():
        if m := _LINE.search(ln.strip()):
            out[m[1]] = m[3] or m[2]
    return out


def mxfp4_expert_types(src: Path) -> dict[str, str]:
    """gpt-oss: the converter writes the checkpoint's MXFP4 experts as MXFP4 (conversion/gpt_oss.py)."""
    r = gguf.GGUFReader(src)
    return {t.name: "MXFP4" for t in r.tensors if "_exps.weight" in t.name}


def main() -> None:
    src, dst, qtype = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    if qtype == "MXFP4_EXPERTS":
        types, ftype = mxfp4_expert_types(src), gguf.LlamaFileType.MOSTLY_MXFP4_MOE
    else:
        types, ftype = chosen_types(src, qtype), gguf.LlamaFileType["MOSTLY_" + qtype]
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name in ("general.architecture", "general.file_type"):
            continue
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, f.contents(), vtype, sub_type=sub)
    w.add_file_type(int(ftype))
    for t in r.tensors:
        qt = gguf.GGMLQuantizationType[types.get(t.name, t.tensor_type.name).upper()]
        shape = [
            int(x) for x in reversed(t.shape.tolist())
        ]  # reader gives ggml order; writer wants numpy order
        block, type_size = gguf.GGML_QUANT_SIZES[qt]
        nbytes = int(np.prod(shape)) // block * type_size
        if qt not in (
            gguf.GGMLQuantizationType.F32,
            gguf.GGMLQuantizationType.F16,
            gguf.GGMLQuantizationType.BF16,
        ):
            shape = [
                *shape[:-1],
                shape[-1] // block * type_size,
            ]  # the writer takes a quantized tensor's byte shape
            w.add_tensor_info(t.name, shape, np.dtype(np.uint8), nbytes, raw_dtype=qt)
        else:
            w.add_tensor_info(
                t.name,
                shape,
                np.dtype({"F32": np.float32, "F16": np.float16}.get(qt.name, np.uint16)),
                nbytes,
                raw_dtype=qt,
            )
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    fout = w.fout[0]
    w.write_padding(fout, fout.tell())
    end = fout.tell()
    for ti in w.tensors[0].values():
        end += ti.nbytes + (-ti.nbytes % w.data_alignment)
    fout.truncate(end)
    w.close()
    missing = [t.name for t in r.tensors if t.name not in types]
    print(f"{dst}: {len(types)} tensors retyped, {len(missing)} kept as they were")


if __name__ == "__main__":
    main()
