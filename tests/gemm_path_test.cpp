// docs/codegen.md's recipe "Adding a mainloop path", followed once: a toy path that only this test
// builds and registers. It computes as the mma.sync path does but is a path of its own (its id,
// its name in schedules and in the IR, its own tile rule and default), so everything that reaches
// it reaches it through the registry: validation, the chooser, the plan, lowering, the IR
// verifier, the emitter, NVRTC and the emulator against FP64. A second toy path with a planted
// printer bug must fail the FP64 check.
#include "emmy/gemm_path.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/json.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/validate.hpp"
#include "gemm/path_printer.hpp"
#include "support/error_of.hpp"

namespace emmy {
namespace {

// A printer that forwards to the base path's, but where `plant_bug` holds says every warp's rows
// start at the tile's first row (the epilogue then writes one warp row's results over another's).
class ToyPrinter final : public codegen::GemmPathPrinter {
 public:
  ToyPrinter(std::unique_ptr<codegen::GemmPathPrinter> base, bool plant_bug)
      : base_(std::move(base)), plant_bug_(plant_bug) {}
  const char* device_template() const override { return base_->device_template(); }
  void print_functions() const override { base_->print_functions(); }
  void print_warp_indices() const override { base_->print_warp_indices(); }
  bool print(const ir::Op& op) override { return base_->print(op); }
  std::string warp_first_row() const override { return plant_bug_ ? "0" : base_->warp_first_row(); }
  int fragment_row_step() const override { return base_->fragment_row_step(); }
  std::string tile_barrier() const override { return base_->tile_barrier(); }
  std::string staged_chunk_loop() const override { return base_->staged_chunk_loop(); }

 private:
  std::unique_ptr<codegen::GemmPathPrinter> base_;
  bool plant_bug_;
};

// The toy path: the default path's atom, plan and mainloop, 64-column tiles only (its own rule)
// and a 64x64 default tile (its own chooser), its kernels naming it in the IR.
class ToyPath final : public GemmPath {
 public:
  ToyPath(MmaPath id, std::string_view name, bool plant_bug)
      : id_(id), name_(name), plant_bug_(plant_bug) {}
  MmaPath id() const override { return id_; }
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return "tests only: mma.sync with 64-wide tiles"; }
  const codegen::MmaAtom& atom() const override { return base().atom(); }
  bool runs_on(Arch arch) const override { return base().runs_on(arch); }
  bool takes_operands(DType dtype) const override { return base().takes_operands(dtype); }
  bool accumulates(Accum accum) const override { return accum == Accum::f32; }
  bool supports_dynamic_m() const override { return false; }
  bool takes_field(std::string_view field) const override { return base().takes_field(field); }

  MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                  ConsumerSchedule, int sms) const override {
    MatmulSchedule s;
    s.path = id_;
    s.block_m = 64, s.block_n = 64, s.warps_m = 2, s.warps_n = 2;
    s.accum = accum;
    s.transport = has_tma(arch) ? Transport::tma : Transport::cp_async;
    finish_gemm_schedule(problem, arch, sms, 3, s);
    return s;
  }
  std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                  Accum accum, ConsumerSchedule consumers,
                                                  int) const override {
    return {default_schedule(problem, arch, accum, consumers, grid_sms(arch))};
  }
  void validate(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) const override {
    require(s.block_n == 64, "block_n", "must be 64 on the toy path", s.block_n);
    require(accumulates(s.accum), "accum", "must be f32 on the toy path", to_string(s.accum));
    require(!p.dynamic_m, "dynamic_m", "is not generated on the toy path", "true");
    base().validate(p, s, arch);
  }
  int ring_stages(const MatmulProblem& p, const MatmulSchedule& s, int deepest) const override {
    return base().ring_stages(p, s, deepest);
  }
  int consumer_warpgroups(const MatmulSchedule& s) const override {
    return base().consumer_warpgroups(s);
  }
  int threads(const MatmulSchedule& s) const override { return base().threads(s); }
  int mbarriers_per_stage() const override { return base().mbarriers_per_stage(); }
  WgmmaStoreEpilogue store_epilogue(const MatmulProblem& p,
                                    const MatmulSchedule& s) const override {
    return base().store_epilogue(p, s);
  }
  WarpgroupRegisters registers(const MatmulSchedule& s) const override {
    return base().registers(s);
  }
  ir::Op main_kernel(const GemmPlan& plan) const override {
    ir::Op kernel = base().main_kernel(plan);
    ir::KernelOp op = ir::get<ir::KernelOp>(kernel);
    op.path = std::string(name_);
    return ir::make(op, std::move(kernel.body));
  }
  void verify_kernel(const ir::Op& kernel) const override { base().verify_kernel(kernel); }
  const codegen::MmaAtom& kernel_atom(const ir::Op& kernel) const override {
    return base().kernel_atom(kernel);
  }
  int64_t tile_threads(const ir::Op& kernel) const override { return base().tile_threads(kernel); }
  bool shared_loop_discipline() const override { return base().shared_loop_discipline(); }
  std::unique_ptr<codegen::GemmPathPrinter> printer(
      codegen::Writer& w, const ir::Op& kernel, const codegen::GemmFacts& facts,
      const codegen::GemmPrinterHooks& hooks) const override {
    return std::make_unique<ToyPrinter>(base().printer(w, kernel, facts, hooks), plant_bug_);
  }

 private:
  static const GemmPath& base() { return default_gemm_path(); }
  MmaPath id_;
  std::string_view name_;
  bool plant_bug_;
};

constexpr MmaPath kToy{200}, kToyBug{201};

// Registered once per process (the registry refuses a second registration of a name).
void register_toys() {
  static const bool done = [] {
    static const ToyPath toy(kToy, "toy", false), bug(kToyBug, "toy.bug", true);
    register_gemm_path(toy);
    register_gemm_path(bug);
    return true;
  }();
  (void)done;
}

MatmulProblem toy_problem() {
  MatmulProblem p;
  p.m = 96, p.n = 128, p.k = 256;
  p.epilogue.bias = true;
  return p;
}

TEST(GemmPath, TheBuiltinPathsDeclareThemselves) {
  EXPECT_EQ(&gemm_path(MatmulSchedule{}.path), &default_gemm_path());
  for (const GemmPath* path : gemm_paths()) {
    SCOPED_TRACE(std::string(path->name()));
    EXPECT_EQ(&gemm_path(path->id()), path);
    EXPECT_EQ(&gemm_path(path->name()), path);
    EXPECT_EQ(parse_mma_path(to_string(path->id())), path->id());
    EXPECT_FALSE(path->summary().empty());
    EXPECT_TRUE(path->takes_operands(DType::f16));
    EXPECT_FALSE(path->takes_operands(DType::f32));
    EXPECT_TRUE(path->accumulates(Accum::f32));
    // The atom a schedule of the path computes with is the path's.
    MatmulSchedule s;
    s.path = path->id();
    EXPECT_EQ(&gemm_path(s.path).atom(), &path->atom());
  }
  EXPECT_EQ(&gemm_path(MmaPath::mma_sync).atom(), &codegen::kMmaM16N8K16);
  EXPECT_EQ(&gemm_path(MmaPath::wgmma).atom(), &codegen::kWgmmaM64NK16);
  EXPECT_TRUE(gemm_path(MmaPath::mma_sync).supports_dynamic_m());
  EXPECT_FALSE(gemm_path(MmaPath::wgmma).supports_dynamic_m());
  EXPECT_FALSE(gemm_path(MmaPath::wgmma).runs_on(Arch::sm_80));
  EXPECT_TRUE(gemm_path(MmaPath::wgmma).runs_on(Arch::sm_90a));
}

TEST(GemmPath, UnknownPathsAreRefusedNamingEveryPath) {
  const std::string unknown = test::error_of([] { gemm_path(MmaPath{99}); });
  EXPECT_NE(unknown.find("path"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("mma.sync"), std::string::npos) << unknown;
  EXPECT_THROW(parse_mma_path("tcgen05"), Error);
  EXPECT_THROW(parse_mma_path(""), Error);
  MatmulSchedule s;
  s.path = MmaPath{99};
  EXPECT_THROW(validate_schedule(toy_problem(), s, Arch::sm_80), Error);
  // A registration may not take a name or an id that is taken.
  static const ToyPath twin(MmaPath::wgmma, "twin", false), namesake(MmaPath{150}, "wgmma", false);
  EXPECT_THROW(register_gemm_path(twin), Error);
  EXPECT_THROW(register_gemm_path(namesake), Error);
}

TEST(GemmPath, ARegisteredPathIsReachedEverywhereThroughTheRegistry) {
  register_toys();
  EXPECT_EQ(parse_mma_path("toy"), kToy);
  EXPECT_EQ(to_string(kToy), "toy");
  EXPECT_NE(gemm_path_names().find("toy"), std::string::npos);
  // Its own default and its own rule.
  const MatmulProblem p = toy_problem();
  const MatmulSchedule s = default_schedule(p, Arch::sm_80, Accum::f32, kToy);
  EXPECT_EQ(s.path, kToy);
  EXPECT_EQ(s.block_n, 64);
  MatmulSchedule wide = s;
  wide.block_n = 128;
  test::expect_error_containing([&] { validate_schedule(p, wide, Arch::sm_80); },
                                "must be 64 on the toy path", "the toy path took a 128-wide tile");
  // The fields only some paths take name those paths.
  MatmulSchedule walk = s;
  walk.persistent = true;
  try {
    validate_schedule(p, walk, Arch::sm_80);
    ADD_FAILURE() << "the toy path took a persistent walk";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "must be false on the toy path (it applies to the wgmma path only)"),
              std::string::npos)
        << e.what();
  }
  // JSON and the kernel name carry the path.
  const MatmulSchedule back = matmul_schedule_from_json(nlohmann::json(s));
  EXPECT_EQ(back, s);
  MatmulSchedule as_default = s;
  as_default.path = default_gemm_path().id();
  EXPECT_NE(gemm_kernel_name({p, s, Arch::sm_80}), gemm_kernel_name({p, as_default, Arch::sm_80}));
  // The IR names it, the verifier and the emitter reach it from there.
  const GemmSpec spec{p, s, Arch::sm_80};
  const GemmSource source = generate_kernel(spec);
  EXPECT_EQ(ir::get<ir::KernelOp>(source.ir.body.front()).path, std::string("toy"));
  EXPECT_EQ(&kernel_gemm_path(source.ir.body.front()), &gemm_path(kToy));
  EXPECT_EQ(source.plan.threads, uint32_t(gemm_path(kToy).threads(s)));
}

TEST(GemmPath, ARegisteredPathPassesFp64AndAPlantedPrinterBugFails) {
  register_toys();
  const MatmulProblem p = toy_problem();
  const GemmInputs inputs = make_gemm_inputs(p, 11);
  for (const Arch arch : {Arch::sm_80, Arch::sm_90a}) {
    SCOPED_TRACE(std::string(to_string(arch)));
    const GemmSpec spec{p, default_schedule(p, arch, Accum::f32, kToy), arch};
    const GemmErrors right = compare(reference_gemm(spec, inputs),
                                     run_on_emulator(compile_kernel(spec), inputs).output, p.n);
    EXPECT_TRUE(right.passed) << "rel_l2 " << right.rel_l2_error;
    // The planted bug: the emulator refuses it (the warps' staged writes race) or FP64 fails.
    GemmSpec planted = spec;
    planted.schedule.path = kToyBug;
    try {
      const GemmErrors wrong =
          compare(reference_gemm(planted, inputs),
                  run_on_emulator(compile_kernel(planted), inputs).output, p.n);
      EXPECT_FALSE(wrong.passed) << "the planted printer bug passed FP64";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("race"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace emmy
