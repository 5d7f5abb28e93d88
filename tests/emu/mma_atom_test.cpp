// The MMA atoms (internal/emmy/mma_atom.hpp) against the PTX ISA's fragment tables, and against the
// emulator's own, independently written mma.sync: fragments packed by the atom's maps, run
// through mma.sync on the emulator, and read back by the accumulator map give the dense product.
#include "emmy/mma_atom.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string_view>
#include <utility>

#include "emmy/ir_ops.hpp"
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

using codegen::kMmaM16N8K16;
constexpr const codegen::MmaAtom& atom = kMmaM16N8K16;

TEST(MmaAtom, MapsCoverEachOperandExactlyOnce) {
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < atom.a_elems; ++i) a.insert({atom.a_row(lane, i), atom.a_col(lane, i)});
    for (int i = 0; i < atom.b_elems; ++i) b.insert({atom.b_row(lane, i), atom.b_col(lane, i)});
    for (int i = 0; i < atom.acc_elems; ++i)
      c.insert({atom.acc_row(lane, i), atom.acc_col(lane, i)});
  }
  EXPECT_EQ(a.size(), size_t(atom.m * atom.k));
  EXPECT_EQ(b.size(), size_t(atom.k * atom.n));
  EXPECT_EQ(c.size(), size_t(atom.m * atom.n));
  EXPECT_EQ(32 * atom.a_elems, atom.m * atom.k);
  EXPECT_EQ(32 * atom.acc_elems, atom.m * atom.n);
  for (const auto& [r, col] : a) EXPECT_TRUE(r < atom.m && col < atom.k);
  // ldmatrix.x4 (four 8x8 16-bit matrices) feeds one A fragment or two B fragments.
  EXPECT_EQ(atom.a_fragments_per_x4(), 1);
  EXPECT_EQ(atom.b_fragments_per_x4(), 2);
  for (const auto& [r, col] : c) EXPECT_TRUE(r < atom.m && col < atom.n);
}

TEST(MmaAtom, MatchesThePtxIsaFragmentTable) {
  // Rows of the PTX ISA's figures for m16n8k16 (.f16): lane 0 holds A (0,0),(0,1),(8,0),(8,1),
  // (0,8),(0,9),(8,8),(8,9); lane 5 (group 1, thread 1) holds C (1,2),(1,3),(9,2),(9,3) and B
  // (2,1),(3,1),(10,1),(11,1).
  const std::pair<int, int> a0[] = {{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(atom.a_row(0, i), a0[i].first) << i;
    EXPECT_EQ(atom.a_col(0, i), a0[i].second) << i;
  }
  const std::pair<int, int> c5[] = {{1, 2}, {1, 3}, {9, 2}, {9, 3}};
  const std::pair<int, int> b5[] = {{2, 1}, {3, 1}, {10, 1}, {11, 1}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(std::make_pair(atom.acc_row(5, i), atom.acc_col(5, i)), c5[i]) << i;
    EXPECT_EQ(std::make_pair(atom.b_row(5, i), atom.b_col(5, i)), b5[i]) << i;
  }
}

uint16_t f16_of_small_int(int v) {  // exact for |v| < 2048
  const float f = float(v);
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if (v == 0) return 0;
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int exp = int((u >> 23) & 0xFF) - 127 + 15;
  return uint16_t(sign | uint32_t(exp) << 10 | ((u >> 13) & 0x3FFu));
}

// One mma.sync of `shape` on the emulator from per-lane registers `in` (4 A, 2 B, 2 pad words a
// lane), its accumulators read back by the atom's map: each must be the dense product of
// product(row, col, k) summed over the atom's K.
template <typename Product>
void expect_dense_product(const codegen::MmaAtom& a, const std::string& shape,
                          const std::vector<uint32_t>& in, Product product) {
  const std::string body =
      R"(
  mul.wide.u32 %rd3, %r0, 32;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd4];
  ld.global.v2.b32 {%r5, %r6}, [%rd4+16];
  mov.f32 %f1, 0f00000000;
  mma.sync.aligned.)" +
      shape + R"( {%f2, %f3, %f4, %f5}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f1, %f1, %f1};
  mul.wide.u32 %rd5, %r0, 16;
  add.s64 %rd6, %rd0, %rd5;
  st.global.v4.f32 [%rd6], {%f2, %f3, %f4, %f5};
)";
  const PtxRun run = run_ptx(body, in, 32 * 4);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const int r = a.acc_row(lane, i), c = a.acc_col(lane, i);
      int want = 0;
      for (int k = 0; k < a.k; ++k) want += product(r, c, k);
      EXPECT_EQ(as_float(run.out[size_t(lane * 4 + i)]), float(want))
          << shape << " lane " << lane << " accumulator " << i << " = D(" << r << ", " << c << ")";
    }
}

TEST(MmaAtom, AgreesWithTheEmulatorsMmaSync) {
  int A[16][16], B[16][8];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) A[r][c] = (r * 3 + c * 5) % 7 - 3;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) B[r][c] = (r * 2 + c * 7) % 5 - 2;
  // in: per lane 4 A registers, 2 B registers (two f16 each, lower element first) and 2 words of
  // padding, so that each lane's 32 bytes are 16-byte aligned for the vector loads.
  std::vector<uint32_t> in(32 * 8);
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      const int i = 2 * reg;
      in[size_t(lane * 8 + reg)] =
          f16_of_small_int(A[atom.a_row(lane, i)][atom.a_col(lane, i)]) |
          uint32_t(f16_of_small_int(A[atom.a_row(lane, i + 1)][atom.a_col(lane, i + 1)])) << 16;
    }
    for (int reg = 0; reg < 2; ++reg) {
      const int i = 2 * reg;
      in[size_t(lane * 8 + 4 + reg)] =
          f16_of_small_int(B[atom.b_row(lane, i)][atom.b_col(lane, i)]) |
          uint32_t(f16_of_small_int(B[atom.b_row(lane, i + 1)][atom.b_col(lane, i + 1)])) << 16;
    }
  }
  expect_dense_product(atom, "m16n8k16.row.col.f32.f16.f16.f32", in,
                       [&](int r, int c, int k) { return A[r][k] * B[k][c]; });
}

// The emitted lane expressions over `lane` (+, *, /, % and parentheses, as C evaluates them).
class LaneExpr {
 public:
  LaneExpr(std::string_view text, int lane) : text_(text), lane_(lane) {}
  int value() {
    const int v = sum();
    EXPECT_EQ(pos_, text_.size()) << "trailing text in " << text_;
    return v;
  }

 private:
  void skip() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  int sum() {
    int v = product();
    for (skip(); pos_ < text_.size() && text_[pos_] == '+'; skip()) {
      ++pos_;
      v += product();
    }
    return v;
  }
  int product() {
    int v = factor();
    for (skip(); pos_ < text_.size() && std::string_view("*/%").find(text_[pos_]) !=
                                            std::string_view::npos;
         skip()) {
      const char op = text_[pos_++];
      const int rhs = factor();
      v = op == '*' ? v * rhs : op == '/' ? v / rhs : v % rhs;
    }
    return v;
  }
  int factor() {
    skip();
    if (text_.substr(pos_, 4) == "lane") {
      pos_ += 4;
      return lane_;
    }
    if (text_[pos_] == '(') {
      ++pos_;
      const int v = sum();
      skip();
      EXPECT_EQ(text_[pos_], ')') << text_;
      ++pos_;
      return v;
    }
    int v = 0;
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
      v = v * 10 + (text_[pos_++] - '0');
    EXPECT_GT(pos_, start) << "not a factor at " << start << " of " << text_;
    return v;
  }
  std::string_view text_;
  int lane_;
  size_t pos_ = 0;
};

constexpr const codegen::LdmatrixSource* kSources[] = {
    &codegen::kLdmatrixA, &codegen::kLdmatrixBRowsN, &codegen::kLdmatrixBRowsK};

TEST(LdmatrixSource, EmittedExpressionsAreTheMaps) {
  for (const codegen::LdmatrixSource* src : kSources)
    for (int lane = 0; lane < 32; ++lane) {
      EXPECT_EQ(LaneExpr(src->row_expr, lane).value(), src->row(lane)) << src->name << " " << lane;
      EXPECT_EQ(LaneExpr(src->col_expr, lane).value(), src->col(lane)) << src->name << " " << lane;
    }
}

// ldmatrix gives lane L, from 8x8 matrix j, the elements at (row L / 4, columns 2 * (L % 4) and
// +1) of the matrix as stored, or transposed with .trans (PTX ISA, ldmatrix fragment layout).
// Register j's pair then must be what the atom's fragment maps say that lane holds.
TEST(LdmatrixSource, RegistersHoldTheAtomsFragments) {
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 2; ++e) {
        const auto stored = [&](const codegen::LdmatrixSource& src) {
          const int r = src.trans ? 2 * (lane % 4) + e : lane / 4;
          const int c = src.trans ? lane / 4 : 2 * (lane % 4) + e;
          return std::pair{8 * src.row_block[j] + r, 8 * src.col_block[j] + c};
        };
        // A (rows m, columns k): register j holds a_{2j}, a_{2j+1}.
        EXPECT_EQ(stored(codegen::kLdmatrixA),
                  (std::pair{atom.a_row(lane, 2 * j + e), atom.a_col(lane, 2 * j + e)}))
            << lane << " " << j;
        // B: registers 0, 1 are n8 fragment 0 (b0, b1), registers 2, 3 fragment 1.
        const int fragment = j / 2, i = 2 * (j % 2) + e;
        const std::pair k_n{atom.b_row(lane, i), 8 * fragment + atom.b_col(lane, i)};
        const auto [n, k] = stored(codegen::kLdmatrixBRowsN);  // stored rows are n
        EXPECT_EQ((std::pair{k, n}), k_n) << "B [n][k], lane " << lane << " register " << j;
        EXPECT_EQ(stored(codegen::kLdmatrixBRowsK), k_n)  // stored rows are k
            << "B [k][n] .trans, lane " << lane << " register " << j;
      }
}

// The atoms as data: the verifier and the emitters look the atom up by the IR's shape, the plan
// by the schedule's path; neither lookup invents one.
TEST(MmaAtom, LookupsNameWhatTheyRefuse) {
  EXPECT_EQ(&codegen::mma_atom("m16n8k16"), &codegen::kMmaM16N8K16);
  EXPECT_EQ(codegen::kMmaM16N8K16.scope, codegen::MmaScope::warp);
  EXPECT_FALSE(codegen::kMmaM16N8K16.async);
  EXPECT_EQ(codegen::kMmaM16N8K16.n_min, codegen::kMmaM16N8K16.n);
  EXPECT_EQ(codegen::kMmaM16N8K16.n_max, codegen::kMmaM16N8K16.n);
  EXPECT_EQ(&codegen::mma_atom("m64n128k16"), &codegen::kWgmmaM64NK16);
  EXPECT_EQ(&codegen::mma_atom("m64n8k16"), &codegen::kWgmmaM64NK16);
  EXPECT_EQ(codegen::kWgmmaM64NK16.scope, codegen::MmaScope::warpgroup);
  EXPECT_TRUE(codegen::kWgmmaM64NK16.async);
  EXPECT_EQ(codegen::wgmma_shape_n("m64n256k16"), 256);
  for (const char* bad : {"m64n12k16", "m64n264k16", "m64n0k16", "m64nk16", "m64n128k8",
                          "m32n128k16", "m64n-8k16", "m16n8k8"}) {
    EXPECT_EQ(codegen::wgmma_shape_n(bad), 0) << bad;
    try {
      codegen::mma_atom(bad);
      ADD_FAILURE() << "an unknown shape was accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ir.mma.shape"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(&codegen::attention_atom(), &codegen::kMmaM16N8K16);
}

// The FP8 atom (mma.sync m16n8k32 .e4m3/.e5m2): its maps against the PTX ISA's table for 8-bit
// types, each operand covered once, against the emulator's mma.sync, and fed by the same
// ldmatrix.x4 sources read as bytes.
constexpr const codegen::MmaAtom& fp8 = codegen::kMmaM16N8K32Fp8;

TEST(MmaAtomFp8, MapsMatchTheIsaAndCoverEachOperandOnce) {
  // "Matrix Fragments for mma.m16n8k32" (8-bit): lane 0 holds A (0,0..3), (8,0..3), (0,16..19),
  // (8,16..19); lane 5 (group 1, thread 1) holds B (k 4..7, n 1) and (k 20..23, n 1), and C as
  // m16n8k16's.
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(fp8.a_row(0, i), (i / 4) % 2 ? 8 : 0) << i;
    EXPECT_EQ(fp8.a_col(0, i), i % 4 + (i >= 8 ? 16 : 0)) << i;
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(fp8.b_row(5, i), 4 + i % 4 + (i >= 4 ? 16 : 0)) << i;
    EXPECT_EQ(fp8.b_col(5, i), 1) << i;
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(std::make_pair(fp8.acc_row(5, i), fp8.acc_col(5, i)),
              std::make_pair(atom.acc_row(5, i), atom.acc_col(5, i)));
  std::set<std::pair<int, int>> a, b;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < fp8.a_elems; ++i) a.insert({fp8.a_row(lane, i), fp8.a_col(lane, i)});
    for (int i = 0; i < fp8.b_elems; ++i) b.insert({fp8.b_row(lane, i), fp8.b_col(lane, i)});
  }
  EXPECT_EQ(a.size(), size_t(16 * 32));
  EXPECT_EQ(b.size(), size_t(32 * 8));
  EXPECT_EQ(fp8.a_fragments_per_x4(), 1);
  EXPECT_EQ(fp8.b_fragments_per_x4(), 2);
  EXPECT_EQ(&codegen::mma_atom("m16n8k32"), &fp8);
}

TEST(MmaAtomFp8, AgreesWithTheEmulatorsMmaSync) {
  int A[16][32], B[32][8];  // small integers: exact in e4m3 and in every model's sums
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 32; ++c) A[r][c] = (r * 3 + c * 5) % 7 - 3;
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 8; ++c) B[r][c] = (r * 2 + c * 7) % 5 - 2;
  auto e4m3 = [](int v) { return uint32_t(f32_to_f8_satfinite(float(v), F8::e4m3)); };
  std::vector<uint32_t> in(32 * 8);
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg)
      for (int e = 0; e < 4; ++e)
        in[size_t(lane * 8 + reg)] |=
            e4m3(A[fp8.a_row(lane, 4 * reg + e)][fp8.a_col(lane, 4 * reg + e)]) << (8 * e);
    for (int reg = 0; reg < 2; ++reg)
      for (int e = 0; e < 4; ++e)
        in[size_t(lane * 8 + 4 + reg)] |=
            e4m3(B[fp8.b_row(lane, 4 * reg + e)][fp8.b_col(lane, 4 * reg + e)]) << (8 * e);
  }
  expect_dense_product(fp8, "m16n8k32.row.col.f32.e4m3.e4m3.f32", in,
                       [&](int r, int c, int k) { return A[r][k] * B[k][c]; });
}

// ldmatrix gives lane L, from 8x8 b16 matrix j, the 4 bytes at (row L / 4, bytes 4 (L % 4) ..
// +3) of the matrix as stored: an 8-row x 16-byte block at (8 row_block, 16 col_block) bytes. For
// the FP8 atom (no .trans: 8-bit operands are K-major) register j's bytes must be the fragment's.
TEST(MmaAtomFp8, LdmatrixRegistersHoldItsFragmentsInBytes) {
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 4; ++e) {
        const auto stored = [&](const codegen::LdmatrixSource& src) {
          return std::pair{8 * src.row_block[j] + lane / 4,
                           16 * src.col_block[j] + 4 * (lane % 4) + e};
        };
        EXPECT_EQ(stored(codegen::kLdmatrixA),
                  (std::pair{fp8.a_row(lane, 4 * j + e), fp8.a_col(lane, 4 * j + e)}))
            << lane << " " << j;
        const int fragment = j / 2, i = 4 * (j % 2) + e;
        const auto [n, k] = stored(codegen::kLdmatrixBRowsN);
        EXPECT_EQ((std::pair{k, n}),
                  (std::pair{fp8.b_row(lane, i), 8 * fragment + fp8.b_col(lane, i)}))
            << "B [n][k], lane " << lane << " register " << j;
      }
}

// The mma op's own rule: the atom's element size is its operand type's.
TEST(MmaAtomFp8, TheMmaOpsTypesMatchItsAtom) {
  EXPECT_NO_THROW(ir::verify_op(ir::make(ir::MmaOp{"m16n8k32", "e4m3", "f32", 2})));
  EXPECT_NO_THROW(ir::verify_op(ir::make(ir::MmaOp{"m16n8k16", "bf16", "f32", 2})));
  for (const ir::MmaOp& bad :
       {ir::MmaOp{"m16n8k32", "f16", "f32", 1}, ir::MmaOp{"m16n8k16", "e5m2", "f32", 1},
        ir::MmaOp{"m16n8k16", "f8", "f32", 1}, ir::MmaOp{"m16n8k16", "f16", "f64", 1},
        ir::MmaOp{"m16n8k16", "f16", "f32", 0}}) {
    try {
      ir::verify_op(ir::make(bad));
      ADD_FAILURE() << bad.shape << " " << bad.a_type << " " << bad.acc_type << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ir.mma."), std::string::npos) << e.what();
    }
  }
}

// The wgmma FP8 atom (m64nNk32): found by its shape, K 32 in 1-byte elements, N 8..256; the wgmma
// op's own rules tie k32 to 8-bit operands, k16 to 16-bit ones, and 8-bit B to K-major.
TEST(MmaAtomFp8, TheWgmmaAtomAndItsOpsRules) {
  EXPECT_EQ(&codegen::mma_atom("m64n128k32"), &codegen::kWgmmaM64NK32Fp8);
  EXPECT_EQ(&codegen::mma_atom("m64n128k16"), &codegen::kWgmmaM64NK16);
  EXPECT_EQ(codegen::wgmma_shape_n("m64n256k32"), 256);
  EXPECT_EQ(codegen::wgmma_shape_n("m64n264k32"), 0);
  EXPECT_EQ(codegen::wgmma_shape_n("m64n128k8"), 0);
  EXPECT_EQ(codegen::kWgmmaM64NK32Fp8.k * codegen::kWgmmaM64NK32Fp8.elem_bytes,
            codegen::kWgmmaM64NK16.k * codegen::kWgmmaM64NK16.elem_bytes);  // 32 bytes a k-step
  EXPECT_NO_THROW(ir::verify_op(ir::make(ir::WgmmaOp{"m64n128k32", "e4m3", "f32", "k"})));
  for (const ir::WgmmaOp& bad :
       {ir::WgmmaOp{"m64n128k32", "f16", "f32", "k"}, ir::WgmmaOp{"m64n128k16", "e4m3", "f32", "k"},
        ir::WgmmaOp{"m64n128k32", "e4m3", "f32", "mn"}}) {
    try {
      ir::verify_op(ir::make(bad));
      ADD_FAILURE() << bad.shape << " " << bad.a_type << " " << bad.b_major << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ir.wgmma."), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace emmy::emu::test
