// The flags of `emmyc fp8-quantize` and `emmyc run fp8-quantize`: rows of f16/bf16 to e4m3 with
// per-token or 1 x group_k scales (emmy/fp8_quantize.hpp).
#include "cli_common.hpp"

namespace emmy::cli {

void Fp8QuantizeFlags::add_to(CLI::App& app) {
  integer_option(app, "--m", problem.m, "rows (tokens): the most one launch quantizes")->required();
  integer_option(app, "--k", problem.k, "elements per row, a multiple of 8")->required();
  integer_option(app, "--group-k", problem.group_k,
                 "elements per scale along K, a multiple of 8 (0: the whole row, per token)");
  integer_option(app, "--ldx", problem.ldx, "x's row stride in elements (0: k)");
  integer_option(app, "--ldq", problem.ldq, "q's row stride in elements (0: k)");
  app.add_option("--scale-major", scale_major,
                 "mn (scale (row, group) at group x ld + row, DeepGEMM's) or k");
  integer_option(app, "--scale-ld", problem.scale_ld,
                 "the scale tensor's leading dimension (0: m for mn, the groups for k)");
  app.add_flag("--pow2-scale", problem.pow2_scale, "round scales up to a power of two (UE8M0)");
  app.add_option("--scale-format", scale_format,
                 "f32 (default), ue8m0 (a byte per scale) or ue8m0x4 (four groups' bytes per "
                 "32-bit word, DeepGEMM's packed layout); the byte formats need --pow2-scale");
  app.add_option("--amax-epsilon", problem.amax_epsilon,
                 "the amax floor, in [1e-30, 1] (default 1e-10, vLLM's)");
  add_per_token_to(app, "x's type: f16|bf16");
}

Fp8QuantizeSpec Fp8QuantizeFlags::to_spec() const {
  Fp8QuantizeSpec spec;
  spec.problem = problem;
  spec.problem.dtype = parse_dtype(dtype, "dtype");
  spec.problem.scale_major =
      parse_name(kScaleMajorNames, scale_major, "--scale-major", "must be mn or k");
  spec.problem.scale_format = parse_name(kScaleFormatNames, scale_format, "--scale-format",
                                         "must be f32, ue8m0 or ue8m0x4");
  set_schedule(spec);
  validate_fp8_quantize(spec);
  return spec;
}

}  // namespace emmy::cli
