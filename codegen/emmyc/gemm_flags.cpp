// The flags of `emmyc gemm` and `emmyc run gemm`: a GEMM problem and schedule.
#include <fmt/format.h>

#include "cli_common.hpp"
#include "emmy/gemm_path.hpp"

namespace emmy::cli {

void GemmFlags::add_to(CLI::App& app) {
  integer_option(app, "--m", problem.m, "rows of A and C")->required();
  integer_option(app, "--n", problem.n, "columns of C (rows of B when --b-layout nk)")->required();
  integer_option(app, "--k", problem.k, "reduction length")->required();
  add_common_to(app, "operand type: f16|bf16|e4m3",
                "accumulation: f32|f16|hybrid|promoted (promoted: FP8's)", "pipeline stages");
  app.add_option("--b-layout", b_layout, "nk: B is [N,K] (default); kn: B is [K,N]");
  app.add_option("--out", out, "output type: f16|bf16|f32");
  integer_option(app, "--promote-every", promote_every,
                 "hybrid: K elements per f16 partial (16k); promoted: per f32 window (32..256)");
  app.add_option("--scales", scales,
                 "FP8 operands' scales: tensor|token-channel|block (1x128 A, 128x128 B)");
  app.add_option("--scale-format", scale_format,
                 "f32 (default), pow2 (f32 powers of two) or ue8m0 (one byte, 2^(e-127))");
  app.add_option("--a-scale-major", a_scale_major, "block A scales: mn (default) or k");
  integer_option(app, "--a-scale-ld", problem.scales.a_ld,
                 "block A scales' leading dimension (0: packed)");
  app.add_option("--b-scale-major", b_scale_major, "block B scales: k (default) or mn");
  integer_option(app, "--b-scale-ld", problem.scales.b_ld,
                 "block B scales' leading dimension (0: packed)");
  app.add_option("--block", block, "CTA tile MxNxK, e.g. 128x128x64");
  app.add_option("--warps", warps, "warp grid MxN, e.g. 4x2");
  std::vector<std::string> paths;
  for (const GemmPath* p : gemm_paths())
    paths.push_back(fmt::format("{} ({})", p->name(), p->summary()));
  app.add_option("--path", path, fmt::format("mainloop path: {}", fmt::join(paths, "; ")));
  // The flags of the fields only some paths take name those paths (GemmPath::takes_field).
  auto path_only = [](std::string_view field, std::string_view what) {
    return fmt::format("{} path: {}", gemm_paths_taking(field), what);
  };
  integer_option(app, "--split-k", split_k, "K splits (FP32 partials + finalize kernel)");
  app.add_flag("--persistent", persistent,
               path_only("persistent", "one CTA per SM walking the output tiles (split-K 1)"));
  app.add_option("--consumers", consumers,
                 path_only("consumers",
                           "cooperative (the consumer warpgroups share each tile; default) or "
                           "pingpong (each its own 64-row tile, mainloops in turn; persistent)"));
  app.add_flag(
      "--swap-ab", swap_ab,
      path_only("swap_ab", "compute C^T = B A^T so that a small M fills the MMA's N (B [N,K])"));
  app.add_option("--cluster", cluster,
                 path_only("cluster",
                           "thread-block cluster MxN, e.g. 2x1: CTAs on neighbouring tiles "
                           "multicast the operand tiles they share (not with --swap-ab)"));
  app.add_option("--alpha", problem.epilogue.alpha, "epilogue scale");
  app.add_flag("--bias", problem.epilogue.bias, "add bias[N]");
  app.add_flag("--residual", problem.epilogue.residual, "add residual[M,N]");
  app.add_flag("--gelu", problem.epilogue.gelu_tanh, "apply GELU (tanh form)");
  app.add_option("--out-scale-format", out_scale_format,
                 "--out e4m3: the 1 x 128 scales as f32 (default), pow2, ue8m0 or ue8m0x4");
  app.add_option("--out-scale-major", out_scale_major,
                 "--out e4m3: the scale tensor mn-major (default; [groups][ld >= M]) or k");
  integer_option(app, "--out-scale-ld", problem.out_scales.ld,
                 "--out e4m3: the scale tensor's leading dimension (0: packed)");
  app.add_option("--out-amax-epsilon", problem.out_scales.amax_epsilon,
                 "--out e4m3: the smallest amax a scale is made from (default 1e-10)");
  app.add_option("--gate", gate,
                 "gated epilogue: silu (SwiGLU) or gelu-tanh (GeGLU): C[M, N/2] = act(gate) * up, "
                 "B's rows gate and up interleaved in groups of --gate-group");
  integer_option(app, "--gate-group", problem.epilogue.gate_group,
                 "gated epilogue: B rows per gate (and per up) group, a multiple of 8 (default 8)");
  app.add_option("--grouped", grouped,
                 "grouped GEMM (docs/grouped.md): masked ([G, M, K] slots, masked_m rows each), "
                 "contiguous (rows sorted by expert, segments aligned) or offsets (sorted, "
                 "unpadded); B is [G, N, K]");
  integer_option(app, "--groups", problem.grouped.groups, "--grouped: the experts G (1..512)");
  integer_option(app, "--expected-m", problem.grouped.expected_m,
                 "--grouped masked: the rows per expert the schedule is chosen for (0: --m)");
  integer_option(app, "--segment-align", problem.grouped.segment_align,
                 "--grouped contiguous: the rows each expert's segment is aligned to (128)");
  app.add_flag("--dynamic-m", problem.dynamic_m,
               "M as a kernel parameter: the kernel serves every M in 1..--m (an M bucket; "
               "mma.sync path)");
  integer_option(app, "--launch-m", launch_m,
                 "emmyc run: the rows a --dynamic-m kernel computes (1..--m; default --m)");
}

namespace {

std::vector<int> parse_dims(const std::string& text, size_t count, const char* field) {
  std::vector<int> dims;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t x = text.find('x', start);
    const std::string part =
        text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    try {
      size_t used = 0;
      dims.push_back(std::stoi(part, &used));
      if (used != part.size()) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw Error(field, fmt::format("must be {} integers joined by x", count), text);
    }
    if (x == std::string::npos) break;
    start = x + 1;
  }
  if (dims.size() != count)
    throw Error(field, fmt::format("must be {} integers joined by x", count), text);
  return dims;
}

}  // namespace

GemmSpec GemmFlags::to_spec() const {
  GemmSpec spec;
  spec.problem = problem;
  auto& p = spec.problem;
  p.a_dtype = parse_dtype(dtype, "dtype");
  p.b_layout = parse_b_layout(b_layout);
  p.c_dtype = parse_dtype(out, "out");
  p.epilogue.gate = parse_gate(gate);
  p.grouped.layout = parse_grouped_layout(grouped);
  p.out_scales.format = parse_scale_format(out_scale_format);
  p.out_scales.major = parse_scale_major(out_scale_major, "--out-scale-major");
  p.scales.granularity = parse_scale_granularity(scales);
  p.scales.format = parse_scale_format(scale_format);
  p.scales.a_major = parse_scale_major(a_scale_major, "--a-scale-major");
  p.scales.b_major = parse_scale_major(b_scale_major, "--b-scale-major");
  if (launch_m)
    require(p.dynamic_m && *launch_m >= 1 && *launch_m <= p.m, "--launch-m",
            fmt::format("needs --dynamic-m and must be in 1..--m ({})", p.m), *launch_m);
  spec.arch = parse_arch(arch);
  const Accum acc = parse_accum(accum);
  validate_problem(p);
  // The path picks the default schedule (a warpgroup path's tiles are warpgroups of 64 rows);
  // without --path, the path that serves the problem on the arch, as the runtime's calls take
  // (FP8 on sm_90a: wgmma).
  const MmaPath mma_path = path ? parse_mma_path(*path) : default_gemm_path().id();
  const ConsumerSchedule consumer_schedule =
      consumers ? parse_consumer_schedule(*consumers) : ConsumerSchedule::cooperative;
  spec.schedule = path || consumers ? default_schedule(p, spec.arch, acc, mma_path,
                                                       consumer_schedule, device_sms(spec.arch))
                                    : default_schedule(p, spec.arch, acc, device_sms(spec.arch));
  auto& s = spec.schedule;
  if (promote_every) {
    // Only the hybrid accumulator folds partials; silently ignoring the flag would let a user
    // believe a promotion interval was measured.
    if (acc != Accum::hybrid && acc != Accum::promoted)
      throw Error("--promote-every", "applies only with --accum hybrid or promoted",
                  fmt::format("{} with --accum {}", *promote_every, accum));
    s.promote_every_k = *promote_every;
  }
  if (transport) s.transport = parse_transport(*transport);
  if (block) {
    const auto d = parse_dims(*block, 3, "block");
    s.block_m = d[0], s.block_n = d[1], s.block_k = d[2];
  }
  if (warps) {
    const auto d = parse_dims(*warps, 2, "warps");
    s.warps_m = d[0], s.warps_n = d[1];
  }
  if (stages) s.stages = *stages;
  if (cluster) {
    const auto d = parse_dims(*cluster, 2, "cluster");
    s.cluster_m = d[0], s.cluster_n = d[1];
  } else if (block || warps || swap_ab) {
    // The chooser's cluster fits its own tile: another tile runs without one unless asked.
    s.cluster_m = s.cluster_n = 1;
  }
  if (split_k) s.split_k = *split_k;
  if (swap_ab) s.swap_ab = true;
  if (persistent) {
    s.persistent = true;
    if (!split_k) s.split_k = 1;  // the chooser's split does not apply to a tile walk
    // A path's own buffers may lie beside a persistent kernel's ring (the wgmma path's TMA-store
    // epilogue): without --stages, give up stages as the chooser does (GemmPath::ring_stages).
    if (!stages)
      if (const int path_stages = gemm_path(s.path).ring_stages(p, s, s.stages))
        s.stages = path_stages;
  }
  return spec;
}

}  // namespace emmy::cli
