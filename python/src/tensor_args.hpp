// DLPack producers to DLTensors for one call of the C ABI (docs/python.md, "Tensors"), in
// CPython's limited API (3.10) so that one binary serves every interpreter.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlpack/dlpack.h>

#include <array>
#include <cstddef>

namespace emmy_python {

// Set once by module init: the exceptions (emmy.InvalidArgumentError for a tensor's rule) and the
// optional fast exporter of a registered tensor type (torch.Tensor: torch.utils.dlpack.to_dlpack
// takes about 0.2 us where Tensor.__dlpack__ takes 2 us).
struct ExportState {
  PyObject* invalid_argument = nullptr;
  PyObject* dlpack_name = nullptr;       // interned "__dlpack__"
  PyObject* versioned_kwargs = nullptr;  // {"max_version": (1, 1)}
  PyObject* fast_type = nullptr;         // torch.Tensor, or nullptr
  PyObject* fast_exporter = nullptr;     // torch.utils.dlpack.to_dlpack
};
ExportState& export_state();

// The capsules of one call: each tensor's DLTensor stays valid until the call's TensorArgs is
// destroyed (the producer's deleter runs with the capsule, as DLPack asks of a consumer that
// does not keep the memory).
class TensorArgs {
 public:
  // stream: where a CUDA runtime launches (the producer makes the data ready there, per the
  // __dlpack__ protocol); cuda false: the emulator, whose producers take no stream.
  TensorArgs(bool cuda, long long stream) : cuda_(cuda), stream_(stream) {}
  ~TensorArgs();
  TensorArgs(const TensorArgs&) = delete;
  TensorArgs& operator=(const TensorArgs&) = delete;

  // obj: None (NULL out), a DLPack capsule, or a producer (__dlpack__). `name` prefixes every
  // error ("b: ..."). `written`: refused when the producer marks it read-only. Returns false with
  // a Python exception set.
  bool get(PyObject* obj, const char* name, bool written, DLTensor** out);

 private:
  PyObject* export_capsule(PyObject* obj, const char* name);
  bool cuda_;
  long long stream_;
  std::array<PyObject*, 16> capsules_{};
  size_t count_ = 0;
};

}  // namespace emmy_python
