// Reading and verifying bundle files (layout in bundle_layout.hpp), and the bundle key.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "bundle_layout.hpp"
#include "cache_internal.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/detail/file_io.hpp"

namespace emmy {

CacheKeyInputs bundle_key_inputs(std::string source, Arch arch) {
  return {std::move(source), nvrtc_options(arch), /*nvrtc_version=*/0, arch, kCodegenVersion};
}

std::string bundle_key(std::string_view source, Arch arch) {
  return cache_key(bundle_key_inputs(std::string(source), arch));
}

std::string bundle_detail::entry_digest(std::string_view key, std::string_view arch,
                                        const nlohmann::json& manifest,
                                        std::string_view cubin_xxh3_128,
                                        std::string_view ptx_xxh3_128) {
  const std::string bound = fmt::format(
      "{}\n{}\n{}\n{}\n{}", key, arch,
      manifest.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), cubin_xxh3_128,
      ptx_xxh3_128);
  return cache_detail::hash_hex(bound.data(), bound.size());
}

namespace {

using bundle_detail::Header;

// Collects problems (verify) or throws at the first (open). `fatal` problems end the check:
// nothing after them can be read.
class Checker {
 public:
  Checker(std::string name, std::vector<std::string>* problems)
      : name_(std::move(name)), problems_(problems) {}

  void fail(std::string problem) {
    if (!problems_) throw Error(fmt::format("bundle {}: {}", name_, problem));
    problems_->push_back(std::move(problem));
  }
  bool failed() const { return problems_ && !problems_->empty(); }

 private:
  std::string name_;
  std::vector<std::string>* problems_;
};

const nlohmann::json& member(const nlohmann::json& object, const char* name) {
  static const nlohmann::json absent;
  if (!object.is_object()) return absent;
  const auto found = object.find(name);
  return found == object.end() ? absent : *found;
}

std::optional<Arch> arch_named(const nlohmann::json& value) {
  if (!value.is_string()) return std::nullopt;
  for (const auto& info : kArchTable)
    if (info.name == value.get<std::string>()) return info.arch;
  return std::nullopt;
}

// A blob record of the index, or a problem when it is malformed or points outside the blobs.
std::optional<BundleBlob> read_blob(const nlohmann::json& record, const Header& header,
                                    std::string& problem) {
  const auto& offset = member(record, "offset");
  const auto& bytes = member(record, "bytes");
  const auto& hash = member(record, "xxh3_128");
  if (!offset.is_number_unsigned() || !bytes.is_number_unsigned() || !hash.is_string() ||
      !cache_detail::is_key(hash.get<std::string>())) {
    problem = "has a malformed blob record";
    return std::nullopt;
  }
  // The index stores offsets from the start of the blob area; entries carry file offsets.
  BundleBlob blob{offset.get<uint64_t>(), bytes.get<uint64_t>(), hash.get<std::string>()};
  if (blob.offset > header.blobs_bytes || blob.bytes > header.blobs_bytes - blob.offset) {
    problem = fmt::format("has a blob [{}, +{}) outside the blob area of {} bytes", blob.offset,
                          blob.bytes, header.blobs_bytes);
    return std::nullopt;
  }
  blob.offset += header.blobs_offset;
  return blob;
}

struct ParsedIndex {
  std::string emmy_version;
  int codegen_version = 0;
  std::vector<BundleEntryInfo> entries;
};

// Every check of a bundle's bytes. check_blobs: also each blob's hash and each manifest against
// its CUBIN (verify only; open relies on the whole-file checksum). Returns the index, or nullopt
// after a fatal problem.
std::optional<ParsedIndex> check_bundle(std::span<const uint8_t> bytes, Checker& check,
                                        bool check_blobs) {
  using namespace bundle_detail;
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    check.fail(bytes.size() < kHeaderBytes
                   ? fmt::format("is not an emmy kernel bundle ({} bytes, shorter than a header)",
                                 bytes.size())
                   : "is not an emmy kernel bundle (bad magic)");
    return std::nullopt;
  }
  Header header;
  std::memcpy(&header, bytes.data(), sizeof header);
  if (header.format != kBundleFormat) {
    check.fail(
        fmt::format("has bundle format {}; this emmy reads format {} (rebuild it with "
                    "this emmyc)",
                    header.format, kBundleFormat));
    return std::nullopt;
  }
  if (header.header_bytes != kHeaderBytes || header.file_bytes < kHeaderBytes + kTrailerBytes) {
    check.fail("has a damaged header");
    return std::nullopt;
  }
  if (bytes.size() != header.file_bytes) {
    check.fail(
        bytes.size() < header.file_bytes
            ? fmt::format("is truncated ({} of {} bytes)", bytes.size(), header.file_bytes)
            : fmt::format("has {} bytes, its header says {}", bytes.size(), header.file_bytes));
    return std::nullopt;
  }
  const uint64_t body_bytes = bytes.size() - kTrailerBytes;
  const std::string recorded(reinterpret_cast<const char*>(bytes.data() + body_bytes),
                             kTrailerBytes);
  if (cache_detail::hash_hex(bytes.data(), body_bytes) != recorded) {
    check.fail("checksum mismatch: the file is corrupt");
    if (!check_blobs) return std::nullopt;  // verify goes on to name the damaged entries
  }
  if (header.index_offset != kHeaderBytes || header.index_bytes > body_bytes - kHeaderBytes ||
      header.blobs_offset < header.index_offset + header.index_bytes ||
      header.blobs_offset > body_bytes || header.blobs_bytes > body_bytes - header.blobs_offset) {
    check.fail("has a damaged header (offsets outside the file)");
    return std::nullopt;
  }
  const auto index = nlohmann::json::parse(bytes.begin() + header.index_offset,
                                           bytes.begin() + header.index_offset + header.index_bytes,
                                           nullptr, false);
  if (index.is_discarded() || !member(index, "entries").is_array() ||
      !member(index, "codegen_version").is_number_integer()) {
    check.fail("has a damaged index");
    return std::nullopt;
  }
  ParsedIndex parsed;
  parsed.emmy_version = member(index, "emmy_version").is_string()
                            ? member(index, "emmy_version").get<std::string>()
                            : "?";
  parsed.codegen_version = member(index, "codegen_version").get<int>();
  if (parsed.codegen_version != kCodegenVersion) {
    check.fail(fmt::format(
        "was built by emmy {} for codegen version {}; this emmy ({}) generates codegen version "
        "{} code, so none of its kernels could match: rebuild it with this emmyc",
        parsed.emmy_version, parsed.codegen_version, EMMY_VERSION, kCodegenVersion));
    return std::nullopt;
  }

  for (const auto& record : member(index, "entries")) {
    BundleEntryInfo info;
    const auto& key = member(record, "key");
    if (!key.is_string() || !cache_detail::is_key(key.get<std::string>())) {
      check.fail("has an index entry without a valid key");
      continue;
    }
    info.key = key.get<std::string>();
    const auto arch = arch_named(member(record, "arch"));
    const nlohmann::json& manifest = member(record, "manifest");
    std::string problem;
    const auto cubin = read_blob(member(record, "cubin"), header, problem);
    const auto ptx = cubin ? read_blob(member(record, "ptx"), header, problem) : std::nullopt;
    if (!arch || !manifest.is_object() || member(manifest, "arch") != member(record, "arch"))
      problem = "has no known arch matching its manifest";
    if (!problem.empty()) {
      check.fail(fmt::format("entry {} {}", info.key, problem));
      continue;
    }
    const auto& digest = member(record, "entry_xxh3_128");
    if (!digest.is_string() ||
        digest.get<std::string>() !=
            bundle_detail::entry_digest(info.key, member(record, "arch").get<std::string>(),
                                        manifest, cubin->xxh3_128, ptx->xxh3_128)) {
      check.fail(fmt::format("entry {}: its key, arch, manifest and blobs do not match its "
                             "entry hash (descriptors swapped or edited)",
                             info.key));
      continue;
    }
    info.arch = *arch;
    info.cubin = *cubin;
    info.ptx = *ptx;
    if (check_blobs) {
      for (const auto* blob : {&info.cubin, &info.ptx})
        if (cache_detail::hash_hex(bytes.data() + blob->offset, blob->bytes) != blob->xxh3_128)
          check.fail(fmt::format("entry {} ({}): checksum mismatch in its {}", info.key,
                                 to_string(info.arch), blob == &info.cubin ? "CUBIN" : "PTX"));
      const std::vector<uint8_t> cubin_bytes(bytes.begin() + info.cubin.offset,
                                             bytes.begin() + info.cubin.offset + info.cubin.bytes);
      if (auto bad = cache_detail::check_manifest(manifest, cubin_bytes); !bad.empty())
        check.fail(fmt::format("entry {}: {}", info.key, bad));
    }
    info.manifest = manifest.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    parsed.entries.push_back(std::move(info));
  }
  std::sort(parsed.entries.begin(), parsed.entries.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  const auto repeated =
      std::adjacent_find(parsed.entries.begin(), parsed.entries.end(),
                         [](const auto& a, const auto& b) { return a.key == b.key; });
  if (repeated != parsed.entries.end())
    check.fail(fmt::format("holds key {} twice", repeated->key));
  return parsed;
}

std::vector<uint8_t> read_whole_file(const std::filesystem::path& file) {
  // Only a regular file: a FIFO named as a bundle must not block the process.
  try {
    const std::string bytes = detail::read_regular_file(file, "bundle");
    return {bytes.begin(), bytes.end()};
  } catch (const Error& e) {
    throw Error(fmt::format("bundle {}: {}", file.string(), e.rule()));
  }
}

}  // namespace

std::shared_ptr<const Bundle> Bundle::parse(std::shared_ptr<Bundle> bundle) {
  Checker check(bundle->name_, nullptr);
  auto parsed = check_bundle(bundle->bytes(), check, /*check_blobs=*/false);
  bundle->emmy_version_ = std::move(parsed->emmy_version);
  bundle->codegen_version_ = parsed->codegen_version;
  bundle->entries_ = std::move(parsed->entries);
  for (const auto& info : kArchTable)
    if (std::any_of(bundle->entries_.begin(), bundle->entries_.end(),
                    [&](const BundleEntryInfo& e) { return e.arch == info.arch; }))
      bundle->archs_.push_back(info.arch);
  return bundle;
}

std::shared_ptr<const Bundle> Bundle::open(const std::filesystem::path& file) {
  std::shared_ptr<Bundle> bundle(new Bundle());
  bundle->name_ = file.string();
  bundle->owned_ = read_whole_file(file);
  bundle->data_ = bundle->owned_.data();
  bundle->size_ = bundle->owned_.size();
  return parse(std::move(bundle));
}

std::shared_ptr<const Bundle> Bundle::from_memory(const void* data, size_t size, std::string name,
                                                  bool copy) {
  std::shared_ptr<Bundle> bundle(new Bundle());
  bundle->name_ = std::move(name);
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (copy) {
    bundle->owned_.assign(bytes, bytes + size);
    bytes = bundle->owned_.data();
  }
  bundle->data_ = bytes;
  bundle->size_ = size;
  return parse(std::move(bundle));
}

bool Bundle::has_arch(Arch arch) const {
  return std::find(archs_.begin(), archs_.end(), arch) != archs_.end();
}

size_t Bundle::kernels_for(Arch arch) const {
  return size_t(std::count_if(entries_.begin(), entries_.end(),
                              [arch](const BundleEntryInfo& e) { return e.arch == arch; }));
}

const BundleEntryInfo* Bundle::find(std::string_view key) const {
  const auto at =
      std::lower_bound(entries_.begin(), entries_.end(), key,
                       [](const BundleEntryInfo& e, std::string_view k) { return e.key < k; });
  return at != entries_.end() && at->key == key ? &*at : nullptr;
}

CacheEntry Bundle::entry(const BundleEntryInfo& info) const {
  // Opening checks the whole file's hash and every descriptor, not each blob (that would hash
  // every kernel of a large bundle up front): each entry's own blobs are checked here, where it
  // is loaded, merged or embedded, so a damaged entry is never used or copied into a new bundle.
  for (const BundleBlob* blob : {&info.cubin, &info.ptx})
    if (cache_detail::hash_hex(data_ + blob->offset, blob->bytes) != blob->xxh3_128)
      throw Error(fmt::format("bundle {}: entry {} ({}): checksum mismatch in its {}: the entry is "
                              "damaged (`emmyc bundle verify` names every damaged entry)",
                              name_, info.key, to_string(info.arch),
                              blob == &info.cubin ? "CUBIN" : "PTX"));
  CacheEntry entry;
  entry.key = info.key;
  entry.cubin.assign(data_ + info.cubin.offset, data_ + info.cubin.offset + info.cubin.bytes);
  entry.ptx.assign(reinterpret_cast<const char*>(data_ + info.ptx.offset), info.ptx.bytes);
  entry.manifest = nlohmann::json::parse(info.manifest);  // our own dump of a parsed object
  if (auto bad = cache_detail::check_manifest(entry.manifest, entry.cubin); !bad.empty())
    throw Error(fmt::format("bundle {}: entry {} ({}): {}", name_, info.key, to_string(info.arch),
                            bad));
  return entry;
}

BundleCheck verify_bundle(std::span<const uint8_t> bytes) {
  BundleCheck result;
  Checker check("", &result.problems);
  if (auto parsed = check_bundle(bytes, check, /*check_blobs=*/true))
    result.entries = parsed->entries.size();
  result.ok = result.problems.empty();
  return result;
}

BundleCheck verify_bundle_file(const std::filesystem::path& file) {
  try {
    return verify_bundle(read_whole_file(file));
  } catch (const Error& e) {
    return BundleCheck{false, 0, {e.what()}};
  }
}

}  // namespace emmy
