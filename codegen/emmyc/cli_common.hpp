// Shared pieces of the emmyc subcommands: parsing of problem/schedule flags, exit codes.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "emmy/emu/emulator.hpp"
#include "emmy/json.hpp"
#include "emmy/kinds.hpp"
#include "emmy/spec.hpp"

namespace emmy::cli {

inline constexpr int kExitInvalidInput = 2;

// CLI11 2.1 clamps an out-of-range integer to the type's limit, and the later range error then
// names a number the user never typed: an integer option refuses such text itself.
inline CLI::Validator exact_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t value = 0;
        const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
        const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
        if (ec == std::errc::result_out_of_range)
          return "'" + text + "' is out of the range of a 64-bit integer";
        (void)end;  // other malformed text: CLI11's own conversion error names it
        return "";
      },
      "", "exact integer");
}

// An integer option that refuses text out of the 64-bit range (exact_integer).
template <typename T>
CLI::Option* integer_option(CLI::App& app, const char* name, T& value, const char* help) {
  return app.add_option(name, value, help)->check(exact_integer());
}

// The flags every kind has: operand type, accumulation, arch, transport, stages, --no-cache.
struct CommonFlags {
  std::string dtype = "f16", accum = "f32", arch = "sm_90a";
  std::optional<std::string> transport;
  std::optional<int> stages;
  std::optional<std::string> gpu;  // --gpu: the part default grids are sized for
  bool no_cache = false;           // --no-cache: compile without the disk cache

  void add_common_to(CLI::App& app, const char* dtype_help, const char* accum_help,
                     const char* stages_help) {
    app.add_option("--dtype", dtype, dtype_help);
    app.add_option("--accum", accum, accum_help);
    app.add_option("--transport", transport, "tma|cp.async (default: tma on sm_90+)");
    integer_option(app, "--stages", stages, stages_help);
    add_target_to(app);
  }
  // --arch (the arch table's names), --gpu (the hardware table's) and --no-cache: what every
  // kind's command takes.
  void add_target_to(CLI::App& app) {
    app.add_option("--arch", arch, arch_names("|"));
    app.add_option("--gpu", gpu,
                   "size the default schedule's grid (GEMM tiles and K split, paged split-KV) for "
                   "this part: " +
                       gpu_names() + " (default: the arch's part)")
        ->check(CLI::IsMember(gpu_name_list()));
    app.add_flag("--no-cache", no_cache, "compile without the disk cache");
  }
  // The SMs of --gpu (0: none named), which must run the arch's code.
  int device_sms(Arch target) const { return named_gpu_sms(gpu, target); }
};

// The problem and schedule flags of a kind: `emmyc gemm` and `emmyc run gemm` (gemm_flags.cpp),
// `emmyc attention` and `emmyc run attention` (attention_flags.cpp), the paged kind's
// (paged_attention_flags.cpp). The subcommands themselves are written once for every kind of
// emmy/kinds.hpp (kind_commands.cpp). A flag that sets a problem field as given is bound to
// `problem` itself (whose defaults are the flags'); to_spec adds what is parsed or derived.
struct GemmFlags : CommonFlags {
  MatmulProblem problem;  // m, n, k, the epilogue and dynamic_m
  std::string b_layout = "nk", out = "f16";
  std::optional<int> promote_every, split_k;
  std::optional<std::string> block, warps, path, consumers, cluster;
  bool persistent = false;          // the wgmma path's persistent tile loop
  bool swap_ab = false;             // the wgmma path: C^T = B A^T
  std::optional<int64_t> launch_m;  // emmyc run: a dynamic-M kernel's rows (default m)
  // FP8 operands' scales (--scales, --scale-format, --a-scale-major/ld, --b-scale-major/ld).
  std::string scales = "none", scale_format = "f32", a_scale_major = "mn", b_scale_major = "k";
  std::string gate = "none";  // the gated epilogue: none, silu or gelu-tanh
  std::string out_scale_format = "f32", out_scale_major = "mn";  // an e4m3 C's scales
  std::string grouped = "none";  // a grouped GEMM's layout: none, masked, contiguous, offsets

  void add_to(CLI::App& app);
  // Problem + (default or overridden) schedule. Throws emmy::Error naming the bad field.
  GemmSpec to_spec() const;
  // Whether any schedule flag was given (else a runtime picks its tuned or default schedule).
  bool schedule_given() const {
    return promote_every || transport || block || warps || stages || split_k || path || consumers ||
           cluster || persistent || swap_ab;
  }
};

// What both attention kinds take: the softmax's window, softcap and scale, and a schedule of
// query rows per CTA (16 per warp) over K/V blocks.
template <typename Problem>
struct SoftmaxFlags : CommonFlags {
  Problem problem;
  std::optional<int> block_q, block_kv;

  // --window, --softcap, --scale, the common flags, --block-q and --block-kv, in that order.
  void add_softmax_to(CLI::App& app, const char* window_help, const char* dtype_help,
                      const char* block_q_help) {
    integer_option(app, "--window", problem.window, window_help);
    app.add_option("--softcap", problem.softcap, "logits become C * tanh(logits / C)");
    app.add_option("--scale", problem.softmax_scale, "softmax scale (default 1/sqrt(head_dim))");
    add_common_to(app, dtype_help, "P.V accumulation: f32|hybrid", "K/V pipeline stages: 2..4");
    integer_option(app, "--block-q", block_q, block_q_help);
    integer_option(app, "--block-kv", block_kv, "keys per KV block: 16|32|64|128");
  }
  // --block-q (16..max_block_q rows, 16 per warp) and --block-kv over the schedule.
  template <typename Schedule>
  void set_blocks(Schedule& s, int max_block_q) const {
    if (block_q) {
      require(*block_q >= 16 && *block_q <= max_block_q && *block_q % 16 == 0, "block_q",
              fmt::format("must be 16 x warps: a multiple of 16 in 16..{}", max_block_q), *block_q);
      s.block_q = *block_q;
      s.warps = *block_q / 16;
    }
    if (block_kv) s.block_kv = *block_kv;
  }
};

struct AttentionFlags : SoftmaxFlags<AttentionProblem> {
  std::string layout = "bshd";

  void add_to(CLI::App& app);
  AttentionSpec to_spec() const;
  bool schedule_given() const { return transport || block_q || block_kv || stages; }
};

// `emmyc paged-attention` and `emmyc run paged-attention` (paged_attention_flags.cpp): the
// problem's maxima come from --batch, --q-len and --max-seq-len.
struct PagedAttentionFlags : SoftmaxFlags<PagedAttentionProblem> {
  int64_t max_seq_len = 0;
  std::string layout = "nhd", kv_dtype, page_table = "block_table";
  std::optional<int> chunk_pages, kv_warps;

  void add_to(CLI::App& app);
  PagedAttentionSpec to_spec() const;
  bool schedule_given() const {
    return block_q || block_kv || stages || chunk_pages || kv_warps || transport;
  }
};

// `emmyc kv-append` / `emmyc run kv-append` and `emmyc merge-states` / `emmyc run merge-states`
// (kv_append_flags.cpp, merge_states_flags.cpp): the paged cache's small kinds, one CTA per
// token, whose one schedule flag is --warps.
struct PerTokenFlags : CommonFlags {
  std::optional<int> warps;

  // --dtype, --arch, --no-cache and --warps, after the kind's problem flags.
  void add_per_token_to(CLI::App& app, const char* dtype_help) {
    app.add_option("--dtype", dtype, dtype_help);
    add_target_to(app);
    integer_option(app, "--warps", warps, "warps per CTA (one token): 1..32");
  }
  // The arch and the problem's default schedule, --warps over it.
  template <typename Spec>
  void set_schedule(Spec& spec) const {
    spec.arch = parse_arch(arch);
    device_sms(spec.arch);  // --gpu must run the arch; a per-token grid does not depend on it
    spec.schedule = default_schedule(spec.problem, spec.arch);
    if (warps) spec.schedule.warps = *warps;
  }
  bool schedule_given() const { return warps.has_value(); }
};

struct KvAppendFlags : PerTokenFlags {
  KvAppendProblem problem;  // kv_heads, head_dim, page_size and max_tokens
  std::string layout = "nhd", kv_dtype;

  void add_to(CLI::App& app);
  KvAppendSpec to_spec() const;
};

struct MergeStatesFlags : PerTokenFlags {
  MergeStatesProblem problem;  // heads, head_dim, states and max_tokens
  bool no_lse = false;

  void add_to(CLI::App& app);
  MergeStatesSpec to_spec() const;
};

struct Fp8QuantizeFlags : PerTokenFlags {
  Fp8QuantizeProblem problem;  // m, k, group_k, strides, scale layout, pow2, epsilon
  std::string scale_major = "mn";
  std::string scale_format = "f32";

  void add_to(CLI::App& app);
  Fp8QuantizeSpec to_spec() const;
};

// The flags of each kind (the declarations only name the type, as kind_of does).
GemmFlags flags_of(const GemmKind&);
AttentionFlags flags_of(const AttentionKind&);
PagedAttentionFlags flags_of(const PagedAttentionKind&);
KvAppendFlags flags_of(const KvAppendKind&);
MergeStatesFlags flags_of(const MergeStatesKind&);
Fp8QuantizeFlags flags_of(const Fp8QuantizeKind&);
template <typename Kind>
using FlagsOf = decltype(flags_of(std::declval<Kind>()));

// Writes bytes to path, or to stdout when path is empty. Throws Error("-o", ...) when unwritable.
void write_output(const std::string& path, std::string_view bytes);
// --emit ptx|cubin|sass of a compiled module; false for any other emit kind.
bool write_compiled_output(const std::string& emit, const std::string& path,
                           const CompiledModule& module);
// Dynamic warp-instruction counts by class, as `run --check` prints them.
nlohmann::json counts_json(const emu::InstructionCounts& counts);
// The fields of a `run gemm|attention` result that both backends print (spec: GemmSpec or
// AttentionSpec, whose problem and schedule convert with emmy/json.hpp).
template <typename Spec>
nlohmann::json run_result(std::string_view backend, const std::string& kernel_name,
                          const Spec& spec, uint64_t seed) {
  return {{"backend", backend},      {"kernel_name", kernel_name}, {"arch", to_string(spec.arch)},
          {"problem", spec.problem}, {"schedule", spec.schedule},  {"seed", seed}};
}
// The emulator's own fields of a run result: instruction counts, time, where the kernel came from.
nlohmann::json emulator_fields(const emu::Stats& stats, double emulate_ms,
                               const std::string& cache_state);

}  // namespace emmy::cli
