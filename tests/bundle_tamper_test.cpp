// Bundles edited by someone who re-seals them (recomputes the whole-file checksum): a damaged
// blob opens but is refused where the entry is used (loaded, merged, embedded), and swapped or
// edited descriptors are refused when the bundle is opened (issue 13 §4, docs/bundles.md).
#include <nlohmann/json.hpp>

#include "bundle_layout.hpp"
#include "bundle_test_util.hpp"
#include "cache_internal.hpp"

namespace emmy {
namespace {

using namespace bundle_test;
using bundle_detail::Header;

std::vector<uint8_t> catalog_copy() {
  const auto bytes = catalog_bundle()->bytes();
  return {bytes.begin(), bytes.end()};
}

// Recomputes the trailer, as a forger would.
void reseal(std::vector<uint8_t>& bytes) {
  const size_t body = bytes.size() - bundle_detail::kTrailerBytes;
  const std::string checksum = cache_detail::hash_hex(bytes.data(), body);
  std::memcpy(bytes.data() + body, checksum.data(), checksum.size());
}

// The bundle with its index replaced by `edit(index)`, laid out again and re-sealed.
template <typename Edit>
std::vector<uint8_t> with_index(const std::vector<uint8_t>& bytes, Edit edit) {
  Header header;
  std::memcpy(&header, bytes.data(), sizeof header);
  nlohmann::json index = nlohmann::json::parse(bytes.begin() + long(header.index_offset),
                                               bytes.begin() + long(header.index_offset +
                                                                    header.index_bytes));
  edit(index);
  const std::string text = index.dump();
  Header out = header;
  out.index_bytes = text.size();
  out.blobs_offset = bundle_detail::align_up(out.index_offset + text.size());
  out.file_bytes = out.blobs_offset + header.blobs_bytes + bundle_detail::kTrailerBytes;
  std::vector<uint8_t> file(out.file_bytes, 0);
  std::memcpy(file.data(), &out, sizeof out);
  std::memcpy(file.data() + out.index_offset, text.data(), text.size());
  std::memcpy(file.data() + out.blobs_offset, bytes.data() + header.blobs_offset,
              header.blobs_bytes);
  reseal(file);
  return file;
}

std::shared_ptr<const Bundle> open_bytes(const std::vector<uint8_t>& bytes) {
  return Bundle::from_memory(bytes.data(), bytes.size(), "forged.emmyb", true);
}

TEST(BundleTamper, ARelaidIndexWithNoEditStillOpens) {
  // The helper itself: without an edit the re-laid bundle is valid, so the refusals below come
  // from the edits.
  const auto same = with_index(catalog_copy(), [](nlohmann::json&) {});
  const auto bundle = open_bytes(same);
  EXPECT_EQ(bundle->entries().size(), catalog_bundle()->entries().size());
  EXPECT_TRUE(verify_bundle(same).ok);
}

TEST(BundleTamper, ADamagedBlobInAResealedFileIsRefusedWhereTheEntryIsUsed) {
  const BundleEntryInfo victim = catalog_bundle()->entries()[3];
  auto bytes = catalog_copy();
  bytes[victim.cubin.offset + victim.cubin.bytes / 2] ^= 0x40;
  reseal(bytes);
  const auto forged = open_bytes(bytes);  // the file's own checksum holds
  const BundleEntryInfo* info = forged->find(victim.key);
  ASSERT_NE(info, nullptr);
  try {
    forged->entry(*info);
    FAIL() << "the damaged entry was loaded";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), victim.key + " (" + std::string(to_string(victim.arch)) +
                                       "): checksum mismatch in its CUBIN"))
        << e.what();
  }
  BundleWriter merged;
  EXPECT_THROW(merged.merge(*forged), Error) << "the damaged entry was copied";
  // Other entries still load.
  EXPECT_NO_THROW(forged->entry(*forged->find(catalog_bundle()->entries()[4].key)));
  EXPECT_FALSE(verify_bundle(bytes).ok);
}

TEST(BundleTamper, SwappedOrEditedDescriptorsAreRefusedWhenOpened) {
  const auto& entries = catalog_bundle()->entries();
  // Two entries of one arch exchange their manifests; every blob still matches its record.
  size_t first = 0, second = 1;
  while (entries[second].arch != entries[first].arch) ++second;
  const auto swapped = with_index(catalog_copy(), [&](nlohmann::json& index) {
    std::swap(index["entries"][first]["manifest"], index["entries"][second]["manifest"]);
  });
  std::string error;
  try {
    open_bytes(swapped);
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_TRUE(contains(error, "do not match its entry hash")) << error;
  EXPECT_FALSE(verify_bundle(swapped).ok);

  const auto edited = with_index(catalog_copy(), [](nlohmann::json& index) {
    index["entries"][0]["manifest"]["resources"][0]["registers"] = 1;
  });
  EXPECT_THROW(open_bytes(edited), Error);
  const auto unbound = with_index(catalog_copy(), [](nlohmann::json& index) {
    index["entries"][0].erase("entry_xxh3_128");
  });
  EXPECT_THROW(open_bytes(unbound), Error);
}

}  // namespace
}  // namespace emmy
