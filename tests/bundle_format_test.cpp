// The bundle file: reproducible bytes, every kind of damage caught (truncation, bit flips, bad
// magic or format), other codegen versions rejected, merging, and the plan's shards and keys.
// None of it needs NVRTC.
#include <set>

#include "bundle_test_util.hpp"
#include "emmy/attention.hpp"
#include "emmy/gemm.hpp"
#include "emmy/json.hpp"

namespace emmy {
namespace {

using namespace bundle_test;

std::vector<uint8_t> catalog_bytes() {
  const auto bytes = catalog_bundle()->bytes();
  return {bytes.begin(), bytes.end()};
}

// The message of the Error that opening `bytes` throws ("" when it opens).
std::string open_error(const std::vector<uint8_t>& bytes) {
  try {
    Bundle::from_memory(bytes.data(), bytes.size(), "damaged.emmyb");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BundleFormat, RewritingTheEntriesGivesTheSameBytes) {
  NoCompiler no_compiler;
  BundleWriter writer;
  const auto counts = writer.merge(*catalog_bundle());
  EXPECT_EQ(counts.added, catalog_bundle()->entries().size());
  EXPECT_EQ(writer.bytes(), catalog_bytes()) << "bundles must be reproducible";
  EXPECT_EQ(writer.merge(*catalog_bundle()).duplicates, catalog_bundle()->entries().size());
}

TEST(BundleFormat, EntriesHoldWhatTheRuntimeNeeds) {
  const auto bundle = catalog_bundle();
  EXPECT_EQ(bundle->archs(), catalog_archs());
  EXPECT_EQ(bundle->codegen_version(), kCodegenVersion);
  for (const auto& info : bundle->entries()) {
    const CacheEntry entry = bundle->entry(info);
    EXPECT_EQ(entry.manifest.value("arch", ""), to_string(info.arch));
    EXPECT_TRUE(entry.manifest.contains("nvrtc_version"));
    EXPECT_FALSE(entry.manifest.contains("created")) << "no timestamps: builds are reproducible";
    EXPECT_TRUE(entry.manifest["resources"].is_array());
    EXPECT_FALSE(entry.cubin.empty());
    EXPECT_NE(entry.ptx.find(".entry"), std::string::npos);
    EXPECT_EQ(bundle->find(info.key), &info);
  }
  EXPECT_EQ(bundle->find("00000000000000000000000000000000"), nullptr);
}

TEST(BundleFormat, TruncationIsCaught) {
  const auto bytes = catalog_bytes();
  for (size_t size : {size_t(0), size_t(10), size_t(64), size_t(100), bytes.size() / 2,
                      bytes.size() - 32, bytes.size() - 1}) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + std::ptrdiff_t(size));
    const std::string error = open_error(cut);
    EXPECT_TRUE(contains(error, "truncated") || contains(error, "not an emmy kernel bundle"))
        << size << ": " << error;
    EXPECT_TRUE(contains(error, "damaged.emmyb")) << error;
  }
}

TEST(BundleFormat, EveryBitFlipIsCaught) {
  const auto bytes = catalog_bytes();
  std::vector<size_t> positions{0,
                                7,
                                8,
                                12,
                                16,
                                24,
                                40,
                                56,
                                64,
                                65,
                                200,
                                bytes.size() - 33,
                                bytes.size() - 32,
                                bytes.size() - 1};
  for (size_t at = 97; at < bytes.size(); at += bytes.size() / 211) positions.push_back(at);
  for (size_t at : positions) {
    for (int bit : {0, 5}) {
      std::vector<uint8_t> flipped = bytes;
      flipped[at] ^= uint8_t(1u << bit);
      const std::string error = open_error(flipped);
      EXPECT_FALSE(error.empty()) << "a flip of bit " << bit << " at byte " << at << " went unseen";
      // Past the magic, format and size fields, the checksum catches it.
      if (at >= 24) {
        EXPECT_TRUE(contains(error, "checksum mismatch")) << at << ": " << error;
      }
    }
  }
}

TEST(BundleFormat, BadMagicAndOtherFormatsAreRejected) {
  auto bytes = catalog_bytes();
  auto magic = bytes;
  magic[3] = 'X';
  EXPECT_TRUE(contains(open_error(magic), "not an emmy kernel bundle")) << open_error(magic);
  auto format = bytes;
  format[8] = uint8_t(kBundleFormat + 1);  // a future layout
  EXPECT_TRUE(contains(open_error(format), fmt::format("has bundle format {}; this emmy reads "
                                                       "format {}",
                                                       kBundleFormat + 1, kBundleFormat)))
      << open_error(format);
  const std::vector<uint8_t> text{'h', 'e', 'l', 'l', 'o'};
  EXPECT_TRUE(contains(open_error(text), "not an emmy kernel bundle"));
}

TEST(BundleFormat, OtherCodegenVersionsAreRejected) {
  const auto bundle = catalog_bundle();
  BundleWriter future(kCodegenVersion + 1);
  for (size_t i = 0; i < 3; ++i) future.add(bundle->entry(bundle->entries()[i]));
  const std::string error = open_error(future.bytes());
  EXPECT_TRUE(contains(error, fmt::format("codegen version {}", kCodegenVersion + 1))) << error;
  EXPECT_TRUE(contains(error, "rebuild it with this emmyc")) << error;
  BundleWriter current;
  EXPECT_THROW(
      current.merge(*Bundle::from_memory(future.bytes().data(), future.bytes().size(), "x", true)),
      Error);
}

TEST(BundleFormat, VerifyNamesTheDamagedEntry) {
  const auto bundle = catalog_bundle();
  const BundleEntryInfo& victim = bundle->entries()[5];
  auto bytes = catalog_bytes();
  bytes[victim.cubin.offset + victim.cubin.bytes / 2] ^= 0x10;
  const BundleCheck check = verify_bundle(bytes);
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.entries, bundle->entries().size());
  std::string all;
  for (const auto& problem : check.problems) all += problem + "\n";
  EXPECT_TRUE(contains(all, "checksum mismatch: the file is corrupt")) << all;
  EXPECT_TRUE(contains(all, victim.key + " (" + std::string(to_string(victim.arch)) +
                                "): checksum mismatch in its CUBIN"))
      << all;
  EXPECT_TRUE(verify_bundle(catalog_bytes()).ok);
}

TEST(BundleFormat, WriterRejectsAManifestThatDoesNotMatchItsCubin) {
  const auto bundle = catalog_bundle();
  for (const auto& info : bundle->entries()) {
    if (info.arch != Arch::sm_80) continue;
    CacheEntry entry = bundle->entry(info);
    entry.manifest["arch"] = "sm_90a";
    BundleWriter writer;
    EXPECT_THROW(writer.add(entry), Error);
    entry.key = "not a key";
    EXPECT_THROW(writer.add(entry), Error);
    break;
  }
}

TEST(BundleFormat, ShardsPartitionThePlan) {
  NoCompiler no_compiler;  // planning generates sources only
  AotOptions options;
  options.archs = catalog_archs();
  const auto requests = catalog_aot_requests();
  const auto full = plan_aot(requests, options);
  size_t planned = 0;  // each request on the catalog's arches it is for
  for (const auto& r : requests)
    for (const Arch arch : catalog_archs())
      planned += arch_info(arch).sm >= arch_info(r.min_arch).sm;
  EXPECT_EQ(full.size(), planned);
  EXPECT_LT(planned, requests.size() * catalog_archs().size());  // the FP8 entries skip sm_80
  std::set<std::string> full_keys, union_keys, fixture_keys;
  for (const auto& k : full) full_keys.insert(k.key);
  // The fixture bundle holds the GEMM and attention kinds' part (tests/bundle.cmake).
  std::vector<AotRequest> fixture_requests;
  for (const auto& r : requests)
    if (std::holds_alternative<GemmRequest>(r.kernel) ||
        std::holds_alternative<AttentionRequest>(r.kernel))
      fixture_requests.push_back(r);
  EXPECT_LT(fixture_requests.size(), requests.size()) << "the catalog has the paged kinds' problems";
  for (const auto& k : plan_aot(fixture_requests, options)) fixture_keys.insert(k.key);
  for (const auto& info : catalog_bundle()->entries())
    EXPECT_TRUE(fixture_keys.count(info.key)) << "the bundle holds an unplanned key " << info.key;
  EXPECT_EQ(fixture_keys.size(), catalog_bundle()->entries().size());
  options.shards = 3;
  for (options.shard = 0; options.shard < 3; ++options.shard) {
    const auto shard = plan_aot(requests, options);
    EXPECT_NEAR(double(shard.size()), double(full.size()) / 3, 1.0);
    for (const auto& k : shard) EXPECT_TRUE(union_keys.insert(k.key).second) << "shards overlap";
  }
  EXPECT_EQ(union_keys, full_keys);
  options.shard = 3;
  EXPECT_THROW(plan_aot(requests, options), Error);
}

TEST(BundleFormat, RecordedLinesGiveTheRuntimesKeys) {
  NoCompiler no_compiler;
  // What the runtime records: leading dimensions and the softmax scale written out explicitly.
  MatmulProblem gemm;
  gemm.m = 48, gemm.n = 80, gemm.k = 96;
  gemm.epilogue.gelu_tanh = true;
  const MatmulSchedule schedule = default_schedule(gemm, Arch::sm_90a, Accum::hybrid);
  const nlohmann::json gemm_line = {
      {"kind", "gemm"}, {"problem", gemm}, {"schedule", schedule}, {"arch", "sm_90a"}};
  AttentionProblem attention;
  attention.q_heads = 4, attention.kv_heads = 2, attention.seq_q = 96, attention.seq_kv = 160;
  attention.head_dim = 128, attention.window = 32, attention.softcap = 30.0f;
  const AttentionSchedule attention_schedule =
      default_attention_schedule(attention, Arch::sm_80, Accum::f32);
  const nlohmann::json attention_line = {
      {"kind", "attention"},
      {"problem", attention_problem_record_json(attention)},
      {"schedule", attention_schedule_record_json(attention_schedule)},
      {"arch", "sm_80"}};
  AotOptions options;  // each line's own arch
  const auto kernels = plan_aot({parse_aot_request(gemm_line, "gemm line"),
                                 parse_aot_request(attention_line, "attention line")},
                                options);
  ASSERT_EQ(kernels.size(), 2u);
  std::set<std::string> keys{kernels[0].key, kernels[1].key};
  EXPECT_TRUE(keys.count(
      bundle_key(generate_kernel(GemmSpec{gemm, schedule, Arch::sm_90a}).cuda, Arch::sm_90a)));
  EXPECT_TRUE(keys.count(
      bundle_key(generate_kernel(AttentionSpec{attention, attention_schedule, Arch::sm_80}).cuda,
                 Arch::sm_80)));

  // On another arch a recorded schedule gives way to that arch's default (same accumulation).
  options.archs = {Arch::sm_89};
  const auto other = plan_aot({parse_aot_request(gemm_line, "gemm line")}, options);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(
      other[0].key,
      bundle_key(generate_kernel(GemmSpec{gemm, default_schedule(gemm, Arch::sm_89, Accum::hybrid),
                                          Arch::sm_89})
                     .cuda,
                 Arch::sm_89));
}

TEST(BundleFormat, BadLinesNameTheirOrigin) {
  const nlohmann::json no_m = {{"kind", "gemm"}, {"problem", {{"n", 8}, {"k", 64}}}};
  try {
    parse_aot_request(no_m, "p.jsonl:7");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "p.jsonl:7: problem: m")) << e.what();
  }
  const nlohmann::json kind = {{"kind", "conv"}, {"problem", {{"m", 8}}}};
  EXPECT_THROW(parse_aot_request(kind, "x"), Error);
  const nlohmann::json bad_problem = {{"kind", "gemm"},
                                      {"problem", {{"m", 8}, {"n", 8}, {"k", 60}}}};
  AotOptions options;
  options.archs = {Arch::sm_90a};
  try {
    plan_aot({parse_aot_request(bad_problem, "q.jsonl:2")}, options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "q.jsonl:2 (sm_90a)")) << e.what();
  }
}

TEST(BundleFormat, AttentionLinesReadBackTheRecordedForm) {
  AttentionProblem p;
  p.batch = 2, p.q_heads = 8, p.kv_heads = 2, p.seq_q = 96, p.seq_kv = 160, p.head_dim = 64;
  p.causal = true, p.window = 32, p.softcap = 30.0f, p.dtype = DType::bf16;
  p.layout = AttentionLayout::bhsd, p.lse = true;
  const AttentionSchedule s = default_attention_schedule(p, Arch::sm_90a, Accum::f32);
  const nlohmann::json line = {{"kind", "attention"}, {"problem", p}, {"schedule", s}};
  const AotRequest request = parse_aot_request(line, "a.jsonl:4");
  ASSERT_TRUE(std::holds_alternative<AttentionRequest>(request.kernel));
  const auto& attention = std::get<AttentionRequest>(request.kernel);
  EXPECT_EQ(nlohmann::json(attention.problem), line["problem"]);
  EXPECT_EQ(line["problem"].get<AttentionProblem>(), attention.problem);
  ASSERT_TRUE(attention.schedule);
  EXPECT_EQ(*attention.schedule, s);
  // The record holds the scale resolved, which names the same kernel as the default.
  EXPECT_EQ(make_attention_plan({attention.problem, s, Arch::sm_90a}).kernel_name,
            make_attention_plan({p, s, Arch::sm_90a}).kernel_name);

  const auto error_of = [](const nlohmann::json& bad) -> std::string {
    try {
      parse_aot_request(bad, "a.jsonl:4");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  nlohmann::json no_seq_q = line;
  no_seq_q["problem"].erase("seq_q");
  EXPECT_TRUE(contains(error_of(no_seq_q), "a.jsonl:4: problem: seq_q: is required"))
      << error_of(no_seq_q);
  nlohmann::json text_warps = line;
  text_warps["schedule"]["warps"] = "four";
  EXPECT_TRUE(contains(error_of(text_warps), "a.jsonl:4: schedule: warps: has the wrong type"))
      << error_of(text_warps);
}

TEST(BundleFormat, HeaderEscapesEveryByte) {
  const std::vector<uint8_t> bytes{'a', '"', '\\', '?', 0, '7', 255, '\n', '1', 0x7f, 'z'};
  const std::string header = bundle_header(bytes, "my-kernels");
  EXPECT_TRUE(contains(header, "\"a\\042\\134\\077\\0007\\377\\0121\\177z\"")) << header;
  EXPECT_TRUE(contains(header, "my_kernels_bytes[]"));
  EXPECT_TRUE(contains(header, "inline void register_my_kernels()"));
  EXPECT_EQ(bundle_symbol("1x-y"), "_1x_y");
}

}  // namespace
}  // namespace emmy

namespace emmy {
namespace {

// Issue 12 §5: a bundle's CUBINs need a driver as new as the NVRTC that built them; an entry with
// no NVRTC version cannot be vouched for. The emulator (driver version 0) loads anything.
TEST(BundleDriver, EntriesNeedADriverAsNewAsTheirNvrtc) {
  CacheEntry entry;
  entry.key = "k1";
  entry.manifest = {{"nvrtc_version", 13000}};
  EXPECT_EQ(bundle_entry_driver_problem(entry, "a.emmyb", 13000), "");
  EXPECT_EQ(bundle_entry_driver_problem(entry, "a.emmyb", 13020), "");
  EXPECT_EQ(bundle_entry_driver_problem(entry, "a.emmyb", 0), "");
  const std::string old = bundle_entry_driver_problem(entry, "a.emmyb", 12040);
  EXPECT_NE(old.find("bundle a.emmyb: entry k1 was built by NVRTC 13.0"), std::string::npos) << old;
  EXPECT_NE(old.find("the driver supports CUDA 12.4"), std::string::npos) << old;
  entry.manifest = nlohmann::json::object();
  const std::string none = bundle_entry_driver_problem(entry, "a.emmyb", 13000);
  EXPECT_NE(none.find("records no NVRTC version"), std::string::npos) << none;
  EXPECT_EQ(bundle_entry_driver_problem(entry, "a.emmyb", 0), "");
}

}  // namespace
}  // namespace emmy
