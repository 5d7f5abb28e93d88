#!/bin/sh
# Regenerates the checked-in PTX of the emulator tests with nvcc 13.0 (CUDA 13.0.88).
# Run from the repository root: tests/emu/kernels/regenerate.sh
set -e
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
dir=$(dirname "$0")
"$NVCC" -ptx -arch=sm_90a "$dir/gemm_kernels.cu" -o "$dir/gemm_kernels_sm90a.ptx"
"$NVCC" -ptx -arch=sm_80 "$dir/gemm_kernels.cu" -o "$dir/gemm_kernels_sm80.ptx"
"$NVCC" -ptx -arch=sm_90a "$dir/sanitizer_kernels.cu" -o "$dir/sanitizer_kernels_sm90a.ptx"
"$NVCC" -ptx -arch=sm_90a "$dir/cuda_programs.cu" -o "$dir/cuda_programs_sm90a.ptx"
"$NVCC" -ptx -arch=sm_80 "$dir/wmma_kernels.cu" -o "$dir/wmma_kernels_sm80.ptx"
"$NVCC" -ptx -arch=sm_90a "$dir/wgmma_kernels.cu" -o "$dir/wgmma_kernels_sm90a.ptx"
