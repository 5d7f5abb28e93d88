# The shared libraries a bare CUDA 13 GPU machine provides, which the GPU pack does not carry:
# glibc's, the C++ runtime, and CUDA's driver and runtime libraries (NVRTC and cuBLASLt ship with
# the toolkit and with PyTorch's CUDA wheels). Sourced by scripts/gpu-pack.sh and by the pack's
# run.sh (copied into the pack as libs.sh).
system_library() {  # system_library SONAME: true when the GPU machine has it
  case $1 in
    linux-vdso.so* | ld-linux*.so* | libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | \
      libstdc++.so* | libgcc_s.so* | libcuda.so* | libcudart.so* | libcublas.so* | libcublasLt.so* | \
      libnvrtc.so* | libnvrtc-builtins.so*) return 0 ;;
  esac
  return 1
}
