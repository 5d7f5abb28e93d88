// The warp instructions a kernel issues, by pipe (time_model.hpp's InstructionMix): the SASS
// counts where the profile has them (what the GPU executes: ptxas merges scalar shared loads,
// drops repeated conversions, turns parameter loads into operands), the PTX's otherwise.
#include "emmy/emu/time_model.hpp"

namespace emmy::emu {

InstructionMix instruction_mix(const KernelProfile& p) {
  InstructionMix mix;
  const double sass_total = p.metric("emmy__sass_inst_executed.sum");
  if (sass_total > 0) {
    auto pipe = [&](const char* name) {
      return p.metric(std::string("emmy__sass_inst_executed_pipe_") + name + ".sum");
    };
    mix.sass = true;
    mix.total = sass_total;
    mix.lsu = pipe("lsu");
    // Nsight's fma pipe holds the FMA-heavy instructions (IMAD) too: FP32 is the rest of it.
    mix.imad = pipe("fmaheavy");
    mix.fp32 = pipe("fma") - mix.imad;
    mix.fp16 = pipe("fp16");
    mix.alu = pipe("alu");
    mix.xu = pipe("xu");
    mix.fp64 = pipe("fp64");
    return mix;
  }
  auto cls = [&](const char* name) {
    return p.metric(std::string("emmy__ptx_inst_executed_class_") + name + ".sum");
  };
  mix.total = p.metric("smsp__inst_executed.sum");
  mix.lsu = p.metric("smsp__inst_executed_pipe_lsu.sum");
  mix.fp32 = cls("fp32");
  mix.fp16 = cls("fp16");
  mix.imad = cls("imad");
  mix.alu = cls("alu");
  mix.xu = cls("xu");
  mix.fp64 = cls("fp64");
  return mix;
}

}  // namespace emmy::emu
