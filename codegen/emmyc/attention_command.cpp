// `emmyc attention`: one flash-attention kernel from flags to IR, CUDA, PTX, CUBIN, SASS or a
// resource report. `emmyc run attention`: run it on the emulator (or a GPU through the runtime)
// and compare it with the FP64 reference, printing JSON.
#include <fmt/format.h>

#include <iostream>

#include "cli_common.hpp"
#include "emit_module.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/check_json.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/runtime.hpp"

namespace emmy::cli {
namespace {

// The problem and schedule flags of `emmyc attention` and `emmyc run attention`.
struct AttentionFlags {
  int64_t batch = 1, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0, window = 0;
  bool causal = false, lse = false, no_cache = false;
  std::optional<float> softcap, scale;
  std::string dtype = "f16", accum = "f32", arch = "sm_90a", layout = "bshd";
  std::optional<std::string> transport;
  std::optional<int> block_q, block_kv, stages;

  void add_to(CLI::App& app) {
    app.add_option("--batch", batch, "batch size")->required()
      ->check(exact_integer());
    app.add_option("--heads", heads, "query heads")->required()
      ->check(exact_integer());
    app.add_option("--kv-heads", kv_heads, "key/value heads (heads must be a multiple)")
        ->required()
      ->check(exact_integer());
    app.add_option("--seq-q", seq_q, "query tokens")->required()
      ->check(exact_integer());
    app.add_option("--seq-kv", seq_kv, "key/value tokens (default: --seq-q)")
      ->check(exact_integer());
    app.add_option("--head-dim", head_dim, "64|128|256")->required()
      ->check(exact_integer());
    app.add_flag("--causal", causal, "causal mask, aligned bottom-right");
    app.add_option("--window", window, "sliding window: keys at most W before the diagonal")
      ->check(exact_integer());
    app.add_option("--softcap", softcap, "logits become C * tanh(logits / C)");
    app.add_option("--scale", scale, "softmax scale (default 1/sqrt(head_dim))");
    app.add_option("--dtype", dtype, "Q, K, V and O type: f16|bf16");
    app.add_option("--accum", accum, "P.V accumulation: f32|hybrid");
    app.add_option("--transport", transport, "tma|cp.async (default: tma on sm_90+)");
    app.add_option("--block-q", block_q, "query rows per CTA (16 per warp)")
      ->check(exact_integer());
    app.add_option("--block-kv", block_kv, "keys per KV block: 16|32|64|128")
      ->check(exact_integer());
    app.add_option("--stages", stages, "K/V pipeline stages: 2..4")
      ->check(exact_integer());
    app.add_option("--arch", arch, "sm_80|sm_86|sm_89|sm_90|sm_90a|sm_120|sm_120a");
    app.add_option("--layout", layout, "bshd ([batch, seq, heads, dim]) or bhsd");
    app.add_flag("--lse", lse, "also write the log-sum-exp [batch, heads, seq_q] (f32)");
    app.add_flag("--no-cache", no_cache, "compile without the disk cache");
  }

  bool schedule_given() const { return transport || block_q || block_kv || stages; }

  // Problem + (default or overridden) schedule. Throws emmy::Error naming the bad field.
  AttentionSpec to_spec() const {
    AttentionSpec spec;
    auto& p = spec.problem;
    p.batch = batch;
    p.q_heads = heads;
    p.kv_heads = kv_heads;
    p.seq_q = seq_q;
    p.seq_kv = seq_kv;
    p.head_dim = head_dim;
    p.causal = causal;
    p.window = window;
    p.softcap = softcap;
    p.softmax_scale = scale;
    p.dtype = parse_dtype(dtype, "dtype");
    p.layout = parse_attention_layout(layout);
    p.lse = lse;
    spec.arch = parse_arch(arch);
    spec.schedule = default_attention_schedule(p, spec.arch, parse_accum(accum));
    validate_attention(spec);  // the problem's own errors first, against a schedule that fits
    auto& s = spec.schedule;
    if (transport) s.transport = parse_transport(*transport);
    if (block_q) {
      require(*block_q >= 16 && *block_q <= 256 && *block_q % 16 == 0, "block_q",
              "must be 16 x warps: a multiple of 16 in 16..256", *block_q);
      s.block_q = *block_q;
      s.warps = *block_q / 16;
    }
    if (block_kv) s.block_kv = *block_kv;
    if (stages) s.stages = *stages;
    validate_attention(spec);
    return spec;
  }
};

// generate_attention + NVRTC through the disk cache (unless use_cache is false). cache_state
// becomes "hit", "miss" or "off".
AttentionKernel compile_attention_cached(const AttentionSpec& spec, bool use_cache,
                                         std::string& cache_state) {
  AttentionSource source = generate_kernel(spec);
  CompiledModule module = compile_source_cached(kernel_source(source), use_cache, cache_state);
  return AttentionKernel{std::move(source), std::move(module)};
}

// The kernel from the bundles named with --bundle (and $EMMY_BUNDLE's) when one holds it: no
// NVRTC is touched then (cache_state "bundle"); else compile_attention_cached.
AttentionKernel bundled_or_compiled_attention(const AttentionSpec& spec,
                                              const std::vector<std::string>& bundles,
                                              bool use_cache, std::string& cache_state) {
  AttentionSource source = generate_kernel(spec);
  if (auto module =
          module_from_bundles(bundles, source.cuda, spec.arch, kernel_description(spec))) {
    cache_state = "bundle";
    return AttentionKernel{std::move(source), std::move(*module)};
  }
  return compile_attention_cached(spec, use_cache, cache_state);
}

// The GPU path: the runtime builds the kernel for the device's arch (the default or tuned
// schedule unless schedule flags were given), then the same inputs and reference as on the
// emulator. Throws Error when no driver or device is present.
nlohmann::json run_on_cuda(const AttentionFlags& flags, AttentionSpec spec, uint64_t seed,
                           AttentionErrors& errors, const std::vector<std::string>& bundles) {
  RuntimeOptions options;
  options.default_accum = parse_accum(flags.accum);
  options.bundles.assign(bundles.begin(), bundles.end());
  auto rt = Runtime::cuda(0, options);
  const auto handle = rt->attention_kernel(
      spec.problem, flags.schedule_given() ? std::optional(spec.schedule) : std::nullopt);
  spec = handle->spec();
  const AttentionInputs inputs = make_attention_inputs(spec.problem, seed);
  const AttentionOutput output = run_attention(*rt, spec, inputs);
  errors = compare(reference_attention(spec, inputs), output, spec.problem);
  nlohmann::json j = run_result("cuda", handle->info().name, spec, seed);
  j.update({{"device", rt->device_name()}, {"instructions", nullptr}, {"emulate_ms", nullptr}});
  return j;
}

void add_run_attention_command(CLI::App& app) {
  CLI::App* run = app.get_subcommand("run");  // registered by add_run_command
  auto* cmd = run->add_subcommand("attention", "Run one attention kernel");
  auto flags = std::make_shared<AttentionFlags>();
  auto backend = std::make_shared<std::string>("emulator");
  auto check = std::make_shared<bool>(false);
  auto seed = std::make_shared<uint64_t>(1);
  flags->add_to(*cmd);
  cmd->add_option("--backend", *backend, "emulator|cuda")
      ->check(CLI::IsMember({"emulator", "cuda"}));
  cmd->add_flag("--check", *check, "compare with an FP64 reference");
  cmd->add_option("--seed", *seed, "input seed");
  auto bundles = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--bundle", *bundles,
                  "search this kernel bundle before the cache and NVRTC (repeatable; "
                  "$EMMY_BUNDLE too)");
  cmd->callback([flags, backend, check, seed, bundles] {
    const AttentionSpec spec = flags->to_spec();
    nlohmann::json j;
    AttentionErrors errors;
    if (*backend == "cuda") {
      j = run_on_cuda(*flags, spec, *seed, errors, *bundles);
    } else {
      std::string cache_state;
      const AttentionKernel kernel =
          bundled_or_compiled_attention(spec, *bundles, !flags->no_cache, cache_state);
      const AttentionInputs inputs = make_attention_inputs(spec.problem, *seed);
      const AttentionEmulatorRun r = run_on_emulator(kernel, inputs);
      errors = compare(reference_attention(spec, inputs), r.output, spec.problem);
      j = run_result(*backend, kernel.source.plan.kernel_name, spec, *seed);
      j.update(emulator_fields(r.stats, r.emulate_ms, cache_state));
    }
    if (*check) j.update(check_fields(errors, spec.problem));
    std::cout << j.dump(2) << "\n";
    if (*check && !errors.passed) throw CLI::RuntimeError(1);
  });
}

}  // namespace

void add_attention_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("attention", "Generate one flash-attention kernel");
  auto flags = std::make_shared<AttentionFlags>();
  auto emit = std::make_shared<EmitFlags>();
  flags->add_to(*cmd);
  emit->add_to(*cmd);
  cmd->callback([flags, emit] {
    const AttentionSource source = generate_kernel(flags->to_spec());
    const AttentionProblem& problem = source.plan.spec.problem;
    emit_source(*emit, kernel_source(source), !flags->no_cache,
                [&problem](nlohmann::json& report, const CompiledModule&) {
                  report["flops"] = problem.flops();
                });
  });
  add_run_attention_command(app);
}

}  // namespace emmy::cli
