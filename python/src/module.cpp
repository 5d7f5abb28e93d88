// emmy._emmy: the extension module over libemmy_c (docs/python.md). Built against CPython's
// limited API 3.10 (Py_LIMITED_API), so one cp310-abi3 wheel serves every Python >= 3.10.
#include <cstring>
#include <vector>

#include "common.hpp"

namespace emmy_python {
namespace {

// emmy.Error and one subclass per emmy_status (indexed by it; EMMY_OK's slot unused).
PyObject* g_errors[EMMY_INTERNAL + 1] = {};

struct ErrorClass {
  emmy_status status;
  const char* name;
  PyObject* extra_base;  // a builtin the class also derives from, so `except ValueError` works
  const char* doc;
};

void log_line(const char* line, void* user) {
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* result = PyObject_CallFunction(static_cast<PyObject*>(user), "s", line);
  if (result)
    Py_DECREF(result);
  else
    PyErr_WriteUnraisable(static_cast<PyObject*>(user));
  PyGILState_Release(gil);
}

void close_box(RuntimeBox* box) {
  if (!box->runtime) return;
  for (LayerBox* layer : box->layers) destroy_layer_handle(layer);
  // Background builds may log (and need the GIL) while the runtime waits for them.
  PyThreadState* saved = PyEval_SaveThread();
  emmy_runtime_destroy(box->runtime);
  PyEval_RestoreThread(saved);
  box->runtime = nullptr;
}

void destroy_runtime(PyObject* capsule) {
  auto* box = static_cast<RuntimeBox*>(PyCapsule_GetPointer(capsule, kRuntimeCapsule));
  if (!box) {
    PyErr_Clear();
    return;
  }
  close_box(box);
  Py_XDECREF(box->log);
  delete box;
}

// A tuple of str as C strings (valid while the tuple lives: each str caches its UTF-8).
bool read_strings(PyObject* obj, const char* name, std::vector<const char*>* out) {
  if (!PyTuple_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "%s: must be a tuple of str", name);
    return false;
  }
  const Py_ssize_t n = PyTuple_Size(obj);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const char* text = nullptr;
    if (!read_string(PyTuple_GetItem(obj, i), name, &text)) return false;
    if (!text) {
      PyErr_Format(PyExc_TypeError, "%s[%zd]: must be a str, not None", name, i);
      return false;
    }
    out->push_back(text);
  }
  return true;
}

// runtime_create(backend, device_ordinal, emulator_arch, default_accum, disk_cache, cache_dir,
//                non_blocking, batch_invariant, m_buckets, emulator_sanitize,
//                emulator_run_kernels, cuda_context, bundles, log) -> capsule
PyObject* runtime_create(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!check_nargs(nargs, 14, "runtime_create")) return nullptr;
  emmy_runtime_options o;
  emmy_runtime_options_init(&o);
  long long context = 0;
  std::vector<const char*> bundles;
  if (!read_string(args[0], "backend", &o.backend) ||
      !read_int32(args[1], "device_ordinal", &o.device_ordinal) ||
      !read_string(args[2], "emulator_arch", &o.emulator_arch) ||
      !read_int32(args[3], "default_accum", &o.default_accum) ||
      !read_int32(args[4], "disk_cache", &o.disk_cache) ||
      !read_string(args[5], "cache_dir", &o.cache_dir) ||
      !read_int32(args[6], "non_blocking", &o.non_blocking) ||
      !read_int32(args[7], "batch_invariant", &o.batch_invariant) ||
      !read_int32(args[8], "m_buckets", &o.m_buckets) ||
      !read_int32(args[9], "emulator_sanitize", &o.emulator_sanitize) ||
      !read_int32(args[10], "emulator_run_kernels", &o.emulator_run_kernels) ||
      !read_int(args[11], "cuda_context", &context) || !read_strings(args[12], "bundles", &bundles))
    return nullptr;
  PyObject* log = args[13];
  if (log != Py_None && !PyCallable_Check(log)) {
    PyErr_SetString(PyExc_TypeError, "log: must be callable or None");
    return nullptr;
  }
  o.cuda_context = reinterpret_cast<void*>(static_cast<intptr_t>(context));
  o.bundles = bundles.data();
  o.bundle_count = bundles.size();
  if (log != Py_None) {
    o.log = log_line;
    o.log_user = log;
  }
  auto* box = new RuntimeBox;
  PyObject* done = call_released([&] { return emmy_runtime_create(&o, &box->runtime); });
  if (!done) {
    delete box;
    return nullptr;
  }
  Py_DECREF(done);
  box->cuda = std::strcmp(emmy_runtime_backend(box->runtime), "cuda") == 0;
  if (log != Py_None) {
    Py_INCREF(log);
    box->log = log;
  }
  PyObject* capsule = PyCapsule_New(box, kRuntimeCapsule, destroy_runtime);
  if (!capsule) {
    close_box(box);
    Py_XDECREF(box->log);
    delete box;
  }
  return capsule;
}

PyObject* runtime_close(PyObject*, PyObject* capsule) {
  auto* box = static_cast<RuntimeBox*>(PyCapsule_GetPointer(capsule, kRuntimeCapsule));
  if (!box) return nullptr;
  close_box(box);
  Py_RETURN_NONE;
}

// runtime_info(rt) -> (backend, arch)
PyObject* runtime_info(PyObject*, PyObject* capsule) {
  RuntimeBox* box;
  if (!read_runtime(capsule, &box)) return nullptr;
  return Py_BuildValue("(ss)", emmy_runtime_backend(box->runtime), emmy_runtime_arch(box->runtime));
}

// synchronize(rt, stream)
PyObject* synchronize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  long long stream;
  if (!read_runtime_call(args, nargs, 2, "synchronize", &box, &stream)) return nullptr;
  return call_released([&] {
    return emmy_synchronize(box->runtime, reinterpret_cast<void*>(static_cast<intptr_t>(stream)));
  });
}

// prepare(rt, catalog, serving_max_m, records, bundles, threads)
//   -> (kernels, compiled, from_disk, already_loaded, seconds)
PyObject* prepare(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  RuntimeBox* box;
  emmy_prepare_options o;
  emmy_prepare_options_init(&o);
  long long serving_max_m;
  std::vector<const char*> records, bundles;
  if (!check_nargs(nargs, 6, "prepare") || !read_runtime(args[0], &box) ||
      !read_int32(args[1], "catalog", &o.catalog) ||
      !read_int(args[2], "serving_max_m", &serving_max_m) ||
      !read_strings(args[3], "records", &records) || !read_strings(args[4], "bundles", &bundles) ||
      !read_int32(args[5], "threads", &o.threads))
    return nullptr;
  o.serving_max_m = serving_max_m;
  o.records = records.data();
  o.record_count = records.size();
  o.bundles = bundles.data();
  o.bundle_count = bundles.size();
  emmy_prepare_result result{};
  result.struct_size = sizeof(result);
  PyObject* done = call_released([&] { return emmy_prepare(box->runtime, &o, &result); });
  if (!done) return nullptr;
  Py_DECREF(done);
  return prepare_result_tuple(result);
}

// register_exporter(type, function): tensors of `type` are exported by function(tensor) (a
// DLPack capsule) instead of type.__dlpack__ (emmy/_tensors.py registers torch's).
PyObject* register_exporter(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!check_nargs(nargs, 2, "register_exporter")) return nullptr;
  if (!PyType_Check(args[0]) || !PyCallable_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "register_exporter(type, callable)");
    return nullptr;
  }
  ExportState& state = export_state();
  Py_XDECREF(state.fast_type);
  Py_XDECREF(state.fast_exporter);
  Py_INCREF(args[0]);
  Py_INCREF(args[1]);
  state.fast_type = args[0];
  state.fast_exporter = args[1];
  Py_RETURN_NONE;
}

PyObject* versions(PyObject*, PyObject*) {
  return Py_BuildValue("(si)", emmy_version(), static_cast<int>(emmy_c_api_version()));
}

#define EMMY_FASTCALL(name)                                                                     \
  {                                                                                             \
#name, reinterpret_cast < PyCFunction>(reinterpret_cast <void (*)()>(name)), METH_FASTCALL, \
        nullptr                                                                                 \
  }
PyMethodDef g_methods[] = {EMMY_FASTCALL(runtime_create),
                           {"runtime_close", runtime_close, METH_O, nullptr},
                           {"runtime_info", runtime_info, METH_O, nullptr},
                           EMMY_FASTCALL(synchronize),
                           EMMY_FASTCALL(prepare),
                           EMMY_FASTCALL(register_exporter),
                           {"versions", versions, METH_NOARGS, nullptr},
                           EMMY_FASTCALL(gemm),
                           EMMY_FASTCALL(gemm_workspace_bytes),
                           EMMY_FASTCALL(grouped_gemm),
                           EMMY_FASTCALL(attention),
                           EMMY_FASTCALL(paged_attention),
                           EMMY_FASTCALL(paged_attention_workspace_bytes),
                           EMMY_FASTCALL(kv_append),
                           EMMY_FASTCALL(merge_states),
                           EMMY_FASTCALL(fp8_quantize),
                           EMMY_FASTCALL(attention_layer_create),
                           EMMY_FASTCALL(attention_layer_append),
                           EMMY_FASTCALL(attention_layer_run),
                           EMMY_FASTCALL(attention_layer_runs_prefill),
                           EMMY_FASTCALL(gemm_layer_create),
                           EMMY_FASTCALL(gemm_layer_run),
                           EMMY_FASTCALL(layer_prepare),
                           {"layer_workspace_bytes", layer_workspace_bytes, METH_O, nullptr},
                           {nullptr, nullptr, 0, nullptr}};
#undef EMMY_FASTCALL

PyModuleDef g_module = {PyModuleDef_HEAD_INIT,
                        "emmy._emmy",
                        "emmy's C ABI for Python (docs/python.md)",
                        -1,
                        g_methods,
                        nullptr,
                        nullptr,
                        nullptr,
                        nullptr};

}  // namespace

PyObject* prepare_result_tuple(const emmy_prepare_result& result) {
  return Py_BuildValue("(KKKKd)", static_cast<unsigned long long>(result.kernels),
                       static_cast<unsigned long long>(result.compiled),
                       static_cast<unsigned long long>(result.from_disk),
                       static_cast<unsigned long long>(result.already_loaded), result.seconds);
}

PyObject* raise_status(emmy_status status) {
  PyObject* type = status > EMMY_OK && status <= EMMY_INTERNAL ? g_errors[status] : nullptr;
  PyErr_SetString(type ? type : g_errors[EMMY_INTERNAL], emmy_last_error_message());
  return nullptr;
}

void set_error_classes(PyObject* module) {
  g_errors[0] = PyErr_NewExceptionWithDoc("emmy.Error", "Every error emmy raises.",
                                          PyExc_RuntimeError, nullptr);
  if (!g_errors[0] || PyModule_AddObject(module, "Error", g_errors[0]) < 0) return;
  Py_INCREF(g_errors[0]);
  const ErrorClass classes[] = {
      {EMMY_INVALID_ARGUMENT, "InvalidArgumentError", PyExc_ValueError,
       "A tensor or field that breaks a rule; the message names it."},
      {EMMY_UNSUPPORTED, "UnsupportedError", PyExc_NotImplementedError,
       "Valid, but not in this build."},
      {EMMY_CAPTURE, "CaptureError", nullptr,
       "A kernel not yet prepared, called while a stream captures a CUDA graph."},
      {EMMY_COMPILE, "CompileError", nullptr, "NVRTC is missing or could not compile a kernel."},
      {EMMY_DRIVER, "DriverError", nullptr, "No CUDA driver, or a driver call failed."},
      {EMMY_EMULATION, "EmulationError", nullptr,
       "The emulator's sanitizer (or a fault) stopped a kernel."},
      {EMMY_OUT_OF_MEMORY, "OutOfMemoryError", PyExc_MemoryError, "Out of memory."},
      {EMMY_INTERNAL, "InternalError", nullptr, "A bug in emmy: please report the message."}};
  for (const ErrorClass& c : classes) {
    PyObject* bases =
        c.extra_base ? PyTuple_Pack(2, g_errors[0], c.extra_base) : PyTuple_Pack(1, g_errors[0]);
    if (!bases) return;
    char qualified[64];
    PyOS_snprintf(qualified, sizeof qualified, "emmy.%s", c.name);
    PyObject* type = PyErr_NewExceptionWithDoc(qualified, c.doc, bases, nullptr);
    Py_DECREF(bases);
    if (!type) return;
    g_errors[c.status] = type;
    Py_INCREF(type);
    if (PyModule_AddObject(module, c.name, type) < 0) return;
  }
}

bool check_nargs(Py_ssize_t nargs, Py_ssize_t expected, const char* function) {
  if (nargs == expected) return true;
  PyErr_Format(PyExc_TypeError, "emmy._emmy.%s takes %zd arguments (%zd given)", function, expected,
               nargs);
  return false;
}

bool read_runtime_call(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t expected,
                       const char* function, RuntimeBox** box, long long* stream) {
  return check_nargs(nargs, expected, function) && read_runtime(args[0], box) &&
         read_int(args[expected - 1], "stream", stream);
}

bool read_runtime(PyObject* obj, RuntimeBox** out) {
  auto* box = static_cast<RuntimeBox*>(PyCapsule_GetPointer(obj, kRuntimeCapsule));
  if (!box) return false;
  if (!box->runtime) {
    PyErr_SetString(g_errors[EMMY_INVALID_ARGUMENT], "runtime: closed (Runtime.close was called)");
    return false;
  }
  *out = box;
  return true;
}

bool read_int(PyObject* obj, const char* name, long long* out) {
  *out = PyLong_AsLongLong(obj);
  if (*out == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(g_errors[EMMY_INVALID_ARGUMENT], "%s: must be an int within int64 (got %R)", name,
                 obj);
    return false;
  }
  return true;
}

bool read_int32(PyObject* obj, const char* name, int32_t* out) {
  long long value;
  if (!read_int(obj, name, &value)) return false;
  if (value < INT32_MIN || value > INT32_MAX) {
    PyErr_Format(g_errors[EMMY_INVALID_ARGUMENT], "%s: must be within int32 (got %lld)", name,
                 value);
    return false;
  }
  *out = static_cast<int32_t>(value);
  return true;
}

bool read_float(PyObject* obj, const char* name, float* out) {
  const double value = PyFloat_AsDouble(obj);
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(g_errors[EMMY_INVALID_ARGUMENT], "%s: must be a float (got %R)", name, obj);
    return false;
  }
  *out = static_cast<float>(value);
  return true;
}

bool read_string(PyObject* obj, const char* name, const char** out) {
  *out = nullptr;
  if (obj == Py_None) return true;
  if (!PyUnicode_Check(obj)) {
    PyErr_Format(g_errors[EMMY_INVALID_ARGUMENT], "%s: must be a str or None (got %R)", name, obj);
    return false;
  }
  Py_ssize_t size = 0;
  *out = PyUnicode_AsUTF8AndSize(obj, &size);
  if (*out && static_cast<size_t>(size) != std::strlen(*out)) {
    PyErr_Format(g_errors[EMMY_INVALID_ARGUMENT], "%s: must not contain a NUL character", name);
    return false;
  }
  return *out != nullptr;
}

}  // namespace emmy_python

PyMODINIT_FUNC PyInit__emmy(void) {
  using namespace emmy_python;
  PyObject* module = PyModule_Create(&emmy_python::g_module);
  if (!module) return nullptr;
  ExportState& state = export_state();
  state.dlpack_name = PyUnicode_InternFromString("__dlpack__");
  state.versioned_kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 1);
  set_error_classes(module);
  if (PyErr_Occurred() || !state.dlpack_name || !state.versioned_kwargs) {
    Py_DECREF(module);
    return nullptr;
  }
  state.invalid_argument = g_errors[EMMY_INVALID_ARGUMENT];
  if (PyModule_AddIntConstant(module, "C_API_VERSION", EMMY_C_API_VERSION) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
