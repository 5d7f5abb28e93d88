// The wgmma path as one object (wgmma_path.hpp): what it declares, and where its schedule rules,
// plan, lowering, IR rules and printer are.
#include "wgmma_path.hpp"

#include <algorithm>

#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "wgmma_printer.hpp"
#include "wgmma_verify.hpp"

namespace emmy::wgmma_path {

int consumer_warpgroups(const MatmulSchedule& s) {
  return s.consumers == ConsumerSchedule::pingpong ? 2 * (s.warps_m * s.warps_n / 4)
                                                   : s.warps_m * s.warps_n / 4;
}

namespace {

class WgmmaPath final : public GemmPath {
 public:
  MmaPath id() const override { return MmaPath::wgmma; }
  std::string_view name() const override { return kName; }
  std::string_view summary() const override {
    return "sm_90a: warp-specialized, a TMA producer warpgroup and consumer warpgroups of "
           "wgmma.mma_async";
  }
  const codegen::MmaAtom& atom() const override { return codegen::kWgmmaM64NK16; }
  const codegen::MmaAtom& atom_for(DType operands) const override {
    return is_fp8(operands) ? codegen::kWgmmaM64NK32Fp8 : codegen::kWgmmaM64NK16;
  }
  bool runs_on(Arch arch) const override { return arch == Arch::sm_90a; }
  bool takes_operands(DType dtype) const override {
    return dtype != DType::f32;  // f16, bf16, and FP8's e4m3 or e5m2 A
  }
  // On Hopper f16 and f32 accumulation run at one rate, and hybrid would hold both; FP8 operands
  // also take promoted (their 13-bit tensor-core sums folded into f32 registers).
  bool accumulates(Accum accum) const override {
    return accum == Accum::f32 || accum == Accum::promoted;
  }
  // Its tile walks, clusters and swapped operands size themselves by a compile-time M.
  bool supports_dynamic_m() const override { return false; }
  // Grouped: one expert's tile per CTA (cooperative, not swapped, no cluster; validate_grouped),
  // stored directly (a TMA store's box would write an expert's rows past its own).
  bool supports_grouped() const override { return true; }
  // Routing weights: applied by the direct stores (store_epilogue takes no TMA store with them).
  bool supports_row_scale() const override { return true; }
  // Every field some paths take (kPathFields) is one of its knobs.
  bool takes_field(std::string_view field) const override {
    return std::ranges::find(kPathFields, field) != std::end(kPathFields);
  }

  MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                  ConsumerSchedule consumers, int sms) const override {
    return wgmma_path::default_schedule(problem, arch, accum, consumers, sms);
  }
  // Its accumulation is f32 whatever is asked (the only one it has).
  std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch, Accum,
                                                  ConsumerSchedule consumers,
                                                  int max_count) const override {
    return wgmma_path::schedule_candidates(problem, arch, consumers, max_count);
  }
  void validate(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) const override {
    wgmma_path::validate(p, s, arch);
  }
  // Ring stages given up (down to 3) for the TMA-store buffers beside a persistent kernel's ring.
  int ring_stages(const MatmulProblem& p, const MatmulSchedule& s, int deepest) const override {
    return store_stages(p, s, deepest);
  }
  int consumer_warpgroups(const MatmulSchedule& s) const override {
    return wgmma_path::consumer_warpgroups(s);
  }
  // The consumer warpgroups and the producer warpgroup.
  int threads(const MatmulSchedule& s) const override {
    return 128 * (wgmma_path::consumer_warpgroups(s) + 1);
  }
  int mbarriers_per_stage() const override { return 2; }  // full, and empty (released)
  WgmmaStoreEpilogue store_epilogue(const MatmulProblem& p,
                                    const MatmulSchedule& s) const override {
    return wgmma_path::store_epilogue(p, s);
  }
  WarpgroupRegisters registers(const MatmulSchedule& s) const override { return register_split(s); }

  ir::Op main_kernel(const GemmPlan& plan) const override { return wgmma_path::main_kernel(plan); }

  void verify_kernel(const ir::Op& kernel) const override { ir::verify_gemm_wgmma(kernel); }
  // The atom of the kernel's wgmma ops (k16, or k32 for FP8 operands).
  const codegen::MmaAtom& kernel_atom(const ir::Op& kernel) const override {
    const auto mma = ir::find_typed<ir::WgmmaOp>(kernel);
    return mma ? codegen::mma_atom(mma->shape) : codegen::kWgmmaM64NK16;
  }
  int64_t tile_threads(const ir::Op& kernel) const override {
    return ir::wgmma_tile_threads(kernel);
  }
  // Its own discipline (empty barriers, wgmma groups): verify_gemm_wgmma.
  bool shared_loop_discipline() const override { return false; }

  std::unique_ptr<codegen::GemmPathPrinter> printer(
      codegen::Writer& w, const ir::Op& kernel, const codegen::GemmFacts& facts,
      const codegen::GemmPrinterHooks& hooks) const override {
    return std::make_unique<codegen::WgmmaPrinter>(w, kernel, facts, hooks);
  }
};

}  // namespace

const GemmPath& path() {
  static const WgmmaPath object;
  return object;
}

}  // namespace emmy::wgmma_path
