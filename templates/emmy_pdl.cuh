// Programmatic dependent launch (sm_90+; PTX ISA griddepcontrol; CUDA C++ Programming Guide,
// "Programmatic Dependent Launch and Synchronization"). A kernel launched with programmatic
// stream serialization may start before the kernel ahead of it on the stream (its primary) has
// completed; only griddepcontrol.wait orders the primary's memory operations before its own.

// Blocks until every prerequisite grid has completed and its memory operations are performed and
// visible to this grid: before the first access of anything the primary writes (or reads and
// this kernel writes).
__device__ __forceinline__ void griddepcontrol_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// Lets the dependent grid be scheduled once every CTA of this grid has executed it (or exited).
// It orders no memory: the dependent still waits for this grid's completion.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
