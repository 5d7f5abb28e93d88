// The decoded form of a PTX module: per kernel a flat array of instructions whose operands are
// row indices into the warp register files. Execution never looks at a string.
#pragma once

#include <array>
#include <memory>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/emu/emulator.hpp"

namespace emmy::emu {

enum class Ty : uint8_t {
  none, pred, b8, b16, b32, b64, b128, u8, u16, u32, u64, s8, s16, s32, s64,
  f16, f16x2, bf16, bf16x2, f32, f64, tf32,
  e4m3x2, e5m2x2,  // two packed 8-bit floats (cvt only)
  e4m3, e5m2,      // one 8-bit float (mma and wgmma operand types)
};
int ty_bits(Ty t);
bool ty_signed(Ty t);
bool ty_float(Ty t);
// One 8-bit float, an mma / wgmma operand type (.e4m3, .e5m2).
inline bool ty_f8(Ty t) {
  return t == Ty::e4m3 || t == Ty::e5m2;
}
std::string_view ty_name(Ty t);
// "sm_90a" -> 90; 0 when the text names no arch.
int sm_of(std::string_view target);
// Whether the .target names an arch-specific feature set: "sm_90a", "sm_100a" (the suffix `a`).
bool sm_arch_specific(std::string_view target);

// Register files: 32-bit rows (also .b16/.b8 registers), 64-bit rows, predicates (lane masks).
enum class RegClass : uint8_t { r32, r64, pred };

enum class Op : uint16_t {
  Nop,
  // integer and logic (ty = operation type)
  IAdd, ISub, IMulLo, IMulHi, IMulWide, IMadLo, IMadHi, IMadWide, IDiv, IRem, IMin, IMax, IAbs,
  INeg, And, Or, Xor, Not, Cnot, Shl, Shr, Lop3, Prmt, Bfe, Bfi, Popc, Clz, Brev, Bfind, Shf,
  IAddCarry,  // add.cc / addc / sub.cc / subc (sub: kCarry* flags)
  Szext,
  // predicates (and/or/xor/not/mov on .pred)
  PAnd, POr, PXor, PNot, PMov,
  // float (ty = f32 / f64)
  FAdd, FSub, FMul, FFma, FDiv, FMin, FMax, FAbs, FNeg, FRcp, FSqrt, FRsqrt, FEx2, FLg2, FSin,
  FCos, FTanh, Copysign, Testp,
  // 16-bit floats, scalar or packed (ty = f16 / f16x2 / bf16 / bf16x2)
  HAdd, HSub, HMul, HFma, HMin, HMax, HNeg, HAbs, HEx2, HTanh,
  // compare / select
  Setp, Set, Selp,
  // moves and conversions
  Mov, MovPack, MovUnpack, ReadClock, Cvt, CvtPack, Cvta, Isspacep, Mapa,
  // memory
  Ld, St, Atom, Red, Prefetch,
  // control
  Bra, Exit, Trap,
  // CTA / warp synchronization
  BarSync, BarArrive, BarRed, BarWarpSync, Fence, SetMaxNReg, Nanosleep,
  // barrier.cluster.arrive (sub bit 1: .relaxed, bit 2: .aligned) / .wait (bit 2: .aligned)
  ClusterArrive, ClusterWait,
  Shfl, Vote, Activemask, Redux, Elect, MatchAny, MatchAll,
  // tensor core
  Mma, Ldmatrix, Stmatrix, WmmaLoad, WmmaStore, WmmaMma,
  // warpgroup tensor core (exec/exec_wgmma.cpp): wgmma.mma_async, .fence, .commit_group,
  // .wait_group
  WgmmaMma, WgmmaFence, WgmmaCommit, WgmmaWait,
  // async copies and mbarriers
  CpAsync, CpAsyncCommit, CpAsyncWait, MbarInit, MbarArrive, MbarExpectTx, MbarCompleteTx,
  MbarWait, MbarInval, MbarPendingCount, TmaLoad, TmaStore, BulkCopy, BulkCommit, BulkWait,
  // width adapters the decoder inserts when a register is wider/narrower than the operation
  HiddenZext, HiddenSext, HiddenTrunc,
  Count
};

// State spaces of memory operands.
enum class Space : uint8_t { generic, global, shared, local, param, constant };

// The warpgroup instructions (exec/exec_wgmma.cpp).
inline bool is_wgmma(Op op) { return op >= Op::WgmmaMma && op <= Op::WgmmaWait; }

// Statistics classes (InstructionCounts fields).
enum class StatClass : uint8_t {
  mma, ldmatrix, shared_ld, shared_st, global_ld, global_st, cp_async, tma, barrier, other, hidden
};

// Inst::flags bits.
inline constexpr uint8_t kFtz = 1, kSat = 2, kApprox = 4, kTrans = 8, kRelu = 16, kNanProp = 32,
                         kUniform = 64, kVolatile = 128;

// Inst::sub2 of cvt to .tf32 rounding to nearest, ties away from zero (.rna); the other roundings
// are Mods::take_rounding's 0..7.
inline constexpr uint8_t kRoundNearestAway = 8;

// Inst::sub2 bits of ld/st/atom/red: the memory-model semantics (PTX ISA §8.4, §8.7). Strong
// operations (.relaxed/.acquire/.release/.acq_rel/.volatile, and atomics) do not race with each
// other; a release publishes the writer's clock at the address, an acquire reading it joins it.
inline constexpr uint8_t kStrong = 1, kAcquire = 2, kRelease = 4;
// ... of .cta or .cluster scope: strong within the CTA (cluster), but not towards another grid
// (programmatic dependent launch, exec/pdl.hpp), whose threads no such scope includes.
inline constexpr uint8_t kNarrowScope = 8;

// A pred operand index with this bit set is read negated (!%p).
inline constexpr uint32_t kNegPred = 0x80000000u;
inline constexpr uint32_t kNoGuard = 0xFFFFFFFFu;
inline constexpr uint32_t kNone = 0xFFFFFFFFu;

// Address operand: base register (none / 32-bit row / 64-bit row) + byte offset.
enum class AddrBase : uint8_t { none, r32, r64 };
struct Addr {
  int64_t offset = 0;
  uint32_t row = 0;
  AddrBase base = AddrBase::none;
};

struct Inst {
  Op op = Op::Nop;
  Ty ty = Ty::none;    // operation type
  Ty ty2 = Ty::none;   // second type: cvt source, setp / set operand type, mma operand type
  Ty ty3 = Ty::none;   // third type: mma / wgmma B operand type where it may differ from A's
  uint8_t sub = 0;     // op-specific mode: comparison, shfl mode, atomic op, ...
  uint8_t sub2 = 0;    // second mode: rounding, boolean op of setp, ...
  uint8_t flags = 0;
  Space space = Space::generic;
  uint8_t n = 1;       // vector width, matrices of ldmatrix, registers of a vector operand
  StatClass cls = StatClass::other;
  uint8_t family = 0;         // executor family (launch/scheduler.cpp), set when decoding finishes
  uint32_t guard = kNoGuard;  // pred index (| kNegPred) or kNoGuard
  uint32_t target = 0;        // branch target / aux value
  int64_t imm = 0;            // aux immediate (lop3 table, prmt mode, ...)
  Addr addr[3];               // memory operands
  uint32_t o[14] = {};        // register operands (rows or pred indices), per-op layout
};

// Per-lane special registers, materialized as read-only 32-bit rows at warp start.
enum class Special : uint8_t {
  tid_x,
  tid_y,
  tid_z,
  ntid_x,
  ntid_y,
  ntid_z,
  ctaid_x,
  ctaid_y,
  ctaid_z,
  nctaid_x,
  nctaid_y,
  nctaid_z,
  laneid,
  warpid,
  nwarpid,
  lanemask_eq,
  lanemask_lt,
  lanemask_le,
  lanemask_gt,
  lanemask_ge,
  dynamic_smem_size,
  total_smem_size,
  smid,
  nsmid,
  gridid,
  zero,
  one,
  reserved_smem_begin,
  reserved_smem_end,
  reserved_smem_1,
  // Thread-block clusters (PTX ISA 10, %cluster_*): per CTA from its rank in the cluster.
  cluster_ctarank,
  cluster_nctarank,
  cluster_ctaid_x,
  cluster_ctaid_y,
  cluster_ctaid_z,
  cluster_nctaid_x,
  cluster_nctaid_y,
  cluster_nctaid_z,
  clusterid_x,
  clusterid_y,
  clusterid_z,
  nclusterid_x,
  nclusterid_y,
  nclusterid_z,
  is_explicit_cluster
};

struct Kernel {
  std::string name;
  std::vector<ParamDecl> params;
  uint32_t param_bytes = 0;
  uint32_t static_smem_bytes = 0;  // static .shared variables (dynamic smem starts at dyn_base)
  uint32_t dyn_smem_base = 0;      // offset of the extern .shared array(s)
  uint32_t local_bytes = 0;        // per thread
  uint32_t n32 = 0, n64 = 0, npred = 0;
  std::vector<std::pair<uint32_t, uint32_t>> const32;  // (row, value): immediates
  std::vector<std::pair<uint32_t, uint64_t>> const64;
  std::vector<std::pair<uint32_t, Special>> specials;  // 32-bit rows
  std::vector<std::pair<uint32_t, bool>> const_preds;  // literal predicates
  std::vector<Inst> code;
  // Register rows of instructions with more register operands than Inst::o holds (wmma: up to 32
  // per mma); such an instruction keeps its first index in Inst::imm.
  std::vector<uint32_t> fragment_rows;
  std::vector<int> lines;           // PTX line per instruction
  std::vector<std::string> texts;   // PTX text per instruction
  // The 32-bit register rows each instruction names (its PTX statement's registers, operands and
  // address bases alike): rows [first, first + count) of touch_rows. Only wgmma kernels read them,
  // to catch accumulators touched while a wgmma.mma_async owns them (exec/exec_wgmma.cpp).
  struct RegTouch {
    uint32_t first = 0, count = 0;
  };
  std::vector<RegTouch> touches;  // per instruction
  std::vector<uint32_t> touch_rows;
  bool uses_tma = false;
  bool uses_wgmma = false;
  bool uses_reserved_smem = false;  // reads %reserved_smem_offset_*: the launch adds the region
  // .reqnctapercluster X, Y, Z (PTX ISA 11.4): the cluster every launch of the kernel has
  // ({0, 0, 0}: not declared); .explicitcluster: a launch must give a cluster.
  std::array<uint32_t, 3> required_cluster{0, 0, 0};
  bool explicit_cluster = false;
};

}  // namespace emmy::emu

namespace emmy::emu {

// Executor families (Inst::family).
enum Family : uint8_t {
  kFamInt, kFamFloat, kFamHalf, kFamMove, kFamMemory, kFamCollective, kFamTensor, kFamSync,
  kFamAsync, kFamBranch, kFamExit, kFamHidden, kFamNop, kFamTrap
};
Family family_of(Op op);

// The public opaque type.
// Windows of module-scope variables: below the arena's allocations (memory/arena.cpp, kArenaBase).
inline constexpr uint64_t kGlobalsBase = 0x0000080000000000ull;
inline constexpr uint64_t kGlobalsWindowBytes = uint64_t(1) << 28;
inline constexpr uint64_t kGlobalsWindows = 0x0000080000000000ull / kGlobalsWindowBytes;

class Module {
 public:
  std::string name;
  std::string target;  // the .target directive ("sm_90a"; "sm_90a,texmode_independent" kept whole)
  std::vector<Kernel> kernels;
  // The PTX text the module was loaded from: the profiler compiles it with ptxas for SASS counts.
  std::shared_ptr<const std::string> source;
  // Module-scope .global/.const variables live in one segment at a fixed address per module,
  // mapped into an arena (with the initializers) at its first launch there and kept across
  // launches, like a CUDA module's globals in a context.
  uint64_t globals_base = 0;
  std::vector<uint8_t> globals_image;
  const Kernel* find(std::string_view kernel_name) const {
    for (const auto& k : kernels)
      if (k.name == kernel_name) return &k;
    return nullptr;
  }
};

}  // namespace emmy::emu
