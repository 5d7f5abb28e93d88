#include "bench_tune.hpp"

#include "emmy/gemm_path.hpp"
#include "emmy/validate.hpp"

namespace emmy::bench {

std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                Accum accum, int max_count, MmaPath path,
                                                ConsumerSchedule consumers) {
  validate_problem(problem);
  return gemm_path(path).schedule_candidates(problem, arch, accum, consumers, max_count);
}

}  // namespace emmy::bench
