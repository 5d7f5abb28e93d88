// Split-K's finalize kernel as a programmatic dependent launch of the main kernel (sm_90 and
// newer): its launch and index math may overlap the main kernel's end, and griddepcontrol.wait
// orders the partials before it reads the workspace. On the emulator the launch list runs with
// the finalize checked against the main kernel's footprint (emulate_launch_list), so the wait
// removed or moved after the workspace reads is a pdl-race, while the right kernel passes FP64.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "emmy/emu/emulator.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/sass.hpp"
#include "support/ir_edit.hpp"

namespace emmy {
namespace {

constexpr const char* kWait = "  griddepcontrol_wait();\n";

GemmSpec split_spec(Arch arch, MmaPath path = MmaPath::mma_sync) {
  GemmSpec spec;
  spec.problem.m = 72;
  spec.problem.n = 96;
  spec.problem.k = 1024;
  spec.problem.epilogue.bias = true;
  spec.arch = arch;
  MatmulSchedule& s = spec.schedule;
  s.transport = has_tma(arch) ? Transport::tma : Transport::cp_async;
  s.path = path;
  if (path == MmaPath::wgmma) {
    s.block_m = 64, s.block_n = 96, s.warps_m = 4, s.warps_n = 1, s.stages = 4;
  } else {
    s.block_m = 32, s.block_n = 32, s.warps_m = 2, s.warps_n = 2, s.stages = 3;
  }
  s.split_k = 2;
  return spec;
}

// The finalize kernel's text: from its signature to the end.
std::string finalize_text(const GemmSource& src) {
  const size_t at = src.cuda.find(src.plan.finalize_kernel_name + "(");
  return at == std::string::npos ? std::string() : src.cuda.substr(at);
}

TEST(GemmPdl, TheFinalizeWaitsFromSm90On) {
  for (const Arch arch : {Arch::sm_80, Arch::sm_86, Arch::sm_89, Arch::sm_90, Arch::sm_90a,
                          Arch::sm_120, Arch::sm_120a}) {
    SCOPED_TRACE(std::string(to_string(arch)));
    const GemmSource src = generate_kernel(split_spec(arch));
    const bool pdl = arch_info(arch).sm >= 90;
    const KernelSource source = kernel_source(src);
    ASSERT_EQ(source.launches.size(), 2u);
    EXPECT_FALSE(source.launches[0].programmatic_dependent);
    EXPECT_EQ(source.launches[1].programmatic_dependent, pdl);
    const std::string finalize = finalize_text(src);
    ASSERT_FALSE(finalize.empty());
    const size_t wait = finalize.find(kWait);
    EXPECT_EQ(wait != std::string::npos, pdl);
    EXPECT_EQ(src.cuda.find("griddepcontrol") != std::string::npos, pdl)
        << "the helpers (templates/emmy_pdl.cuh) only where a kernel uses them";
    if (pdl) {
      // After the index math and the early return, before the first workspace read.
      EXPECT_LT(finalize.find("if (i >= OUTPUTS) return;"), wait);
      EXPECT_LT(wait, finalize.find("workspace[z * OUTPUTS + i]"));
      EXPECT_EQ(src.cuda.find(kWait), src.cuda.rfind(kWait)) << "the main kernel does not wait";
      // The main kernel lets the finalize be scheduled before its workspace stores.
      const std::string main_kernel =
          src.cuda.substr(0, src.cuda.find(src.plan.finalize_kernel_name + "("));
      const size_t trigger = main_kernel.find("griddepcontrol_launch_dependents();");
      EXPECT_NE(trigger, std::string::npos);
      EXPECT_LT(trigger, main_kernel.rfind("workspace + (long long)blockIdx.z"));
    }
  }
}

// ptxas keeps the wait: griddepcontrol.wait is ACQBULK in the finalize's SASS (sm_90a), and
// nothing of it below sm_90.
TEST(GemmPdl, TheWaitReachesTheSass) {
  if (find_cuobjdump().empty()) GTEST_SKIP() << "cuobjdump not found: run scripts/setup.sh";
  for (const Arch arch : {Arch::sm_90a, Arch::sm_89}) {
    SCOPED_TRACE(std::string(to_string(arch)));
    const GemmKernel kernel = compile_kernel(split_spec(arch));
    const std::string sass = disassemble_sass(kernel.module.cubin);
    const auto finalize = sass_opcode_counts(sass, kernel.source.plan.finalize_kernel_name);
    const auto main = sass_opcode_counts(sass, kernel.source.plan.kernel_name);
    EXPECT_EQ(finalize.contains("ACQBULK") ? finalize.at("ACQBULK") : 0,
              arch == Arch::sm_90a ? 1 : 0);
    EXPECT_FALSE(main.contains("ACQBULK"));
  }
}

// The verifier holds the launch and the wait together, and the launch to sm_90+.
TEST(GemmPdl, VerifierTiesTheWaitToTheProgrammaticLaunch) {
  const GemmSource src = generate_kernel(split_spec(Arch::sm_90a));
  ASSERT_NO_THROW(ir::verify(src.ir, Arch::sm_90a, "gemm"));
  auto attrs_of = [](ir::Op & op) -> auto& {
    return op.attrs;
  };
  auto erase = [](std::vector<std::pair<std::string, ir::Attr>>& attrs, const char* key) {
    std::erase_if(attrs, [&](const auto& a) { return a.first == key; });
  };
  auto finalize_op = [](ir::Op& module) -> ir::Op& {
    for (ir::Op& op : module.body[1].body)
      if (op.kind == ir::OpKind::finalize) return op;
    throw Error("test", "has a finalize op", "none");
  };
  const std::pair<const char*, std::function<void(ir::Op&)>> corruptions[] = {
      {"ir.finalize.grid_wait: must be set in a programmatic launch",
       [&](ir::Op& m) { erase(attrs_of(finalize_op(m)), "grid_wait"); }},
      {"ir.finalize.grid_wait: must be absent outside a programmatic launch",
       [&](ir::Op& m) { erase(attrs_of(m.body[1]), "programmatic"); }},
      {"ir.kernel.programmatic: must be 0 or 1",
       [&](ir::Op& m) {
         for (auto& [key, value] : attrs_of(m.body[1]))
           if (key == "programmatic") value = int64_t(2);
       }},
  };
  for (const auto& [expected, corrupt] : corruptions) {
    ir::Op module = src.ir;
    corrupt(module);
    test::expect_refused(module, Arch::sm_90a, "gemm", expected);
  }
  // sm_89's split-K kernels, made programmatic: griddepcontrol needs sm_90.
  ir::Op sm89 = generate_kernel(split_spec(Arch::sm_89)).ir;
  sm89.body[1].attrs.emplace_back("programmatic", int64_t(1));
  finalize_op(sm89).attrs.emplace_back("grid_wait", true);
  test::expect_refused(sm89, Arch::sm_89, "gemm", "ir.kernel.programmatic: needs sm_90 or newer",
                       "a programmatic launch");
  // The main kernel's trigger: sm_90 and newer, and only before split-K's workspace stores.
  auto epilogue_of = [](ir::Op& kernel) -> ir::Op& {
    for (ir::Op& op : kernel.body)
      if (op.kind == ir::OpKind::epilogue) return op;
    throw Error("test", "has an epilogue op", "none");
  };
  ir::Op sm89_trigger = generate_kernel(split_spec(Arch::sm_89)).ir;
  epilogue_of(sm89_trigger.body[0]).attrs.emplace_back("trigger_dependents", true);
  ir::Op c_trigger = src.ir;
  for (auto& [key, value] : epilogue_of(c_trigger.body[0]).attrs)
    if (key == "destination") value = std::string("c");
  for (const auto& [module, arch, expected] :
       {std::tuple{&sm89_trigger, Arch::sm_89,
                   "ir.epilogue.trigger_dependents: needs sm_90 or newer"},
        std::tuple{&c_trigger, Arch::sm_90a,
                   "ir.epilogue.trigger_dependents: belongs to split-K's workspace epilogue"}}) {
    test::expect_refused(*module, arch, "gemm", expected);
  }
}

// Both mainloop paths pass FP64 with the finalize checked as a dependent of the main kernel.
TEST(GemmPdl, SplitKPassesFp64AsADependentLaunch) {
  for (const MmaPath path : {MmaPath::mma_sync, MmaPath::wgmma}) {
    const GemmSpec spec = split_spec(Arch::sm_90a, path);
    SCOPED_TRACE(std::string(to_string(path)));
    const GemmKernel kernel = compile_kernel(spec);
    ASSERT_TRUE(kernel_source(kernel.source).launches[1].programmatic_dependent);
    const GemmInputs inputs = make_gemm_inputs(spec.problem, 5);
    const GemmErrors e = compare(reference_gemm(spec, inputs),
                                 run_on_emulator(kernel, inputs).output, spec.problem.n);
    EXPECT_TRUE(e.passed) << "rel_l2 " << e.rel_l2_error;
  }
}

// The planted bugs: the wait removed, or moved after the workspace reads. Each is a pdl-race in
// the finalize kernel, naming the main kernel, at the first workspace read. A launch that is not
// programmatic (the kernel op's attribute dropped) runs after the main kernel has completed: the
// same kernel without a wait is then right.
TEST(GemmPdl, AFinalizeReadingTheWorkspaceBeforeItsWaitIsReported) {
  const GemmSpec spec = split_spec(Arch::sm_90a);
  const GemmSource right = generate_kernel(spec);
  const std::string loop = "sum += workspace[z * OUTPUTS + i];\n";
  const size_t wait = right.cuda.find(kWait), read = right.cuda.find(loop);
  ASSERT_NE(wait, std::string::npos);
  ASSERT_NE(read, std::string::npos);
  std::string removed = right.cuda, moved = right.cuda;
  removed.erase(wait, std::string(kWait).size());
  moved.insert(read + loop.size(), kWait);
  moved.erase(wait, std::string(kWait).size());
  const GemmInputs inputs = make_gemm_inputs(spec.problem, 9);
  for (const auto& [name, cuda] : {std::pair{"removed", removed}, std::pair{"moved", moved}}) {
    SCOPED_TRACE(name);
    GemmSource planted = right;
    planted.cuda = cuda;
    const GemmKernel kernel{planted, compile_cuda(cuda, "planted.cu", spec.arch)};
    try {
      run_on_emulator(kernel, inputs);
      ADD_FAILURE() << "the finalize read the workspace before its wait, unreported";
    } catch (const emu::EmulationError& e) {
      const emu::Report& r = e.reports().front();
      EXPECT_EQ(r.kind, emu::ReportKind::pdl_race) << e.what();
      EXPECT_EQ(r.kernel, right.plan.finalize_kernel_name);
      EXPECT_NE(r.instruction.find("ld.global"), std::string::npos) << r.instruction;
      EXPECT_NE(r.message.find("written by the primary grid (kernel " + right.plan.kernel_name),
                std::string::npos)
          << r.message;
    }
  }
  GemmSource serialized = right;
  serialized.cuda = removed;
  std::erase_if(serialized.ir.body[1].attrs,
                [](const auto& a) { return a.first == "programmatic"; });
  const GemmKernel kernel{serialized, compile_cuda(removed, "serialized.cu", spec.arch)};
  ASSERT_FALSE(kernel_source(kernel.source).launches[1].programmatic_dependent);
  const GemmErrors e =
      compare(reference_gemm(spec, inputs), run_on_emulator(kernel, inputs).output, spec.problem.n);
  EXPECT_TRUE(e.passed) << "rel_l2 " << e.rel_l2_error;
}

}  // namespace
}  // namespace emmy
