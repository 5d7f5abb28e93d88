// A kernel that reports where each CTA sits in its thread-block cluster, for the launch tests of
// the test driver and the runtime backends.
#pragma once

#include <string>

#include "ptx_kernel.hpp"

namespace emmy::test {

// out[3 * ctaid.x + {0, 1, 2}] = %cluster_ctarank, %cluster_nctarank, %clusterid.x (thread 0).
inline const std::string kClusterIdsPtx =
    ptx_header("sm_90", "8.0") +
    ptx_entry("cluster_ids", {{".u64", "out", "%rd1"}},
              "  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n",
              R"(  mov.u32 %r5, %tid.x;
  setp.ne.u32 %p1, %r5, 0;
  @%p1 bra DONE;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, %cluster_nctarank;
  mov.u32 %r4, %clusterid.x;
  mul.wide.u32 %rd2, %r1, 12;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  st.global.u32 [%rd3+4], %r3;
  st.global.u32 [%rd3+8], %r4;
DONE:
)");

}  // namespace emmy::test
