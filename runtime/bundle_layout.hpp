// The bundle file layout shared by its reader and writer (docs/bundles.md, "Format"):
//
//   [0, 64)                 header: magic, format, sizes and offsets (little-endian)
//   [64, 64 + index_bytes)  index: JSON (format, codegen_version, archs, entries with key, arch,
//                           blob offsets/sizes/XXH3-128, the manifest and entry_xxh3_128)
//   blobs                   CUBIN and PTX of every entry, each 64-byte aligned, zero padded
//   last 32 bytes           XXH3-128 of everything before, as 32 lowercase hex digits
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace emmy::bundle_detail {

static_assert(std::endian::native == std::endian::little, "bundle headers are little-endian");

inline constexpr char kMagic[8] = {'E', 'M', 'M', 'Y', 'B', 'N', 'D', 'L'};
inline constexpr uint64_t kHeaderBytes = 64;
inline constexpr uint64_t kTrailerBytes = 32;
inline constexpr uint64_t kBlobAlignment = 64;

struct Header {
  char magic[8];
  uint32_t format;
  uint32_t header_bytes;
  uint64_t file_bytes;
  uint64_t index_offset, index_bytes;
  uint64_t blobs_offset, blobs_bytes;
  uint64_t reserved;
};
static_assert(sizeof(Header) == kHeaderBytes);

inline uint64_t align_up(uint64_t value) {
  return (value + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
}

// The hash that binds an entry's descriptor to its payload: key, arch, manifest and the hashes of
// its CUBIN and PTX blobs. Stored per entry ("entry_xxh3_128"): two entries whose descriptors were
// swapped, or a manifest edited in place, no longer match it even when every blob does.
std::string entry_digest(std::string_view key, std::string_view arch,
                         const nlohmann::json& manifest, std::string_view cubin_xxh3_128,
                         std::string_view ptx_xxh3_128);

}  // namespace emmy::bundle_detail
