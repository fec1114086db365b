"""Property-based: the page, its HTMX partial and the API under generated valid and invalid input.

For every input: no 5xx. Invalid input: a message naming the field. Valid input: components sum
to the total, and memory moves the way physics says (more batch, context or layers never needs
less; more GPUs under ZeRO-3 never needs more per GPU).
"""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calculator.estimator import EstimateRequest, estimate

pytestmark = pytest.mark.django_db
EXAMPLES = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

MODELS = [
    "Llama 3.1 8B",
    "qwen2-7B",
    "Mistral 7B v0.1",
    "gpt2",
    "Mixtral 8x7B",
    "Gemma 2 9B",
    "Phi-3 mini 4k",
]
MODES = ["inference", "full_finetune", "lora", "qlora", "pretrain"]
PRECISIONS = ["bf16", "fp16", "fp32", "fp8", "int8", "int4", "int2"]

valid_query = st.fixed_dictionaries(
    {
        "model": st.sampled_from(MODELS),
        "mode": st.sampled_from(MODES),
        "precision": st.sampled_from(["bf16", "fp16", "fp32"]),
        "batch": st.integers(1, 64).map(str),
        "seq": st.integers(1, 32768).map(str),
        "attn": st.sampled_from(["flash", "eager"]),
        "optimizer": st.sampled_from(
            ["adamw", "adamw_8bit", "sgd", "sgd_momentum", "adafactor", "lion"]
        ),
        "lora_rank": st.integers(1, 256).map(str),
        "gpus": st.sampled_from(["1", "2", "4", "8"]),
        "zero": st.sampled_from(["0", "1", "2", "3"]),
    },
    optional={
        "ckpt": st.just("on"),
        "mixed": st.just("on"),
        "kv": st.sampled_from(["fp8", "int8", "int4"]),
    },
)
junk = st.one_of(
    st.text(max_size=40),
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["", " ", "1e999", "-0", "0x10", "１２", "NaN", "%00", "<b>", "🦙"]),
)
NUMERIC_FIELDS = ["batch", "seq", "lora_rank", "gpus", "tp", "params", "layers", "hidden"]
invalid_query = st.tuples(
    st.sampled_from([*NUMERIC_FIELDS, "mode", "precision", "zero", "attn"]), junk
)


def _page_total(client, query, htmx=False):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = client.get("/", query, **headers)
    assert response.status_code < 500
    return response


@EXAMPLES
@given(query=valid_query)
def test_valid_inputs_render_and_add_up(client, query):
    for htmx in (False, True):
        response = _page_total(client, query, htmx)
        assert response.status_code == 200
    exported = client.get("/", {**query, "format": "json"})
    if exported["Content-Type"].startswith("application/json"):
        body = exported.json()
        assert sum(body["breakdown"].values()) == body["total_bytes"]
        api = client.get("/api/v1/estimate", query)
        assert api.status_code == 200
        assert api.json()["total_bytes"] == body["total_bytes"]


@EXAMPLES
@given(field_and_value=invalid_query, base=valid_query)
def test_invalid_inputs_never_500_and_name_the_field(client, field_and_value, base):
    field, value = field_and_value
    query = {
        **base,
        field: value,
        "source": "custom" if field in {"params", "layers", "hidden"} else "preset",
    }
    page = _page_total(client, query)
    partial = _page_total(client, query, htmx=True)
    api = client.get("/api/v1/estimate", query)
    assert api.status_code < 500
    if api.status_code >= 400:
        fields = {error["field"] for error in api.json()["errors"]}
        assert fields  # every error names a field (or the model)
        body = page.content.decode()
        named = [f for f in fields if re.search(rf'id="errors_{re.escape(f)}"[^>]*><span>', body)]
        assert named or "Did you mean" in body or "No model in the catalogue" in body, (
            query,
            fields,
        )
        assert b'hx-swap-oob="true"' in partial.content


@st.composite
def requests(draw):
    mode = draw(st.sampled_from(MODES))
    precision = draw(
        st.sampled_from(PRECISIONS if mode in {"inference", "lora"} else ["bf16", "fp32"])
    )
    return {
        "model": {
            "num_layers": draw(st.integers(1, 96)),
            "hidden_size": draw(st.sampled_from([512, 1024, 2048, 4096, 8192])),
            "num_kv_heads": draw(st.sampled_from([1, 2, 4, 8])),
            "vocab_size": draw(st.integers(1000, 256_000)),
        },
        "mode": mode,
        "precision": precision,
        "batch_size": draw(st.integers(1, 64)),
        "seq_len": draw(st.integers(1, 65536)),
        "attention": draw(st.sampled_from(["flash", "eager"])),
        "gradient_checkpointing": draw(st.booleans()),
        "optimizer": draw(st.sampled_from(["adamw", "sgd", "adamw_8bit", "lion", "adafactor"])),
    }


def _total(fields, **changes):
    merged = {**fields, **changes}
    return estimate(EstimateRequest.model_validate(merged))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(fields=requests())
def test_memory_is_monotone_where_physics_says_so(fields):
    base = _total(fields)
    assert base.breakdown.total() == base.total_bytes
    assert base.peak_allocated_bytes <= base.total_bytes
    assert _total(fields, batch_size=fields["batch_size"] + 1).total_bytes >= base.total_bytes
    assert _total(fields, seq_len=fields["seq_len"] + 128).total_bytes >= base.total_bytes
    deeper = {**fields["model"], "num_layers": fields["model"]["num_layers"] + 1}
    assert _total(fields, model=deeper).total_bytes >= base.total_bytes
    if fields["mode"] != "inference":
        per_gpu = [_total(fields, num_gpus=n, zero_stage=3).total_bytes for n in (1, 2, 4, 8, 16)]
        assert per_gpu == sorted(per_gpu, reverse=True)
