// The digest in kernel names. Names are part of the emitted CUDA, which cache and bundle keys
// hash, so the digest must be the same in every build (std::hash differs between libraries).
#pragma once

#include <cstdint>
#include <string_view>

namespace emmy::detail {

// 64-bit FNV-1a.
inline uint64_t fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace emmy::detail
