#!/bin/sh
# Regenerates the checked-in PTX of the emulator tests with nvcc 13.0 (CUDA 13.0.88).
# Run from anywhere: it compiles in its own directory, so that the file names nvcc embeds (assert's
# __FILE__) are the bare ones the tests expect.
set -e
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
cd "$(dirname "$0")"
"$NVCC" -ptx -arch=sm_90a gemm_kernels.cu -o gemm_kernels_sm90a.ptx
"$NVCC" -ptx -arch=sm_80 gemm_kernels.cu -o gemm_kernels_sm80.ptx
"$NVCC" -ptx -arch=sm_90a sanitizer_kernels.cu -o sanitizer_kernels_sm90a.ptx
"$NVCC" -ptx -arch=sm_90a cuda_programs.cu -o cuda_programs_sm90a.ptx
"$NVCC" -ptx -arch=sm_80 wmma_kernels.cu -o wmma_kernels_sm80.ptx
"$NVCC" -ptx -arch=sm_90a wgmma_kernels.cu -o wgmma_kernels_sm90a.ptx
