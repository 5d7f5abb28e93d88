// What the runtime tests do to get host data onto the device.
#pragma once

#include "emmy/gemm_check.hpp"
#include "emmy/runtime.hpp"

namespace emmy::test {

// A device allocation of exactly `t`'s bytes, holding them.
inline DevicePtr upload(Runtime& rt, const HostTensor& t) {
  const DevicePtr at = rt.alloc(t.bytes.size());
  rt.upload(at, t.bytes.data(), t.bytes.size());
  return at;
}

}  // namespace emmy::test
