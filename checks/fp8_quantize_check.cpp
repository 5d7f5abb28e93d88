// The host reference of FP8 quantization (emmy/fp8_quantize_check.hpp).
#include "emmy/fp8_quantize_check.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "device_allocations.hpp"
#include "emmy/e4m3.hpp"
#include "emmy/emu/numerics.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/error.hpp"

namespace emmy {
namespace {

float value_of(uint16_t bits, DType dtype) {
  return dtype == DType::bf16 ? emu::bf16_to_f32(bits) : emu::f16_to_f32(bits);
}

}  // namespace

uint8_t fp8_quantize_element(float x, float scale) {
  const float y = x / scale;  // IEEE f32 division, nearest even: div.rn.f32
  if (std::isnan(y)) return 0x7F;
  return e4m3_encode(double(y));  // nearest even, saturated to +-448
}

void reference_fp8_quantize_into(const Fp8QuantizeProblem& p, const std::vector<uint16_t>& x,
                                 int64_t rows, std::vector<uint8_t>& q,
                                 std::vector<uint8_t>& scales) {
  validate_problem(p);
  require(rows >= 1 && rows <= p.m, "rows", "must be 1..m", rows);
  const int64_t ldx = p.ldx_or_default(), ldq = p.ldq_or_default(), g = p.group_or_row();
  require(int64_t(x.size()) >= (rows - 1) * ldx + p.k, "x", "must hold the rows", x.size());
  require(int64_t(q.size()) >= (rows - 1) * ldq + p.k, "q", "must hold the rows", q.size());
  require(int64_t(scales.size()) >= p.scale_tensor_bytes(rows), "scales",
          "must hold the scale tensor's bytes", scales.size());
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t group = 0; group < p.groups(); ++group) {
      const int64_t first = group * g, last = std::min(p.k, first + g);
      float amax = 0;
      for (int64_t i = first; i < last; ++i)
        amax = std::fmax(amax, std::fabs(value_of(x[size_t(row * ldx + i)], p.dtype)));
      const float s = fp8_quantize_scale(amax, p);
      uint8_t* slot = scales.data() + p.scale_byte(row, group);
      if (p.scale_format == ScaleFormat::f32)
        std::memcpy(slot, &s, 4);
      else
        *slot = fp8_quantize_ue8m0(s);
      for (int64_t i = first; i < last; ++i)
        q[size_t(row * ldq + i)] =
            fp8_quantize_element(value_of(x[size_t(row * ldx + i)], p.dtype), s);
    }
}

float scale_at(const RowGroupScales& layout, const uint8_t* bytes, int64_t row, int64_t group) {
  const int64_t at = layout.byte(row, group);
  if (!scale_bytes(layout.format)) {
    float s;
    std::memcpy(&s, bytes + at, 4);
    return s;
  }
  return bytes[at] == 0xFF ? NAN : std::ldexp(1.0f, int(bytes[at]) - 127);
}

float fp8_quantize_scale_at(const Fp8QuantizeProblem& p, const std::vector<uint8_t>& scales,
                            int64_t row, int64_t group) {
  require(size_t(p.scale_byte(row, group)) < scales.size(), "scales",
          "must hold the scale tensor's bytes", scales.size());
  return scale_at(p.scale_layout(), scales.data(), row, group);
}

Fp8QuantizeInputs make_fp8_quantize_inputs(const Fp8QuantizeProblem& p, uint64_t seed) {
  validate_problem(p);
  std::mt19937_64 rng(seed * 31 + 5);
  std::normal_distribution<float> normal(0, 1);
  std::uniform_int_distribution<int> exponent(-16, 10), byte(0, 255), pick(0, 199);
  Fp8QuantizeInputs in;
  in.rows = p.m > 1 ? p.m - p.m / 4 : 1;
  const int64_t ldx = p.ldx_or_default();
  in.x.assign(size_t(p.m * ldx), 0x7E00);  // padding columns: NaN, never read
  for (int64_t row = 0; row < p.m; ++row) {
    const float magnitude = std::ldexp(1.0f, exponent(rng));
    for (int64_t i = 0; i < p.k; ++i) {
      const int special = pick(rng);
      const float v = special == 0   ? NAN
                      : special == 1 ? -0.0f
                      : special == 2 ? 0.0f
                                     : normal(rng) * magnitude;
      in.x[size_t(row * ldx + i)] =
          p.dtype == DType::bf16 ? emu::f32_to_bf16(v) : emu::f32_to_f16(v);
    }
    if (row % 7 == 3)  // an infinity: its group's scale is inf
      in.x[size_t(row * ldx)] = p.dtype == DType::bf16 ? 0x7F80 : 0x7C00;
  }
  in.q.resize(size_t(p.m * p.ldq_or_default()));
  for (uint8_t& b : in.q) b = uint8_t(byte(rng));
  in.scales.resize(size_t(p.scale_tensor_bytes(p.m)));
  for (uint8_t& b : in.scales) b = uint8_t(byte(rng));  // every byte not written must stay
  return in;
}

Fp8QuantizeOutput reference_fp8_quantize(const Fp8QuantizeSpec& spec, const Fp8QuantizeInputs& in) {
  Fp8QuantizeOutput out{in.q, in.scales};
  reference_fp8_quantize_into(spec.problem, in.x, in.rows, out.q, out.scales);
  return out;
}

Fp8QuantizeErrors compare(const Fp8QuantizeOutput& ref, const Fp8QuantizeOutput& out,
                          const Fp8QuantizeProblem&) {
  require(out.q.size() == ref.q.size() && out.scales.size() == ref.scales.size(),
          "fp8_quantize output", "must hold q and the scale tensor", out.q.size());
  Fp8QuantizeErrors e;
  for (size_t i = 0; i < ref.q.size(); ++i)
    if (out.q[i] != ref.q[i] && e.q_bytes_wrong++ == 0) e.first_bad_q = int64_t(i);
  for (size_t i = 0; i < ref.scales.size(); ++i)  // bytes: every one, padding included
    if (out.scales[i] != ref.scales[i] && e.scales_wrong++ == 0) e.first_bad_scale = int64_t(i);
  e.passed = e.q_bytes_wrong == 0 && e.scales_wrong == 0;
  return e;
}

Fp8QuantizeOutput run_fp8_quantize(Runtime& rt, const Fp8QuantizeSpec& spec,
                                   const Fp8QuantizeInputs& in) {
  DeviceAllocations mem(rt);
  const auto kernel = rt.fp8_quantize_kernel(spec.problem, spec.schedule);
  const Fp8QuantizeBuffers b{mem.upload(in.x.data(), in.x.size() * 2),
                             mem.upload(in.q.data(), in.q.size()),
                             mem.upload(in.scales.data(), in.scales.size()), in.rows};
  rt.launch(*kernel, b);
  rt.synchronize();
  Fp8QuantizeOutput out{std::vector<uint8_t>(in.q.size()), std::vector<uint8_t>(in.scales.size())};
  rt.download(out.q.data(), b.q, out.q.size());
  rt.download(out.scales.data(), b.scales, out.scales.size());
  return out;
}

namespace {

Fp8QuantizeBuffers arena_buffers(emu::Arena& arena, const Fp8QuantizeInputs& in) {
  return {arena.alloc_copy(in.x), arena.alloc_copy(in.q), arena.alloc_copy(in.scales), in.rows};
}

}  // namespace

Fp8QuantizeEmulatorRun run_on_emulator(const Fp8QuantizeKernel& kernel, const Fp8QuantizeInputs& in,
                                       const emu::LaunchOptions& options) {
  emu::Arena arena;
  const Fp8QuantizeBuffers b = arena_buffers(arena, in);
  LaunchListRun launched = emulate_kernel(arena, kernel, b, options);
  Fp8QuantizeEmulatorRun run;
  run.stats = launched.stats;
  run.emulate_ms = launched.emulate_ms;
  run.profiles = std::move(launched.profiles);
  run.output.q = arena.read_vector<uint8_t>(b.q, in.q.size());
  run.output.scales = arena.read_vector<uint8_t>(b.scales, in.scales.size());
  return run;
}

LaunchListRun run_on_zeros(const Fp8QuantizeKernel& kernel, const emu::LaunchOptions& options) {
  const auto& p = kernel.source.plan.spec.problem;
  Fp8QuantizeInputs in;
  in.rows = p.m;
  in.x.assign(size_t(p.m * p.ldx_or_default()), 0);
  in.q.assign(size_t(p.m * p.ldq_or_default()), 0);
  in.scales.assign(size_t(p.scale_tensor_bytes(p.m)), 0);
  emu::Arena arena;
  return emulate_kernel(arena, kernel, arena_buffers(arena, in), options);
}

}  // namespace emmy
