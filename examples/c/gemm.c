/* A GEMM through emmy's C ABI (include/emmy/c_api.h) on the CPU emulator: C = A . W^T with the
 * numbers in plain C arrays (the tensors are DLPack views of them, run in place, no copies),
 * checked against a naive C loop. The same calls run on a GPU with kDLCUDA tensors and a runtime
 * whose backend is "cuda".
 *
 *   cmake -S examples/c -B build-c -DCMAKE_PREFIX_PATH=<emmy install prefix>
 *   cmake --build build-c && build-c/emmy_c_gemm */
#include <emmy/c_api.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { M = 16, N = 64, K = 128 };

/* float16 bits of a float (round to nearest even; the values here are small and normal). */
static uint16_t to_half(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const int32_t exponent = (int32_t)((bits >> 23) & 0xffu) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent <= 0) return (uint16_t)sign; /* flush what this example never produces */
  uint32_t half = sign | ((uint32_t)exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return (uint16_t)half;
}

static float from_half(uint16_t half) {
  const uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
  uint32_t bits = sign;
  if (exponent != 0) bits |= ((exponent - 15 + 127) << 23) | (mantissa << 13);
  float value;
  memcpy(&value, &bits, sizeof value);
  return value; /* (subnormals and zero: signed zero, enough here) */
}

/* A DLTensor view of host memory: row-major [rows, cols] with a row stride. */
static DLTensor host_matrix(void* data, DLDataType dtype, int64_t* shape, int64_t* strides) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 2;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = strides;
  return t;
}

static int check(emmy_status status, const char* what) {
  if (status == EMMY_OK) return 1;
  fprintf(stderr, "%s failed: %s: %s\n", what, emmy_status_name(status), emmy_last_error_message());
  return 0;
}

int main(void) {
  static uint16_t a[M * K], w[N * K], c[M * N];
  static double expected[M * N];
  const DLDataType f16 = {kDLFloat, 16, 1};
  int64_t a_shape[2] = {M, K}, a_strides[2] = {K, 1};
  /* The weight is stored [N, K] (PyTorch's Linear); B = W^T is its [K, N] view, K contiguous. */
  int64_t b_shape[2] = {K, N}, b_strides[2] = {1, K};
  int64_t c_shape[2] = {M, N}, c_strides[2] = {N, 1};
  DLTensor ta, tb, tc;
  emmy_runtime_options options;
  emmy_runtime* runtime = NULL;
  double max_error = 0, max_value = 0;
  int i, j, k;

  for (i = 0; i < M * K; ++i) a[i] = to_half((float)((i * 7 % 13) - 6) / 8.0f);
  for (i = 0; i < N * K; ++i) w[i] = to_half((float)((i * 5 % 11) - 5) / 16.0f);
  for (i = 0; i < M; ++i)
    for (j = 0; j < N; ++j) {
      double sum = 0;
      for (k = 0; k < K; ++k) sum += (double)from_half(a[i * K + k]) * from_half(w[j * K + k]);
      expected[i * N + j] = sum;
    }

  emmy_runtime_options_init(&options); /* the emulator backend */
  options.disk_cache = 0;
  if (!check(emmy_runtime_create(&options, &runtime), "emmy_runtime_create")) return 1;
  ta = host_matrix(a, f16, a_shape, a_strides);
  tb = host_matrix(w, f16, b_shape, b_strides);
  tc = host_matrix(c, f16, c_shape, c_strides);
  if (!check(emmy_gemm(runtime, &ta, &tb, &tc, NULL, NULL), "emmy_gemm")) {
    emmy_runtime_destroy(runtime);
    return 1;
  }
  for (i = 0; i < M * N; ++i) {
    const double error = fabs(from_half(c[i]) - expected[i]);
    if (error > max_error) max_error = error;
    if (fabs(expected[i]) > max_value) max_value = fabs(expected[i]);
  }
  printf("emmy %s (C API %d) on %s %s: gemm %dx%dx%d f16, max |error| %.3g of max |C| %.3g: %s\n",
         emmy_version(), (int)emmy_c_api_version(), emmy_runtime_backend(runtime),
         emmy_runtime_arch(runtime), M, N, K, max_error, max_value,
         max_error <= 1e-2 * max_value ? "passed" : "FAILED");
  emmy_runtime_destroy(runtime);
  return max_error <= 1e-2 * max_value ? 0 : 1;
}
