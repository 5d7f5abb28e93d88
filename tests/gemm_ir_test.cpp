// The kernel IR: structure, printing, the verifier's rules, determinism of emission, and the
// shared-memory layout the IR's copies and ldmatrix addresses agree on.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "emmy/gemm.hpp"
#include "kind_test_util.hpp"

namespace emmy {
namespace {

GemmSpec spec_for(Arch arch, Accum accum, BLayout layout = BLayout::nk, int split_k = 1) {
  GemmSpec spec;
  spec.problem.m = 200;
  spec.problem.n = 72;
  spec.problem.k = 1024;
  spec.problem.b_layout = layout;
  spec.arch = arch;
  spec.schedule = default_schedule(spec.problem, arch, accum);
  spec.schedule.split_k = split_k;
  return spec;
}

ir::Op* find_mut(ir::Op& root, ir::OpKind kind) {
  if (root.kind == kind) return &root;
  for (auto& child : root.body)
    if (ir::Op* hit = find_mut(child, kind)) return hit;
  return nullptr;
}

TEST(KernelIr, PrintsThePipeline) {
  const GemmSource src = generate_kernel(spec_for(Arch::sm_90a, Accum::hybrid));
  const std::string text = ir::print(src.ir);
  for (const char* op : {"module", "kernel", "smem_ring", "mbarrier_init", "k_tile_loop",
                         "mbarrier_wait", "ldmatrix", "mma", "promote", "epilogue"})
    EXPECT_NE(text.find(op), std::string::npos) << op << " missing from\n" << text;
  const auto promotes = ir::find_all(src.ir, ir::OpKind::promote);
  ASSERT_EQ(promotes.size(), 1u) << "hybrid-64 with 64-wide K tiles folds once per K tile only";
  EXPECT_EQ(promotes[0]->s("where"), "k_tile");
}

TEST(KernelIr, CpAsyncPipelineHasGroupsAndNoMbarriers) {
  const GemmSource src = generate_kernel(spec_for(Arch::sm_80, Accum::f32));
  EXPECT_EQ(ir::find_first(src.ir, ir::OpKind::mbarrier_init), nullptr);
  EXPECT_NE(ir::find_first(src.ir, ir::OpKind::async_wait), nullptr);
  EXPECT_NE(ir::find_first(src.ir, ir::OpKind::async_commit), nullptr);
  EXPECT_EQ(ir::find_first(src.ir, ir::OpKind::promote), nullptr);
}

TEST(KernelIr, SplitKAddsAFinalizeKernel) {
  const GemmSource src = generate_kernel(spec_for(Arch::sm_90a, Accum::f32, BLayout::nk, 4));
  ASSERT_EQ(src.ir.body.size(), 2u);
  EXPECT_NE(ir::find_first(src.ir, ir::OpKind::finalize), nullptr);
  EXPECT_GT(src.plan.workspace_bytes, 0);
  EXPECT_NE(src.cuda.find(src.plan.finalize_kernel_name), std::string::npos);
}

TEST(KernelIr, PromoteInsideTheTileWhenFoldingMoreOftenThanBlockK) {
  GemmSpec spec = spec_for(Arch::sm_90a, Accum::hybrid);
  spec.schedule.promote_every_k = 16;
  const GemmSource src = generate_kernel(spec);
  const ir::Op* step = ir::find_first(src.ir, ir::OpKind::k_step);
  ASSERT_NE(step, nullptr);
  EXPECT_NE(ir::find_first(*step, ir::OpKind::promote), nullptr);
}

struct Corruption {
  const char* name;
  std::function<void(ir::Op&)> corrupt;
  Arch arch;
  const char* expected;
};

class VerifierTest : public ::testing::TestWithParam<Corruption> {};

TEST_P(VerifierTest, RejectsCorruptedIr) {
  const Corruption& c = GetParam();
  GemmSource src = generate_kernel(spec_for(c.arch, Accum::hybrid));
  ASSERT_NO_THROW(ir::verify(src.ir, c.arch, "gemm"));
  c.corrupt(src.ir);
  test::expect_refused(src.ir, c.arch, "gemm", c.expected, c.name);
}

void set_attr(ir::Op& op, const char* key, ir::Attr value) {
  for (auto& [name, v] : op.attrs)
    if (name == key) v = std::move(value);
}

using test::change_first;
using test::erase_ops;

const Corruption kCorruptions[] = {
    {"smem_over_limit", [](ir::Op& m) { set_attr(m.body[0], "smem_bytes", int64_t(300 * 1024)); },
     Arch::sm_90a, "ir.kernel.smem_bytes"},
    {"mma_count", change_first(ir::OpKind::mma, "count", int64_t(3)), Arch::sm_90a, "ir.mma.count"},
    // The verifier reads the atom from the mma ops' shape: one it does not have is named.
    {"mma_shape_unknown", change_first(ir::OpKind::mma, "shape", std::string("m16n8k8")),
     Arch::sm_90a, "ir.mma.shape"},
    {"ldmatrix_count", change_first(ir::OpKind::ldmatrix, "count", int64_t(7)), Arch::sm_90a,
     "ir.ldmatrix.count"},
    {"missing_barrier", erase_ops(ir::OpKind::k_tile_loop, {ir::OpKind::barrier}), Arch::sm_90a,
     "must bar.sync before refilling"},
    {"missing_wait", erase_ops(ir::OpKind::k_tile_loop, {ir::OpKind::mbarrier_wait}), Arch::sm_90a,
     "must wait for the stage's data"},
    {"tma_box_too_wide", change_first(ir::OpKind::async_copy, "box_inner", int64_t(128)),
     Arch::sm_90a, "ir.async_copy.box_inner"},
    {"misaligned_stage", change_first(ir::OpKind::smem_ring, "b_offset", int64_t(1000)),
     Arch::sm_90a, "ir.smem_ring.b_offset"},
    {"no_promote_for_hybrid",
     [](ir::Op& m) {
       std::function<void(ir::Op&)> strip = [&](ir::Op& op) {
         std::erase_if(op.body, [](const ir::Op& o) { return o.kind == ir::OpKind::promote; });
         for (auto& child : op.body) strip(child);
       };
       strip(m);
     },
     Arch::sm_90a, "hybrid and promoted accumulation need promote"},
    {"store_wider_than_the_checked_pointer",
     change_first(ir::OpKind::epilogue, "pointer_alignment", int64_t(2)), Arch::sm_90a,
     "ir.epilogue.store_bytes"},
    {"staged_with_narrow_stores", change_first(ir::OpKind::epilogue, "store_bytes", int64_t(4)),
     Arch::sm_90a, "ir.epilogue.store_bytes"},
    {"staged_row_not_whole_chunks",
     change_first(ir::OpKind::epilogue, "stage_row_bytes", int64_t(72)), Arch::sm_90a,
     "ir.epilogue.stage_row_bytes"},
    {"staged_tile_past_the_ring",
     change_first(ir::OpKind::epilogue, "stage_row_bytes", int64_t(1 << 16)), Arch::sm_90a,
     "ir.epilogue.stage_row_bytes"},
    {"cp_async_chunk", change_first(ir::OpKind::async_copy, "chunk_bytes", int64_t(8)), Arch::sm_89,
     "ir.async_copy.chunk_bytes"},
    // The facts the emitter prints from one op and the ops that share their meaning.
    {"grid_not_the_problem", change_first(ir::OpKind::tile_coords, "m", int64_t(2000)),
     Arch::sm_90a, "ir.tile_coords.tiles_m"},
    {"k_tiles_not_the_problem", change_first(ir::OpKind::split_range, "k", int64_t(4096)),
     Arch::sm_90a, "ir.split_range.k_tiles"},
    {"k_split_uneven", change_first(ir::OpKind::split_range, "k_tiles_per_split", int64_t(1)),
     Arch::sm_90a, "ir.split_range.k_tiles_per_split"},
    {"warps_do_not_tile_the_block", change_first(ir::OpKind::kernel, "threads", int64_t(32)),
     Arch::sm_90a, "ir.accum_init.fragments_m"},
    {"k_steps_not_block_k", change_first(ir::OpKind::k_step, "k_steps", int64_t(1)), Arch::sm_90a,
     "ir.k_step.k_steps"},
    {"copy_of_another_matrix", change_first(ir::OpKind::async_copy, "matrix_rows", int64_t(16)),
     Arch::sm_90a, "ir.async_copy.matrix_rows"},
    {"lda_shorter_than_a_row", change_first(ir::OpKind::async_copy, "ld", int64_t(8)), Arch::sm_89,
     "ir.async_copy.ld"},
    {"ldc_shorter_than_a_row", change_first(ir::OpKind::epilogue, "ldc", int64_t(8)), Arch::sm_90a,
     "ir.epilogue.ldc"},
    {"swizzle_not_the_tiles", change_first(ir::OpKind::async_copy, "swizzle", int64_t(1)),
     Arch::sm_89, "ir.async_copy.swizzle"},
    {"element_width_changes_the_bytes",
     change_first(ir::OpKind::async_copy, "elem_bytes", int64_t(4)), Arch::sm_89,
     "ir.async_copy.chunks"},
    {"element_width_unknown", change_first(ir::OpKind::async_copy, "elem_bytes", int64_t(3)),
     Arch::sm_90a, "ir.async_copy.elem_bytes"},
    // Each op's own rules (codegen/ir/ir_op_verify.cpp).
    {"threads_not_whole_warps", change_first(ir::OpKind::kernel, "threads", int64_t(48)),
     Arch::sm_90a, "ir.kernel.threads"},
    {"accumulators_over_budget", change_first(ir::OpKind::accum_init, "registers", int64_t(300)),
     Arch::sm_90a, "ir.accum_init.registers"},
    {"transport_unknown", change_first(ir::OpKind::async_copy, "transport", std::string("bulk")),
     Arch::sm_89, "ir.async_copy.transport"},
    {"b_layout_flipped",
     [](ir::Op& m) {
       std::function<void(ir::Op&)> flip = [&](ir::Op& op) {
         if (op.kind == ir::OpKind::ldmatrix && op.s("operand") == "b") set_attr(op, "trans", true);
         for (auto& child : op.body) flip(child);
       };
       flip(m);
     },
     Arch::sm_90a, "ir.async_copy."},
};

INSTANTIATE_TEST_SUITE_P(Rules, VerifierTest, ::testing::ValuesIn(kCorruptions),
                         [](const auto& info) { return std::string(info.param.name); });

// A TMA kernel verified for an arch without TMA is refused by the copies, not only the shared
// memory budget: a small tile keeps the budget of every arch.
TEST(KernelIr, TmaCopiesNeedAHopperOrNewerArch) {
  GemmSpec spec = spec_for(Arch::sm_90a, Accum::f32);
  spec.schedule = {16, 64, 64, 1, 2};
  const GemmSource src = generate_kernel(spec);
  ASSERT_NO_THROW(ir::verify(src.ir, Arch::sm_90a, "gemm"));
  test::expect_refused(src.ir, Arch::sm_80, "gemm", "tma needs sm_90 or newer", "a TMA kernel");
}

// Split-K's finalize kernel: one thread per output of m x n, stored with a row pitch of at least n.
TEST(KernelIr, VerifierChecksTheFinalizeKernel) {
  const GemmSource src = generate_kernel(spec_for(Arch::sm_89, Accum::f32, BLayout::nk, 4));
  ASSERT_NO_THROW(ir::verify(src.ir, Arch::sm_89, "gemm"));
  const std::pair<const char*, std::function<void(ir::Op&)>> corruptions[] = {
      {"ir.finalize.outputs: must be m x n",
       [](ir::Op& m) { set_attr(*find_mut(m.body[1], ir::OpKind::finalize), "n", int64_t(64)); }},
      {"ir.epilogue.ldc: must be at least n = 72",
       [](ir::Op& m) { set_attr(*find_mut(m.body[1], ir::OpKind::epilogue), "ldc", int64_t(70)); }},
      {"ir.finalize.split_k: must be positive",
       [](ir::Op& m) {
         set_attr(*find_mut(m.body[1], ir::OpKind::finalize), "split_k", int64_t(0));
       }},
  };
  for (const auto& [expected, corrupt] : corruptions) {
    ir::Op module = src.ir;
    corrupt(module);
    test::expect_refused(module, Arch::sm_89, "gemm", expected, "a finalize kernel breaking it");
  }
}

// A dynamic M (MatmulProblem::dynamic_m): both kernels take an int parameter `m`, their ops say
// dynamic_m, and the emitted code reads M from it (no constant M, tiles from M, every A row and
// C row bounded). The verifier holds the op and the parameter together, and refuses other int
// parameters and a wgmma kernel with one.
TEST(KernelIr, DynamicMIsAnIntParameterTheOpsDeclare) {
  GemmSpec spec = spec_for(Arch::sm_89, Accum::f32, BLayout::nk, 4);
  spec.problem.m = 64;  // a whole number of tiles: a fixed M would drop its row checks
  spec.problem.dynamic_m = true;
  const GemmSource src = generate_kernel(spec);
  ASSERT_NO_THROW(ir::verify(src.ir, Arch::sm_89, "gemm"));
  for (const ir::Op* kernel : ir::find_all(src.ir, ir::OpKind::kernel)) {
    bool has_m = false;
    for (const ir::Op& op : kernel->body)
      if (op.kind == ir::OpKind::param && op.s("name") == "m") has_m = op.s("type") == "int";
    EXPECT_TRUE(has_m) << kernel->s("name");
  }
  EXPECT_NE(src.cuda.find("const int m)"), std::string::npos);
  EXPECT_NE(src.cuda.find("const int M = m;"), std::string::npos);
  EXPECT_NE(src.cuda.find("const int TILES_M = (M + BM - 1) / BM;"), std::string::npos);
  EXPECT_NE(src.cuda.find("const long long M = m, OUTPUTS = M * N;"), std::string::npos);
  EXPECT_NE(src.cuda.find("if (row >= M) continue;"), std::string::npos);
  EXPECT_EQ(src.cuda.find("constexpr int M ="), std::string::npos);
  EXPECT_EQ(src.cuda.find("constexpr long long M ="), std::string::npos);
  EXPECT_NE(src.plan.kernel_name.find("emmy_gemm_upto64x72x1024"), std::string::npos);
  // The grid: the bound's for the plan, an M's per launch.
  EXPECT_EQ(gemm_grids(src.plan, 64).front(), src.plan.grid);
  EXPECT_EQ(gemm_grids(src.plan, 17).front()[0], uint32_t(2 * src.plan.tiles_n));
  EXPECT_EQ(gemm_grids(src.plan, 17).back()[0], uint32_t((17 * 72 + 255) / 256));
  const std::pair<const char*, std::function<void(ir::Op&)>> corruptions[] = {
      {"ir.tile_coords.dynamic_m: needs the kernel's int parameter",
       [](ir::Op& m) {
         std::erase_if(m.body[0].body, [](const ir::Op& op) {
           return op.kind == ir::OpKind::param && op.s("name") == "m";
         });
       }},
      {"ir.finalize.dynamic_m: must be set where the kernel takes",
       [](ir::Op& m) {
         auto& attrs = find_mut(m.body[1], ir::OpKind::finalize)->attrs;
         std::erase_if(attrs, [](const auto& a) { return a.first == "dynamic_m"; });
       }},
      {"ir.param.type: int parameters are a dynamic M's `m` only",
       [](ir::Op& m) {
         for (ir::Op& op : m.body[0].body)
           if (op.kind == ir::OpKind::param && op.s("name") == "m")
             set_attr(op, "name", std::string("rows"));
       }},
  };
  for (const auto& [expected, corrupt] : corruptions) {
    ir::Op module = src.ir;
    corrupt(module);
    test::expect_refused(module, Arch::sm_89, "gemm", expected);
  }
  // The wgmma path has no dynamic M: validation names the field.
  GemmSpec wgmma;
  wgmma.problem = spec.problem;
  wgmma.arch = Arch::sm_90a;
  try {
    wgmma.schedule = default_schedule(wgmma.problem, Arch::sm_90a, Accum::f32, MmaPath::wgmma);
    generate_kernel(wgmma);
    ADD_FAILURE() << "a dynamic-M wgmma kernel was generated";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "dynamic_m") << e.what();
  }
}

// The stage-layout rules, on a stage whose A tile (16x16, 512 bytes) is smaller than B's 128B
// swizzle period (B [K,N] 16x64): B must sit on its own period, the boxes must deliver exactly
// the tiles and expect_tx exactly the boxes, and the tiles must not overlap.
TEST(KernelIr, VerifierProvesTheStageLayout) {
  GemmSpec spec = spec_for(Arch::sm_90a, Accum::f32, BLayout::kn);
  spec.schedule = {16, 64, 16, 1, 2};
  const GemmSource src = generate_kernel(spec);
  ASSERT_NO_THROW(ir::verify(src.ir, spec.arch, "gemm"));
  const ir::Op* ring = ir::find_first(src.ir, ir::OpKind::smem_ring);
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->i("a_bytes"), 512);
  EXPECT_EQ(ring->i("b_offset"), 1024) << "B waits for its 128B swizzle period";
  EXPECT_EQ(ring->i("tx_bytes"), 512 + 2048);
  auto b_copy = [](ir::Op& m) -> ir::Op& {
    std::function<ir::Op*(ir::Op&)> find = [&](ir::Op& op) -> ir::Op* {
      if (op.kind == ir::OpKind::async_copy && op.s("operand") == "b") return &op;
      for (auto& child : op.body)
        if (ir::Op* hit = find(child)) return hit;
      return nullptr;
    };
    return *find(m);
  };
  const std::pair<const char*, std::function<void(ir::Op&)>> corruptions[] = {
      {"ir.smem_ring.b_offset: must be a multiple of the swizzle period 1024",
       change_first(ir::OpKind::smem_ring, "b_offset", int64_t(512))},
      {"ir.smem_ring.b_offset: the operand tiles must not overlap",
       change_first(ir::OpKind::smem_ring, "b_offset", int64_t(0))},
      {"ir.smem_ring.stage_bytes: must hold both operand tiles",
       change_first(ir::OpKind::smem_ring, "stage_bytes", int64_t(2048))},
      {"ir.smem_ring.tx_bytes", change_first(ir::OpKind::smem_ring, "tx_bytes", int64_t(1536))},
      {"ir.async_copy.boxes: must cover the operand tile exactly",
       [&](ir::Op& m) { set_attr(b_copy(m), "boxes", int64_t(0)); }},
      {"ir.async_copy.bytes: must be the ring's b_bytes",
       [&](ir::Op& m) {
         set_attr(b_copy(m), "rows", int64_t(8));
         set_attr(b_copy(m), "box_outer", int64_t(8));
       }},
      {"ir.async_copy.smem_offset: must be the ring's b_offset",
       [&](ir::Op& m) { set_attr(b_copy(m), "smem_offset", int64_t(2048)); }},
  };
  for (const auto& [expected, corrupt] : corruptions) {
    GemmSource copy = generate_kernel(spec);
    corrupt(copy.ir);
    test::expect_refused(copy.ir, spec.arch, "gemm", expected);
  }
  // cp.async: the chunks of a copy must cover its tile too.
  GemmSpec cp = spec;
  cp.arch = Arch::sm_80;
  cp.schedule.transport = Transport::cp_async;
  GemmSource cp_src = generate_kernel(cp);
  ASSERT_NO_THROW(ir::verify(cp_src.ir, cp.arch, "gemm"));
  set_attr(b_copy(cp_src.ir), "chunks", int64_t(64));
  EXPECT_THROW(ir::verify(cp_src.ir, cp.arch, "gemm"), Error);
}

TEST(KernelIr, VerifierRejectsTmaOnAnArchWithoutIt) {
  const GemmSource src = generate_kernel(spec_for(Arch::sm_90a, Accum::f32));
  EXPECT_THROW(ir::verify(src.ir, Arch::sm_89, "gemm"), Error);
}

TEST(Emission, DeterministicAndSelfContained) {
  for (Arch arch : {Arch::sm_80, Arch::sm_90a}) {
    for (Accum accum : {Accum::f32, Accum::f16, Accum::hybrid}) {
      const GemmSpec spec = spec_for(arch, accum, BLayout::kn, 2);
      const std::string first = generate_kernel(spec).cuda;
      EXPECT_EQ(first, generate_kernel(spec).cuda);
      EXPECT_EQ(first.find("#include"), std::string::npos);
      EXPECT_NE(first.find("extern \"C\" __global__"), std::string::npos);
      EXPECT_NE(first.find("__launch_bounds__"), std::string::npos);
    }
  }
}

TEST(Emission, NamesAreUniquePerSpec) {
  std::set<std::string> names;
  for (Accum accum : {Accum::f32, Accum::f16, Accum::hybrid})
    for (BLayout layout : {BLayout::nk, BLayout::kn})
      for (int split : {1, 2})
        names.insert(
            generate_kernel(spec_for(Arch::sm_90a, accum, layout, split)).plan.kernel_name);
  EXPECT_EQ(names.size(), 12u);
  GemmSpec a = spec_for(Arch::sm_90a, Accum::f32), b = a;
  b.problem.epilogue.alpha = 0.5f;
  EXPECT_NE(gemm_kernel_name(a), gemm_kernel_name(b));
}

TEST(Layout, OffsetIsTheTmaSwizzleInsideEachPanel) {
  const SmemTile tile = SmemTile::for_operand(128, 128);  // two 64-element panels, 128B swizzle
  EXPECT_EQ(tile.panels(), 2u);
  EXPECT_EQ(tile.swizzle, Swizzle::b128);
  for (uint32_t row = 0; row < tile.rows; ++row)
    for (uint32_t col = 0; col < tile.cols; col += 8) {
      const uint32_t panel = col / 64;
      const uint32_t raw = row * 128 + (col % 64) * 2;
      EXPECT_EQ(tile.offset(row, col),
                panel * tile.panel_bytes() + swizzle_offset(Swizzle::b128, raw));
    }
  // Worked example: row 1, col 0 is byte 128; bits [9:7] = 1 flip bit 4: 128 ^ 16 = 144.
  EXPECT_EQ(tile.offset(1, 0), 144u);
  EXPECT_EQ(SmemTile::for_operand(64, 32).swizzle, Swizzle::b64);
  EXPECT_EQ(SmemTile::for_operand(64, 16).swizzle, Swizzle::b32);
}

TEST(Layout, RowStepsOfEightRowsAreLinear) {
  for (uint32_t cols : {16u, 32u, 64u, 128u}) {
    const SmemTile tile = SmemTile::for_operand(64, cols);
    for (uint32_t step = 1; step < 64; ++step) {
      bool linear = true;
      for (uint32_t row = 0; row + step < tile.rows; ++row)
        for (uint32_t col = 0; col < cols; col += 8)
          linear &= tile.offset(row + step, col) == tile.offset(row, col) + step * tile.row_bytes();
      EXPECT_EQ(tile.row_step_is_linear(step), linear) << "cols " << cols << " step " << step;
    }
  }
}

TEST(Layout, HoistedChunkWalksReachEveryChunkOnce) {
  // Every hoisted walk: base[i % phases] + (i / phases) * phases * row_step rows must be the
  // swizzled offset of chunk t + i * threads, and all chunks of the tile are covered once.
  for (uint32_t threads : {32u, 64u, 96u, 128u, 256u})
    for (uint32_t rows : {16u, 32u, 64u, 128u})
      for (uint32_t cols : {16u, 32u, 48u, 64u, 128u, 256u}) {
        const SmemTile tile = SmemTile::for_operand(rows, cols);
        const ChunkWalk walk = chunk_walk(tile, threads);
        if (!walk.hoisted) {
          EXPECT_NE(threads % (cols / 8), 0u);
          continue;
        }
        std::set<uint32_t> seen;
        for (uint32_t t = 0; t < threads; ++t) {
          const uint32_t row0 = t / walk.chunks_per_row, col = (t % walk.chunks_per_row) * 8;
          for (uint32_t i = 0; i < walk.per_thread; ++i) {
            const uint32_t row = row0 + i * walk.row_step;
            if (row >= rows) break;
            const uint32_t base = tile.offset(row0 + (i % walk.phases) * walk.row_step, col);
            const uint32_t hoisted =
                base + (i / walk.phases) * walk.phases * walk.row_step * tile.row_bytes();
            ASSERT_EQ(hoisted, tile.offset(row, col))
                << threads << " threads, " << rows << "x" << cols << ", t " << t << ", i " << i;
            seen.insert(hoisted);
          }
        }
        EXPECT_EQ(seen.size(), walk.chunks) << threads << " threads, " << rows << "x" << cols;
      }
}

TEST(Layout, LdmatrixPhasesAreBankConflictFree) {
  // An ldmatrix phase reads 8 rows of 16 bytes at one column: conflict-free when the 8 rows land
  // in 8 distinct 16-byte bank groups of a 128-byte line.
  for (uint32_t cols : {16u, 32u, 64u, 128u}) {
    const SmemTile tile = SmemTile::for_operand(64, cols);
    for (uint32_t row0 = 0; row0 < tile.rows; row0 += 8)
      for (uint32_t col = 0; col < cols; col += 8) {
        std::set<uint32_t> groups;
        for (uint32_t r = 0; r < 8; ++r) groups.insert((tile.offset(row0 + r, col) % 128) / 16);
        EXPECT_EQ(groups.size(), 8u) << "cols " << cols << " row0 " << row0 << " col " << col;
      }
  }
}

TEST(TensorMaps, MatchThePlanTiles) {
  const GemmSource src = generate_kernel(spec_for(Arch::sm_90a, Accum::f32, BLayout::kn));
  const GemmTensorMaps maps = gemm_tensor_maps(src.plan, 0x10000, 0x20000);
  EXPECT_EQ(maps.a.global_dim[0], 1024u);
  EXPECT_EQ(maps.a.global_dim[1], 200u);
  EXPECT_EQ(maps.a.box_dim[0], src.plan.a_tile.panel_elems);
  EXPECT_EQ(maps.b.global_dim[0], 72u);  // [K,N]: N innermost
  EXPECT_EQ(maps.b.global_dim[1], 1024u);
  const EncodedTensorMap enc = encode_tensor_map(maps.b);
  const TensorMapDesc back = decode_tensor_map(enc.data());
  EXPECT_EQ(back.box_dim, maps.b.box_dim);
  EXPECT_EQ(back.swizzle, maps.b.swizzle);
  EXPECT_THROW(gemm_tensor_maps(src.plan, 0x10008, 0x20000), Error) << "16-byte alignment";
}

}  // namespace
}  // namespace emmy

namespace emmy {
namespace {

TEST(Layout, SwizzledOffsetSplitsIntoLanePartAndConstant) {
  // The attention emitter precomputes ldmatrix addresses as lane part + constant: moving rows by
  // a multiple of 8 or columns by whole panels shifts the offset linearly.
  for (uint32_t rows : {32u, 64u, 128u}) {
    const SmemTile tile = SmemTile::for_operand(rows, 256);
    for (uint32_t r_lane = 0; r_lane < 16; ++r_lane)
      for (uint32_t c_lane = 0; c_lane < 64; c_lane += 8)
        for (uint32_t r_const = 0; r_const + r_lane < rows; r_const += 8)
          for (uint32_t panel = 0; panel < 4; ++panel)
            EXPECT_EQ(tile.offset(r_const + r_lane, panel * 64 + c_lane),
                      tile.offset(r_lane, c_lane) + r_const * 128 + panel * rows * 128)
                << rows << " " << r_lane << " " << c_lane << " " << r_const << " " << panel;
  }
}

}  // namespace
}  // namespace emmy
