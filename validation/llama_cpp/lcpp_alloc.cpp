// Load a (sparse) GGUF with no_alloc and print what llama.cpp would allocate, as one JSON line on stdout.
// The llama.cpp log is copied to stderr so measure.py can keep the per-cache lines.
// usage: lcpp_alloc MODEL.gguf N_CTX N_SEQ N_BATCH N_UBATCH TYPE_K TYPE_V FLASH(0/1) SWA_FULL(0/1) KV_UNIFIED(0/1)
#include "llama.h"
#include "llama-ext.h"
#include "ggml-backend.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static ggml_type parse_type(const char * s) {
    if (!strcmp(s, "f16")) return GGML_TYPE_F16;
    if (!strcmp(s, "bf16")) return GGML_TYPE_BF16;
    if (!strcmp(s, "f32")) return GGML_TYPE_F32;
    if (!strcmp(s, "q8_0")) return GGML_TYPE_Q8_0;
    if (!strcmp(s, "q4_0")) return GGML_TYPE_Q4_0;
    fprintf(stderr, "unknown cache type %s\n", s);
    exit(2);
}

int main(int argc, char ** argv) {
    if (argc != 11) {
        fprintf(stderr, "usage: %s MODEL N_CTX N_SEQ N_BATCH N_UBATCH TYPE_K TYPE_V FLASH SWA_FULL KV_UNIFIED\n", argv[0]);
        return 2;
    }
    llama_log_set([](ggml_log_level, const char * text, void *) { fputs(text, stderr); }, nullptr);
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.no_alloc = true;          // as common/fit.cpp does: metadata only, simulated allocations
    mp.load_mode = LLAMA_LOAD_MODE_NONE;
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { printf("{\"error\": \"model load failed\"}\n"); return 1; }

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = atoi(argv[2]);
    cp.n_seq_max = atoi(argv[3]);
    cp.n_batch = atoi(argv[4]);
    cp.n_ubatch = atoi(argv[5]);
    cp.type_k = parse_type(argv[6]);
    cp.type_v = parse_type(argv[7]);
    cp.flash_attn_type = atoi(argv[8]) ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.swa_full = atoi(argv[9]) != 0;
    cp.kv_unified = atoi(argv[10]) != 0;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { printf("{\"error\": \"context init failed\"}\n"); llama_model_free(model); return 1; }

    size_t model_b = 0, context_b = 0, compute_b = 0;
    std::string per_buft;
    for (const auto & [buft, mb] : llama_get_memory_breakdown(ctx)) {
        model_b += mb.model; context_b += mb.context; compute_b += mb.compute;
        char buf[256];
        snprintf(buf, sizeof buf, "%s\"%s\": {\"model\": %zu, \"context\": %zu, \"compute\": %zu}",
                 per_buft.empty() ? "" : ", ", ggml_backend_buft_name(buft), mb.model, mb.context, mb.compute);
        per_buft += buf;
    }
    printf("{\"model_buffer_bytes\": %zu, \"context_bytes\": %zu, \"compute_buffer_bytes\": %zu, \"n_ctx\": %u, \"n_ctx_seq\": %u, \"by_buffer_type\": {%s}}\n",
           model_b, context_b, compute_b, llama_n_ctx(ctx), llama_n_ctx_seq(ctx), per_buft.c_str());
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
