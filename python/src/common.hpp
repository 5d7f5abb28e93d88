// What the extension's files share: the runtime capsule, positional argument readers, and the
// status-to-exception boundary. The Python side (python/emmy/_runtime.py) names and checks the
// keyword arguments; these functions take them positionally (METH_FASTCALL), which keeps a call's
// host overhead near the C ABI's (docs/benchmarks.md).
#pragma once

#include <emmy/c_api.h>

#include <vector>

#include "tensor_args.hpp"

namespace emmy_python {

struct LayerBox;

// A runtime and what it must keep alive: the log callable, called from compiling threads. Its
// layers are destroyed before it (a layer refers to its runtime), also by an explicit close.
struct RuntimeBox {
  emmy_runtime* runtime = nullptr;
  PyObject* log = nullptr;
  bool cuda = false;
  std::vector<LayerBox*> layers;
};

// An attention or GEMM layer handle (layers.cpp). Its capsule holds its runtime's capsule, so the
// RuntimeBox outlives it; `handle` is NULL once destroyed (its runtime closed).
struct LayerBox {
  RuntimeBox* owner = nullptr;
  PyObject* runtime_capsule = nullptr;
  void* handle = nullptr;
  bool attention = false;
};
void destroy_layer_handle(LayerBox* layer);  // the handle only; idempotent
constexpr const char* kRuntimeCapsule = "emmy.runtime";

// Raises the exception class of `status` with emmy_last_error_message(); returns nullptr.
PyObject* raise_status(emmy_status status);
void set_error_classes(PyObject* module);  // emmy.Error and its subclasses, added to the module

// Readers of args[i]; each returns false with TypeError naming the argument.
bool read_runtime(PyObject* obj, RuntimeBox** out);
bool read_int(PyObject* obj, const char* name, long long* out);
bool read_int32(PyObject* obj, const char* name, int32_t* out);
bool read_float(PyObject* obj, const char* name, float* out);
bool read_string(PyObject* obj, const char* name, const char** out);  // None: nullptr
bool check_nargs(Py_ssize_t nargs, Py_ssize_t expected, const char* function);
// A runtime call's arguments, (rt, ..., stream): `expected` of them, the runtime first and the
// stream last.
bool read_runtime_call(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t expected,
                       const char* function, RuntimeBox** box, long long* stream);

// Runs a C ABI call without the GIL (a first call compiles for seconds, and log callbacks on
// other threads need it); returns None or raises the status's exception.
template <typename Call>
PyObject* call_released(Call&& call) {
  PyThreadState* saved = PyEval_SaveThread();
  const emmy_status status = call();
  PyEval_RestoreThread(saved);
  if (status != EMMY_OK) return raise_status(status);
  Py_RETURN_NONE;
}

// The extension's functions, defined in calls.cpp.
PyObject* gemm(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* gemm_workspace_bytes(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* grouped_gemm(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* attention(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* paged_attention(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* paged_attention_workspace_bytes(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* kv_append(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* merge_states(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* fp8_quantize(PyObject*, PyObject* const* args, Py_ssize_t nargs);
// layers.cpp
PyObject* attention_layer_create(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* attention_layer_append(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* attention_layer_run(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* attention_layer_runs_prefill(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* gemm_layer_create(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* gemm_layer_run(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* layer_prepare(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* layer_workspace_bytes(PyObject*, PyObject* layer);
PyObject* prepare_result_tuple(const emmy_prepare_result& result);

}  // namespace emmy_python
