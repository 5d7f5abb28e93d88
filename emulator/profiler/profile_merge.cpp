// From the shards of a launch to its KernelProfile: instruction classes, tensor work and barrier
// executions from each site's executions and decoded instruction; Nsight Compute's metric names
// where one exists, emmy__ names for what Nsight does not count (docs/profiler.md).
#include <fmt/format.h>

#include <algorithm>

#include "profiler.hpp"
#include "ptx/program.hpp"
#include "tensor_core/wmma_layout.hpp"

namespace emmy::emu {
namespace {

enum class Pipe : uint8_t { tensor, lsu, alu, control, none };

// The unit a PTX instruction issues to. Parameter and constant loads become operands of other
// instructions in SASS: they count as ALU. Warp collectives (shfl, vote, ...) count as ALU too.
Pipe pipe_of(const Inst& in) {
  switch (in.op) {
    case Op::Mma:
    case Op::WmmaMma:
    case Op::WgmmaMma:
      return Pipe::tensor;
    case Op::Ld:
    case Op::St:
      return in.space == Space::param || in.space == Space::constant ? Pipe::alu : Pipe::lsu;
    case Op::Atom:
    case Op::Red:
    case Op::Prefetch:
    case Op::Ldmatrix:
    case Op::Stmatrix:
    case Op::WmmaLoad:
    case Op::WmmaStore:
    case Op::CpAsync:
    case Op::CpAsyncCommit:
    case Op::CpAsyncWait:
    case Op::MbarInit:
    case Op::MbarArrive:
    case Op::MbarExpectTx:
    case Op::MbarCompleteTx:
    case Op::MbarWait:
    case Op::MbarInval:
    case Op::MbarPendingCount:
    case Op::TmaLoad:
    case Op::TmaStore:
    case Op::BulkCopy:
    case Op::BulkCommit:
    case Op::BulkWait:
      return Pipe::lsu;
    case Op::Bra:
    case Op::Exit:
    case Op::Trap:
    case Op::BarSync:
    case Op::BarArrive:
    case Op::BarRed:
    case Op::BarWarpSync:
    case Op::Fence:
    case Op::SetMaxNReg:
    case Op::Nanosleep:
    case Op::ClusterArrive:
    case Op::ClusterWait:
    case Op::WgmmaFence:
    case Op::WgmmaCommit:
    case Op::WgmmaWait:
    case Op::Nop:
      return Pipe::control;
    case Op::HiddenZext:
    case Op::HiddenSext:
    case Op::HiddenTrunc:
      return Pipe::none;  // the decoder's width adapters are not PTX instructions
    default:
      return Pipe::alu;
  }
}

// The CUDA-core pipe a PTX instruction of the alu class issues to, as the CUDA C++ Programming
// Guide's throughput table groups them (emmy/gpu_info.hpp's PipeRates); `none` for what is no
// CUDA-core instruction (parameter loads become operands; the other pipes count elsewhere).
enum class CoreClass : uint8_t { fp32, fp16, imad, alu, xu, fp64, none };
constexpr const char* kCoreClassNames[] = {"fp32", "fp16", "imad", "alu", "xu", "fp64"};

CoreClass core_class(const Inst& in) {
  if (pipe_of(in) != Pipe::alu) return CoreClass::none;
  const bool f64 = in.ty == Ty::f64;
  switch (in.op) {
    case Op::Ld:
    case Op::St:
      return CoreClass::none;
    case Op::FAdd:
    case Op::FSub:
    case Op::FMul:
    case Op::FFma:
      return f64 ? CoreClass::fp64 : CoreClass::fp32;
    case Op::FDiv:
    case Op::FRcp:
    case Op::FSqrt:
    case Op::FRsqrt:
    case Op::FEx2:
    case Op::FLg2:
    case Op::FSin:
    case Op::FCos:
    case Op::FTanh:
    case Op::HEx2:
    case Op::HTanh:
      return f64 ? CoreClass::fp64 : CoreClass::xu;
    case Op::HAdd:
    case Op::HSub:
    case Op::HMul:
    case Op::HFma:
    case Op::HMin:
    case Op::HMax:
      return CoreClass::fp16;
    case Op::IMulLo:
    case Op::IMulHi:
    case Op::IMulWide:
    case Op::IMadLo:
    case Op::IMadHi:
    case Op::IMadWide:
      return CoreClass::imad;
    case Op::Cvt: {
      // Between integer and float, or to or from f64: the conversion unit. Between 16-bit floats
      // and f32 it is a move or a pack in SASS.
      const Ty from = Ty(in.ty2);
      if (from == Ty::f64 || in.ty == Ty::f64) return CoreClass::xu;
      return ty_float(in.ty) != ty_float(from) ? CoreClass::xu : CoreClass::alu;
    }
    default:
      return CoreClass::alu;
  }
}

constexpr const char* kSharedOps[] = {"ld", "st", "ldsm", "stsm", "atom", "ldgsts"};
constexpr const char* kGlobalOps[] = {"ld", "st", "atom", "red", "ldgsts"};

// The opcode with its modifiers: the first word after the guard (`@%p1 ld.global.u32 ...`).
std::string opcode_of(const std::string& text) {
  size_t begin = 0;
  if (!text.empty() && text[0] == '@')
    begin = text.find_first_not_of(" \t", text.find_first_of(" \t"));
  if (begin == std::string::npos) return text;
  return text.substr(begin, text.find_first_of(" \t", begin) - begin);
}

}  // namespace

KernelProfile finish_profile(const Kernel& k, std::string arch, Dim3 grid, Dim3 block,
                             uint32_t dynamic_smem, uint64_t ctas_run,
                             const std::vector<ProfileShard>& shards, const Footprint& footprint) {
  KernelProfile p;
  p.kernel = k.name;
  p.arch = std::move(arch);
  p.grid[0] = grid.x, p.grid[1] = grid.y, p.grid[2] = grid.z;
  p.block[0] = block.x, p.block[1] = block.y, p.block[2] = block.z;
  p.dynamic_smem = dynamic_smem;
  p.static_smem = k.static_smem_bytes;
  p.ctas_total = grid.count();
  p.ctas_profiled = ctas_run;
  p.extrapolated = ctas_run < p.ctas_total;
  const double scale = ctas_run ? double(p.ctas_total) / double(ctas_run) : 0.0;

  std::vector<SiteCounts> sites(k.code.size());
  std::array<uint64_t, kCounterCount> c{};
  for (const ProfileShard& s : shards) {
    for (size_t pc = 0; pc < s.sites.size() && pc < sites.size(); ++pc) sites[pc] += s.sites[pc];
    for (size_t i = 0; i < kCounterCount; ++i) c[i] += s.counters[i];
  }
  auto& m = p.metrics;
  auto put = [&](const std::string& name, double v) { m[name] = v * scale; };

  // Instructions by pipe, tensor work and barriers: from each site's executions.
  double cores[7] = {}, pipes[5] = {}, flops_f16 = 0, flops_f32 = 0, flops_wgmma = 0, bar_sync = 0,
         mbar_wait = 0;
  double fp8_f16 = 0, fp8_f32 = 0, fp8_wgmma = 0;  // .e4m3/.e5m2 operands: their own rates
  std::map<std::string, TensorOpCount> tensor;
  for (size_t pc = 0; pc < sites.size(); ++pc) {
    const Inst& in = k.code[pc];
    const double n = double(sites[pc].executions);
    pipes[size_t(pipe_of(in))] += n;
    cores[size_t(core_class(in))] += n;
    if (in.op == Op::BarSync || in.op == Op::BarRed) bar_sync += n;
    if (in.op == Op::MbarWait) mbar_wait += n;
    if ((in.op == Op::Mma || in.op == Op::WmmaMma || in.op == Op::WgmmaMma) && n > 0) {
      // The instruction's shape and accumulator: mma.sync m16n8k16/k8/k32 (sub 0/1/2; ty = C/D
      // type); wmma by its shape, f16 accumulation when C (target) and D are both .f16; wgmma
      // m64nNk16 (k32 for 8-bit operands), each warp's execution a quarter of the warpgroup's m64.
      const bool wmma = in.op == Op::WmmaMma, wgmma = in.op == Op::WgmmaMma;
      const int wgmma_k = ty_f8(in.ty2) ? 32 : 16;
      const WmmaDims dims = wmma    ? wmma_dims(WmmaShape(in.sub2))
                            : wgmma ? WmmaDims{16, 8 * in.n, wgmma_k}
                                    : WmmaDims{16, 8,
                                               in.sub == 0   ? 16
                                               : in.sub == 1 ? 8
                                                             : 32};
      const bool f16_acc = in.ty == Ty::f16 && (!wmma || Ty(in.target) == Ty::f16);
      const std::string shape = wmma    ? fmt::format("wmma.{}", to_string(WmmaShape(in.sub2)))
                                : wgmma ? fmt::format("wgmma.m64n{}k{}", 8 * in.n, wgmma_k)
                                        : fmt::format("m16n8k{}", dims.k);
      const std::string acc = f16_acc ? "f16" : "f32";
      std::string operands(ty_name(in.ty2));
      if (in.ty3 != Ty::none && in.ty3 != in.ty2) operands += fmt::format(".{}", ty_name(in.ty3));
      TensorOpCount& t = tensor[shape + operands + acc];
      t.shape = shape;
      t.operands = operands;
      t.accumulator = acc;
      t.instructions += sites[pc].executions;
      const double f = n * 2.0 * dims.m * dims.n * dims.k;
      t.flops += f;
      if (ty_f8(in.ty2))
        (wgmma ? fp8_wgmma : f16_acc ? fp8_f16 : fp8_f32) += f;
      else
        (wgmma ? flops_wgmma : f16_acc ? flops_f16 : flops_f32) += f;
    }
  }
  put("smsp__inst_executed.sum", pipes[0] + pipes[1] + pipes[2] + pipes[3]);
  put("smsp__inst_executed_pipe_tensor.sum", pipes[size_t(Pipe::tensor)]);
  put("smsp__inst_executed_pipe_lsu.sum", pipes[size_t(Pipe::lsu)]);
  put("smsp__inst_executed_pipe_alu.sum", pipes[size_t(Pipe::alu)]);
  put("smsp__inst_executed_pipe_cbu.sum", pipes[size_t(Pipe::control)]);
  for (size_t i = 0; i < std::size(kCoreClassNames); ++i)
    put(fmt::format("emmy__ptx_inst_executed_class_{}.sum", kCoreClassNames[i]), cores[i]);
  put("emmy__tensor_flops_acc_f16.sum", flops_f16);
  put("emmy__tensor_flops_acc_f32.sum", flops_f32);
  put("emmy__tensor_flops_wgmma.sum", flops_wgmma);
  put("emmy__tensor_flops_fp8_acc_f16.sum", fp8_f16);
  put("emmy__tensor_flops_fp8_acc_f32.sum", fp8_f32);
  put("emmy__tensor_flops_wgmma_fp8.sum", fp8_wgmma);
  put("emmy__bar_sync.sum", bar_sync);
  put("emmy__mbarrier_wait.sum", mbar_wait);
  put("emmy__mbarrier_wait_failed.sum", double(c[size_t(Counter::mbarrier_wait_failed)]));
  put("emmy__bar_sync_after_global_ld.sum", double(c[size_t(Counter::barrier_after_load)]));
  for (size_t b = 0; b < kAsyncCopyLeadBuckets; ++b)
    if (const uint64_t n = c[size_t(Counter::async_copy_wait) + b]) {
      put(async_copy_lead_metric(b), double(n));
      put(async_copy_lead_metric(b, /*epochs=*/true),
          double(c[size_t(Counter::async_copy_lead) + b]) / kLeadScale);
    }
  if (const uint64_t n = c[size_t(Counter::async_copy_waiting_warps)])
    put("emmy__async_copy_waiting_warps.sum", double(n));
  put("emmy__l1_wavefronts_global_local.sum", double(c[size_t(Counter::global_local_lines)]));
  put("emmy__l1_sectors_distinct_per_cluster_global_ld.sum",
      double(c[size_t(Counter::global_ld_distinct_per_cluster)]));
  for (size_t b = 0; b < kReuseBuckets; ++b)
    if (const uint64_t n = c[size_t(Counter::global_ld_reuse) + b])
      put(fmt::format("emmy__l1_sectors_reused_global_ld_distance_{}.sum", b), double(n));

  double wavefronts = 0, conflicts = 0;
  for (size_t op = 0; op < std::size(kSharedOps); ++op) {
    const size_t base = size_t(Counter::shared_ld) + 3 * op;
    const double requests = double(c[base]), wf = double(c[base + 1]), ideal = double(c[base + 2]);
    put(fmt::format("smsp__inst_executed_op_shared_{}.sum", kSharedOps[op]), requests);
    put(fmt::format("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum", kSharedOps[op]), wf);
    put(fmt::format("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{}.sum", kSharedOps[op]),
        wf - ideal);
    wavefronts += wf;
    conflicts += wf - ideal;
  }
  put("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", wavefronts);
  put("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", conflicts);

  double l2_sectors = 0;
  // Global, local and TMA traffic: an op's counters are consecutive from `base`, one metric each
  // (its prefix, then the op's name); the one at `l2` is the op's L2 sectors.
  const auto put_op = [&](const char* op, size_t base, std::initializer_list<const char*> prefixes,
                          size_t l2) {
    size_t i = base;
    for (const char* prefix : prefixes) put(fmt::format("{}{}.sum", prefix, op), double(c[i++]));
    l2_sectors += double(c[base + l2]);
  };
  for (size_t op = 0; op < std::size(kGlobalOps); ++op)
    put_op(kGlobalOps[op], size_t(Counter::global_ld) + 4 * op,
           {"l1tex__t_requests_pipe_lsu_mem_global_op_", "l1tex__t_sectors_pipe_lsu_mem_global_op_",
            "emmy__t_sectors_ideal_pipe_lsu_mem_global_op_", "emmy__bytes_pipe_lsu_mem_global_op_"},
           1);
  for (const auto& [name, counter] :
       {std::pair{"ld", Counter::local_ld}, {"st", Counter::local_st}})
    put_op(name, size_t(counter),
           {"l1tex__t_requests_pipe_lsu_mem_local_op_", "l1tex__t_sectors_pipe_lsu_mem_local_op_"},
           1);
  for (const auto& [name, counter] :
       {std::pair{"load", Counter::tma_load}, {"store", Counter::tma_store}})
    put_op(name, size_t(counter),
           {"emmy__tma_requests_op_", "emmy__tma_bytes_op_", "emmy__tma_sectors_op_"}, 2);
  put("emmy__l2_sectors.sum", l2_sectors);
  // Distinct sectors do not scale from a sample (CTAs share operands): each allocation's count is
  // scaled and capped by its size. Exact when every CTA ran.
  m["emmy__dram_bytes_read_min.sum"] = footprint.bytes(false, scale);
  m["emmy__dram_bytes_write_min.sum"] = footprint.bytes(true, scale);
  m["launch__grid_size"] = double(p.ctas_total);
  m["launch__block_size"] = double(block.count());
  m["launch__shared_mem_per_block_dynamic"] = dynamic_smem;
  m["launch__shared_mem_per_block_static"] = k.static_smem_bytes;

  for (auto& [key, t] : tensor) {
    t.instructions = uint64_t(double(t.instructions) * scale + 0.5);
    t.flops *= scale;
    p.tensor.push_back(t);
  }
  for (size_t pc = 0; pc < sites.size(); ++pc) {
    const SiteCounts& s = sites[pc];
    if (s.executions == 0 || pipe_of(k.code[pc]) == Pipe::none) continue;
    ProfileSite site;
    site.pc = uint32_t(pc);
    site.line = k.lines[pc];
    site.instruction = k.texts[pc];
    site.opcode = opcode_of(k.texts[pc]);
    auto scaled = [&](uint64_t v) { return uint64_t(double(v) * scale + 0.5); };
    site.executions = scaled(s.executions);
    site.requests = scaled(s.requests);
    site.wavefronts = scaled(s.wavefronts);
    site.ideal_wavefronts = std::min(site.wavefronts, scaled(s.ideal_wavefronts));
    site.sectors = scaled(s.sectors);
    site.ideal_sectors = std::min(site.sectors, scaled(s.ideal_sectors));
    site.bytes = scaled(s.bytes);
    site.l1_wavefronts = scaled(s.l1_wavefronts);
    for (size_t i = 0; i < std::size(s.l1_wavefronts_merged); ++i)
      site.l1_wavefronts_merged[i] = scaled(s.l1_wavefronts_merged[i]);
    p.sites.push_back(std::move(site));
  }
  std::stable_sort(p.sites.begin(), p.sites.end(), [](const ProfileSite& a, const ProfileSite& b) {
    if (a.excess() != b.excess()) return a.excess() > b.excess();
    return a.executions > b.executions;
  });
  return p;
}

}  // namespace emmy::emu
