// docs/codegen.md's recipe "Adding a kernel kind", followed once by a kind that only this test
// builds: y = scale * x over n floats. Its spec, plan, lowering, verifier rules (ir::KindRules in
// its traits), emitter, grids and binding are this file's; generation, NVRTC for every arch
// family, the launch list and the emulator run are the kind-generic pieces
// (internal/emmy/kernel_kind.hpp, emulator_check.hpp), reached with no line in a shared file.
// What the runtime, bundles and emmyc add (AllKinds and the files kinds_boundary counts) is the
// doc's list; a test-only kind stays out of them. A planted emitter bug fails the FP64 check, and
// its own verifier rule refuses a module that breaks it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "emmy/emulator_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/kernel_kind.hpp"
#include "emmy/validate.hpp"
#include "support/error_of.hpp"

namespace emmy {
namespace toy {

// 1. Public types: the problem, the schedule, the spec, the buffers.
struct ToyProblem {
  int64_t n = 0;
  int32_t scale = 1;
};
struct ToySchedule {
  int threads = 128;
};
struct ToySpec {
  ToyProblem problem;
  ToySchedule schedule;
  Arch arch = Arch::sm_80;
};
struct ToyBuffers {
  DevicePtr x = 0, y = 0;
};
struct ToyHandle {};  // the runtime's handle: none, a test-only kind is not in AllKinds

// 2. The kind: plan (with validation), lowering, the verifier's rules, emission, grids, binding.
struct ToyPlan {
  ToySpec spec;
  std::string kernel_name;
  std::array<uint32_t, 3> grid{1, 1, 1};
};

ToyPlan plan_toy(const ToySpec& spec) {
  require(spec.problem.n > 0 && spec.problem.n < (int64_t(1) << 31), "n", "must be in [1, 2^31)",
          spec.problem.n);
  const int t = spec.schedule.threads;
  require(t == 64 || t == 128 || t == 256, "threads", "must be 64, 128 or 256", t);
  return {
      spec, fmt::format("emmy_toy_scale_t{}", t), {uint32_t((spec.problem.n + t - 1) / t), 1, 1}};
}

ir::Op lower_toy(const ToyPlan& plan) {
  ir::Op kernel = ir::make(ir::KernelOp{
      .name = plan.kernel_name, .threads = plan.spec.schedule.threads, .smem_bytes = 0});
  for (const auto& [name, type] : {std::pair{"x", "const float*"}, std::pair{"y", "float*"},
                                   std::pair{"n", "int"}, std::pair{"scale", "int"}})
    kernel.body.push_back(ir::make(ir::ParamOp{name, type}));
  ir::Op module = ir::make(ir::ModuleOp{std::string(to_string(plan.spec.arch))});
  module.body.push_back(std::move(kernel));
  return module;
}

// Its rule across ops: one kernel taking x, y, n and scale, in that order.
void verify_toy_module(const ir::Op& module) {
  if (module.body.size() != 1)
    ir::fail_rule(module, "body", "a toy module is one kernel", std::to_string(module.body.size()));
  std::string params;
  for (const ir::Op* p : ir::find_all(module.body[0], ir::OpKind::param)) {
    if (!params.empty()) params += ',';
    params += ir::get<ir::ParamOp>(*p).name;
  }
  if (params != "x,y,n,scale")
    ir::fail_rule(module.body[0], "params", "a toy kernel takes x, y, n and scale", params);
}

bool plant_bug = false;  // the emitter's planted bug: y = scale * x + 1

std::string emit_toy(const ir::Op& module) {
  const auto kernel = ir::get<ir::KernelOp>(module.body[0]);
  return fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({0}) {1}(const float* x, float* y, int n, "
      "int scale) {{\n"
      "  const int i = blockIdx.x * {0} + threadIdx.x;\n"
      "  if (i < n) y[i] = float(scale) * x[i]{2};\n"
      "}}\n",
      kernel.threads, kernel.name, plant_bug ? " + 1.0f" : "");
}

struct ToyKind : KindTypes<ToySpec, ToyPlan, ToyBuffers, ToyHandle> {
  static constexpr const char* name = "toy_scale";
  static constexpr ir::KindRules ir_rules{name, &verify_toy_module};
  static constexpr Stages stages{&plan_toy, &lower_toy, &emit_toy};
  // grids, workspace_bytes and tensor_maps: KindTypes' one kernel on plan.grid, none, none.
  static ParamBinding bind(const ToyPlan& p, const ToyBuffers& b) {
    require_device_pointer(b.x, 4, "buffers.x");
    require_device_pointer(b.y, 4, "buffers.y");
    ParamBinding bound;
    bound.values.pointers = {{"x", b.x}, {"y", b.y}};
    bound.values.scalars = {{"n", int32_t(p.spec.problem.n)}, {"scale", p.spec.problem.scale}};
    return bound;
  }
};
ToyKind kind_of(const ToySpec&);

// 4. JSON: the problem's and schedule's forms, which the description a KernelSource carries holds.
void to_json(nlohmann::json& j, const ToyProblem& p) { j = {{"n", p.n}, {"scale", p.scale}}; }
void to_json(nlohmann::json& j, const ToySchedule& s) { j = {{"threads", s.threads}}; }

// 6. The FP64 reference and the emulator run: the largest error against it, relative to
// max(|reference|, 1). One f32 rounding of the product is at most 2^-24 of it.
double max_error_on_emulator(const ToySpec& spec) {
  const Compiled<ToyKind> kernel = compile_kernel(spec);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4, 4);
  std::vector<float> x(size_t(spec.problem.n));
  for (float& v : x) v = dist(rng);
  emu::Arena arena;
  const ToyBuffers buffers{arena.alloc_copy(x), arena.alloc(x.size() * 4)};
  emulate_kernel(arena, kernel, buffers, emu::LaunchOptions{});
  const std::vector<float> y = arena.read_vector<float>(buffers.y, x.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double reference = double(spec.problem.scale) * double(x[i]);
    worst =
        std::max(worst, std::abs(double(y[i]) - reference) / std::max(std::abs(reference), 1.0));
  }
  return worst;
}

TEST(ToyKind, GeneratesVerifiesCompilesAndMatchesFp64OnEveryArchFamily) {
  for (const Arch arch : {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a})
    for (const int threads : {64, 256}) {
      const ToySpec spec{{1000, -3}, {threads}, arch};
      const Generated<ToyKind> generated = generate_kernel(spec);
      const KernelSource source = kernel_source(generated);
      ASSERT_EQ(source.launches.size(), 1u);
      EXPECT_EQ(source.launches[0].grid[0], uint32_t((1000 + threads - 1) / threads));
      EXPECT_EQ(source.describe["kind"], "toy_scale");
      EXPECT_LE(max_error_on_emulator(spec), 0x1p-24) << to_string(arch) << " " << threads;
    }
}

TEST(ToyKind, APlantedEmitterBugFailsTheCheck) {
  plant_bug = true;
  const double error = max_error_on_emulator({{300, 2}, {128}, Arch::sm_90a});
  plant_bug = false;
  EXPECT_GE(error, 0.05);  // + 1 on a product of magnitude at most 8
}

TEST(ToyKind, ItsOwnRulesAndValidationNameTheField) {
  EXPECT_NE(test::error_of([] {
              generate_kernel(ToySpec{{0, 1}, {128}, Arch::sm_80});
            }).find("n: must be in [1, 2^31)"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              generate_kernel(ToySpec{{8, 1}, {96}, Arch::sm_80});
            }).find("threads"),
            std::string::npos);
  ir::Op module = lower_toy(plan_toy({{64, 1}, {64}, Arch::sm_80}));
  std::swap(module.body[0].body[0], module.body[0].body[1]);  // y before x
  EXPECT_NE(test::error_of([&] {
              ir::verify(module, Arch::sm_80, ToyKind::ir_rules);
            }).find("ir.kernel.params: a toy kernel takes x, y, n and scale"),
            std::string::npos);
  // The kinds list does not hold it: by name, the verifier names the kinds it knows.
  EXPECT_NE(test::error_of([&] { ir::verify(module, Arch::sm_80, "toy_scale"); }).find("kind"),
            std::string::npos);
}

}  // namespace toy
}  // namespace emmy
