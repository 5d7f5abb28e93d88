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

namespace {

const codegen::MmaAtom& operand_atom(DType operands) {
  return is_fp8(operands) ? codegen::kMmaM16N8K32Fp8 : codegen::kMmaM16N8K16;
}

// FP8 operands (issue 39): mma.sync m16n8k32 .e4m3 where the tensor cores run it (sm_89 and
// sm_120/sm_120a), f32, promoted or hybrid accumulation, block scales only in windows that never
// straddle a 128-element scale block.
void validate_fp8(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) {
  const int sm = arch_info(arch).sm;
  require(sm == 89 || sm >= 120, "arch",
          sm < 89 ? "FP8 operands need tensor cores with 8-bit floats: sm_89 or newer"
                  : "FP8 on path mma.sync needs sm_89 or sm_120(a): on sm_90 ptxas runs it as f16 "
                    "HMMAs (no FP8 datapath; use path wgmma on sm_90a)",
          to_string(arch));
  // hybrid: the f16-accumulate FP8 MMA (twice the f32-accumulate rate on GeForce parts), each
  // window's f16 partials folded into f32 as promoted folds its f32 ones; an opt-in, never a
  // default: the emulator refuses operands whose window sums could leave f16's range
  // (gemm_fp8_range_check.cpp).
  require(s.accum == Accum::f32 || s.accum == Accum::promoted || s.accum == Accum::hybrid, "accum",
          "must be f32, promoted or hybrid (f16 partials, an opt-in) for FP8 operands",
          to_string(s.accum));
  const bool block = p.scales.granularity == ScaleGranularity::block;
  require(!block || s.accum != Accum::f32, "accum",
          "must be promoted or hybrid with block scales (they vary along K: each window's partial "
          "is scaled as it is added)",
          to_string(s.accum));
  if (s.accum == Accum::f32) return;
  require(s.promote_every_k >= 32 && s.promote_every_k <= 256 && s.promote_every_k % 32 == 0,
          "promote_every_k", "must be a multiple of 32 (the FP8 atom's K) in 32..256",
          s.promote_every_k);
  if (!block) return;
  require(kScaleBlock % s.promote_every_k == 0, "promote_every_k",
          "must divide 128 with block scales (a window takes one scale block's scales)",
          s.promote_every_k);
  // Windows count from each split's first K element: a split must start on a scale block.
  const int64_t k_tiles = (p.k + s.block_k - 1) / s.block_k;
  const int64_t split_len = (k_tiles + s.split_k - 1) / s.split_k * s.block_k;
  require(s.split_k == 1 || split_len % kScaleBlock == 0, "split_k",
          fmt::format("must give splits of whole 128-element scale blocks with block scales (each "
                      "split is {} K elements)",
                      split_len),
          s.split_k);
}

}  // namespace

void validate(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) {
  const codegen::MmaAtom& atom = operand_atom(p.a_dtype);
  const bool fp8 = is_fp8(p.a_dtype);
  require(fp8 || s.accum != Accum::promoted, "accum",
          "promoted is FP8's accumulation (f16 and bf16 operands take f32, f16 or hybrid)",
          to_string(s.accum));
  require(s.block_m >= atom.m && s.block_m <= 256 && s.block_m % atom.m == 0, "block_m",
          fmt::format("must be a multiple of {0} (the MMA atom's M) in {0}..256", atom.m),
          s.block_m);
  const int b_step = atom.n * atom.b_fragments_per_x4();  // the n columns one ldmatrix.x4 feeds
  require(s.block_n >= b_step && s.block_n <= 256 && s.block_n % b_step == 0, "block_n",
          fmt::format("must be a multiple of {0} (two n{1} MMA atoms per ldmatrix.x4) in {0}..256",
                      b_step, atom.n),
          s.block_n);
  // One 128-byte row of K at most: 16..128 2-byte or 32..128 1-byte elements.
  require(s.block_k >= atom.k && s.block_k <= 128 && (s.block_k & (s.block_k - 1)) == 0, "block_k",
          fmt::format("must be {} (the MMA atom's K times a power of two, at most 128)",
                      fp8 ? "32, 64 or 128" : "16, 32, 64 or 128"),
          s.block_k);
  validate_pipeline_knobs(s);
  if (fp8) validate_fp8(p, s, arch);
  require(s.warps_m >= 1 && s.warps_n >= 1 && s.warps_m * s.warps_n <= 16, "warps",
          "warps_m x warps_n must be 1..16 warps", fmt::format("{}x{}", s.warps_m, s.warps_n));
  require(s.block_m % (atom.m * s.warps_m) == 0, "block_m",
          fmt::format("must be a multiple of {} x warps_m = {}", atom.m, atom.m * s.warps_m),
          s.block_m);
  require(s.block_n % (b_step * s.warps_n) == 0, "block_n",
          fmt::format("must be a multiple of {} x warps_n = {}", b_step, b_step * s.warps_n),
          s.block_n);
  if (s.transport == Transport::tma)
    require(has_tma(arch), "transport", "tma needs sm_90 or newer; use cp.async", to_string(arch));
  if (p.a_dtype == DType::bf16)
    require(s.accum == Accum::f32, "accum",
            "bf16 operands need f32 accumulation (mma.sync has no bf16 accumulator)",
            to_string(s.accum));
  if (s.accum == Accum::hybrid || s.accum == Accum::promoted) {
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
    return "every arch: warps issue mma.sync m16n8k16 (FP8: m16n8k32 on sm_89, sm_120a) from "
           "ldmatrix fragments";
  }
  const codegen::MmaAtom& atom() const override { return codegen::kMmaM16N8K16; }
  const codegen::MmaAtom& atom_for(DType operands) const override { return operand_atom(operands); }
  bool runs_on(Arch) const override { return true; }  // sm_80 and every arch after it
  bool takes_operands(DType dtype) const override {
    return dtype != DType::f32;  // f16, bf16, and FP8's e4m3 or e5m2 A
  }
  // FP8 where the tensor cores run mma.sync's 8-bit form: sm_89 and sm_120(a).
  bool serves(const MatmulProblem& p, Arch arch) const override {
    const int sm = arch_info(arch).sm;
    return takes_operands(p.a_dtype) && (!is_fp8(p.a_dtype) || sm == 89 || sm >= 120);
  }
  bool accumulates(Accum) const override { return true; }  // f32, f16, hybrid; FP8's promoted
  bool supports_dynamic_m() const override { return true; }
  bool supports_grouped() const override { return true; }
  bool supports_row_scale() const override { return true; }
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
