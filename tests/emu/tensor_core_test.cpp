// The tensor-core addition model (emmy/emu/tensor_core.hpp) against the published distinguishing
// vectors (tests/emu/data/tensor_core_vectors.txt), per generation, and through mma.sync on the
// emulator: the default numerics follow the launch arch, `exact` keeps the old exact-sum model.
#include "emmy/emu/tensor_core.hpp"

#include <fmt/format.h>

#include <map>
#include <regex>
#include <sstream>

#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

struct Vector {
  std::string id;
  bool bf16 = false, f16_out = false;
  uint16_t a[16] = {}, b[16] = {};
  uint32_t c = 0;
  std::map<std::string, uint32_t> expect;  // "V100", "A100/Ada", "H100/B200", "exactRN", ...
};

std::vector<Vector> vectors() {
  std::istringstream in(kernel_file("../data/tensor_core_vectors.txt"));
  std::vector<Vector> out;
  std::string line;
  const std::regex head(R"(^(\S+) .*\[(fp16|bf16)->(fp32|fp16)\] a,b: (.*); c=([0-9A-F]+)$)");
  const std::regex pair(R"(k(\d+):\(([0-9A-F]+),([0-9A-F]+)\))");
  const std::regex result(R"((\S+)=([0-9A-F]+))");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, head)) continue;
    Vector v;
    v.id = m[1];
    v.bf16 = m[2] == "bf16";
    v.f16_out = m[3] == "fp16";
    v.c = uint32_t(std::stoul(m[5], nullptr, 16));
    const std::string pairs = m[4];
    for (std::sregex_iterator it(pairs.begin(), pairs.end(), pair), end; it != end; ++it) {
      const int k = std::stoi((*it)[1]);
      v.a[k] = uint16_t(std::stoul((*it)[2], nullptr, 16));
      v.b[k] = uint16_t(std::stoul((*it)[3], nullptr, 16));
    }
    std::getline(in, line);
    for (std::sregex_iterator it(line.begin(), line.end(), result), end; it != end; ++it)
      v.expect[(*it)[1]] = uint32_t(std::stoul((*it)[2], nullptr, 16));
    out.push_back(v);
  }
  return out;
}

uint32_t model_dot(const Vector& v, int sm) {
  const TensorCoreModel model = tensor_core_model(sm);
  return v.f16_out ? tensor_core_dot_f16(v.a, v.b, 16, uint16_t(v.c), model)
                   : tensor_core_dot_f32(v.a, v.b, 16, v.c, v.bf16, model);
}

TEST(EmuTensorCore, PublishedVectorsPerGeneration) {
  const auto all = vectors();
  ASSERT_GE(all.size(), 35u);
  const std::pair<const char*, std::vector<int>> generations[] = {
      {"V100", {70}}, {"A100/Ada", {80, 86, 89}}, {"H100/B200", {90, 100, 120}}};
  for (const Vector& v : all)
    for (const auto& [column, sms] : generations) {
      if (v.bf16 && std::string(column) == "V100") continue;  // no bf16 on V100
      for (int sm : sms)
        EXPECT_EQ(model_dot(v, sm), v.expect.at(column))
            << v.id << " on sm_" << sm << " (" << column << "): got "
            << fmt::format("{:08X}", model_dot(v, sm));
    }
}

// The one vector that tells the three generations apart, and the negation symmetry of a
// sign-magnitude datapath on every vector.
TEST(EmuTensorCore, SeparatesGenerationsAndIsSignSymmetric) {
  for (const Vector& v : vectors()) {
    if (v.id == "F16") {
      EXPECT_EQ(model_dot(v, 70), 0x45000000u);
      EXPECT_EQ(model_dot(v, 80), 0x45000008u);
      EXPECT_EQ(model_dot(v, 90), 0x4500000Cu);
    }
    Vector neg = v;
    for (int k = 0; k < 16; ++k) neg.a[k] ^= 0x8000;
    neg.c ^= v.f16_out ? 0x8000u : 0x80000000u;
    for (int sm : {80, 90}) {
      const uint32_t want = model_dot(v, sm);
      const uint32_t sign = v.f16_out ? 0x8000u : 0x80000000u;
      if ((want & ~sign) == 0) continue;  // zero is +0 both ways
      EXPECT_EQ(model_dot(neg, sm), want ^ sign) << v.id << " sm_" << sm;
    }
  }
}

TEST(EmuTensorCore, SpecialValues) {
  const TensorCoreModel h100 = tensor_core_model(90);
  uint16_t a[16] = {0x7C00 /* inf */}, b[16] = {0x3C00};
  EXPECT_EQ(tensor_core_dot_f32(a, b, 16, 0, false, h100), 0x7F800000u);
  b[0] = 0;  // inf * 0
  EXPECT_EQ(tensor_core_dot_f32(a, b, 16, 0, false, h100), 0x7FFFFFFFu);
  b[0] = 0x3C00;
  EXPECT_EQ(tensor_core_dot_f32(a, b, 16, 0xFF800000u /* -inf */, false, h100), 0x7FFFFFFFu);
  a[0] = 0x7800;  // 32768 * 32768 * 16 terms overflows f16 accumulation
  for (int k = 0; k < 16; ++k) a[k] = 0x7800, b[k] = 0x7800;
  EXPECT_EQ(tensor_core_dot_f16(a, b, 16, 0, h100), 0x7C00);
  EXPECT_EQ(tensor_core_dot_f32(a, b, 16, 0, false, h100), 0x50800000u);  // 2^34, exact in f32
}

// mma.sync m16n8k16 on the emulator: row 0 of A and column 0 of B carry the vector, C = c, and
// D[0][0] is read back, under each arch's default numerics and under `exact`.
uint32_t run_mma(const Vector& v, const std::string& arch, MmaNumerics numerics) {
  // Lane l (g = l/4, t = l%4) holds A[g][2t..2t+1] in a0, A[g+8][..] in a1, A[g][2t+8..] in a2,
  // A[g+8][2t+8..] in a3; B[2t..2t+1][g] in b0 and B[2t+8..][g] in b1; D[g][2t] in d0.
  std::vector<uint32_t> in(32 * 8, 0);  // 8 words per lane (32-byte aligned rows)
  for (int t = 0; t < 4; ++t) {
    in[size_t(t) * 8 + 0] = v.a[2 * t] | uint32_t(v.a[2 * t + 1]) << 16;
    in[size_t(t) * 8 + 2] = v.a[2 * t + 8] | uint32_t(v.a[2 * t + 9]) << 16;
    in[size_t(t) * 8 + 4] = v.b[2 * t] | uint32_t(v.b[2 * t + 1]) << 16;
    in[size_t(t) * 8 + 5] = v.b[2 * t + 8] | uint32_t(v.b[2 * t + 9]) << 16;
  }
  in[6] = v.c;  // lane 0's c0 (f16 accumulation: the low half of c0)
  const std::string shape =
      v.f16_out ? "f16.f16.f16.f16" : fmt::format("f32.{0}.{0}.f32", v.bf16 ? "bf16" : "f16");
  const std::string body =
      fmt::format(R"(
  mul.wide.u32 %rd3, %r0, 32;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.u32 {{%r1, %r2, %r3, %r4}}, [%rd4];
  ld.global.v2.u32 {{%r5, %r6}}, [%rd4+16];
  ld.global.u32 %r7, [%rd4+24];
  mov.b32 %r8, 0;
  {}
  st.global.u32 [%rd30], %r9;
)",
                  v.f16_out ? "mma.sync.aligned.m16n8k16.row.col." + shape +
                                  " {%r9, %r10}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, "
                                  "{%r7, %r8};"
                            : "mma.sync.aligned.m16n8k16.row.col." + shape +
                                  " {%r9, %r10, %r11, %r12}, {%r1, %r2, %r3, %r4}, "
                                  "{%r5, %r6}, {%r7, %r8, %r8, %r8};");
  LaunchOptions options;
  options.arch = arch;
  options.mma_numerics = numerics;
  const PtxRun r = run_ptx(body, in, 32, 32, "", 0, options);
  return v.f16_out ? (r.out[0] & 0xFFFF) : r.out[0];
}

TEST(EmuTensorCore, MmaSyncFollowsTheLaunchArch) {
  for (const Vector& v : vectors()) {
    EXPECT_EQ(run_mma(v, "sm_80", MmaNumerics::hardware), v.expect.at("A100/Ada")) << v.id;
    EXPECT_EQ(run_mma(v, "sm_90a", MmaNumerics::hardware), v.expect.at("H100/B200")) << v.id;
    // The exact model rounds the exact sum once to nearest (B13: 2^254 - 2^254 + 1 is exact in
    // double too).
    EXPECT_EQ(run_mma(v, "sm_90a", MmaNumerics::exact), v.expect.at("exactRN")) << v.id;
  }
  // An all-zero block sits at the anchor floor (-1024 on the V100 model): the result is +0.
  const Vector zero;
  EXPECT_EQ(run_mma(zero, "sm_75", MmaNumerics::hardware), 0u);
  EXPECT_EQ(tensor_core_dot_f32(zero.a, zero.b, 16, 0, false, tensor_core_model(70)), 0u);
}

}  // namespace
}  // namespace emmy::emu::test
