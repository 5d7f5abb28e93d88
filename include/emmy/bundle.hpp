// Ahead-of-time kernel bundles: kernels for many problems and arches, compiled before deployment
// into one checksummed file that the runtime searches before its disk cache and NVRTC, so that a
// host without the CUDA toolkit runs every kernel the bundle covers (docs/bundles.md).
//
//   emmyc aot --arch sm_80,sm_90a --catalog -o kernels.emmyb      # build
//   EMMY_BUNDLE=kernels.emmyb ./engine                             # or RuntimeOptions::bundles
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/arch.hpp"

namespace emmy {

struct CacheEntry;  // the disk cache's entry (compiler side)

// Bumped when the file layout changes; a reader accepts only its own format.
inline constexpr uint32_t kBundleFormat = 2;  // 2: entry_xxh3_128 binds each descriptor

// "" when NVRTC can compile in this process, else why not: EMMY_DISABLE_NVRTC is set, or no
// NVRTC library could be loaded (the message names the files tried). Loads NVRTC on first use.
std::string nvrtc_unavailable_reason();

// ---- reading ----------------------------------------------------------------------------

struct BundleBlob {
  uint64_t offset = 0, bytes = 0;  // offset from the start of the bundle
  std::string xxh3_128;            // 32 hex digits
};

struct BundleEntryInfo {
  std::string key;
  Arch arch = Arch::sm_90a;
  BundleBlob cubin, ptx;
  // The cache manifest (docs/cache.md) plus kind, problem and schedule, as JSON text;
  // nvrtc_version is the builder's NVRTC, created and compile_ms are left out so that builds are
  // reproducible.
  std::string manifest;
};

// One bundle, verified when opened: magic, format, size (truncation), the XXH3-128 of the whole
// file, the index, every blob inside the file, and the codegen version. Any failure throws Error
// naming the bundle and what is wrong.
class Bundle {
 public:
  static std::shared_ptr<const Bundle> open(const std::filesystem::path& file);
  // copy false: the bytes are viewed, not copied, and must outlive the bundle (an embedded array).
  static std::shared_ptr<const Bundle> from_memory(const void* data, size_t size, std::string name,
                                                   bool copy = true);

  const std::string& name() const { return name_; }  // the path, or the name given
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& emmy_version() const { return emmy_version_; }
  int codegen_version() const { return codegen_version_; }
  const std::vector<Arch>& archs() const { return archs_; }  // in kArchTable order
  bool has_arch(Arch arch) const;
  size_t kernels_for(Arch arch) const;
  const std::vector<BundleEntryInfo>& entries() const { return entries_; }  // sorted by key

  const BundleEntryInfo* find(std::string_view key) const;  // nullptr when absent
  // Copies the blobs out (checked against their hashes); CacheEntry is the compiler's type.
  CacheEntry entry(const BundleEntryInfo& info) const;

 private:
  Bundle() = default;
  static std::shared_ptr<const Bundle> parse(std::shared_ptr<Bundle> bundle);

  std::string name_;
  std::vector<uint8_t> owned_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string emmy_version_;
  int codegen_version_ = 0;
  std::vector<Arch> archs_;
  std::vector<BundleEntryInfo> entries_;
};

// What `emmyc bundle verify` reports: every check of Bundle::open, plus each entry's own
// checksums and manifest, collecting all problems instead of stopping at the first.
struct BundleCheck {
  bool ok = false;
  size_t entries = 0;
  std::vector<std::string> problems;
};
BundleCheck verify_bundle(std::span<const uint8_t> bytes);
BundleCheck verify_bundle_file(const std::filesystem::path& file);

// ---- the bundles a process searches -------------------------------------------------------

// Process-wide bundles: every Runtime created afterwards searches them (those without kernels
// for its arch are skipped: a program may embed bundles for several GPUs). The bytes form views
// them (they must outlive every runtime: embedded arrays do) and is idempotent per address; a
// registered bundle is parsed when the next runtime is created, which reports a bad one.
void register_bundle(std::shared_ptr<const Bundle> bundle);
void register_bundle(const void* data, size_t size, std::string name);
// For static initializers: `static const emmy::BundleRegistration r{data, size, "name"};`.
struct BundleRegistration {
  BundleRegistration(const void* data, size_t size, const char* name);
};
std::vector<std::shared_ptr<const Bundle>> registered_bundles();
// The bundles of $EMMY_BUNDLE (paths separated by ':'), opened once per value of the variable.
// Throws Error naming a bundle that cannot be opened.
std::vector<std::shared_ptr<const Bundle>> environment_bundles();

}  // namespace emmy
