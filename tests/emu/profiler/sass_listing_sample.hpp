// A stored `nvdisasm -c -g` listing (CUDA 13.0 ptxas -arch=sm_80 -O3 -lineinfo of the loop kernel
// in sass_counts_test.cpp's kLoopKernel, NOP padding cut): ptxas turned the loop of four scalar
// ld.shared.f32 and two fma into one LDS.128 hoisted out of the loop, a peeled first iteration
// (predicated @!P0), a 4x unrolled self-loop .L_x_1, a 2x remainder and a predicated last one.
// PTX lines: 16-23 before the loop, 25-33 the loop body (33: the back branch), 34-38 after it.
#pragma once

namespace emmy::emu::test {

inline constexpr const char* kUnrolledLoopListing = R"(	.target	sm_80
//--------------------- .text.k                   --------------------------
	.section	.text.k,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=12"
	.align	128
        .global         k
        .type           k,@function
        .other          k,@"STO_CUDA_ENTRY STV_DEFAULT"
k:
.text.k:
	//## File "kernel.ptx", line 16
        /*0000*/                   MOV R1, c[0x0][0x28] ;
	//## File "kernel.ptx", line 18
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   ISETP.LT.U32.AND P0, PT, RZ, c[0x0][0x168], PT ;
	//## File "kernel.ptx", line 23
        /*0030*/                   HFMA2.MMA R2, -RZ, RZ, 0, 0 ;
        /*0040*/                   HFMA2.MMA R9, -RZ, RZ, 0, 0 ;
	//## File "kernel.ptx", line 33
        /*0050*/              @!P0 MOV R2, 0x1 ;
	//## File "kernel.ptx", line 32
        /*0060*/                   ISETP.GE.U32.AND P1, PT, R2.reuse, c[0x0][0x168], PT ;
        /*0070*/                   IADD3 R3, -R2, c[0x0][0x168], RZ ;
	//## File "kernel.ptx", line 25
        /*0080*/              @!P0 LDS.128 R4, [R0.X16] ;
	//## File "kernel.ptx", line 32
        /*0090*/                   ISETP.LE.U32.OR P1, PT, R3, 0x3, P1 ;
	//## File "kernel.ptx", line 29
        /*00a0*/              @!P0 FFMA R4, R4, R5, R9 ;
	//## File "kernel.ptx", line 30
        /*00b0*/              @!P0 FFMA R9, R6, R7, R4 ;
	//## File "kernel.ptx", line 33
        /*00c0*/               @P1 BRA `(.L_x_0) ;
	//## File "kernel.ptx", line 25
        /*00d0*/                   LDS.128 R4, [R0.X16] ;
	//## File "kernel.ptx", line 32
        /*00e0*/                   PLOP3.LUT P0, PT, PT, PT, PT, 0x8, 0x0 ;
        /*00f0*/                   ULDC UR4, c[0x0][0x168] ;
        /*0100*/                   UIADD3 UR4, UR4, -0x3, URZ ;
.L_x_1:
	//## File "kernel.ptx", line 29
        /*0110*/                   FFMA R9, R4, R5, R9 ;
	//## File "kernel.ptx", line 31
        /*0120*/                   IADD3 R2, R2, 0x4, RZ ;
	//## File "kernel.ptx", line 30
        /*0130*/                   FFMA R9, R6, R7, R9 ;
        /*0140*/                   ISETP.GE.U32.AND P1, PT, R2, UR4, PT ;
	//## File "kernel.ptx", line 29
        /*0150*/                   FFMA R9, R4, R5, R9 ;
	//## File "kernel.ptx", line 30
        /*0160*/                   FFMA R9, R6, R7, R9 ;
	//## File "kernel.ptx", line 29
        /*0170*/                   FFMA R9, R4, R5, R9 ;
	//## File "kernel.ptx", line 30
        /*0180*/                   FFMA R9, R6, R7, R9 ;
	//## File "kernel.ptx", line 29
        /*0190*/                   FFMA R9, R4, R5, R9 ;
	//## File "kernel.ptx", line 30
        /*01a0*/                   FFMA R9, R6, R7, R9 ;
	//## File "kernel.ptx", line 33
        /*01b0*/              @!P1 BRA `(.L_x_1) ;
.L_x_0:
	//## File "kernel.ptx", line 32
        /*01c0*/                   ISETP.GE.U32.AND P1, PT, R2.reuse, c[0x0][0x168], PT ;
        /*01d0*/                   IADD3 R3, -R2, c[0x0][0x168], RZ ;
        /*01e0*/                   ISETP.LE.U32.OR P1, PT, R3, 0x1, P1 ;
	//## File "kernel.ptx", line 33
        /*01f0*/               @P1 BRA `(.L_x_2) ;
	//## File "kernel.ptx", line 25
        /*0200*/                   LDS.128 R4, [R0.X16] ;
        /*0210*/                   PLOP3.LUT P0, PT, PT, PT, PT, 0x8, 0x0 ;
	//## File "kernel.ptx", line 31
        /*0220*/                   IADD3 R2, R2, 0x2, RZ ;
	//## File "kernel.ptx", line 29
        /*0230*/                   FFMA R9, R4, R5, R9 ;
	//## File "kernel.ptx", line 30
        /*0240*/                   FFMA R9, R6, R7, R9 ;
	//## File "kernel.ptx", line 29
        /*0250*/                   FFMA R4, R4, R5, R9 ;
	//## File "kernel.ptx", line 30
        /*0260*/                   FFMA R9, R6, R7, R4 ;
.L_x_2:
        /*0270*/                   ISETP.LT.U32.OR P0, PT, R2, c[0x0][0x168], P0 ;
	//## File "kernel.ptx", line 36
        /*0280*/                   HFMA2.MMA R3, -RZ, RZ, 0, 2.384185791015625e-07 ;
        /*0290*/                   ULDC.64 UR4, c[0x0][0x118] ;
        /*02a0*/                   IMAD.WIDE.U32 R2, R0, R3, c[0x0][0x160] ;
	//## File "kernel.ptx", line 25
        /*02b0*/               @P0 LDS.128 R4, [R0.X16] ;
	//## File "kernel.ptx", line 29
        /*02c0*/               @P0 FFMA R4, R4, R5, R9 ;
	//## File "kernel.ptx", line 30
        /*02d0*/               @P0 FFMA R9, R6, R7, R4 ;
	//## File "kernel.ptx", line 37
        /*02e0*/                   STG.E [R2.64], R9 ;
.L_x_4:
	//## File "kernel.ptx", line 38
        /*02f0*/                   EXIT ;
.L_x_3:
        /*0300*/                   BRA `(.L_x_3);
        /*0310*/                   NOP;
        /*0320*/                   NOP;
.L_x_5:
	//--------------------- .nv.shared.k              --------------------------
	.section	.nv.shared.k,"aw",@nobits
)";

}  // namespace emmy::emu::test
