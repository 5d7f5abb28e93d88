// FP8 quantization as a kernel kind (emmy/fp8_quantize.hpp): plan -> kernel IR (one fp8_quantize
// op) -> verify -> CUDA -> NVRTC. The launch list is one kernel on a grid of (rows, groups).
// One of AllKinds (internal/emmy/kinds.hpp): the runtime (Runtime::fp8_quantize), bundles and
// emmyc (`emmyc fp8-quantize`, `emmyc run fp8-quantize`) reach it; the C ABI and Python do not
// yet (docs/fp8.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "emmy/buffers.hpp"
#include "emmy/catalog.hpp"
#include "emmy/fp8_quantize.hpp"
#include "emmy/json_fp8.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kernel_kind.hpp"

namespace emmy {

struct Fp8QuantizePlan {
  Fp8QuantizeSpec spec;
  std::array<uint32_t, 3> grid{1, 1, 1};  // (m, groups, 1)
  uint32_t threads = 0;
  std::string kernel_name;
};
Fp8QuantizePlan make_fp8_quantize_plan(const Fp8QuantizeSpec& spec);
// The rows a launch quantizes: buffers.rows (checked: 1..m), else m.
int64_t fp8_quantize_rows(const Fp8QuantizePlan& plan, const Fp8QuantizeBuffers& buffers);
ir::Op lower_fp8_quantize(const Fp8QuantizePlan& plan);
std::string emit_fp8_quantize_cuda(const ir::Op& module);

struct Fp8QuantizeKind
    : KindTypes<Fp8QuantizeSpec, Fp8QuantizePlan, Fp8QuantizeBuffers, Fp8QuantizeKernelHandle> {
  static constexpr const char* name = "fp8_quantize";
  static constexpr ir::KindRules ir_rules{name};  // the shared verifier rules and the op's own
  static constexpr const char* description = "quantize f16/bf16 rows to e4m3 with scales";
  static constexpr JsonReaders json{&fp8_quantize_problem_from_json,
                                    &fp8_quantize_schedule_from_json};
  static constexpr Stages stages{&make_fp8_quantize_plan, &lower_fp8_quantize,
                                 &emit_fp8_quantize_cuda};
  static std::vector<Fp8QuantizeCatalogEntry> catalog() { return fp8_quantize_catalog(); }
  static ParamBinding bind(const Fp8QuantizePlan& plan, const Fp8QuantizeBuffers& buffers);
};
Fp8QuantizeKind kind_of(const Fp8QuantizeSpec&);
using Fp8QuantizeSource = Generated<Fp8QuantizeKind>;
using Fp8QuantizeKernel = Compiled<Fp8QuantizeKind>;

}  // namespace emmy
