"""The llama.cpp estimate against llama.cpp's own allocation: validation/published/
llama_cpp_alloc.json, 484 cases of 28 architectures measured by llama.cpp @ 0c1e570 itself
(validation/llama_cpp/: converter-written sparse GGUFs loaded with ``no_alloc``), the figures
independent of this code. KV + RS (llama.cpp's "context" bytes) are exact; the log prints the
KV/RS split in MiB with two decimals, so the split is compared within 1%.
"""

import statistics

import pytest

from validation.llama_cpp_alloc import error, rows

ROWS = rows()


def test_the_measurements_cover_the_issue():
    architectures = {row["id"].split("/")[0] for row in ROWS}
    assert len(architectures) >= 20
    kinds = {row["architecture"] for row in ROWS}
    # MLA, DSA, ISWA, shared KV, hybrid and SSM families all measured.
    assert {"kimi_k2", "deepseek_v32", "glm_moe_dsa", "gemma2", "gemma3n_text"} <= kinds
    assert {"gemma4", "nemotron_h", "qwen3_5", "jamba", "mamba", "mamba2"} <= kinds
    assert len(ROWS) >= 400


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_kv_and_recurrent_state_are_what_llama_cpp_allocates(row):
    ours, theirs = row["context"]
    assert ours == theirs
    for part in ("kv", "rs"):
        assert abs(error(row[part])) <= 0.01


def test_model_buffers_within_1_percent_median_and_3_percent_worst():
    errors = [abs(error(row["model"])) for row in ROWS]
    assert statistics.median(errors) <= 0.01
    assert max(errors) <= 0.03
