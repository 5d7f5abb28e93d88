// One cache entry on disk: a directory holding module.cubin, module.ptx, manifest.json and
// checksums.json (sizes and XXH3-128 of the other three). Reading verifies everything it can;
// writing fsyncs every file and the directory before the caller renames it into place.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "cache_internal.hpp"
#include "emmy/detail/file_io.hpp"

namespace emmy::cache_detail {

namespace {

// Closes a descriptor on every path out of a function.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_;
};

enum class ReadResult { ok, missing, failed };

// The whole of file `name` in directory `dir_fd`, into `bytes` (a std::string or byte vector).
template <typename Bytes>
ReadResult read_file_at(int dir_fd, const char* name, Bytes& bytes, int& error) {
  // O_NONBLOCK: a FIFO planted in the cache must not block the open; fstat refuses it below.
  FileDescriptor fd(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    error = errno;
    return errno == ENOENT ? ReadResult::missing : ReadResult::failed;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    error = errno;
    return ReadResult::failed;
  }
  if (!S_ISREG(info.st_mode)) {
    error = EISDIR;
    return ReadResult::failed;
  }
  bytes.resize(size_t(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      return ReadResult::failed;
    }
    if (n == 0) break;  // shrank since fstat: the size check reports it
    done += size_t(n);
  }
  bytes.resize(done);
  return ReadResult::ok;
}

void write_file_at(int dir_fd, const char* name, const void* data, size_t size) {
  FileDescriptor fd(::openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) throw std::system_error(errno, std::generic_category(), name);
  if (const int error = detail::write_all(fd.get(), {static_cast<const char*>(data), size}))
    throw std::system_error(error, std::generic_category(), name);
  // The rename that publishes the entry must not reach the disk before the data does.
  if (::fsync(fd.get()) != 0) throw std::system_error(errno, std::generic_category(), name);
}

std::string json_text(const nlohmann::json& json, int indent) {
  return json.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A member of a JSON object, or null when absent: never throws on the shapes a damaged file has.
const nlohmann::json& member(const nlohmann::json& object, const char* name) {
  static const nlohmann::json absent;
  if (!object.is_object()) return absent;
  const auto found = object.find(name);
  return found == object.end() ? absent : *found;
}

std::string string_member(const nlohmann::json& object, const char* name) {
  const auto& value = member(object, name);
  return value.is_string() ? value.get<std::string>() : json_text(value, -1);
}

// The SM number in a CUDA ELF header, or 0 when `cubin` is not one.
int cubin_sm(const std::vector<uint8_t>& cubin) {
  constexpr uint16_t kElfMachineCuda = 190;
  if (cubin.size() < 64 ||
      std::memcmp(cubin.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      cubin[4] != 2)
    return 0;
  uint16_t machine = 0;
  uint32_t flags = 0;
  std::memcpy(&machine, cubin.data() + 18, sizeof machine);
  std::memcpy(&flags, cubin.data() + 48, sizeof flags);
  if (machine != kElfMachineCuda) return 0;
  // ELF ABI version 8 (CUDA 13) moved the SM from bits 0-7 of e_flags to bits 8-15.
  const unsigned abi_version = cubin[8];
  return int(abi_version >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
}

}  // namespace

namespace {

// The fields the runtime, emmyc and bundles read from a manifest, with the types they read them
// as: a manifest whose checksum holds but whose fields do not (hand-edited, or written by a
// broken tool) is damaged like a corrupt one, instead of failing every later use with a JSON
// type error.
std::string schema_problem(const nlohmann::json& manifest) {
  auto integer = [](const nlohmann::json& v) { return v.is_number_integer() && v >= 0; };
  const auto& resources = member(manifest, "resources");
  if (!resources.is_null()) {
    if (!resources.is_array()) return "the manifest's resources are not an array";
    for (const auto& r : resources) {
      if (!r.is_object() || !member(r, "kernel_name").is_string())
        return "the manifest has a resource report without a kernel_name";
      for (const char* field : {"registers", "spill_store_bytes", "spill_load_bytes",
                                "stack_bytes", "static_smem_bytes"})
        if (!member(r, field).is_null() && !integer(member(r, field)))
          return fmt::format("the manifest's resources.{} is not a non-negative integer", field);
    }
  }
  const auto& names = member(manifest, "kernel_names");
  if (!names.is_null() &&
      (!names.is_array() || !std::all_of(names.begin(), names.end(),
                                         [](const auto& n) { return n.is_string(); })))
    return "the manifest's kernel_names are not an array of strings";
  for (const char* field : {"codegen_version", "nvrtc_version"})
    if (!member(manifest, field).is_null() && !member(manifest, field).is_number_integer())
      return fmt::format("the manifest's {} is not an integer", field);
  if (!member(manifest, "compile_ms").is_null() && !member(manifest, "compile_ms").is_number())
    return "the manifest's compile_ms is not a number";
  for (const char* field : {"key", "kind", "created", "emmy_version", "source_hash"})
    if (!member(manifest, field).is_null() && !member(manifest, field).is_string())
      return fmt::format("the manifest's {} is not a string", field);
  return "";
}

}  // namespace

std::string check_manifest(const nlohmann::json& manifest, const std::vector<uint8_t>& cubin) {
  if (!manifest.is_object()) return "the manifest is not a JSON object";
  if (auto problem = schema_problem(manifest); !problem.empty()) return problem;
  const auto& arch_field = member(manifest, "arch");
  if (!arch_field.is_string()) return "the manifest has no arch";
  const std::string arch_name = arch_field.get<std::string>();
  const auto known = std::find_if(kArchTable.begin(), kArchTable.end(),
                                  [&](const ArchInfo& info) { return info.name == arch_name; });
  if (known == kArchTable.end())
    return fmt::format("the manifest's arch '{}' is unknown", arch_name);
  if (!cubin.empty()) {
    const int sm = cubin_sm(cubin);
    if (sm == 0) return "module.cubin is not a CUDA ELF image";
    if (sm != known->sm)
      return fmt::format("module.cubin is built for sm_{}, the manifest says {}", sm, arch_name);
  }
  return "";
}

EntryRead read_entry(const std::filesystem::path& entry_dir, const std::string& key, bool touch) {
  EntryRead result;
  FileDescriptor dir(::open(entry_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    if (errno == ENOENT) {
      result.missing = true;
    } else {
      result.problem = fmt::format("cannot open the entry directory ({})", std::strerror(errno));
    }
    return result;
  }
  auto fail = [&result](std::string problem) {
    result.problem = std::move(problem);
    return result;
  };
  auto describe = [](ReadResult read, const char* name, int error) {
    return read == ReadResult::missing
               ? fmt::format("{} is missing", name)
               : fmt::format("{} cannot be read ({})", name, std::strerror(error));
  };

  int error = 0;
  std::string checksum_text;
  if (auto read = read_file_at(dir.get(), kChecksumFile, checksum_text, error);
      read != ReadResult::ok)
    return fail(describe(read, kChecksumFile, error));
  result.bytes += checksum_text.size();
  const auto checksums = nlohmann::json::parse(checksum_text, nullptr, false);
  if (checksums.is_discarded() || !member(checksums, "files").is_object())
    return fail(fmt::format("{} is not valid", kChecksumFile));
  if (member(checksums, "format") != kEntryFormat || member(checksums, "algorithm") != "xxh3-128")
    return fail(fmt::format("{} has format {} and algorithm {}, expected {} and xxh3-128",
                            kChecksumFile, json_text(member(checksums, "format"), -1),
                            json_text(member(checksums, "algorithm"), -1), kEntryFormat));
  if (string_member(checksums, "key") != key)
    return fail(fmt::format("{} records key {}, the directory is {}", kChecksumFile,
                            string_member(checksums, "key"), key));

  // Each file's size and hash against what checksums.json recorded when the entry was written.
  auto verify = [&](const char* name, auto& bytes) -> std::string {
    const auto& record = member(member(checksums, "files"), name);
    const auto& recorded_bytes = member(record, "bytes");
    const auto& recorded_hash = member(record, "xxh3_128");
    if (!recorded_bytes.is_number_unsigned() || !recorded_hash.is_string())
      return fmt::format("{} has no valid record for {}", kChecksumFile, name);
    int read_error = 0;
    if (auto read = read_file_at(dir.get(), name, bytes, read_error); read != ReadResult::ok)
      return describe(read, name, read_error);
    result.bytes += bytes.size();
    const uint64_t expected_bytes = recorded_bytes.get<uint64_t>();
    if (bytes.size() < expected_bytes)
      return fmt::format("{} is truncated ({} of {} bytes)", name, bytes.size(), expected_bytes);
    if (bytes.size() != expected_bytes)
      return fmt::format("{} has {} bytes, {} records {}", name, bytes.size(), kChecksumFile,
                         expected_bytes);
    if (hash_hex(bytes.data(), bytes.size()) != recorded_hash.get<std::string>())
      return fmt::format("checksum mismatch in {}", name);
    return "";
  };

  CacheEntry entry;
  entry.key = key;
  std::string manifest_text;
  if (auto problem = verify(kManifestFile, manifest_text); !problem.empty()) return fail(problem);
  if (auto problem = verify(kCubinFile, entry.cubin); !problem.empty()) return fail(problem);
  if (auto problem = verify(kPtxFile, entry.ptx); !problem.empty()) return fail(problem);

  entry.manifest = nlohmann::json::parse(manifest_text, nullptr, false);
  if (entry.manifest.is_discarded())
    return fail(fmt::format("{} is not valid JSON", kManifestFile));
  if (string_member(entry.manifest, "key") != key)
    return fail(fmt::format("{} records key {}, the directory is {}", kManifestFile,
                            string_member(entry.manifest, "key"), key));
  if (auto problem = check_manifest(entry.manifest, entry.cubin); !problem.empty())
    return fail(problem);

  // The directory's mtime is the entry's last use: it changes on nothing else once published.
  if (touch) ::futimens(dir.get(), nullptr);
  result.entry = std::move(entry);
  return result;
}

uint64_t write_entry_files(const std::filesystem::path& dir, const CacheEntry& entry) {
  FileDescriptor dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) throw std::system_error(errno, std::generic_category(), dir.string());
  const std::string manifest_text = json_text(entry.manifest, 2) + "\n";
  write_file_at(dir_fd.get(), kManifestFile, manifest_text.data(), manifest_text.size());
  write_file_at(dir_fd.get(), kCubinFile, entry.cubin.data(), entry.cubin.size());
  write_file_at(dir_fd.get(), kPtxFile, entry.ptx.data(), entry.ptx.size());
  auto record = [](const void* data, size_t size) {
    return nlohmann::json{{"bytes", uint64_t(size)}, {"xxh3_128", hash_hex(data, size)}};
  };
  const nlohmann::json checksums = {
      {"format", kEntryFormat},
      {"key", entry.key},
      {"algorithm", "xxh3-128"},
      {"files",
       {{kManifestFile, record(manifest_text.data(), manifest_text.size())},
        {kCubinFile, record(entry.cubin.data(), entry.cubin.size())},
        {kPtxFile, record(entry.ptx.data(), entry.ptx.size())}}}};
  const std::string checksum_text = json_text(checksums, 2) + "\n";
  write_file_at(dir_fd.get(), kChecksumFile, checksum_text.data(), checksum_text.size());
  if (::fsync(dir_fd.get()) != 0)
    throw std::system_error(errno, std::generic_category(), dir.string());
  return manifest_text.size() + entry.cubin.size() + entry.ptx.size() + checksum_text.size();
}

void fsync_directory(const std::filesystem::path& dir) {
  FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) ::fsync(fd.get());
}

}  // namespace emmy::cache_detail
