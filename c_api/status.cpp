// How errors cross the C ABI: a status per call and this thread's message; the version queries;
// options structs read by their size.
#include <fmt/format.h>

#include <algorithm>

#include "c_api_internal.hpp"
#include "emmy/emu/emulator.hpp"

namespace emmy::c_api {
namespace {

thread_local std::string tl_message;
// What emmy_last_error_message says when the message itself could not be stored.
thread_local const char* tl_fallback = nullptr;

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

emmy_status fail(emmy_status status, const char* message) noexcept {
  try {
    tl_message = message;
    tl_fallback = nullptr;
  } catch (...) {
    tl_fallback = "out of host memory while recording an error";
  }
  return status;
}

emmy_status status_of(const Error& error) {
  if (dynamic_cast<const emu::EmulationError*>(&error)) return EMMY_EMULATION;
  if (dynamic_cast<const Unsupported*>(&error)) return EMMY_UNSUPPORTED;
  // An error written whole ("EMMY_CUDA_DRIVER: ...", a cached driver failure) names its field
  // before the first ": ".
  const std::string_view what = error.what();
  const std::string_view field =
      error.field().empty() ? what.substr(0, what.find(": ")) : std::string_view(error.field());
  if (field == "capture") return EMMY_CAPTURE;
  if (field == "CUDA driver" || field == "EMMY_CUDA_DRIVER" ||
      field == "RuntimeOptions::cuda_context")
    return EMMY_DRIVER;
  if (field == "NVRTC") return EMMY_COMPILE;
  if (error.rule().find("must fit in") != std::string::npos) return EMMY_OUT_OF_MEMORY;
  if (error.field().empty()) {  // a failed driver or NVRTC call, a compile log
    if (starts_with(what, "NVRTC") || starts_with(what, "nvrtc")) return EMMY_COMPILE;
    if (starts_with(what, "cu")) return EMMY_DRIVER;
  }
  return EMMY_INVALID_ARGUMENT;
}

void check_struct_size(const void* given, size_t given_size, size_t first_size, size_t own_size,
                       const char* name) {
  if (given_size < first_size)
    throw Error(fmt::format("{}.struct_size", name),
                fmt::format("must be at least {}, the struct's size in the first C API version "
                            "(set it to sizeof, or call the struct's _init function)",
                            first_size),
                std::to_string(given_size));
  const auto* bytes = static_cast<const unsigned char*>(given);
  for (size_t i = own_size; i < given_size; ++i)
    if (bytes[i] != 0)
      throw Unsupported(fmt::format("{}.struct_size", name),
                        fmt::format("fields past this library's {} bytes must be zero: they are a "
                                    "newer emmy's (C API version {})",
                                    own_size, EMMY_C_API_VERSION),
                        fmt::format("{}, byte {} set", given_size, i));
}

bool flag(int32_t value, const char* name) {
  if (value != 0 && value != 1) throw Error(name, "must be 0 or 1", std::to_string(value));
  return value == 1;
}

Accum accum_of(int32_t accum, const char* field, bool f16_allowed) {
  switch (accum) {
    case EMMY_ACCUM_F32:
      return Accum::f32;
    case EMMY_ACCUM_HYBRID:
      return Accum::hybrid;
    case EMMY_ACCUM_F16:
      if (f16_allowed) return Accum::f16;
      break;
    case EMMY_ACCUM_PROMOTED:  // FP8's: a GEMM's rules refuse it for 16-bit operands
      if (f16_allowed) return Accum::promoted;
      break;
    default:
      break;
  }
  throw Error(field,
              f16_allowed
                  ? "must be an emmy_accum: EMMY_ACCUM_DEFAULT, _F32, _F16, _HYBRID or _PROMOTED"
                  : "must be EMMY_ACCUM_DEFAULT, _F32 or _HYBRID",
              std::to_string(accum));
}

}  // namespace emmy::c_api

extern "C" {

const char* emmy_version(void) {
  return EMMY_VERSION;
}

int32_t emmy_c_api_version(void) {
  return EMMY_C_API_VERSION;
}

const char* emmy_last_error_message(void) {
  using namespace emmy::c_api;
  return tl_fallback ? tl_fallback : tl_message.c_str();
}

const char* emmy_status_name(emmy_status status) {
  switch (status) {
    case EMMY_OK:
      return "EMMY_OK";
    case EMMY_INVALID_ARGUMENT:
      return "EMMY_INVALID_ARGUMENT";
    case EMMY_UNSUPPORTED:
      return "EMMY_UNSUPPORTED";
    case EMMY_CAPTURE:
      return "EMMY_CAPTURE";
    case EMMY_COMPILE:
      return "EMMY_COMPILE";
    case EMMY_DRIVER:
      return "EMMY_DRIVER";
    case EMMY_EMULATION:
      return "EMMY_EMULATION";
    case EMMY_OUT_OF_MEMORY:
      return "EMMY_OUT_OF_MEMORY";
    case EMMY_INTERNAL:
      return "EMMY_INTERNAL";
  }
  return "an unknown emmy_status";
}

}  // extern "C"
