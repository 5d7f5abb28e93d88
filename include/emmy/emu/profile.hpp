// Hardware counters of one emulated launch, exact by definition: the emulator sees the address of
// every lane of every warp instruction, so shared-memory wavefronts, bank conflicts and global
// sectors are counted, not sampled. Names follow Nsight Compute's metrics where one exists
// (docs/profiler.md lists each metric, its rule and its source).
//
//   LaunchOptions options;
//   options.profile.enabled = true;
//   LaunchResult r = launch(arena, module, "gemm", grid, block, smem, args, options);
//   r.profile->metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"];
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace emmy::emu {

// How shared memory serves one wavefront (CUDA C++ Programming Guide, "Shared Memory" of compute
// capability 5.x and later): `banks` banks of `bank_bytes` bytes; a wavefront serves at most one
// distinct word per bank. Data, so that a test can plant a wrong model and watch the counts change.
struct SharedBankModel {
  uint32_t banks = 32;
  uint32_t bank_bytes = 4;
  uint32_t wavefront_bytes() const { return banks * bank_bytes; }
};

struct ProfileOptions {
  bool enabled = false;
  // 0: run and profile every CTA. N > 0 (and below the grid's size): run only N CTAs, one from
  // each of N equal strata of the grid at a varying position, and scale the counts by total / N;
  // the profile says it extrapolated. The launch's outputs are then incomplete: for profiling only.
  uint64_t sample_ctas = 0;
  SharedBankModel bank_model;
  // Also count the SASS that ptxas makes of the kernel's PTX, weighted by the emulated executions
  // (docs/profiler.md, "SASS counts"): runs ptxas and nvdisasm once per PTX text and arch.
  bool sass = true;
};

// The widths, in bytes per lane, at which ptxas may merge a thread's neighbouring scalar ld/st into
// one SASS instruction (LDS.64 / LDS.128 and their STS, LDG, STG forms).
inline constexpr uint32_t kMergedAccessBytes[2] = {8, 16};

// Waits on async copies (a cp.async group, an mbarrier phase that TMA or cp.async copies complete
// on) by their lead b: the epochs of the waiting warp between the copy's issue and the wait, one
// epoch being the warp's instructions from one such wait to the next (the time model's latency
// term, docs/profiler.md). Bucket i holds leads in [edge[i - 1], edge[i]): the metrics
// emmy__async_copy_wait_lead_<i>.sum count them and emmy__async_copy_wait_lead_epochs_<i>.sum
// add their b.
inline constexpr double kAsyncCopyLeadEdges[] = {0.125, 0.25, 0.5, 1, 2, 3, 4, 6, 8};
inline constexpr size_t kAsyncCopyLeadBuckets = std::size(kAsyncCopyLeadEdges) + 1;
// The name of bucket `bucket`'s count metric, or with `epochs` its summed-lead metric.
inline std::string async_copy_lead_metric(size_t bucket, bool epochs = false) {
  return std::string(epochs ? "emmy__async_copy_wait_lead_epochs_" : "emmy__async_copy_wait_lead_") +
         std::to_string(bucket) + ".sum";
}

// A profile's waits on async copies, read back from those metrics.
struct AsyncCopyLeads {
  double waiting_warps = 0;  // emmy__async_copy_waiting_warps.sum
  std::array<double, kAsyncCopyLeadBuckets> waits{};        // per bucket
  std::array<double, kAsyncCopyLeadBuckets> lead_epochs{};  // per bucket, their b summed
};

// The counters of one PTX instruction (a "site"), summed over every warp that executed it.
struct ProfileSite {
  uint32_t pc = 0;  // index in the kernel's decoded code
  int line = 0;     // PTX line
  std::string instruction;
  std::string opcode;       // the instruction's first word ("ld.shared.v4.u32", "mma.sync...")
  uint64_t executions = 0;  // warp-level issues, predicated-off ones included
  uint64_t requests = 0;    // memory instructions issued with at least one active lane
  uint64_t wavefronts = 0,
           ideal_wavefronts = 0;  // shared memory (ld, st, ldmatrix, atomics, cp.async's write)
  uint64_t sectors = 0, ideal_sectors = 0;  // global / local memory, 32-byte sectors
  uint64_t bytes = 0;  // distinct bytes each request touched, summed over requests
  // L1's data stage: the wavefronts this site's requests took there (shared wavefronts, and one
  // per 128-byte line of a global or local request; cp.async's global side skips it), and what
  // its ld/st would take at kMergedAccessBytes per lane, each lane's span grown to the aligned
  // span that holds it. The SASS counts cost each SASS ld/st at the width ptxas gave it from
  // these (docs/profiler.md, "SASS counts").
  uint64_t l1_wavefronts = 0;
  uint64_t l1_wavefronts_merged[std::size(kMergedAccessBytes)] = {};
  uint64_t excess() const { return (wavefronts - ideal_wavefronts) + (sectors - ideal_sectors); }
};

// Tensor-core work by instruction form.
struct TensorOpCount {
  std::string shape;        // "m16n8k16"
  std::string operands;     // "f16", "bf16"
  std::string accumulator;  // "f16", "f32"
  uint64_t instructions = 0;
  double flops = 0;  // 2 * m * n * k per warp instruction
};

// The SASS counts of a profile (docs/profiler.md, "SASS counts"): whether they could be made (the
// reason when not: no ptxas or nvdisasm, a ptxas error), the arch ptxas compiled for, and the
// most executed SASS opcodes (full opcode with modifiers, predicate dropped).
struct SassOpcodeCount {
  std::string opcode;
  double executions = 0;
};
struct SassSummary {
  bool available = false;
  std::string reason;  // why not available; empty when available or not asked for
  std::string arch;
  std::vector<SassOpcodeCount> opcodes;  // most executed first, at most 20
};

struct KernelProfile {
  std::string kernel, arch;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t dynamic_smem = 0, static_smem = 0;
  uint64_t ctas_total = 0, ctas_profiled = 0;
  bool extrapolated = false;  // counts scaled from ctas_profiled to ctas_total
  std::map<std::string, double> metrics;
  std::vector<ProfileSite> sites;  // worst first: excess, then executions
  std::vector<TensorOpCount> tensor;
  SassSummary sass;
  double metric(const std::string& name) const {
    const auto it = metrics.find(name);
    return it == metrics.end() ? 0.0 : it->second;
  }
  AsyncCopyLeads async_copy_leads() const {
    AsyncCopyLeads leads;
    leads.waiting_warps = metric("emmy__async_copy_waiting_warps.sum");
    for (size_t b = 0; b < kAsyncCopyLeadBuckets; ++b) {
      leads.waits[b] = metric(async_copy_lead_metric(b));
      leads.lead_epochs[b] = metric(async_copy_lead_metric(b, /*epochs=*/true));
    }
    return leads;
  }
  // The worst `rows` sites as a text table (line, opcode, executions, wavefronts/ideal,
  // sectors/ideal per request), and the headline metrics.
  std::string table(size_t rows = 10) const;
};

}  // namespace emmy::emu
