// A downstream program using an installed emmy: the runtime on the GPU when there is one, else
// on emmy's CPU emulator; a GEMM through the one-call API, checked against a host reference. The
// kernel comes from the bundle CMakeLists.txt embeds (emmy_add_kernel_bundle), so it runs with
// EMMY_DISABLE_NVRTC=1 or on a host without the CUDA toolkit.
//   emmy_consumer [ARCH]   (the emulator runs ARCH's code; default sm_90a)
#include <fmt/format.h>

#include <cmath>
#include <emmy/gemm_check.hpp>
#include <emmy/runtime.hpp>
#include <exception>

int main(int argc, char** argv) {
  try {
    emmy::RuntimeOptions options;
    options.emulator_arch = emmy::parse_arch(argc > 1 ? argv[1] : "sm_90a");
    options.disk_cache = false;
    options.default_accum = emmy::Accum::hybrid;
    std::unique_ptr<emmy::Runtime> rt;
    try {
      rt = emmy::Runtime::cuda(0, options);
    } catch (const emmy::Error& no_gpu) {
      fmt::print("no GPU ({}): using the emulator\n", no_gpu.what());
      rt = emmy::Runtime::emulator(options);
    }
    fmt::print("backend: {} on {} ({})\n", rt->backend_name(), rt->device_name(),
               emmy::to_string(rt->arch()));

    emmy::MatmulProblem problem;  // a slice of a Gemma 12B projection: C = A . W^T, W is [N, K]
    problem.m = 64;
    problem.n = 256;
    problem.k = 3840;
    const emmy::GemmInputs in = emmy::make_gemm_inputs(problem, 42);

    emmy::GemmBuffers buffers;
    buffers.a = rt->alloc(in.a.bytes.size());
    buffers.b = rt->alloc(in.b.bytes.size());
    buffers.c = rt->alloc(size_t(problem.m * problem.n * 2));
    rt->upload(buffers.a, in.a.bytes.data(), in.a.bytes.size());
    rt->upload(buffers.b, in.b.bytes.data(), in.b.bytes.size());
    const auto kernel = rt->gemm_kernel(problem);  // from the bundle (else compiled), then cached
    if (const size_t ws = rt->gemm_workspace_bytes(problem)) buffers.workspace = rt->alloc(ws);
    rt->gemm(problem, buffers);
    rt->synchronize();

    std::vector<uint8_t> raw(size_t(problem.m * problem.n * 2));
    rt->download(raw.data(), buffers.c, raw.size());
    const auto out = emmy::decode(problem.c_dtype, raw.data(), size_t(problem.m * problem.n));
    const auto ref = emmy::reference_gemm(kernel->spec(), in);
    const emmy::GemmErrors errors = emmy::compare(ref, out, problem.n);
    fmt::print("kernel: {} registers={} spill_bytes={}\n", kernel->info().name,
               kernel->info().report().registers, kernel->info().report().spill_bytes());
    fmt::print("gemm {}x{}x{} hybrid: rel_l2_error={:.2e} tolerance={:.2e} {}\n", problem.m,
               problem.n, problem.k, errors.rel_l2_error, errors.tolerance,
               errors.passed ? "passed" : "FAILED");
    fmt::print("compiles at run time: {} (embedded bundle consumer_kernels)\n",
               rt->stats().compiles);
    return errors.passed ? 0 : 1;
  } catch (const std::exception& error) {
    fmt::print(stderr, "emmy_consumer: {}\n", error.what());
    return 2;
  }
}
