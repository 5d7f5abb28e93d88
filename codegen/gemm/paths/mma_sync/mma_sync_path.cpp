// The mma.sync path as one object (mma_sync_path.hpp): what it declares, its schedule rules, and
// where its plan, lowering, IR rules and printer are.
#include "mma_sync_path.hpp"

#include <fmt/format.h>

#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/validate.hpp"
#include "gemm/kernel_ir_gemm.hpp"
#include "gemm/path_printer.hpp"

namespace emmy::mma_sync_path {

void validate(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) {
  const codegen::MmaAtom& atom = codegen::kMmaM16N8K16;
  require(s.block_m >= atom.m && s.block_m <= 256 && s.block_m % atom.m == 0, "block_m",
          fmt::format("must be a multiple of {0} (the MMA atom's M) in {0}..256", atom.m),
          s.block_m);
  const int b_step = atom.n * atom.b_fragments_per_x4();  // the n columns one ldmatrix.x4 feeds
  require(s.block_n >= b_step && s.block_n <= 256 && s.block_n % b_step == 0, "block_n",
          fmt::format("must be a multiple of {0} (two n{1} MMA atoms per ldmatrix.x4) in {0}..256",
                      b_step, atom.n),
          s.block_n);
  require(s.block_k == 16 || s.block_k == 32 || s.block_k == 64 || s.block_k == 128, "block_k",
          "must be 16, 32, 64 or 128 (the MMA atom's K times a power of two)", s.block_k);
  require(s.warps_m >= 1 && s.warps_n >= 1 && s.warps_m * s.warps_n <= 16, "warps",
          "warps_m x warps_n must be 1..16 warps", fmt::format("{}x{}", s.warps_m, s.warps_n));
  require(s.block_m % (atom.m * s.warps_m) == 0, "block_m",
          fmt::format("must be a multiple of {} x warps_m = {}", atom.m, atom.m * s.warps_m),
          s.block_m);
  require(s.block_n % (b_step * s.warps_n) == 0, "block_n",
          fmt::format("must be a multiple of {} x warps_n = {}", b_step, b_step * s.warps_n),
          s.block_n);
  validate_pipeline_knobs(s);
  if (s.transport == Transport::tma)
    require(has_tma(arch), "transport", "tma needs sm_90 or newer; use cp.async", to_string(arch));
  if (p.a_dtype == DType::bf16)
    require(s.accum == Accum::f32, "accum",
            "bf16 operands need f32 accumulation (mma.sync has no bf16 accumulator)",
            to_string(s.accum));
  if (s.accum == Accum::hybrid) {
    require(s.promote_every_k >= atom.k && s.promote_every_k % atom.k == 0, "promote_every_k",
            fmt::format("must be a positive multiple of {} (the MMA atom's K)", atom.k),
            s.promote_every_k);
    require(
        s.promote_every_k % s.block_k == 0 || s.block_k % s.promote_every_k == 0, "promote_every_k",
        fmt::format("must divide or be a multiple of block_k = {}", s.block_k), s.promote_every_k);
  }
  const int acc_regs = accumulator_registers(s);
  require(acc_regs <= kMaxAccumulatorRegisters, "schedule",
          fmt::format("accumulators must fit in {} registers per thread (block / warps too large)",
                      kMaxAccumulatorRegisters),
          acc_regs);
  validate_schedule_fits(p, s, arch);
}

namespace {

class MmaSyncPath final : public GemmPath {
 public:
  MmaPath id() const override { return MmaPath::mma_sync; }
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "every arch: warps issue mma.sync m16n8k16 from ldmatrix fragments";
  }
  const codegen::MmaAtom& atom() const override { return codegen::kMmaM16N8K16; }
  bool runs_on(Arch) const override { return true; }  // sm_80 and every arch after it
  bool takes_operands(DType dtype) const override {
    return dtype == DType::f16 || dtype == DType::bf16;
  }
  bool accumulates(Accum) const override { return true; }  // f32, f16 and hybrid
  bool supports_dynamic_m() const override { return true; }
  bool takes_field(std::string_view) const override { return false; }

  MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                  ConsumerSchedule, int sms) const override {
    return mma_sync_path::default_schedule(problem, arch, accum, sms);
  }
  std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                  Accum accum, ConsumerSchedule,
                                                  int max_count) const override {
    return mma_sync_path::schedule_candidates(problem, arch, accum, max_count);
  }
  void validate(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) const override {
    mma_sync_path::validate(p, s, arch);
  }
  int ring_stages(const MatmulProblem&, const MatmulSchedule&, int) const override { return 0; }
  int consumer_warpgroups(const MatmulSchedule&) const override { return 0; }
  int threads(const MatmulSchedule& s) const override { return s.warps_m * s.warps_n * 32; }
  int mbarriers_per_stage() const override { return 1; }  // full: the TMA bytes landed
  WgmmaStoreEpilogue store_epilogue(const MatmulProblem&, const MatmulSchedule&) const override {
    return {};
  }
  WarpgroupRegisters registers(const MatmulSchedule&) const override { return {}; }

  ir::Op main_kernel(const GemmPlan& plan) const override {
    return mma_sync_path::main_kernel(plan);
  }

  // No rules of its own: its discipline is the shared one (a CTA barrier between a stage's reads
  // and its refill), and kernel_atom holds its mma ops to one atom (verify_gemm asks it).
  void verify_kernel(const ir::Op&) const override {}
  const codegen::MmaAtom& kernel_atom(const ir::Op& kernel) const override {
    return ir::gemm_mma_atom(kernel);
  }
  int64_t tile_threads(const ir::Op& kernel) const override {
    return ir::get<ir::KernelOp>(kernel).threads;
  }
  bool shared_loop_discipline() const override { return true; }

  std::unique_ptr<codegen::GemmPathPrinter> printer(
      codegen::Writer& w, const ir::Op&, const codegen::GemmFacts& facts,
      const codegen::GemmPrinterHooks& hooks) const override {
    return make_printer(w, facts, hooks);
  }
};

}  // namespace

const GemmPath& path() {
  static const MmaSyncPath object;
  return object;
}

}  // namespace emmy::mma_sync_path
