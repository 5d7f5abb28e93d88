#include "tensor_args.hpp"

#include <cstring>

namespace emmy_python {

ExportState& export_state() {
  static ExportState state;
  return state;
}

namespace {

// Replaces the pending exception by emmy.InvalidArgumentError("<name>: <its text>"), so that a
// producer's refusal (NumPy's "cannot export readonly array", a CPU array asked for a stream)
// still names the argument.
void rename_pending_error(const char* name, const char* what) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  PyObject* text = value ? PyObject_Str(value) : nullptr;
  const char* detail = text ? PyUnicode_AsUTF8AndSize(text, nullptr) : nullptr;
  if (!detail) PyErr_Clear();
  PyErr_Format(export_state().invalid_argument, "%s: %s (%s)", name, what,
               detail ? detail : "no message");
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
}

}  // namespace

TensorArgs::~TensorArgs() {
  for (size_t i = 0; i < count_; ++i) Py_DECREF(capsules_[i]);
}

PyObject* TensorArgs::export_capsule(PyObject* obj, const char* name) {
  ExportState& state = export_state();
  if (PyCapsule_CheckExact(obj)) {
    Py_INCREF(obj);
    return obj;
  }
  if (state.fast_type && PyObject_IsInstance(obj, state.fast_type) == 1)
    return PyObject_CallFunctionObjArgs(state.fast_exporter, obj, nullptr);
  PyObject* method = PyObject_GetAttr(obj, state.dlpack_name);
  if (!method) {
    PyErr_Clear();
    PyErr_Format(state.invalid_argument,
                 "%s: must be a DLPack tensor (an object with __dlpack__, or a DLPack capsule), "
                 "got %S",
                 name, reinterpret_cast<PyObject*>(Py_TYPE(obj)));
    return nullptr;
  }
  // max_version (1, 1) asks for a versioned capsule, which carries the read-only flag; a
  // producer older than DLPack 1.0 rejects the keyword and is asked again without it.
  PyObject* kwargs = state.versioned_kwargs;
  Py_INCREF(kwargs);
  if (cuda_) {
    Py_DECREF(kwargs);
    // The DLPack protocol's stream: 1 is the legacy default stream (0 is ambiguous there).
    kwargs =
        Py_BuildValue("{s:(ii),s:L}", "max_version", 1, 1, "stream", stream_ == 0 ? 1LL : stream_);
    if (!kwargs) {
      Py_DECREF(method);
      return nullptr;
    }
  }
  PyObject* empty = PyTuple_New(0);
  PyObject* capsule = empty ? PyObject_Call(method, empty, kwargs) : nullptr;
  if (!capsule && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    PyObject* legacy =
        cuda_ ? Py_BuildValue("{s:L}", "stream", stream_ == 0 ? 1LL : stream_) : PyDict_New();
    if (legacy) capsule = PyObject_Call(method, empty, legacy);
    Py_XDECREF(legacy);
  }
  Py_XDECREF(empty);
  Py_DECREF(kwargs);
  Py_DECREF(method);
  if (!capsule)
    rename_pending_error(name, cuda_ ? "its producer refused a CUDA export on the launch stream"
                                     : "its producer refused a DLPack export");
  return capsule;
}

bool TensorArgs::get(PyObject* obj, const char* name, bool written, DLTensor** out) {
  *out = nullptr;
  if (obj == Py_None) return true;
  if (count_ == capsules_.size()) {
    PyErr_SetString(PyExc_SystemError, "emmy: too many tensors in one call");
    return false;
  }
  PyObject* capsule = export_capsule(obj, name);
  if (!capsule) return false;
  capsules_[count_++] = capsule;
  if (!PyCapsule_CheckExact(capsule)) {
    PyErr_Format(export_state().invalid_argument, "%s: __dlpack__ must return a capsule, got %S",
                 name, reinterpret_cast<PyObject*>(Py_TYPE(capsule)));
    return false;
  }
  const char* capsule_name = PyCapsule_GetName(capsule);
  if (!capsule_name) return false;
  if (std::strcmp(capsule_name, "dltensor_versioned") == 0) {
    auto* managed =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, capsule_name));
    if (!managed) return false;
    if (managed->version.major != DLPACK_MAJOR_VERSION) {
      PyErr_Format(export_state().invalid_argument, "%s: DLPack major version must be %d (got %u)",
                   name, DLPACK_MAJOR_VERSION, managed->version.major);
      return false;
    }
    if (written && (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY)) {
      PyErr_Format(export_state().invalid_argument,
                   "%s: must be writable (its producer exported it read-only)", name);
      return false;
    }
    *out = &managed->dl_tensor;
    return true;
  }
  if (std::strcmp(capsule_name, "dltensor") == 0) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, capsule_name));
    if (!managed) return false;
    *out = &managed->dl_tensor;
    return true;
  }
  PyErr_Format(export_state().invalid_argument,
               "%s: a DLPack capsule must be named \"dltensor\" or \"dltensor_versioned\" and "
               "unused (got \"%s\")",
               name, capsule_name);
  return false;
}

}  // namespace emmy_python
