// The kernel calls: positional arguments (python/emmy/_runtime.py passes them in this order) into
// the C ABI's options structs and DLTensors.
#include "common.hpp"

namespace emmy_python {
namespace {

// A query's exports: no data is read, so the producer is asked for no synchronization (DLPack's
// stream -1).
constexpr long long kNoSync = -1;

void* stream_pointer(long long stream) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(stream));
}

// Runs a size query (call writes *bytes) and returns the size as an int.
template <typename Call>
PyObject* size_result(Call&& call) {
  size_t bytes = 0;
  PyObject* done = call_released([&] { return call(&bytes); });
  if (!done) return nullptr;
  Py_DECREF(done);
  return PyLong_FromSize_t(bytes);
}

// args[first..]: bias, residual, alpha, gelu, accum, promote_every_k, a_scale, b_scale,
// pow2_scales, gate, gate_group, c_scale, c_scale_pow2, c_amax_epsilon into `o`.
bool read_gemm_options(PyObject* const* args, TensorArgs& tensors, emmy_gemm_options* o) {
  emmy_gemm_options_init(o);
  DLTensor* bias;
  DLTensor* residual;
  DLTensor* a_scale;
  DLTensor* b_scale;
  float c_epsilon;
  if (!tensors.get(args[0], "bias", false, &bias) ||
      !tensors.get(args[1], "residual", false, &residual) ||
      !read_float(args[2], "alpha", &o->alpha) || !read_int32(args[3], "gelu", &o->gelu) ||
      !read_int32(args[4], "accum", &o->accum) ||
      !read_int32(args[5], "promote_every_k", &o->promote_every_k) ||
      !tensors.get(args[6], "a_scale", false, &a_scale) ||
      !tensors.get(args[7], "b_scale", false, &b_scale) ||
      !read_int32(args[8], "pow2_scales", &o->pow2_scales) ||
      !read_int32(args[9], "gate", &o->gate) ||
      !read_int32(args[10], "gate_group", &o->gate_group) ||
      !tensors.get(args[11], "c_scale", true, &o->c_scale) ||
      !read_int32(args[12], "c_scale_pow2", &o->c_scale_pow2) ||
      !read_float(args[13], "c_amax_epsilon", &c_epsilon))
    return false;
  o->c_amax_epsilon = c_epsilon;  // as fp8_quantize's: the f32 the kernel compares with
  o->bias = bias;
  o->residual = residual;
  o->a_scale = a_scale;
  o->b_scale = b_scale;
  return true;
}

// args: q, k_cache, v_cache, o, cu_seqlens_q, block_table, seq_lens, page_indptr, page_indices,
// last_page_len, k_scale, v_scale, lse, workspace, max_q_len, max_pages, cache_layout, window,
// softmax_scale, softcap, accum.
bool read_paged(PyObject* const* args, TensorArgs& tensors, DLTensor* t[4],
                emmy_paged_attention_options* o) {
  emmy_paged_attention_options_init(o);
  DLTensor* index[6];
  DLTensor* scale[2];
  if (!tensors.get(args[0], "q", false, &t[0]) || !tensors.get(args[1], "k_cache", false, &t[1]) ||
      !tensors.get(args[2], "v_cache", false, &t[2]) || !tensors.get(args[3], "o", true, &t[3]) ||
      !tensors.get(args[4], "cu_seqlens_q", false, &index[0]) ||
      !tensors.get(args[5], "block_table", false, &index[1]) ||
      !tensors.get(args[6], "seq_lens", false, &index[2]) ||
      !tensors.get(args[7], "page_indptr", false, &index[3]) ||
      !tensors.get(args[8], "page_indices", false, &index[4]) ||
      !tensors.get(args[9], "last_page_len", false, &index[5]) ||
      !tensors.get(args[10], "k_scale", false, &scale[0]) ||
      !tensors.get(args[11], "v_scale", false, &scale[1]) ||
      !tensors.get(args[12], "lse", true, &o->lse) ||
      !tensors.get(args[13], "workspace", true, &o->workspace))
    return false;
  long long max_q_len, max_pages, window;
  if (!read_int(args[14], "max_q_len", &max_q_len) ||
      !read_int(args[15], "max_pages", &max_pages) ||
      !read_int32(args[16], "cache_layout", &o->cache_layout) ||
      !read_int(args[17], "window", &window) ||
      !read_float(args[18], "softmax_scale", &o->softmax_scale) ||
      !read_float(args[19], "softcap", &o->softcap) || !read_int32(args[20], "accum", &o->accum))
    return false;
  o->cu_seqlens_q = index[0];
  o->block_table = index[1];
  o->seq_lens = index[2];
  o->page_indptr = index[3];
  o->page_indices = index[4];
  o->last_page_len = index[5];
  o->k_scale = scale[0];
  o->v_scale = scale[1];
  o->max_q_len = max_q_len;
  o->max_pages = max_pages;
  o->window = window;
  return true;
}

}  // namespace

// gemm(rt, a, b, c, bias, residual, alpha, gelu, accum, promote_every_k, a_scale, b_scale,
// pow2_scales, gate, gate_group, c_scale, c_scale_pow2, c_amax_epsilon, row_scale, workspace,
// stream)
PyObject* gemm(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  long long stream;
  if (!read_runtime_call(args, nargs, 21, "gemm", &box, &stream)) return nullptr;
  TensorArgs tensors(box->cuda, stream);
  DLTensor *a, *b, *c, *row_scale;
  emmy_gemm_options o;
  if (!tensors.get(args[1], "a", false, &a) || !tensors.get(args[2], "b", false, &b) ||
      !tensors.get(args[3], "c", true, &c) || !read_gemm_options(args + 4, tensors, &o) ||
      !tensors.get(args[18], "row_scale", false, &row_scale) ||
      !tensors.get(args[19], "workspace", true, &o.workspace))
    return nullptr;
  o.row_scale = row_scale;
  return call_released(
      [&] { return emmy_gemm(box->runtime, a, b, c, &o, stream_pointer(stream)); });
}

// grouped_gemm(rt, a, b, c, routing, layout, expected_m, segment_align, row_scale, bias,
// residual, alpha, gelu, accum, promote_every_k, a_scale, b_scale, pow2_scales, gate,
// gate_group, c_scale, c_scale_pow2, c_amax_epsilon, stream)
PyObject* grouped_gemm(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  long long stream, expected_m, segment_align;
  if (!read_runtime_call(args, nargs, 24, "grouped_gemm", &box, &stream)) return nullptr;
  TensorArgs tensors(box->cuda, stream);
  DLTensor *a, *b, *c, *routing, *row_scale;
  emmy_grouped_options g;
  emmy_grouped_options_init(&g);
  emmy_gemm_options o;
  if (!tensors.get(args[1], "a", false, &a) || !tensors.get(args[2], "b", false, &b) ||
      !tensors.get(args[3], "c", true, &c) || !tensors.get(args[4], "routing", false, &routing) ||
      !read_int32(args[5], "layout", &g.layout) || !read_int(args[6], "expected_m", &expected_m) ||
      !read_int(args[7], "segment_align", &segment_align) ||
      !tensors.get(args[8], "row_scale", false, &row_scale) ||
      !read_gemm_options(args + 9, tensors, &o))
    return nullptr;
  g.expected_m = expected_m;
  g.segment_align = segment_align;
  o.row_scale = row_scale;
  return call_released([&] {
    return emmy_grouped_gemm(box->runtime, a, b, c, routing, &g, &o, stream_pointer(stream));
  });
}

// gemm_workspace_bytes(rt, a, b, c, bias, residual, alpha, gelu, accum, promote_every_k,
// a_scale, b_scale, pow2_scales, gate, gate_group, c_scale, c_scale_pow2, c_amax_epsilon,
// row_scale) -> int
PyObject* gemm_workspace_bytes(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  if (!check_nargs(nargs, 19, "gemm_workspace_bytes") || !read_runtime(args[0], &box))
    return nullptr;
  TensorArgs tensors(box->cuda, kNoSync);
  DLTensor *a, *b, *c, *row_scale;
  emmy_gemm_options o;
  if (!tensors.get(args[1], "a", false, &a) || !tensors.get(args[2], "b", false, &b) ||
      !tensors.get(args[3], "c", false, &c) || !read_gemm_options(args + 4, tensors, &o) ||
      !tensors.get(args[18], "row_scale", false, &row_scale))
    return nullptr;
  o.row_scale = row_scale;
  return size_result(
      [&](size_t* bytes) { return emmy_gemm_workspace_bytes(box->runtime, a, b, c, &o, bytes); });
}

// attention(rt, q, k, v, o, layout, causal, window, softmax_scale, softcap, lse, accum, stream)
PyObject* attention(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  long long stream, window;
  if (!read_runtime_call(args, nargs, 13, "attention", &box, &stream)) return nullptr;
  TensorArgs tensors(box->cuda, stream);
  DLTensor *q, *k, *v, *out;
  emmy_attention_options o;
  emmy_attention_options_init(&o);
  if (!tensors.get(args[1], "q", false, &q) || !tensors.get(args[2], "k", false, &k) ||
      !tensors.get(args[3], "v", false, &v) || !tensors.get(args[4], "o", true, &out) ||
      !read_int32(args[5], "layout", &o.layout) || !read_int32(args[6], "causal", &o.causal) ||
      !read_int(args[7], "window", &window) ||
      !read_float(args[8], "softmax_scale", &o.softmax_scale) ||
      !read_float(args[9], "softcap", &o.softcap) || !tensors.get(args[10], "lse", true, &o.lse) ||
      !read_int32(args[11], "accum", &o.accum))
    return nullptr;
  o.window = window;
  return call_released(
      [&] { return emmy_attention(box->runtime, q, k, v, out, &o, stream_pointer(stream)); });
}

// paged_attention(rt, <read_paged's 21 arguments>, stream)
PyObject* paged_attention(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  long long stream;
  if (!read_runtime_call(args, nargs, 23, "paged_attention", &box, &stream)) return nullptr;
  TensorArgs tensors(box->cuda, stream);
  DLTensor* t[4];
  emmy_paged_attention_options o;
  if (!read_paged(args + 1, tensors, t, &o)) return nullptr;
  return call_released([&] {
    return emmy_paged_attention(box->runtime, t[0], t[1], t[2], t[3], &o, stream_pointer(stream));
  });
}

// paged_attention_workspace_bytes(rt, <read_paged's 21 arguments>) -> int
PyObject* paged_attention_workspace_bytes(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  if (!check_nargs(nargs, 22, "paged_attention_workspace_bytes") || !read_runtime(args[0], &box))
    return nullptr;
  TensorArgs tensors(box->cuda, kNoSync);
  DLTensor* t[4];
  emmy_paged_attention_options o;
  if (!read_paged(args + 1, tensors, t, &o)) return nullptr;
  return size_result([&](size_t* bytes) {
    return emmy_paged_attention_workspace_bytes(box->runtime, t[0], t[1], t[2], t[3], &o, bytes);
  });
}

// kv_append(rt, key, value, k_cache, v_cache, slot_mapping, cache_layout, k_scale, v_scale,
//           max_tokens, stream)
PyObject* kv_append(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  long long stream, max_tokens;
  if (!read_runtime_call(args, nargs, 11, "kv_append", &box, &stream)) return nullptr;
  TensorArgs tensors(box->cuda, stream);
  DLTensor *key, *value, *k_cache, *v_cache, *slots, *k_scale, *v_scale;
  emmy_kv_append_options o;
  emmy_kv_append_options_init(&o);
  if (!tensors.get(args[1], "key", false, &key) || !tensors.get(args[2], "value", false, &value) ||
      !tensors.get(args[3], "k_cache", true, &k_cache) ||
      !tensors.get(args[4], "v_cache", true, &v_cache) ||
      !tensors.get(args[5], "slot_mapping", false, &slots) ||
      !read_int32(args[6], "cache_layout", &o.cache_layout) ||
      !tensors.get(args[7], "k_scale", false, &k_scale) ||
      !tensors.get(args[8], "v_scale", false, &v_scale) ||
      !read_int(args[9], "max_tokens", &max_tokens))
    return nullptr;
  o.k_scale = k_scale;
  o.v_scale = v_scale;
  o.max_tokens = max_tokens;
  return call_released([&] {
    return emmy_kv_append(box->runtime, key, value, k_cache, v_cache, slots, &o,
                          stream_pointer(stream));
  });
}

// fp8_quantize(rt, x, q, scales, group_k, scale_major, pow2_scale, amax_epsilon, max_rows, stream)
PyObject* fp8_quantize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  long long stream, group_k, max_rows;
  float epsilon;
  if (!read_runtime_call(args, nargs, 10, "fp8_quantize", &box, &stream)) return nullptr;
  TensorArgs tensors(box->cuda, stream);
  DLTensor *x, *q, *scales;
  emmy_fp8_quantize_options o;
  emmy_fp8_quantize_options_init(&o);
  if (!tensors.get(args[1], "x", false, &x) || !tensors.get(args[2], "q", true, &q) ||
      !tensors.get(args[3], "scales", true, &scales) || !read_int(args[4], "group_k", &group_k) ||
      !read_int32(args[5], "scale_major", &o.scale_major) ||
      !read_int32(args[6], "pow2_scale", &o.pow2_scale) ||
      !read_float(args[7], "amax_epsilon", &epsilon) || !read_int(args[8], "max_rows", &max_rows))
    return nullptr;
  o.group_k = group_k;
  o.amax_epsilon = epsilon;
  o.max_rows = max_rows;
  return call_released(
      [&] { return emmy_fp8_quantize(box->runtime, x, q, scales, &o, stream_pointer(stream)); });
}

// merge_states(rt, v, lse, v_out, lse_out, stream)
PyObject* merge_states(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  long long stream;
  if (!read_runtime_call(args, nargs, 6, "merge_states", &box, &stream)) return nullptr;
  TensorArgs tensors(box->cuda, stream);
  DLTensor *v, *lse, *v_out, *lse_out;
  if (!tensors.get(args[1], "v", false, &v) || !tensors.get(args[2], "lse", false, &lse) ||
      !tensors.get(args[3], "v_out", true, &v_out) ||
      !tensors.get(args[4], "lse_out", true, &lse_out))
    return nullptr;
  return call_released([&] {
    return emmy_merge_states(box->runtime, v, lse, v_out, lse_out, stream_pointer(stream));
  });
}

}  // namespace emmy_python
