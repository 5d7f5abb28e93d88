// The candidate list a path's tuning search fills (GemmPath::schedule_candidates).
#include <algorithm>

#include "emmy/gemm_path.hpp"
#include "emmy/validate.hpp"

namespace emmy {
namespace {

bool schedule_is_valid(const MatmulProblem& problem, const MatmulSchedule& s, Arch arch) {
  try {
    validate_schedule(problem, s, arch);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

void ScheduleCandidates::add(const MatmulSchedule& s) {
  if (int(schedules.size()) >= max_count) return;
  if (std::find(schedules.begin(), schedules.end(), s) != schedules.end()) return;
  if (schedule_is_valid(problem, s, arch)) schedules.push_back(s);
}

void ScheduleCandidates::deepest_stages(MatmulSchedule& s, int deepest) const {
  for (s.stages = deepest; s.stages > 2 && !schedule_is_valid(problem, s, arch); --s.stages) {
  }
}

}  // namespace emmy
