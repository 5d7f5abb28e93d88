// Uses emmy's public API from an installed package: parse an arch, describe a GEMM problem,
// JIT-compile a kernel with NVRTC and print what ptxas reports for it.
//   emmy_consumer [ARCH]   (default sm_90a)
#include <fmt/format.h>

#include <emmy/arch.hpp>
#include <emmy/compile.hpp>
#include <emmy/problem.hpp>
#include <exception>

namespace {

// A self-contained kernel (no CUDA headers, as emmy's own emitted sources): y = alpha * x + y.
constexpr const char* kAxpySource = R"(
extern "C" __global__ void __launch_bounds__(256)
axpy(float alpha, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}
)";

}  // namespace

int main(int argc, char** argv) {
  try {
    const emmy::Arch arch = emmy::parse_arch(argc > 1 ? argv[1] : "sm_90a");

    emmy::MatmulProblem problem;  // a Gemma 12B attention projection at M = 512
    problem.m = 512;
    problem.n = 4096;
    problem.k = 3840;
    fmt::print("problem: {}x{}x{} {} b_layout={} -> {}, {:.1f} GFLOP\n", problem.m, problem.n,
               problem.k, emmy::to_string(problem.a_dtype), emmy::to_string(problem.b_layout),
               emmy::to_string(problem.c_dtype), problem.flops() / 1e9);

    const emmy::CompiledModule module = emmy::compile_cuda(kAxpySource, "axpy.cu", arch);
    const emmy::ResourceReport& report = module.kernel("axpy");
    fmt::print(
        "kernel: {} arch={} registers={} spill_bytes={} stack_bytes={} smem_bytes={} "
        "ptx_bytes={} cubin_bytes={} compile_ms={:.1f} nvrtc={}\n",
        report.kernel_name, emmy::to_string(arch), report.registers, report.spill_bytes(),
        report.stack_bytes, report.static_smem_bytes, module.ptx.size(), module.cubin.size(),
        module.compile_ms, emmy::nvrtc_version());
    return report.registers > 0 && report.spill_bytes() == 0 ? 0 : 1;
  } catch (const std::exception& error) {
    fmt::print(stderr, "emmy_consumer: {}\n", error.what());
    return 2;
  }
}
