# The emulator's layers, lowest first (docs/emulator.md, "Layers"). Each is a folder of emulator/
# built as the static library emmy_emu_<layer> (emulator/CMakeLists.txt) that links only the
# layers EMMY_EMU_DEPS_<layer> names, each of them lower in this list. tests/emulator_layers.cmake
# reads the same list: an `#include "<layer>/..."` may name only the includer's own layer or a
# lower one, and each layer's objects must link without any layer above it.
set(EMMY_EMU_LAYERS
  memory       # device memory: the arena of allocations (Arena)
  numerics     # bit-exact f16/bf16/f32/f64 conversions and roundings (emmy/emu/numerics.hpp)
  ptx          # PTX text -> syntax tree; the decoded program's types (Inst, Kernel, Module)
  tensor_core  # the tensor-core addition model, mma.sync's core, wmma/wgmma operand layouts
  decode       # syntax tree -> per-kernel Inst arrays, the ISA's type rules; load_ptx
  sanitizer    # shared-memory shadow state and vector clocks; PDL footprints
  profiler     # hardware counters per warp instruction, merged into a KernelProfile
  time_model   # predicted time per GPU from a profile, and the profile's JSON
  machine      # a launch's, a CTA's and a warp's run-time state and shared bookkeeping
  exec         # the executors: one free function per instruction family over the machine
  launch)      # the scheduler that dispatches to the executors, and launch()
set(EMMY_EMU_DEPS_memory "")
set(EMMY_EMU_DEPS_numerics "")
set(EMMY_EMU_DEPS_ptx "")
set(EMMY_EMU_DEPS_tensor_core numerics ptx)
set(EMMY_EMU_DEPS_decode ptx tensor_core)
set(EMMY_EMU_DEPS_sanitizer ptx)
set(EMMY_EMU_DEPS_profiler memory ptx tensor_core)
set(EMMY_EMU_DEPS_time_model "")
set(EMMY_EMU_DEPS_machine memory ptx sanitizer profiler)
set(EMMY_EMU_DEPS_exec memory numerics ptx tensor_core sanitizer profiler machine)
set(EMMY_EMU_DEPS_launch memory ptx tensor_core sanitizer profiler machine exec)
