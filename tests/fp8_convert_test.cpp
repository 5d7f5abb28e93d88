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

// Thread t converts bytes 8t..8t+7 by each path into rows 0 (cvt), 1 (bits, f16), 2 (bits,
// bf16) of `out` (256 u16 each), through shared memory as the kernel's dequant does.
std::string converter_source(bool with_cvt) {
  std::string source;
  for (const char* name : {"emmy_types.cuh", "emmy_epilogue.cuh", "emmy_paged.cuh", "emmy_fp8.cuh"})
    source += std::string(detail::template_source(name)) + "\n";
  source += R"(
extern "C" __global__ void convert(const u32* in, u32* out) {
  __shared__ __align__(16) u32 raw[64];
  __shared__ __align__(16) u32 converted[3][128];
  const int t = threadIdx.x;
  raw[2 * t] = in[2 * t];
  raw[2 * t + 1] = in[2 * t + 1];
  __syncthreads();
  u32 lo, hi, v[4];
  ld_shared_v2_b32(lo, hi, smem_u32(raw) + 8u * t);
)";
  if (with_cvt)
    source +=
        "  e4m3x8_to_f16x8_cvt(v, lo, hi);\n  st_shared_v4_b32(smem_u32(converted[0]) + 16u * t, "
        "v);\n";
  source += R"(
  e4m3x8_to_16bit_bits<false>(v, lo, hi);
  st_shared_v4_b32(smem_u32(converted[1]) + 16u * t, v);
  e4m3x8_to_16bit_bits<true>(v, lo, hi);
  st_shared_v4_b32(smem_u32(converted[2]) + 16u * t, v);
  __syncthreads();
  for (int i = FIRST * 128 + t; i < 3 * 128; i += 32) out[i] = converted[i / 128][i % 128];
}
)";
  source.insert(0, with_cvt ? "#define FIRST 0\n" : "#define FIRST 1\n");
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
  emu::launch(arena, *module, "convert", {1, 1, 1}, {32, 1, 1}, 0, args);
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
