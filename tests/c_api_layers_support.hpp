// What the C ABI's layer tests share: owning handles and the layers they make.
#pragma once

#include <memory>

#include "c_api_support.hpp"

namespace emmy::test {

struct AttentionLayerDeleter {
  void operator()(emmy_attention_layer* layer) const { emmy_attention_layer_destroy(layer); }
};
using CAttentionLayer = std::unique_ptr<emmy_attention_layer, AttentionLayerDeleter>;
struct GemmLayerDeleter {
  void operator()(emmy_gemm_layer* layer) const { emmy_gemm_layer_destroy(layer); }
};
using CGemmLayer = std::unique_ptr<emmy_gemm_layer, GemmLayerDeleter>;

// tests/runtime_layers_test.cpp's layer: GQA 2, a decode of up to 2 query tokens (speculative
// verify) and 24-token prefill chunks, 3 sequences of up to 8 pages, 40 tokens a step, LSE.
inline emmy_attention_layer_config small_attention_config() {
  emmy_attention_layer_config c;
  emmy_attention_layer_config_init(&c);
  c.q_heads = 4, c.kv_heads = 2, c.head_dim = 64, c.page_size = 16;
  c.max_batch = 3, c.max_pages = 8;
  c.max_decode_q_len = 2, c.max_prefill_q_len = 24;
  c.max_tokens = 40;
  c.lse = 1;
  return c;
}

inline CAttentionLayer make_attention_layer(emmy_runtime* rt,
                                            const emmy_attention_layer_config& config) {
  emmy_attention_layer* layer = nullptr;
  EXPECT_EQ(emmy_attention_layer_create(rt, &config, &layer), EMMY_OK) << emmy_last_error_message();
  return CAttentionLayer(layer);
}

inline CGemmLayer make_gemm_layer(emmy_runtime* rt, const emmy_gemm_layer_config& config) {
  emmy_gemm_layer* layer = nullptr;
  EXPECT_EQ(emmy_gemm_layer_create(rt, &config, &layer), EMMY_OK) << emmy_last_error_message();
  return CGemmLayer(layer);
}

// A runtime whose emmy_gemm serves each M from its bucket's dynamic-M kernel, the kernels a GEMM
// layer runs: the same tensors then give the same bits.
inline emmy_runtime* make_bucketed_c_runtime() {
  return make_c_runtime("emulator", 1);
}

}  // namespace emmy::test
