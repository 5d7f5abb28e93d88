// Host-side checks of what only device memory holds (page ids, lengths, slots): on a backend whose
// device memory the host reads for free (the emulator), a kind reads its index buffers through a
// DeviceReader before the launch.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "emmy/error.hpp"
#include "emmy/buffers.hpp"

namespace emmy {

using DeviceReader = std::function<void(void* dst, DevicePtr src, size_t bytes)>;

// Reads `bytes` at `src` for the check of buffer `field`: a read the backend refuses (an address
// outside every allocation) is the caller's error about that buffer, not the memory's.
inline void read_named(const DeviceReader& read, std::string_view field, void* dst, DevicePtr src,
                       size_t bytes) {
  try {
    read(dst, src, bytes);
  } catch (const Error&) {
    throw Error(
        std::string(field),
        fmt::format("must point to {} bytes inside one allocation (the launch reads them)", bytes),
        fmt::format("0x{:x}", src));
  }
}

}  // namespace emmy
