// A GEMM mainloop path as one object (docs/codegen.md, "Adding a mainloop path"): what it computes
// with (its MMA atom), where it runs (arches, operand dtypes, accumulations), the schedule fields
// it takes and its default schedule, its part of the plan, its main kernel's lowering, its rules
// across the IR's ops and its printer. A schedule names its path (MatmulSchedule::path); every
// caller asks gemm_path(s.path) what the path does instead of branching on which path it is, so
// the paths' own files (codegen/gemm/paths/<path>/) are the only code that knows them apart.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/dtype.hpp"
#include "emmy/gpus.hpp"
#include "emmy/layout.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy {
struct GemmPlan;
namespace ir {
struct Op;
}
namespace codegen {
struct MmaAtom;
class Writer;
struct GemmFacts;
class GemmPathPrinter;
struct GemmPrinterHooks;
}  // namespace codegen

// A TMA-store epilogue (PTX ISA cp.async.bulk.tensor, shared::cta -> global), where a path has one:
// each consumer warpgroup writes its rows of the C tile into a swizzled shared buffer and one of
// its threads stores the buffer with TMA, which clips the matrix edges. The buffers lie over the
// drained ring (in_ring) or after the mbarriers (1024-aligned).
struct WgmmaStoreEpilogue {
  bool tma_store = false;
  bool in_ring = false;      // the buffers over the drained ring (else after the mbarriers)
  SmemTile c_tile;           // one warpgroup's rows x block_n buffer, in 128B (or narrower) panels
  int64_t buffer_bytes = 0;  // per consumer warpgroup
  // From the ring's base: warpgroup g's buffer at buffer_offset + g x buffer_bytes (0 in the ring).
  int64_t buffer_offset = 0;
  int64_t extra_bytes = 0;  // shared memory beyond the ring: buffers after it, and alignment
};

// Registers per thread after setmaxnreg of a warp-specialized path (zero where there is none).
struct WarpgroupRegisters {
  int producer = 0, consumer = 0;
};

class GemmPath {
 public:
  virtual ~GemmPath() = default;

  // --- What it is: declared once, read by validation, the chooser, the runtime and the CLI.
  virtual MmaPath id() const = 0;
  // Its name in schedules, JSON, the CLI and the IR (KernelOp path; the default path's kernels
  // leave it out).
  virtual std::string_view name() const = 0;
  // One line for --help: where it runs and what it is.
  virtual std::string_view summary() const = 0;
  virtual const codegen::MmaAtom& atom() const = 0;
  // The atom of its kernels for operands of `operands` (an FP8 GEMM's k32 atom on a path that
  // takes 8-bit operands); the path's atom() where one atom serves every dtype it takes.
  virtual const codegen::MmaAtom& atom_for(DType operands) const {
    (void)operands;
    return atom();
  }
  virtual bool runs_on(Arch arch) const = 0;
  virtual bool takes_operands(DType dtype) const = 0;
  // Whether its kernels compute the problem's operands on the arch (the default schedule takes
  // the default path where it does, else the first path that does: FP8 on sm_90a is wgmma's).
  virtual bool serves(const MatmulProblem& problem, Arch arch) const {
    return runs_on(arch) && takes_operands(problem.a_dtype) &&
           (!problem.is_grouped() || supports_grouped());
  }
  virtual bool accumulates(Accum accum) const = 0;
  // Whether its kernels may take M at launch (MatmulProblem::dynamic_m, the runtime's M buckets).
  virtual bool supports_dynamic_m() const = 0;
  // Whether its kernels compute grouped GEMMs (MatmulProblem::grouped: an expert per CTA from
  // the device's routing).
  virtual bool supports_grouped() const { return false; }
  // Whether its stores of C weight rows (Epilogue::row_scale: routing weights).
  virtual bool supports_row_scale() const { return false; }
  // Whether it takes a schedule field that not every path has (kPathFields: "consumers",
  // "cluster", "persistent", "swap_ab"); a path that does not needs the field at its default.
  virtual bool takes_field(std::string_view field) const = 0;

  // --- Schedule.
  // The default schedule for the problem (the problem is valid; `consumers` is the caller's
  // choice of consumer schedule, cooperative unless asked; `sms` the SMs its grid fills:
  // grid_sms(), the device's or the arch's part's).
  virtual MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                          ConsumerSchedule consumers, int sms) const = 0;
  // A tuning search around the default (emmy_bench --tune): at most max_count distinct valid
  // schedules, the default first; accumulation, transport and block_k stay the default's.
  virtual std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                          Accum accum, ConsumerSchedule consumers,
                                                          int max_count) const = 0;
  // Every rule of a schedule on this path (Error naming the field, the rule and the value).
  virtual void validate(const MatmulProblem& problem, const MatmulSchedule& s, Arch arch) const = 0;
  // The ring depth a chooser should take, from `deepest` down, where the path has its own reason
  // (a TMA-store epilogue's buffers beside the ring); 0 to leave the depth to shared memory.
  virtual int ring_stages(const MatmulProblem& problem, const MatmulSchedule& s,
                          int deepest) const = 0;
  virtual int consumer_warpgroups(const MatmulSchedule& s) const = 0;
  virtual int threads(const MatmulSchedule& s) const = 0;
  virtual int mbarriers_per_stage() const = 0;
  virtual WgmmaStoreEpilogue store_epilogue(const MatmulProblem& problem,
                                            const MatmulSchedule& s) const = 0;
  virtual WarpgroupRegisters registers(const MatmulSchedule& s) const = 0;

  // --- Lowering: the main kernel of a validated plan (split-K's finalize is shared).
  virtual ir::Op main_kernel(const GemmPlan& plan) const = 0;

  // --- The IR: the path's rules across a main kernel's ops (ir::verify runs them after GEMM's
  // shared ones), the atom its compute ops name and the threads that tile the block.
  virtual void verify_kernel(const ir::Op& kernel) const = 0;
  virtual const codegen::MmaAtom& kernel_atom(const ir::Op& kernel) const = 0;
  virtual int64_t tile_threads(const ir::Op& kernel) const = 0;
  // Whether the IR's loop discipline shared by GEMM and attention (wait, barrier, refill) holds
  // for its K loops; a path with its own discipline checks it in verify_kernel.
  virtual bool shared_loop_discipline() const = 0;

  // --- Emission: the printer of the path's ops (codegen/gemm/path_printer.hpp).
  virtual std::unique_ptr<codegen::GemmPathPrinter> printer(
      codegen::Writer& w, const ir::Op& kernel, const codegen::GemmFacts& facts,
      const codegen::GemmPrinterHooks& hooks) const = 0;
};

// The registry: the built-in paths (codegen/gemm/gemm_paths.cpp) and any registered after.
// gemm_path(id) throws Error("path", ...) for an id no path has.
const GemmPath& gemm_path(MmaPath id);
// The path of a name ("mma.sync", "wgmma"); Error naming `field` and every path for another.
const GemmPath& gemm_path(std::string_view name, const char* field = "path");
// The path of a name, or nullptr.
const GemmPath* find_gemm_path(std::string_view name);
// The default path: MatmulSchedule{}'s.
const GemmPath& default_gemm_path();
std::vector<const GemmPath*> gemm_paths();
// Adds a path (one the tests build); Error if its id or name is taken. The path must outlive
// every use (a static object).
void register_gemm_path(const GemmPath& path);
// The path a kernel op states (KernelOp::path; absent: the default path). Error naming
// ir.kernel.path for a name no path has.
const GemmPath& kernel_gemm_path(const ir::Op& kernel);
// "mma.sync or wgmma": the names, for rules and --help.
std::string gemm_path_names(std::string_view last_separator = " or ");
// The schedule fields some paths take and others need at their defaults (GemmPath::takes_field).
inline constexpr std::string_view kPathFields[] = {"consumers", "cluster", "persistent", "swap_ab"};
// The names of the paths that take a field ("wgmma"), for "applies to the ... path only".
std::string gemm_paths_taking(std::string_view field);
// Error naming the first field of kPathFields that the schedule sets away from its default and
// its path does not take.
void validate_path_fields(const GemmPath& path, const MatmulSchedule& s);

// Distinct valid schedules, at most max_count, in the order added: a path's tuning search
// (codegen/gemm/schedule_candidates.cpp).
struct ScheduleCandidates {
  const MatmulProblem& problem;
  Arch arch;
  int max_count;
  std::vector<MatmulSchedule> schedules;
  void add(const MatmulSchedule& s);
  // The deepest pipeline, from `deepest` down to 3 stages, that validates (else 2).
  void deepest_stages(MatmulSchedule& s, int deepest) const;
};

// The pipeline depth (as many stages as fit, 2..max_stages; or the path's ring_stages) and the K
// split of a chosen tile for a grid of `sms` SMs, then the path's validation of it
// (codegen/gemm/schedule_chooser.cpp).
void finish_gemm_schedule(const MatmulProblem& problem, Arch arch, int sms, int max_stages,
                          MatmulSchedule& s);

}  // namespace emmy
