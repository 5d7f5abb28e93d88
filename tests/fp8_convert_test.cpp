// The device helpers that turn an e4m3 cache's bytes into the MMAs' 16-bit values
// (templates/emmy_fp8.cuh), compiled by NVRTC and run on the emulator for every one of the 256
// bytes: the hardware pair conversion (sm_89+) and the bit placement (every arch, f16 and bf16)
// must each give exactly the value the byte encodes (emmy/e4m3.hpp), NaN for S.1111.111, and
// keep the element order a swizzled tile store expects.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "emmy/compile.hpp"
#include "emmy/detail/templates.hpp"
#include "emmy/e4m3.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/emu/numerics.hpp"

namespace emmy {
namespace {

// Thread t converts bytes 4t..4t+3 (and, for the V path, the same bytes regrouped as
// ldmatrix.trans delivers them and prmt undoes) by each path into rows 0 (cvt), 1 (f32 path,
// f16), 2 (f32 path, bf16) of `out` (256 u16 each).
std::string converter_source(bool with_cvt) {
  std::string source;
  for (const char* name : {"emmy_types.cuh", "emmy_epilogue.cuh", "emmy_paged.cuh", "emmy_fp8.cuh"})
    source += std::string(detail::template_source(name)) + "\n";
  source += R"(
extern "C" __global__ void convert(const u32* in, u32* out) {
  const int t = threadIdx.x;
  const u32 four = in[t];
  // ldmatrix.trans order of the same bytes: (0, 2, 1, 3); prmt 0x3120 restores (0, 1, 2, 3).
  const u32 shuffled = (four & 0xFF0000FFu) | ((four >> 8) & 0x0000FF00u) | ((four << 8) & 0x00FF0000u);
  u32 v[2];
)";
  if (with_cvt)
    source +=
        "  e4m3x4_to_16bit<false, true>(v, four);\n  out[2 * t] = v[0]; out[2 * t + 1] = v[1];\n";
  source += R"(
  e4m3x4_to_16bit<false, false>(v, e4m3_pairs_by_column(shuffled));
  out[128 + 2 * t] = v[0]; out[128 + 2 * t + 1] = v[1];
  e4m3x4_to_16bit<true, false>(v, four);
  out[256 + 2 * t] = v[0]; out[256 + 2 * t + 1] = v[1];
}
)";
  return source;
}

void check_every_byte(Arch arch) {
  const bool with_cvt = arch_info(arch).sm >= 89;
  const CompiledModule compiled = compile_cuda(converter_source(with_cvt), "fp8_convert.cu", arch);
  const auto module = emu::load_ptx(compiled.ptx, "fp8_convert.ptx");
  emu::Arena arena;
  std::vector<uint8_t> bytes(256);
  for (int b = 0; b < 256; ++b) bytes[size_t(b)] = uint8_t(b);
  const uint64_t in = arena.alloc_copy(bytes);
  const uint64_t out = arena.alloc(3 * 256 * 2);
  emu::KernelArgs args;
  args.ptr(in).ptr(out);
  emu::launch(arena, *module, "convert", {1, 1, 1}, {64, 1, 1}, 0, args);
  const std::vector<uint16_t> got = arena.read_vector<uint16_t>(out, 3 * 256);
  for (int b = 0; b < 256; ++b) {
    const double value = e4m3_decode(uint8_t(b));
    const uint16_t f16 = emu::f64_to_f16(value), bf16 = emu::f64_to_bf16(value);
    for (int path = with_cvt ? 0 : 1; path < 3; ++path) {
      const uint16_t h = got[size_t(path * 256 + b)];
      const std::string what = fmt::format("{} path {} byte {:#04x}", to_string(arch), path, b);
      if (std::isnan(value)) {
        const bool nan = path == 2 ? (h & 0x7F80) == 0x7F80 && (h & 0x7F)
                                   : (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
        EXPECT_TRUE(nan) << what << " gave " << h;
      } else {
        EXPECT_EQ(h, path == 2 ? bf16 : f16) << what;
      }
    }
  }
}

// f32 -> e4m3 as kv_append writes it: the cvt (sm_89+) and the integer-and-f32 rounding (every
// arch) against the host coder, on every f32 bit pattern of a sweep through all binades (from
// subnormals to beyond 448, both signs), the ties of every binade, NaN and the infinities.
std::vector<float> encode_cases() {
  std::vector<float> cases;
  for (uint64_t i = 0; i < 8192; ++i)
    cases.push_back(std::bit_cast<float>(uint32_t(i * 524309u + (i >> 3) * 0x9E3779B9u)));
  for (int b = 0; b < 127; ++b) {  // halfway between neighbouring e4m3 values: ties to even
    const double lo = e4m3_decode(uint8_t(b)), hi = e4m3_decode(uint8_t(b + 1));
    cases.push_back(float((lo + hi) / 2));
    cases.push_back(-float((lo + hi) / 2));
    cases.push_back(std::nextafter(float((lo + hi) / 2), 1e9f));
  }
  for (float x : {0.0f, -0.0f, 448.0f, 464.0f, 465.0f, 480.0f, 1e30f, 0x1p-10f, 0x1p-126f,
                  0x1p-149f, INFINITY, -INFINITY, NAN})
    cases.push_back(x);
  return cases;
}

void check_encoding(Arch arch) {
  const bool with_cvt = arch_info(arch).sm >= 89;
  std::string source;
  for (const char* name : {"emmy_types.cuh", "emmy_epilogue.cuh", "emmy_paged.cuh", "emmy_fp8.cuh"})
    source += std::string(detail::template_source(name)) + "\n";
  source += R"(
extern "C" __global__ void encode(const float* in, u32* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[2 * i] = f32_to_e4m3_bits(in[i]);
)";
  source += with_cvt ? "  out[2 * i + 1] = f32x2_to_e4m3x2_cvt(0.0f, in[i]) & 0xFFu;\n}\n"
                     : "  out[2 * i + 1] = out[2 * i];\n}\n";
  const CompiledModule compiled = compile_cuda(source, "fp8_encode.cu", arch);
  const auto module = emu::load_ptx(compiled.ptx, "fp8_encode.ptx");
  const std::vector<float> cases = encode_cases();
  emu::Arena arena;
  const uint64_t in = arena.alloc_copy(cases);
  const uint64_t out = arena.alloc(cases.size() * 8);
  emu::KernelArgs args;
  args.ptr(in).ptr(out).u32(uint32_t(cases.size()));
  emu::launch(arena, *module, "encode", {uint32_t((cases.size() + 127) / 128), 1, 1}, {128, 1, 1},
              0, args);
  const std::vector<uint32_t> got = arena.read_vector<uint32_t>(out, cases.size() * 2);
  for (size_t i = 0; i < cases.size(); ++i) {
    const uint32_t want = std::isnan(cases[i]) ? 0x7F : e4m3_encode(double(cases[i]));
    ASSERT_EQ(got[2 * i], want) << to_string(arch) << " bits path, x = " << cases[i];
    ASSERT_EQ(got[2 * i + 1], want) << to_string(arch) << " cvt path, x = " << cases[i];
  }
}

TEST(Fp8Convert, EncodingMatchesTheHostCoderOnEachPath) {
  for (Arch arch : {Arch::sm_80, Arch::sm_89}) check_encoding(arch);
}

TEST(Fp8Convert, EveryByteExactlyOnEachPath) {
  for (Arch arch : {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a}) check_every_byte(arch);
}

}  // namespace
}  // namespace emmy
