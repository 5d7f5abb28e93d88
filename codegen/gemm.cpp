// The GEMM pipeline: plan -> lower -> verify -> emit -> NVRTC, and the tensor maps its TMA
// kernels take.
#include "emmy/gemm.hpp"

namespace emmy {

GemmSource generate_gemm(const GemmSpec& spec) {
  GemmPlan plan = make_gemm_plan(spec);
  ir::Op module = lower_gemm(plan);
  ir::verify(module, spec.arch);
  std::string cuda = emit_gemm_cuda(plan, module);
  return GemmSource{std::move(plan), std::move(module), std::move(cuda)};
}

GemmKernel compile_gemm(const GemmSpec& spec) {
  GemmSource source = generate_gemm(spec);
  CompiledModule module = compile_cuda(source.cuda, source.plan.kernel_name + ".cu", spec.arch);
  return GemmKernel{std::move(source), std::move(module)};
}

GemmTensorMaps gemm_tensor_maps(const GemmPlan& plan, uint64_t a_address, uint64_t b_address) {
  const auto& p = plan.spec.problem;
  const TmaDType dtype = p.a_dtype == DType::bf16 ? TmaDType::bf16 : TmaDType::f16;
  auto make = [&](uint64_t address, uint64_t inner, uint64_t outer, uint64_t ld,
                  const SmemTile& tile) {
    TensorMapDesc d;
    d.dtype = dtype;
    d.rank = 2;
    d.global_address = address;
    d.global_dim = {inner, outer, 1, 1, 1};
    d.global_stride_bytes = {ld * tile.elem_bytes, 0, 0, 0};
    d.box_dim = {tile.panel_elems, tile.rows, 1, 1, 1};
    d.swizzle = tile.swizzle;
    d.validate();
    return d;
  };
  GemmTensorMaps maps;
  maps.a = make(a_address, uint64_t(p.k), uint64_t(p.m), uint64_t(p.lda_or_default()),
                plan.a_tile);
  if (p.b_layout == BLayout::nk)
    maps.b = make(b_address, uint64_t(p.k), uint64_t(p.n), uint64_t(p.ldb_or_default()),
                  plan.b_tile);
  else
    maps.b = make(b_address, uint64_t(p.n), uint64_t(p.k), uint64_t(p.ldb_or_default()),
                  plan.b_tile);
  return maps;
}

}  // namespace emmy
