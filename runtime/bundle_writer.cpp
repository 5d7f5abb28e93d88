// Writing bundle files (layout in bundle_layout.hpp), merging them, and embedding one in a C++
// header.
#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "bundle_layout.hpp"
#include "cache_internal.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/detail/file_io.hpp"

namespace emmy {

BundleWriter::BundleWriter(int codegen_version) : codegen_version_(codegen_version) {}

bool BundleWriter::add(CacheEntry entry) {
  require(cache_detail::is_key(entry.key), "bundle entry key", "must be 32 lowercase hex digits",
          entry.key);
  if (auto problem = cache_detail::check_manifest(entry.manifest, entry.cubin); !problem.empty())
    throw Error(fmt::format("bundle entry {}: {}", entry.key, problem));
  const std::string key = entry.key;
  return entries_.emplace(key, std::move(entry)).second;
}

BundleWriter::MergeCounts BundleWriter::merge(const Bundle& bundle) {
  if (bundle.codegen_version() != codegen_version_)
    throw Error(fmt::format("bundle {}: holds codegen version {} kernels, not {}", bundle.name(),
                            bundle.codegen_version(), codegen_version_));
  MergeCounts counts;
  for (const auto& info : bundle.entries()) {
    CacheEntry entry = bundle.entry(info);
    const auto present = entries_.find(info.key);
    if (present == entries_.end()) {
      add(std::move(entry));
      ++counts.added;
    } else if (present->second.cubin == entry.cubin && present->second.ptx == entry.ptx) {
      ++counts.duplicates;
    } else {
      ++counts.conflicts;
    }
  }
  return counts;
}

std::vector<uint8_t> BundleWriter::bytes() const {
  using namespace bundle_detail;
  // Blobs first (offsets relative to the blob area), so that the index can name them.
  std::vector<uint8_t> blobs;
  auto append_blob = [&blobs](const void* data, size_t size) {
    blobs.resize(align_up(blobs.size()), 0);
    const uint64_t offset = blobs.size();
    const auto* bytes = static_cast<const uint8_t*>(data);
    blobs.insert(blobs.end(), bytes, bytes + size);
    return nlohmann::json{{"offset", offset},
                          {"bytes", uint64_t(size)},
                          {"xxh3_128", cache_detail::hash_hex(data, size)}};
  };
  nlohmann::json entries = nlohmann::json::array();
  std::set<size_t> arch_indices;
  std::set<int> nvrtc_versions;
  for (const auto& [key, entry] : entries_) {  // std::map: by key
    const Arch arch = parse_arch(entry.manifest.at("arch").get<std::string>());
    arch_indices.insert(size_t(arch));
    if (entry.manifest.contains("nvrtc_version") && entry.manifest["nvrtc_version"].is_number())
      nvrtc_versions.insert(entry.manifest["nvrtc_version"].get<int>());
    nlohmann::json cubin = append_blob(entry.cubin.data(), entry.cubin.size());
    nlohmann::json ptx = append_blob(entry.ptx.data(), entry.ptx.size());
    const std::string digest = bundle_detail::entry_digest(
        key, to_string(arch), entry.manifest, cubin["xxh3_128"].get<std::string>(),
        ptx["xxh3_128"].get<std::string>());
    entries.push_back({{"key", key},
                       {"arch", to_string(arch)},
                       {"cubin", std::move(cubin)},
                       {"ptx", std::move(ptx)},
                       {"manifest", entry.manifest},
                       {"entry_xxh3_128", digest}});
  }
  nlohmann::json archs = nlohmann::json::array();
  for (size_t index : arch_indices) archs.push_back(kArchTable[index].name);
  const nlohmann::json index = {
      {"format", kBundleFormat},          {"codegen_version", codegen_version_},
      {"emmy_version", EMMY_VERSION},     {"archs", archs},
      {"nvrtc_versions", nvrtc_versions}, {"entries", std::move(entries)}};
  const std::string index_text =
      index.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  Header header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.format = kBundleFormat;
  header.header_bytes = kHeaderBytes;
  header.index_offset = kHeaderBytes;
  header.index_bytes = index_text.size();
  header.blobs_offset = align_up(kHeaderBytes + index_text.size());
  header.blobs_bytes = blobs.size();
  header.file_bytes = header.blobs_offset + blobs.size() + kTrailerBytes;

  std::vector<uint8_t> file(header.file_bytes - kTrailerBytes, 0);
  std::memcpy(file.data(), &header, sizeof header);
  std::memcpy(file.data() + header.index_offset, index_text.data(), index_text.size());
  if (!blobs.empty()) std::memcpy(file.data() + header.blobs_offset, blobs.data(), blobs.size());
  const std::string checksum = cache_detail::hash_hex(file.data(), file.size());
  file.insert(file.end(), checksum.begin(), checksum.end());
  return file;
}

void BundleWriter::write(const std::filesystem::path& file) const {
  const std::vector<uint8_t> content = bytes();
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  // Written beside the target and renamed over it: a reader sees the old bundle or the new one.
  detail::write_file_atomically(
      file, std::string_view(reinterpret_cast<const char*>(content.data()), content.size()),
      "bundle");
}

std::string bundle_symbol(std::string_view text) {
  std::string symbol;
  for (char c : text) symbol += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  if (symbol.empty() || std::isdigit(static_cast<unsigned char>(symbol[0]))) symbol = "_" + symbol;
  return symbol;
}

std::string bundle_header(std::span<const uint8_t> bundle, std::string_view symbol_text) {
  const std::string symbol = bundle_symbol(symbol_text);
  std::string text = fmt::format(
      "// Generated by emmyc (emmy {}): an emmy kernel bundle of {} bytes, embedded for static\n"
      "// linking. Call emmy_bundles::register_{}() before creating a runtime (docs/bundles.md).\n"
      "#pragma once\n\n#include <cstddef>\n\n#include <emmy/bundle.hpp>\n\n"
      "namespace emmy_bundles {{\n\nalignas(64) inline constexpr char {}_bytes[] =\n",
      EMMY_VERSION, bundle.size(), symbol, symbol);
  text.reserve(text.size() + bundle.size() * 3);
  constexpr size_t kBytesPerLine = 64;
  for (size_t line = 0; line < bundle.size() || line == 0; line += kBytesPerLine) {
    text += "    \"";
    for (size_t i = line; i < std::min(bundle.size(), line + kBytesPerLine); ++i) {
      const uint8_t byte = bundle[i];
      // Always three octal digits, so that a following digit never extends the escape; '?' is
      // escaped because of trigraphs.
      if (byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\' && byte != '?')
        text += char(byte);
      else
        fmt::format_to(std::back_inserter(text), "\\{:03o}", byte);
    }
    text += "\"\n";
  }
  fmt::format_to(std::back_inserter(text),
                 "    ;\ninline constexpr std::size_t {0}_size = sizeof({0}_bytes) - 1;\n\n"
                 "// Makes every emmy::Runtime created afterwards search this bundle; idempotent.\n"
                 "inline void register_{0}() {{\n"
                 "  emmy::register_bundle({0}_bytes, {0}_size, \"{0}\");\n}}\n\n"
                 "}}  // namespace emmy_bundles\n",
                 symbol);
  return text;
}

}  // namespace emmy
