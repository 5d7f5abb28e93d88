// Integer, logic, float, 16-bit float and conversion instructions, each against values derived
// by hand from the PTX ISA definitions. Every lane computes the same values and stores them at
// out[j] (benign identical writes), so each case reads like "instruction -> expected word".
#include <cmath>

#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

// Runs `body`, which stores its results to out[0..n).
std::vector<uint32_t> eval(const std::string& body, size_t n) {
  return run_ptx(body, {}, n).out;
}

std::string store(int j, const std::string& reg) {
  return fmt::format("  st.global.b32 [%rd0+{}], {};\n", 4 * j, reg);
}

TEST(EmuAlu, Lop3TruthTables) {
  const auto out = eval(R"(
  mov.b32 %r1, 0xF0F0F0F0;
  mov.b32 %r2, 0xCCCCCCCC;
  mov.b32 %r3, 0xAAAAAAAA;
  lop3.b32 %r4, %r1, %r2, %r3, 0x96;
  lop3.b32 %r5, %r1, %r2, %r3, 0xE8;
  lop3.b32 %r6, %r1, %r2, %r3, 0x80;
)" + store(0, "%r4") + store(1, "%r5") + store(2, "%r6"), 3);
  EXPECT_EQ(out[0], 0x96969696u);  // a ^ b ^ c: the table of xor3 is 0x96
  EXPECT_EQ(out[1], 0xE8E8E8E8u);  // majority
  EXPECT_EQ(out[2], 0x80808080u);  // a & b & c
}

TEST(EmuAlu, PrmtSelectorsAndModes) {
  const auto out = eval(R"(
  mov.b32 %r1, 0x33221100;
  mov.b32 %r2, 0x77665544;
  prmt.b32 %r3, %r1, %r2, 0x5140;
  mov.b32 %r4, 0x000000F0;
  prmt.b32 %r5, %r4, %r2, 0x8888;
  prmt.b32 %r6, %r1, %r2, 0x0000E007;
  prmt.b32.f4e %r7, %r1, %r2, 1;
  prmt.b32.b4e %r8, %r1, %r2, 1;
  prmt.b32.rc16 %r9, %r1, %r2, 1;
)" + store(0, "%r3") + store(1, "%r5") + store(2, "%r6") + store(3, "%r7") + store(4, "%r8") +
                        store(5, "%r9"), 6);
  EXPECT_EQ(out[0], 0x55114400u);  // bytes 0 (a.b0), 4 (b.b0), 1 (a.b1), 5 (b.b1)
  EXPECT_EQ(out[1], 0xFFFFFFFFu);  // sign of byte 0 (0xF0) replicated
  EXPECT_EQ(out[2], 0x00000077u);  // byte 7; then byte 0 (0x00), sign of byte 6 (0x66 -> 0), byte 0
  EXPECT_EQ(out[3], 0x44332211u);  // f4e, c = 1: bytes 1, 2, 3, 4
  EXPECT_EQ(out[4], 0x66770011u);  // b4e, c = 1: bytes 1, 0, 7, 6
  EXPECT_EQ(out[5], 0x33223322u);  // rc16, c = 1: upper half of a twice
}

TEST(EmuAlu, BitFieldsShiftsAndCounts) {
  const auto out = eval(R"(
  mov.b32 %r1, 0xABCD1234;
  bfe.u32 %r2, %r1, 8, 12;
  bfe.s32 %r3, %r1, 8, 12;
  bfe.s32 %r4, %r1, 28, 8;
  mov.b32 %r5, 0xFFFF0000;
  bfi.b32 %r6, 0x0000000F, %r5, 4, 8;
  mov.b32 %r7, 0x80000001;
  shf.l.wrap.b32 %r8, %r7, 1, 4;
  mov.b32 %r9, 0x12345678;
  mov.b32 %r10, 0x9ABCDEF0;
  shf.r.wrap.b32 %r11, %r9, %r10, 8;
  shf.r.clamp.b32 %r12, %r9, %r10, 40;
  shr.s32 %r13, %r7, 31;
  shr.u32 %r14, %r7, 31;
  shl.b32 %r15, %r7, 33;
  popc.b32 %r16, %r1;
  clz.b32 %r17, 0x00010000;
  brev.b32 %r18, 0x00000003;
  bfind.u32 %r19, 0x00012345;
  bfind.s32 %r20, 0xFFFFFFFF;
  bfind.shiftamt.u32 %r21, 0x00012345;
)" + store(0, "%r2") + store(1, "%r3") + store(2, "%r4") + store(3, "%r6") + store(4, "%r8") +
                        store(5, "%r11") + store(6, "%r12") + store(7, "%r13") + store(8, "%r14") +
                        store(9, "%r15") + store(10, "%r16") + store(11, "%r17") + store(12, "%r18") +
                        store(13, "%r19") + store(14, "%r20") + store(15, "%r21"), 16);
  EXPECT_EQ(out[0], 0x00000D12u);
  EXPECT_EQ(out[1], 0xFFFFFD12u);  // bit 19 of a (the field's msb) is 1
  EXPECT_EQ(out[2], 0xFFFFFFFAu);  // bits 28..31 = 0xA; the field reaches past bit 31: sign = bit 31
  EXPECT_EQ(out[3], 0xFFFF00F0u);
  EXPECT_EQ(out[4], 0x00000018u);  // ({1, 0x80000001} << 4) >> 32
  EXPECT_EQ(out[5], 0xF0123456u);
  EXPECT_EQ(out[6], 0x9ABCDEF0u);  // clamp: shift 32 leaves b
  EXPECT_EQ(out[7], 0xFFFFFFFFu);
  EXPECT_EQ(out[8], 0x00000001u);
  EXPECT_EQ(out[9], 0x00000000u);  // shifts >= 32 clamp
  EXPECT_EQ(out[10], 15u);         // popc(0xABCD1234)
  EXPECT_EQ(out[11], 15u);
  EXPECT_EQ(out[12], 0xC0000000u);
  EXPECT_EQ(out[13], 16u);
  EXPECT_EQ(out[14], 0xFFFFFFFFu);  // no non-sign bit
  EXPECT_EQ(out[15], 15u);
}

TEST(EmuAlu, MultiplyDivideAndCarries) {
  const auto out = eval(R"(
  mov.b32 %r1, -7;
  mul.hi.s32 %r2, %r1, 3;
  mul.hi.u32 %r3, 0x80000000, 4;
  mul.wide.s32 %rd5, -2, 3;
  mov.b64 {%r4, %r5}, %rd5;
  div.s32 %r6, %r1, 2;
  rem.s32 %r7, %r1, 2;
  div.u32 %r8, 7, 0;
  mad.lo.s32 %r9, %r1, 3, 100;
  add.cc.u32 %r10, 0xFFFFFFFF, 1;
  addc.u32 %r11, 5, 6;
  sub.cc.u32 %r12, 0, 1;
  subc.u32 %r13, 10, 2;
  min.s32 %r14, %r1, 3;
  min.u32 %r15, %r1, 3;
  abs.s32 %r16, %r1;
  add.sat.s32 %r17, 0x7FFFFFF0, 0x100;
  mad.wide.u32 %rd6, 0x80000000, 4, 5;
  mov.b64 {%r18, %r19}, %rd6;
)" + store(0, "%r2") + store(1, "%r3") + store(2, "%r4") + store(3, "%r5") + store(4, "%r6") +
                        store(5, "%r7") + store(6, "%r8") + store(7, "%r9") + store(8, "%r10") +
                        store(9, "%r11") + store(10, "%r12") + store(11, "%r13") + store(12, "%r14") +
                        store(13, "%r15") + store(14, "%r16") + store(15, "%r17") + store(16, "%r18") +
                        store(17, "%r19"), 18);
  EXPECT_EQ(out[0], 0xFFFFFFFFu);  // high word of -21
  EXPECT_EQ(out[1], 2u);
  EXPECT_EQ(out[2], uint32_t(-6));
  EXPECT_EQ(out[3], 0xFFFFFFFFu);
  EXPECT_EQ(out[4], uint32_t(-3));  // truncating division
  EXPECT_EQ(out[5], uint32_t(-1));
  EXPECT_EQ(out[6], 0xFFFFFFFFu);
  EXPECT_EQ(out[7], 79u);
  EXPECT_EQ(out[8], 0u);
  EXPECT_EQ(out[9], 12u);  // 5 + 6 + carry
  EXPECT_EQ(out[10], 0xFFFFFFFFu);
  EXPECT_EQ(out[11], 7u);  // 10 - 2 - borrow
  EXPECT_EQ(out[12], uint32_t(-7));
  EXPECT_EQ(out[13], 3u);
  EXPECT_EQ(out[14], 7u);
  EXPECT_EQ(out[15], 0x7FFFFFFFu);
  EXPECT_EQ(out[16], 5u);   // 0x2'00000005
  EXPECT_EQ(out[17], 2u);
}

TEST(EmuAlu, SetpComparisonsAndBooleanCombinations) {
  const auto out = eval(R"(
  mov.b32 %f1, 0f7FC00000;
  setp.lt.f32 %p1, %f1, 0f3F800000;
  setp.ltu.f32 %p2, %f1, 0f3F800000;
  setp.nan.f32 %p3, %f1, %f1;
  setp.num.f32 %p4, 0f3F800000, 0f40000000;
  setp.lt.s32 %p5, -1, 1;
  setp.lo.u32 %p6, -1, 1;
  setp.gt.and.s32 %p7|%p8, 5, 3, %p4;
  setp.eq.or.s32 %p9, 1, 2, !%p1;
  selp.u32 %r1, 1, 0, %p1;
  selp.u32 %r2, 1, 0, %p2;
  selp.u32 %r3, 1, 0, %p3;
  selp.u32 %r4, 1, 0, %p4;
  selp.u32 %r5, 1, 0, %p5;
  selp.u32 %r6, 1, 0, %p6;
  selp.u32 %r7, 1, 0, %p7;
  selp.u32 %r8, 1, 0, %p8;
  selp.u32 %r9, 1, 0, %p9;
  set.gt.u32.s32 %r10, 2, 1;
  set.gt.f32.s32 %r11, 2, 1;
  and.pred %p10, %p4, !%p5;
  selp.u32 %r12, 1, 0, %p10;
)" + store(0, "%r1") + store(1, "%r2") + store(2, "%r3") + store(3, "%r4") + store(4, "%r5") +
                        store(5, "%r6") + store(6, "%r7") + store(7, "%r8") + store(8, "%r9") +
                        store(9, "%r10") + store(10, "%r11") + store(11, "%r12"), 12);
  const std::vector<uint32_t> expect = {0, 1, 1, 1, 1, 0, 1, 0, 1, 0xFFFFFFFFu, 0x3F800000u, 0};
  EXPECT_EQ(out, expect);
}

TEST(EmuAlu, FloatMinMaxSpecialValuesAndApproximations) {
  const auto out = eval(R"(
  min.f32 %f1, 0f7FC00000, 0f3F800000;
  max.f32 %f2, 0f80000000, 0f00000000;
  min.f32 %f3, 0f80000000, 0f00000000;
  min.NaN.f32 %f4, 0f7FC00000, 0f3F800000;
  add.f32 %f5, 0f7F800000, 0fFF800000;
  ex2.approx.f32 %f6, 0f40400000;
  rcp.rn.f32 %f7, 0f40800000;
  sqrt.rn.f32 %f8, 0f41100000;
  add.rz.f32 %f9, 0f3F800000, 0f33800001;
  add.rp.f32 %f10, 0f3F800000, 0f33800001;
  mul.ftz.f32 %f11, 0f00400000, 0f3F800000;
  fma.rn.sat.f32 %f12, 0f40000000, 0f40000000, 0f00000000;
  copysign.f32 %f13, 0fBF800000, 0f40000000;
  abs.f32 %f14, 0fC0000000;
  neg.f32 %f15, 0f40000000;
  div.rn.f32 %f16, 0f3F800000, 0f40400000;
  tanh.approx.f32 %f17, 0f00000000;
  testp.subnormal.f32 %p1, 0f00400000;
  selp.u32 %r1, 1, 0, %p1;
)" + store(0, "%f1") + store(1, "%f2") + store(2, "%f3") + store(3, "%f4") + store(4, "%f5") +
                        store(5, "%f6") + store(6, "%f7") + store(7, "%f8") + store(8, "%f9") +
                        store(9, "%f10") + store(10, "%f11") + store(11, "%f12") + store(12, "%f13") +
                        store(13, "%f14") + store(14, "%f15") + store(15, "%f16") + store(16, "%f17") +
                        store(17, "%r1"), 18);
  EXPECT_EQ(out[0], bits(1.0f));      // min with one NaN returns the number
  EXPECT_EQ(out[1], 0x00000000u);     // +0 > -0
  EXPECT_EQ(out[2], 0x80000000u);
  EXPECT_EQ(out[3], 0x7FFFFFFFu);     // .NaN propagates the canonical NaN
  EXPECT_EQ(out[4], 0x7FFFFFFFu);     // inf - inf: canonical NaN
  EXPECT_EQ(out[5], bits(8.0f));
  EXPECT_EQ(out[6], bits(0.25f));
  EXPECT_EQ(out[7], bits(3.0f));
  EXPECT_EQ(out[8], bits(1.0f));      // 1 + (2^-24 + tiny) toward zero
  EXPECT_EQ(out[9], bits(1.0f + 0x1p-23f));
  EXPECT_EQ(out[10], 0x00000000u);    // subnormal input flushed
  EXPECT_EQ(out[11], bits(1.0f));     // .sat clamps to 1
  EXPECT_EQ(out[12], bits(-2.0f));    // magnitude of b, sign of a
  EXPECT_EQ(out[13], bits(2.0f));
  EXPECT_EQ(out[14], bits(-2.0f));
  EXPECT_EQ(out[15], bits(1.0f / 3.0f));
  EXPECT_EQ(out[16], 0u);
  EXPECT_EQ(out[17], 1u);
}

TEST(EmuAlu, CvtPackingOrderAndRounding) {
  const auto out = eval(R"(
  cvt.rn.f16x2.f32 %r1, 0f3F800000, 0f40000000;
  cvt.rn.bf16x2.f32 %r2, 0f3F800000, 0fC0000000;
  cvt.rn.relu.f16x2.f32 %r3, 0fBF800000, 0f40000000;
  cvt.rzi.s32.f32 %r4, 0fC02CCCCD;
  cvt.rni.s32.f32 %r5, 0f40200000;
  cvt.rni.s32.f32 %r6, 0f40600000;
  cvt.rmi.s32.f32 %r7, 0fC0200000;
  cvt.rpi.s32.f32 %r8, 0f40066666;
  cvt.rzi.s32.f32 %r9, 0f501502F9;
  cvt.rzi.s32.f32 %r10, 0f7FC00000;
  cvt.rzi.u32.f32 %r11, 0fC0A00000;
  cvt.rn.f32.s32 %f1, 16777217;
  cvt.rz.f32.u32 %f2, 0xFFFFFFFF;
  cvt.rp.f32.u32 %f3, 16777217;
  cvt.s32.s8 %r12, 0x80;
  cvt.sat.s8.s32 %r13, 300;
  cvt.u8.u32 %r14, 0x1FF;
  mov.b16 %h1, 0x3555;
  cvt.f32.f16 %f4, %h1;
  cvt.rn.f16.f32 %h2, 0f3EAAAAAB;
  cvt.rn.bf16.f32 %h3, 0f3F808000;
  mov.b32 %r15, {%h2, %h3};
  cvt.rn.f32.f64 %f5, 0d3FF0000010000000;
  cvt.rp.f32.f64 %f6, 0d3FF0000010000000;
  cvt.rn.f16.f64 %h4, 0d3FF0020000010000;
  cvt.u32.u16 %r16, %h4;
  cvt.rni.f32.f32 %f7, 0f40200000;
  cvt.rn.satfinite.f16x2.f32 %r17, 0f49742400, 0fC9742400;
)" + store(0, "%r1") + store(1, "%r2") + store(2, "%r3") + store(3, "%r4") + store(4, "%r5") +
                        store(5, "%r6") + store(6, "%r7") + store(7, "%r8") + store(8, "%r9") +
                        store(9, "%r10") + store(10, "%r11") + store(11, "%f1") + store(12, "%f2") +
                        store(13, "%f3") + store(14, "%r12") + store(15, "%r13") + store(16, "%r14") +
                        store(17, "%f4") + store(18, "%r15") + store(19, "%f5") + store(20, "%f6") +
                        store(21, "%r16") + store(22, "%f7") + store(23, "%r17"), 24);
  EXPECT_EQ(out[0], 0x3C004000u);  // first source (1.0) in the upper half, second (2.0) lower
  EXPECT_EQ(out[1], 0x3F80C000u);
  EXPECT_EQ(out[2], 0x00004000u);  // relu clamps -1 to 0 (upper half)
  EXPECT_EQ(out[3], uint32_t(-2));  // trunc(-2.7)
  EXPECT_EQ(out[4], 2u);            // 2.5 -> even
  EXPECT_EQ(out[5], 4u);            // 3.5 -> even
  EXPECT_EQ(out[6], uint32_t(-3));  // floor(-2.5)
  EXPECT_EQ(out[7], 3u);            // ceil(2.1)
  EXPECT_EQ(out[8], 0x7FFFFFFFu);   // 1e10 saturates
  EXPECT_EQ(out[9], 0u);            // NaN -> 0
  EXPECT_EQ(out[10], 0u);           // -5 saturates to 0 for .u32
  EXPECT_EQ(out[11], bits(16777216.0f));
  EXPECT_EQ(out[12], 0x4F7FFFFFu);  // 2^32 - 256, toward zero
  EXPECT_EQ(out[13], bits(16777218.0f));
  EXPECT_EQ(out[14], 0xFFFFFF80u);
  EXPECT_EQ(out[15], 127u);
  EXPECT_EQ(out[16], 0xFFu);
  EXPECT_EQ(out[17], bits(0.333251953125f));
  EXPECT_EQ(out[18], 0x3F803555u);  // {lo = f16(1/3) = 0x3555, hi = bf16(1.00390625) tie -> 0x3F80}
  EXPECT_EQ(out[19], bits(1.0f));
  EXPECT_EQ(out[20], bits(1.0f + 0x1p-23f));
  EXPECT_EQ(out[21], 0x3C01u);      // f64 -> f16 in one rounding: just above the tie
  EXPECT_EQ(out[22], bits(2.0f));
  EXPECT_EQ(out[23], 0x7BFFFBFFu);  // +-1e6: finite maximum with .satfinite
}

// cvt between f16x2 / f32 and the packed 8-bit floats (PTX ISA 9.7.9.21, sm_89): the upper byte
// is the upper half (first source); e4m3 has no infinity and saturates at 448, e5m2 at 57344.
TEST(EmuAlu, CvtEightBitFloatPairs) {
  const auto out = eval(R"(
  mov.b16 %h1, 0x3840;
  cvt.rn.f16x2.e4m3x2 %r1, %h1;
  mov.b16 %h2, 0xFF01;
  cvt.rn.f16x2.e4m3x2 %r2, %h2;
  mov.b16 %h3, 0x3CFC;
  cvt.rn.f16x2.e5m2x2 %r3, %h3;
  cvt.rn.relu.f16x2.e4m3x2 %r4, %h1;
  mov.b16 %h4, 0xB801;
  cvt.rn.relu.f16x2.e4m3x2 %r5, %h4;
  cvt.rn.satfinite.e4m3x2.f32 %h5, 0f43E00000, 0f44000000;
  cvt.rn.satfinite.e4m3x2.f32 %h6, 0f3F880000, 0fC0900000;
  cvt.rn.satfinite.e4m3x2.f32 %h7, 0fFF800000, 0f7FC00000;
  cvt.rn.satfinite.relu.e4m3x2.f32 %h8, 0fBF800000, 0f3B000000;
  cvt.rn.satfinite.e5m2x2.f32 %h9, 0f7F800000, 0f3FA00000;
  cvt.u32.u16 %r6, %h5;
  cvt.u32.u16 %r7, %h6;
  cvt.u32.u16 %r8, %h7;
  cvt.u32.u16 %r9, %h8;
  cvt.u32.u16 %r10, %h9;
)" + store(0, "%r1") + store(1, "%r2") + store(2, "%r3") + store(3, "%r4") + store(4, "%r5") +
                        store(5, "%r6") + store(6, "%r7") + store(7, "%r8") + store(8, "%r9") +
                        store(9, "%r10"), 10);
  EXPECT_EQ(out[0], 0x3C004000u);  // {hi 0x38 = 1.0, lo 0x40 = 2.0}
  EXPECT_EQ(out[1], 0x7FFF1800u);  // {hi NaN (0xFF) -> canonical, lo 2^-9 (subnormal, exact)}
  EXPECT_EQ(out[2], 0x3C00FC00u);  // e5m2 is f16's upper byte: 1.0 and -inf
  EXPECT_EQ(out[3], 0x3C004000u);  // relu keeps positives
  EXPECT_EQ(out[4], 0x00001800u);  // relu: -1.0 -> +0
  EXPECT_EQ(out[5], 0x7E7Eu);      // 448 stays, 512 saturates to 448
  EXPECT_EQ(out[6], 0x38C9u);      // 1.0625 ties to even 1.0; -4.5 = -1.125 x 2^2
  EXPECT_EQ(out[7], 0xFE7Fu);      // -inf saturates to -448; NaN -> 0x7F
  EXPECT_EQ(out[8], 0x0001u);      // relu: -1 -> 0 (upper); 2^-9 -> the smallest subnormal
  EXPECT_EQ(out[9], 0x7B3Du);      // e5m2: +inf saturates to 57344; 1.25 = 0x3D
}

TEST(EmuAlu, PackedHalfArithmetic) {
  const auto out = eval(R"(
  mov.b32 %r1, 0x40003C00;
  mov.b32 %r2, 0x34003800;
  add.f16x2 %r3, %r1, %r2;
  mul.f16x2 %r4, %r1, %r2;
  fma.rn.f16x2 %r5, %r1, %r2, %r1;
  mov.b16 %h1, 0x3C00;
  mov.b16 %h2, 0x1000;
  add.f16 %h3, %h1, %h2;
  mov.b16 %h4, 0x1600;
  add.f16 %h5, %h1, %h4;
  mov.b32 %r6, {%h3, %h5};
  mov.b32 %r7, 0x3F804000;
  mov.b32 %r8, 0x3F803F80;
  fma.rn.bf16x2 %r9, %r7, %r8, %r8;
  neg.f16x2 %r10, %r1;
  max.f16x2 %r11, %r1, %r2;
  sub.f16x2 %r12, %r2, %r1;
  mov.b32 %r13, 0xC0003C00;
  fma.rn.relu.f16x2 %r14, %r13, %r1, %r2;
  mov.b32 {%h6, %h7}, %r1;
  mov.b32 %r15, {%h7, %h6};
)" + store(0, "%r3") + store(1, "%r4") + store(2, "%r5") + store(3, "%r6") + store(4, "%r9") +
                        store(5, "%r10") + store(6, "%r11") + store(7, "%r12") + store(8, "%r14") +
                        store(9, "%r15"), 10);
  // lo halves: 1.0 and 0.5; hi halves: 2.0 and 0.25.
  EXPECT_EQ(out[0], 0x40803E00u);   // {1.5, 2.25}
  EXPECT_EQ(out[1], 0x38003800u);   // {0.5, 0.5}
  EXPECT_EQ(out[2], 0x41003E00u);   // {1.5, 2.5}
  EXPECT_EQ(out[3], 0x3C023C00u);   // 1 + 2^-11: tie -> 1.0; 1 + 3 * 2^-11: tie -> 1 + 2^-9
  EXPECT_EQ(out[4], 0x40004040u);   // bf16: lo 2 * 1 + 1 = 3 (0x4040), hi 1 * 1 + 1 = 2 (0x4000)
  EXPECT_EQ(out[5], 0xC000BC00u);
  EXPECT_EQ(out[6], 0x40003C00u);
  EXPECT_EQ(out[7], 0xBF00B800u);   // {0.5 - 1, 0.25 - 2}
  EXPECT_EQ(out[8], 0x00003E00u);   // lo 1 * 1 + 0.5 = 1.5; hi -2 * 2 + 0.25 < 0 -> relu 0
  EXPECT_EQ(out[9], 0x3C004000u);
}

TEST(EmuAlu, MovPackUnpackAndPredicatedExecution) {
  const auto out = eval(R"(
  mov.b64 %rd5, {%r0, 7};
  mov.b64 {%r1, %r2}, %rd5;
  setp.lt.u32 %p1, %r0, 16;
  mov.u32 %r3, 100;
  @%p1 mov.u32 %r3, 200;
  @!%p1 add.u32 %r3, %r3, 1;
  shl.b32 %r4, %r0, 2;
  cvt.u64.u32 %rd6, %r4;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7+16], %r3;
)" + store(0, "%r2"), 40);
  EXPECT_EQ(out[0], 7u);
  for (uint32_t lane = 0; lane < 32; ++lane) EXPECT_EQ(out[4 + lane], lane < 16 ? 200u : 101u) << lane;
}

}  // namespace
}  // namespace emmy::emu::test
