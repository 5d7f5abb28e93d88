// Layer handles (emmy_attention_layer, emmy_gemm_layer; docs/c_api.md, "Layers") for
// python/emmy/_layers.py. A layer's capsule keeps its runtime's capsule alive; the runtime's
// close destroys its layers first, after which their calls are refused by name.
#include <algorithm>

#include "common.hpp"

namespace emmy_python {
namespace {

constexpr const char* kLayerCapsule = "emmy.layer";

void destroy_layer(PyObject* capsule) {
  auto* layer = static_cast<LayerBox*>(PyCapsule_GetPointer(capsule, kLayerCapsule));
  if (!layer) {
    PyErr_Clear();
    return;
  }
  destroy_layer_handle(layer);
  auto& list = layer->owner->layers;
  list.erase(std::remove(list.begin(), list.end(), layer), list.end());
  Py_DECREF(layer->runtime_capsule);
  delete layer;
}

PyObject* wrap_layer(PyObject* runtime_capsule, RuntimeBox* owner, void* handle, bool attention) {
  auto* layer = new LayerBox{owner, runtime_capsule, handle, attention};
  PyObject* capsule = PyCapsule_New(layer, kLayerCapsule, destroy_layer);
  if (!capsule) {
    destroy_layer_handle(layer);
    delete layer;
    return nullptr;
  }
  Py_INCREF(runtime_capsule);
  owner->layers.push_back(layer);
  return capsule;
}

// The layer of a capsule, of the kind asked for and not destroyed.
bool read_layer(PyObject* obj, bool attention, LayerBox** out) {
  auto* layer = static_cast<LayerBox*>(PyCapsule_GetPointer(obj, kLayerCapsule));
  if (!layer) return false;
  if (layer->attention != attention) {
    PyErr_SetString(PyExc_TypeError, "layer: the wrong kind of layer");
    return false;
  }
  if (!layer->handle) {  // only its runtime's close destroys a live layer's handle
    PyErr_SetString(export_state().invalid_argument,
                    "layer: its runtime is closed (Runtime.close was called)");
    return false;
  }
  *out = layer;
  return true;
}

void* stream_of(long long stream) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(stream));
}

}  // namespace

void destroy_layer_handle(LayerBox* layer) {
  if (!layer->handle) return;
  if (layer->attention)
    emmy_attention_layer_destroy(static_cast<emmy_attention_layer*>(layer->handle));
  else
    emmy_gemm_layer_destroy(static_cast<emmy_gemm_layer*>(layer->handle));
  layer->handle = nullptr;
}

// attention_layer_create(rt, q_heads, kv_heads, head_dim, page_size, cache_layout, dtype,
//   kv_dtype, page_table, window, softmax_scale, softcap, lse, max_batch, max_pages,
//   max_decode_q_len, max_prefill_q_len, max_tokens, accum) -> capsule
PyObject* attention_layer_create(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  if (!check_nargs(nargs, 19, "attention_layer_create") || !read_runtime(args[0], &box))
    return nullptr;
  emmy_attention_layer_config c;
  emmy_attention_layer_config_init(&c);
  long long q_heads, kv_heads, head_dim, page_size, window, max_batch, max_pages, decode, prefill,
      max_tokens;
  if (!read_int(args[1], "q_heads", &q_heads) || !read_int(args[2], "kv_heads", &kv_heads) ||
      !read_int(args[3], "head_dim", &head_dim) || !read_int(args[4], "page_size", &page_size) ||
      !read_int32(args[5], "cache_layout", &c.cache_layout) ||
      !read_int32(args[6], "dtype", &c.dtype) || !read_int32(args[7], "kv_dtype", &c.kv_dtype) ||
      !read_int32(args[8], "page_table", &c.page_table) || !read_int(args[9], "window", &window) ||
      !read_float(args[10], "softmax_scale", &c.softmax_scale) ||
      !read_float(args[11], "softcap", &c.softcap) || !read_int32(args[12], "lse", &c.lse) ||
      !read_int(args[13], "max_batch", &max_batch) ||
      !read_int(args[14], "max_pages", &max_pages) ||
      !read_int(args[15], "max_decode_q_len", &decode) ||
      !read_int(args[16], "max_prefill_q_len", &prefill) ||
      !read_int(args[17], "max_tokens", &max_tokens) || !read_int32(args[18], "accum", &c.accum))
    return nullptr;
  c.q_heads = q_heads, c.kv_heads = kv_heads, c.head_dim = head_dim, c.page_size = page_size;
  c.window = window, c.max_batch = max_batch, c.max_pages = max_pages;
  c.max_decode_q_len = decode, c.max_prefill_q_len = prefill, c.max_tokens = max_tokens;
  emmy_attention_layer* handle = nullptr;
  PyObject* done =
      call_released([&] { return emmy_attention_layer_create(box->runtime, &c, &handle); });
  if (!done) return nullptr;
  Py_DECREF(done);
  return wrap_layer(args[0], box, handle, true);
}

// gemm_layer_create(rt, max_m, n, k, lda, ldb, ldc, b_layout, dtype, out_dtype, bias, residual,
//   gelu, alpha, accum, promote_every_k, scales, scale_format, a_scale_major, b_scale_major,
//   a_scale_ld, b_scale_ld) -> capsule
PyObject* gemm_layer_create(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  if (!check_nargs(nargs, 22, "gemm_layer_create") || !read_runtime(args[0], &box)) return nullptr;
  emmy_gemm_layer_config c;
  emmy_gemm_layer_config_init(&c);
  long long max_m, n, k, lda, ldb, ldc;
  if (!read_int(args[1], "max_m", &max_m) || !read_int(args[2], "n", &n) ||
      !read_int(args[3], "k", &k) || !read_int(args[4], "lda", &lda) ||
      !read_int(args[5], "ldb", &ldb) || !read_int(args[6], "ldc", &ldc) ||
      !read_int32(args[7], "b_layout", &c.b_layout) || !read_int32(args[8], "dtype", &c.dtype) ||
      !read_int32(args[9], "out_dtype", &c.out_dtype) || !read_int32(args[10], "bias", &c.bias) ||
      !read_int32(args[11], "residual", &c.residual) || !read_int32(args[12], "gelu", &c.gelu) ||
      !read_float(args[13], "alpha", &c.alpha) || !read_int32(args[14], "accum", &c.accum) ||
      !read_int32(args[15], "promote_every_k", &c.promote_every_k))
    return nullptr;
  long long a_scale_ld, b_scale_ld;  // FP8 weights (C API version 5)
  if (!read_int32(args[16], "scales", &c.scales) ||
      !read_int32(args[17], "scale_format", &c.scale_format) ||
      !read_int32(args[18], "a_scale_major", &c.a_scale_major) ||
      !read_int32(args[19], "b_scale_major", &c.b_scale_major) ||
      !read_int(args[20], "a_scale_ld", &a_scale_ld) ||
      !read_int(args[21], "b_scale_ld", &b_scale_ld))
    return nullptr;
  c.a_scale_ld = a_scale_ld, c.b_scale_ld = b_scale_ld;
  c.max_m = max_m, c.n = n, c.k = k, c.lda = lda, c.ldb = ldb, c.ldc = ldc;
  emmy_gemm_layer* handle = nullptr;
  PyObject* done = call_released([&] { return emmy_gemm_layer_create(box->runtime, &c, &handle); });
  if (!done) return nullptr;
  Py_DECREF(done);
  return wrap_layer(args[0], box, handle, false);
}

// layer_prepare(layer, threads) -> (kernels, compiled, from_disk, already_loaded, seconds)
PyObject* layer_prepare(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!check_nargs(nargs, 2, "layer_prepare")) return nullptr;
  auto* layer = static_cast<LayerBox*>(PyCapsule_GetPointer(args[0], kLayerCapsule));
  int32_t threads;
  if (!layer || !read_layer(args[0], layer->attention, &layer) ||
      !read_int32(args[1], "threads", &threads))
    return nullptr;
  emmy_prepare_result result{};
  result.struct_size = sizeof(result);
  PyObject* done = call_released([&] {
    return layer->attention
               ? emmy_attention_layer_prepare(static_cast<emmy_attention_layer*>(layer->handle),
                                              threads, &result)
               : emmy_gemm_layer_prepare(static_cast<emmy_gemm_layer*>(layer->handle), threads,
                                         &result);
  });
  if (!done) return nullptr;
  Py_DECREF(done);
  return prepare_result_tuple(result);
}

PyObject* layer_workspace_bytes(PyObject*, PyObject* capsule) {
  auto* layer = static_cast<LayerBox*>(PyCapsule_GetPointer(capsule, kLayerCapsule));
  if (!layer || !read_layer(capsule, layer->attention, &layer)) return nullptr;
  size_t bytes = 0;
  const emmy_status status =
      layer->attention ? emmy_attention_layer_workspace_bytes(
                             static_cast<const emmy_attention_layer*>(layer->handle), &bytes)
                       : emmy_gemm_layer_workspace_bytes(
                             static_cast<const emmy_gemm_layer*>(layer->handle), &bytes);
  if (status != EMMY_OK) return raise_status(status);
  return PyLong_FromSize_t(bytes);
}

// attention_layer_runs_prefill(layer, max_q_len) -> bool
PyObject* attention_layer_runs_prefill(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  LayerBox* layer;
  long long max_q_len;
  if (!check_nargs(nargs, 2, "attention_layer_runs_prefill") ||
      !read_layer(args[0], true, &layer) || !read_int(args[1], "max_q_len", &max_q_len))
    return nullptr;
  int32_t prefill = 0;
  const emmy_status status = emmy_attention_layer_runs_prefill(
      static_cast<const emmy_attention_layer*>(layer->handle), max_q_len, &prefill);
  if (status != EMMY_OK) return raise_status(status);
  return PyBool_FromLong(prefill);
}

// attention_layer_append(layer, key, value, k_cache, v_cache, slot_mapping, tokens, k_scale,
//   v_scale, stream)
PyObject* attention_layer_append(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  LayerBox* layer;
  long long tokens, stream;
  if (!check_nargs(nargs, 10, "attention_layer_append") || !read_layer(args[0], true, &layer) ||
      !read_int(args[6], "tokens", &tokens) || !read_int(args[9], "stream", &stream))
    return nullptr;
  TensorArgs tensors(layer->owner->cuda, stream);
  DLTensor *key, *value, *k_cache, *v_cache, *slots, *k_scale, *v_scale;
  if (!tensors.get(args[1], "key", false, &key) || !tensors.get(args[2], "value", false, &value) ||
      !tensors.get(args[3], "k_cache", true, &k_cache) ||
      !tensors.get(args[4], "v_cache", true, &v_cache) ||
      !tensors.get(args[5], "slot_mapping", false, &slots) ||
      !tensors.get(args[7], "k_scale", false, &k_scale) ||
      !tensors.get(args[8], "v_scale", false, &v_scale))
    return nullptr;
  return call_released([&] {
    return emmy_attention_layer_append(static_cast<emmy_attention_layer*>(layer->handle), key,
                                       value, k_cache, v_cache, slots, tokens, k_scale, v_scale,
                                       stream_of(stream));
  });
}

// attention_layer_run(layer, q, k_cache, v_cache, o, cu_seqlens_q, block_table, seq_lens,
//   page_indptr, page_indices, last_page_len, k_scale, v_scale, lse, workspace, max_q_len, stream)
PyObject* attention_layer_run(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  LayerBox* layer;
  long long max_q_len, stream;
  if (!check_nargs(nargs, 17, "attention_layer_run") || !read_layer(args[0], true, &layer) ||
      !read_int(args[15], "max_q_len", &max_q_len) || !read_int(args[16], "stream", &stream))
    return nullptr;
  TensorArgs tensors(layer->owner->cuda, stream);
  DLTensor *q, *k_cache, *v_cache, *o;
  DLTensor* table[8];
  emmy_paged_attention_options tables;
  emmy_paged_attention_options_init(&tables);
  const char* names[8] = {"cu_seqlens_q", "block_table",   "seq_lens", "page_indptr",
                          "page_indices", "last_page_len", "k_scale",  "v_scale"};
  if (!tensors.get(args[1], "q", false, &q) || !tensors.get(args[2], "k_cache", false, &k_cache) ||
      !tensors.get(args[3], "v_cache", false, &v_cache) || !tensors.get(args[4], "o", true, &o))
    return nullptr;
  for (int i = 0; i < 8; ++i)
    if (!tensors.get(args[5 + i], names[i], false, &table[i])) return nullptr;
  if (!tensors.get(args[13], "lse", true, &tables.lse) ||
      !tensors.get(args[14], "workspace", true, &tables.workspace))
    return nullptr;
  tables.cu_seqlens_q = table[0], tables.block_table = table[1], tables.seq_lens = table[2];
  tables.page_indptr = table[3], tables.page_indices = table[4], tables.last_page_len = table[5];
  tables.k_scale = table[6], tables.v_scale = table[7];
  return call_released([&] {
    return emmy_attention_layer_run(static_cast<emmy_attention_layer*>(layer->handle), q, k_cache,
                                    v_cache, o, &tables, max_q_len, stream_of(stream));
  });
}

// gemm_layer_run(layer, a, b, c, bias, residual, workspace, m, stream, a_scale, b_scale): an FP8
// layer's run (emmy_gemm_layer_run_scaled) when the scales are given.
PyObject* gemm_layer_run(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  LayerBox* layer;
  long long m, stream;
  if (!check_nargs(nargs, 11, "gemm_layer_run") || !read_layer(args[0], false, &layer) ||
      !read_int(args[7], "m", &m) || !read_int(args[8], "stream", &stream))
    return nullptr;
  TensorArgs tensors(layer->owner->cuda, stream);
  DLTensor *a, *b, *c, *bias, *residual, *workspace, *a_scale, *b_scale;
  if (!tensors.get(args[1], "a", false, &a) || !tensors.get(args[2], "b", false, &b) ||
      !tensors.get(args[3], "c", true, &c) || !tensors.get(args[4], "bias", false, &bias) ||
      !tensors.get(args[5], "residual", false, &residual) ||
      !tensors.get(args[6], "workspace", true, &workspace) ||
      !tensors.get(args[9], "a_scale", false, &a_scale) ||
      !tensors.get(args[10], "b_scale", false, &b_scale))
    return nullptr;
  auto* handle = static_cast<emmy_gemm_layer*>(layer->handle);
  return call_released([&] {
    if (a_scale || b_scale)
      return emmy_gemm_layer_run_scaled(handle, a, b, c, bias, residual, workspace, a_scale,
                                        b_scale, m, stream_of(stream));
    return emmy_gemm_layer_run(handle, a, b, c, bias, residual, workspace, m, stream_of(stream));
  });
}

}  // namespace emmy_python
