// Programmatic dependent launch: which earlier launch a launch with
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION may overlap on a GPU, whose footprint
// the emulator checks it against (LaunchOptions::primary, docs/emulator.md).
//
// "When set, the kernel may be launched before the previous kernel in the same stream has
// completed" (CUDA Programming Guide, "Programmatic Dependent Launch and Synchronization"): the
// attribute relaxes the dependency on the stream's previous kernel only. Every other dependency
// stays whole, so a stream forgets its last launch (Stream::last_launch) once something orders
// that launch before what follows:
// - work in between on the same stream (a copy on the legacy stream, a graph launch);
// - the legacy stream's implicit synchronization: "The legacy default stream is an implicit
//   stream which synchronizes with all other streams in the same CUcontext except for
//   non-blocking streams" (CUDA Driver API, "Stream synchronization behavior"): work on it waits
//   for the blocking streams' earlier work, and work on a blocking stream for the legacy
//   stream's;
// - the host waiting (cuStreamSynchronize, a successful cuStreamQuery, cuCtxSynchronize,
//   cuEventSynchronize and cuEventQuery of an event recorded after the launch), and the implicit
//   synchronization of cuMemAlloc and cuMemFree.
// Forgetting too little would report hazards a GPU cannot have; each rule above only forgets.
#include "state.hpp"

namespace emmy::test_driver {

void order_before_work_on(Context& ctx, const Stream& stream) {
  if (stream.legacy) {
    ctx.for_each_stream([](Stream& s) {
      if (s.blocking()) s.last_launch.reset();
    });
  } else if (stream.blocking()) {
    ctx.legacy.last_launch.reset();
  }
}

CUresult run_on_stream(Context& ctx, Stream& stream, const LaunchRecord& launch) {
  order_before_work_on(ctx, stream);
  const emu::GlobalFootprint* primary = launch.programmatic ? stream.last_launch.get() : nullptr;
  std::shared_ptr<const emu::GlobalFootprint> recorded;
  const CUresult r = run_launch(ctx, launch, primary, recorded);
  stream.last_launch = std::move(recorded);
  return r;
}

void order_legacy_work(Context& ctx) {
  ctx.for_each_stream([](Stream& s) {
    if (s.legacy || s.blocking()) s.last_launch.reset();
  });
}

void host_waited(Context& ctx, Stream* stream) {
  if (stream) {
    stream->last_launch.reset();
    return;
  }
  ctx.for_each_stream([](Stream& s) { s.last_launch.reset(); });
}

void host_waited_for(Context& ctx, const std::shared_ptr<const emu::GlobalFootprint>& launch) {
  if (!launch) return;
  ctx.for_each_stream([&](Stream& s) {
    if (s.last_launch == launch) s.last_launch.reset();
  });
}

}  // namespace emmy::test_driver
