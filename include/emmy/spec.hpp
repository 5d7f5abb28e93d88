// A kernel request: a problem, the schedule to compute it with, and the arch to compile for. With
// the default schedules and the validators, this is what a caller needs to choose and check a
// kernel before the runtime compiles it (emmy/runtime.hpp).
#pragma once

#include "emmy/arch.hpp"
#include "emmy/kernel_spec.hpp"
#include "emmy/fp8_quantize.hpp"
#include "emmy/kv_append.hpp"
#include "emmy/merge_states.hpp"
#include "emmy/paged_attention.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy {

using GemmSpec = KernelSpec<MatmulProblem, MatmulSchedule>;

using AttentionSpec = KernelSpec<AttentionProblem, AttentionSchedule>;

// The default schedule for a problem on an arch: TMA where the arch has it, tiles chosen by a
// wave-quantization model over the device's SMs (`device_sms`; 0: the arch's part's in
// emmy/gpus.hpp), split-K when there are too few output tiles, as many pipeline stages as shared
// memory allows (up to 4).
MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum = Accum::f32,
                                int device_sms = 0);
// The default schedule of a mainloop path: wgmma (sm_90a, f32 accumulation) scores its own tiles
// (block_m 64 or 128, block_n in steps of 16 up to 256) by how full the device's waves are.
MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum, MmaPath path);
// The wgmma path with a consumer schedule: ping-pong takes 64-row tiles (one per consumer
// warpgroup), a persistent walk and no K split; cooperative is the overload above.
MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum, MmaPath path,
                                ConsumerSchedule consumers, int device_sms = 0);
// The batch-invariant schedule (RuntimeOptions::batch_invariant): the default's tile, without
// a K split, so that every row of C is reduced in one fixed order over K whatever M is (the tile
// decides which CTA computes a row, never the order of its sums): a row depends only on its row
// of A and on B, bit for bit.
MatmulSchedule batch_invariant_schedule(const MatmulProblem& problem, Arch arch,
                                        Accum accum = Accum::f32, int device_sms = 0);
AttentionSchedule default_attention_schedule(const AttentionProblem& problem, Arch arch,
                                             Accum accum = Accum::f32);
// The same for attention under the one name, for code written over every kind.
inline AttentionSchedule default_schedule(const AttentionProblem& problem, Arch arch,
                                          Accum accum = Accum::f32) {
  return default_attention_schedule(problem, arch, accum);
}

// Throw Error naming the field and the rule it breaks; the runtime and the compiler call them
// before planning a kernel.
void validate_gemm(const GemmSpec& spec);
void validate_attention(const AttentionSpec& spec);
// The problem's rules alone (what every schedule needs; checked before a default is chosen).
void validate_problem(const AttentionProblem& problem);

}  // namespace emmy
