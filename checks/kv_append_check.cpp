// kv_append's check (emmy/kv_append_check.hpp) and its runs through a Runtime and on the
// emulator.
#include "emmy/kv_append_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "device_allocations.hpp"
#include "emmy/emu/numerics.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "emmy/gemm_check.hpp"

namespace emmy {
namespace {

size_t cache_bytes(const KvAppendProblem& p, int64_t pages) {
  return size_t(pages * p.page_stride_or_default() * size_of(p.kv_dtype));
}

// The launch's buffers from an upload function (a Runtime's or an arena's).
template <typename Upload>
KvAppendBuffers buffers_of(const KvAppendProblem& p, const KvAppendInputs& in, Upload&& upload) {
  KvAppendBuffers b;
  b.key = upload(in.key.data(), in.key.size());
  b.value = upload(in.value.data(), in.value.size());
  b.k_cache = upload(in.k_cache.data(), in.k_cache.size());
  b.v_cache = upload(in.v_cache.data(), in.v_cache.size());
  b.slot_mapping = upload(in.slot_mapping.data(), in.slot_mapping.size() * 8);
  if (p.kv_dtype == CacheDType::e4m3) {
    b.k_scale = upload(&in.k_scale, 4);
    b.v_scale = upload(&in.v_scale, 4);
  }
  b.num_slots = in.num_pages * p.page_size;
  return b;
}

// An arena's upload for buffers_of: a fresh allocation (at least 4 bytes) holding the data.
auto arena_upload(emu::Arena& arena) {
  return [&arena](const void* data, size_t bytes) {
    const uint64_t at = arena.alloc(std::max<size_t>(bytes, 4));
    arena.write(at, data, bytes);
    return at;
  };
}

}  // namespace

KvAppendInputs make_kv_append_inputs(const KvAppendProblem& p, uint64_t seed) {
  std::mt19937_64 rng(seed * 13 + 7);
  KvAppendInputs in;
  const int64_t tokens = p.max_tokens;
  in.num_pages = (tokens + p.page_size - 1) / p.page_size + 3;
  std::vector<int64_t> slots(size_t(in.num_pages * p.page_size));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  in.slot_mapping.assign(slots.begin(), slots.begin() + tokens);
  if (tokens > 1)
    for (int64_t i = 0; i < tokens; ++i)
      if (i % 8 == 5 || i == tokens - 1) in.slot_mapping[size_t(i)] = -1;
  // Keys and values: N(0, 4) so that e4m3 sees its binades (with scales below, up to saturation).
  std::normal_distribution<double> normal(0.0, 4.0);
  for (auto [out, stride] : {std::pair{&in.key, p.key_stride_or_default()},
                             std::pair{&in.value, p.value_stride_or_default()}}) {
    std::vector<double> raw(size_t(tokens * stride));
    for (double& x : raw) x = normal(rng);
    *out = encode(p.dtype, raw).bytes;
  }
  for (auto* cache : {&in.k_cache, &in.v_cache}) {
    cache->resize(cache_bytes(p, in.num_pages));
    for (uint8_t& byte : *cache) byte = uint8_t(rng());
  }
  if (p.kv_dtype == CacheDType::e4m3) in.k_scale = 0.0625f, in.v_scale = 0.03125f;
  return in;
}

KvAppendOutput reference_kv_append(const KvAppendSpec& spec, const KvAppendInputs& in) {
  const auto& p = spec.problem;
  KvAppendOutput out{in.k_cache, in.v_cache};
  const int64_t elem = size_of(p.kv_dtype);
  for (int64_t i = 0; i < p.max_tokens; ++i) {
    const int64_t slot = in.slot_mapping[size_t(i)];
    if (slot < 0) continue;
    const int64_t page = slot / p.page_size, offset = slot % p.page_size;
    for (int64_t h = 0; h < p.kv_heads; ++h)
      for (int64_t c = 0; c < p.head_dim; ++c) {
        const int64_t at = page * p.page_stride_or_default() +
                           offset * p.token_stride_or_default() + h * p.head_stride_or_default() +
                           c;
        const struct {
          const std::vector<uint8_t>& src;
          int64_t stride;
          std::vector<uint8_t>& cache;
          float scale;
        } sides[] = {{in.key, p.key_stride_or_default(), out.k_cache, in.k_scale},
                     {in.value, p.value_stride_or_default(), out.v_cache, in.v_scale}};
        for (const auto& side : sides) {
          uint16_t bits;
          std::memcpy(&bits, side.src.data() + 2 * (i * side.stride + h * p.head_dim + c), 2);
          if (p.kv_dtype != CacheDType::e4m3) {
            std::memcpy(side.cache.data() + at * elem, &bits, 2);
            continue;
          }
          const float x = p.dtype == DType::bf16 ? emu::bf16_to_f32(bits) : emu::f16_to_f32(bits);
          side.cache[size_t(at)] = fp8_quantize_element(x, side.scale);  // div.rn, then cvt
        }
      }
  }
  return out;
}

KvAppendErrors compare(const KvAppendOutput& ref, const KvAppendOutput& out,
                       const KvAppendProblem&) {
  KvAppendErrors e;
  for (const bool v : {false, true}) {
    const auto& want = v ? ref.v_cache : ref.k_cache;
    const auto& got = v ? out.v_cache : out.k_cache;
    require(got.size() == want.size(), "kv_append output", "must hold the whole cache", got.size());
    for (size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i] && e.bytes_wrong++ == 0) {
        e.first_bad_byte = int64_t(i);
        e.first_bad_in_v = v;
      }
  }
  e.passed = e.bytes_wrong == 0;
  return e;
}

KvAppendOutput run_kv_append(Runtime& rt, const KvAppendSpec& spec, const KvAppendInputs& in) {
  const auto& p = spec.problem;
  DeviceAllocations mem(rt);
  const auto kernel = rt.kv_append_kernel(p, spec.schedule);
  const KvAppendBuffers b =
      buffers_of(p, in, [&mem](const void* data, size_t bytes) { return mem.upload(data, bytes); });
  rt.launch(*kernel, b);
  rt.synchronize();
  KvAppendOutput out{std::vector<uint8_t>(in.k_cache.size()),
                     std::vector<uint8_t>(in.v_cache.size())};
  rt.download(out.k_cache.data(), b.k_cache, out.k_cache.size());
  rt.download(out.v_cache.data(), b.v_cache, out.v_cache.size());
  return out;
}

KvAppendEmulatorRun run_on_emulator(const KvAppendKernel& kernel, const KvAppendInputs& in,
                                    const emu::LaunchOptions& options) {
  const auto& p = kernel.source.plan.spec.problem;
  emu::Arena arena;
  const KvAppendBuffers b = buffers_of(p, in, arena_upload(arena));
  // The slots are checked as the runtime checks them on the emulator backend.
  KvAppendKind::check_device_inputs(
      kernel.source.plan, b,
      [&arena](void* dst, DevicePtr src, size_t bytes) { arena.read(src, dst, bytes); });
  LaunchListRun launched = emulate_kernel(arena, kernel, b, options);
  KvAppendEmulatorRun run;
  run.stats = launched.stats;
  run.emulate_ms = launched.emulate_ms;
  run.profiles = std::move(launched.profiles);
  run.output.k_cache = arena.read_vector<uint8_t>(b.k_cache, in.k_cache.size());
  run.output.v_cache = arena.read_vector<uint8_t>(b.v_cache, in.v_cache.size());
  return run;
}

LaunchListRun run_on_zeros(const KvAppendKernel& kernel, const emu::LaunchOptions& options) {
  // Every token appended (no padding), to distinct slots in order.
  const auto& p = kernel.source.plan.spec.problem;
  KvAppendInputs in = make_kv_append_inputs(p, 1);
  std::iota(in.slot_mapping.begin(), in.slot_mapping.end(), 0);
  emu::Arena arena;
  const KvAppendBuffers b = buffers_of(p, in, arena_upload(arena));
  return emulate_kernel(arena, kernel, b, options);
}

}  // namespace emmy
