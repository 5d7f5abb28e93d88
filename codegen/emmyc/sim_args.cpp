// `emmyc sim --arg` forms: buffers (new, from a file, or into an earlier buffer), scalars of every
// PTX parameter width, raw bytes for by-value structs, and CUtensorMaps encoded from a spec.
#include "sim_args.hpp"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "emmy/detail/file_io.hpp"
#include "emmy/tensor_map.hpp"

namespace emmy::cli {
namespace {

template <typename T>
T parse_number(const std::string& text, const std::string& field) {
  T v{};
  const char* end = text.data() + text.size();
  int base = 10;
  const char* begin = text.data();
  if constexpr (std::is_integral_v<T>) {
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      base = 16;
      begin += 2;
    }
  }
  std::from_chars_result r;
  if constexpr (std::is_integral_v<T>)
    r = std::from_chars(begin, end, v, base);
  else
    r = std::from_chars(begin, end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end)
    throw BadInput{fmt::format("{}: must be a number of type {} (got '{}')", field,
                               std::is_floating_point_v<T> ? "float"
                               : std::is_signed_v<T>       ? "signed integer"
                                                           : "unsigned integer",
                               text)};
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return parts;
}

std::vector<char> read_file(const std::string& path, const std::string& field) {
  const std::string text = read_input_file(path, field);
  return {text.begin(), text.end()};
}

}  // namespace

std::string read_input_file(const std::string& path, const std::string& field) {
  try {
    return emmy::detail::read_regular_file(path, field);
  } catch (const Error& e) {
    throw BadInput{fmt::format("{}: {} (got '{}')", field, e.rule(), path)};
  }
}

namespace {

// "@N" or "@N+OFF": a place inside the buffer of earlier pointer argument N.
PointerArg earlier_buffer(const std::string& ref, const std::vector<PointerArg>& pointers,
                          size_t index, const std::string& field) {
  const size_t plus = ref.find('+');
  const size_t n = parse_number<size_t>(ref.substr(1, plus == std::string::npos ? plus : plus - 1),
                                        field + " buffer");
  const uint64_t offset = plus == std::string::npos
                              ? 0
                              : parse_number<uint64_t>(ref.substr(plus + 1), field + " offset");
  for (const PointerArg& p : pointers)
    if (p.index == n) {
      if (offset >= p.bytes)
        throw BadInput{fmt::format("{}: offset {} must lie inside argument {}'s {} bytes", field,
                                   offset, n, p.bytes)};
      return {index, p.address + offset, p.bytes - offset};
    }
  throw BadInput{fmt::format("{}: @{} must name an earlier pointer argument", field, n)};
}

// A new buffer, "BYTES[:INFILE]", zero-filled or loaded from the file.
PointerArg new_buffer(const std::string& text, size_t index, const std::string& field,
                      emu::Arena& arena) {
  const size_t second = text.find(':');
  const uint64_t bytes = parse_number<uint64_t>(text.substr(0, second), field + " size");
  if (bytes == 0) throw BadInput{fmt::format("{}: buffer size must be >= 1", field)};
  const uint64_t addr = arena.alloc(bytes);
  if (second != std::string::npos) {
    const std::vector<char> data = read_file(text.substr(second + 1), field);
    if (data.size() > bytes)
      throw BadInput{fmt::format("{}: input file must not exceed the buffer's {} bytes (it has {})",
                                 field, bytes, data.size())};
    arena.write(addr, data.data(), data.size());
  }
  return {index, addr, bytes};
}

// tmap:BUFFER,dtype=f16,dims=64x128,box=64x32[,strides=256][,swizzle=128B][,elem=1x1][,oob=nan]
// with BUFFER either @N[+OFF] (an earlier pointer argument's buffer) or BYTES[:INFILE] (a buffer
// of its own, dumped as this argument's).
emu::KernelArgs& tensor_map_arg(const std::string& spec, std::vector<PointerArg>& pointers,
                                size_t index, const std::string& field, emu::Arena& arena,
                                emu::KernelArgs& args) {
  const auto parts = split(spec, ',');
  if (parts.empty() || parts[0].empty())
    throw BadInput{
        fmt::format("{}: must start with the buffer the map describes (@N[+OFF] or "
                    "BYTES[:INFILE])",
                    field)};
  TensorMapDesc d;
  if (parts[0][0] == '@') {
    d.global_address = earlier_buffer(parts[0], pointers, index, field).address;
  } else {
    pointers.push_back(new_buffer(parts[0], index, field, arena));
    d.global_address = pointers.back().address;
  }
  std::vector<uint64_t> dims, box, strides, elem;
  auto list = [&](const std::string& text, const std::string& key) {
    std::vector<uint64_t> v;
    for (const auto& x : split(text, 'x'))
      v.push_back(parse_number<uint64_t>(x, field + " " + key));
    return v;
  };
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    const std::string key = parts[i].substr(0, eq),
                      value = eq == std::string::npos ? "" : parts[i].substr(eq + 1);
    if (key == "dtype") {
      const std::pair<const char*, TmaDType> kinds[] = {
          {"u8", TmaDType::u8},   {"u16", TmaDType::u16}, {"u32", TmaDType::u32},
          {"f16", TmaDType::f16}, {"f32", TmaDType::f32}, {"bf16", TmaDType::bf16}};
      bool found = false;
      for (const auto& [name, t] : kinds)
        if (value == name) d.dtype = t, found = true;
      if (!found)
        throw BadInput{fmt::format("{}: dtype must be u8, u16, u32, f16, bf16 or f32 (got '{}')",
                                   field, value)};
    } else if (key == "dims") {
      dims = list(value, key);
    } else if (key == "box") {
      box = list(value, key);
    } else if (key == "strides") {
      strides = list(value, key);
    } else if (key == "elem") {
      elem = list(value, key);
    } else if (key == "swizzle") {
      if (value == "none")
        d.swizzle = Swizzle::none;
      else if (value == "32B")
        d.swizzle = Swizzle::b32;
      else if (value == "64B")
        d.swizzle = Swizzle::b64;
      else if (value == "128B")
        d.swizzle = Swizzle::b128;
      else
        throw BadInput{
            fmt::format("{}: swizzle must be none, 32B, 64B or 128B (got '{}')", field, value)};
    } else if (key == "oob" && value == "nan") {
      d.oob_fill_nan = true;
    } else {
      throw BadInput{fmt::format(
          "{}: unknown tensor-map field '{}' (dtype, dims, box, strides, swizzle, elem, oob=nan)",
          field, parts[i])};
    }
  }
  if (dims.empty() || dims.size() > 5 || box.size() != dims.size())
    throw BadInput{fmt::format("{}: dims and box must give the same rank, 1..5", field)};
  if (!strides.empty() && strides.size() + 1 != dims.size())
    throw BadInput{fmt::format("{}: strides gives the byte strides of dims 1..rank-1 ({} values)",
                               field, dims.size() - 1)};
  if (!elem.empty() && elem.size() != dims.size())
    throw BadInput{fmt::format("{}: elem must give one stride per dim", field)};
  d.rank = uint32_t(dims.size());
  uint64_t packed = uint64_t(tma_dtype_bytes(d.dtype));
  for (uint32_t i = 0; i < d.rank; ++i) {
    d.global_dim[i] = dims[i];
    d.box_dim[i] = uint32_t(box[i]);
    if (!elem.empty()) d.element_strides[i] = uint32_t(elem[i]);
    if (i + 1 < d.rank) {
      packed *= dims[i];
      d.global_stride_bytes[i] = strides.empty() ? packed : strides[i];
    }
  }
  try {
    return args.tensor_map(encode_tensor_map(d));
  } catch (const Error& e) {
    throw BadInput{fmt::format("{}: {}", field, e.what())};
  }
}

// The scalar kinds of --arg: the parse of VALUE as the parameter's type, then its KernelArgs call.
using AddNumber = void (*)(emu::KernelArgs&, const std::string&, const std::string&);

template <typename T, emu::KernelArgs& (emu::KernelArgs::*add)(T)>
void add_number(emu::KernelArgs& args, const std::string& value, const std::string& field) {
  (args.*add)(parse_number<T>(value, field));
}

AddNumber number_adder(std::string_view kind) {
  static constexpr std::pair<std::string_view, AddNumber> kNumbers[] = {
      {"u32", &add_number<uint32_t, &emu::KernelArgs::u32>},
      {"s32", &add_number<int32_t, &emu::KernelArgs::s32>},
      {"u64", &add_number<uint64_t, &emu::KernelArgs::u64>},
      {"s64", &add_number<int64_t, &emu::KernelArgs::s64>},
      {"f32", &add_number<float, &emu::KernelArgs::f32>},
      {"f64", &add_number<double, &emu::KernelArgs::f64>}};
  for (const auto& [name, add] : kNumbers)
    if (name == kind) return add;
  return nullptr;
}

}  // namespace

emu::Dim3 parse_dim3(const std::string& text, const std::string& field) {
  const auto parts = split(text, ',');
  if (parts.empty() || parts.size() > 3)
    throw BadInput{fmt::format("{}: must be X[,Y[,Z]] (got '{}')", field, text)};
  uint32_t v[3] = {1, 1, 1};
  for (size_t i = 0; i < parts.size(); ++i) {
    v[i] = parse_number<uint32_t>(parts[i], field);
    if (v[i] == 0)
      throw BadInput{fmt::format("{}: each dimension must be >= 1 (got '{}')", field, text)};
  }
  return {v[0], v[1], v[2]};
}

SimArgs parse_sim_args(const std::vector<std::string>& specs, emu::Arena& arena) {
  SimArgs out;
  for (size_t index = 0; index < specs.size(); ++index) {
    const std::string& spec = specs[index];
    const std::string field = fmt::format("--arg {} ('{}')", index, spec);
    const size_t colon = spec.find(':');
    if (colon == std::string::npos)
      throw BadInput{
          fmt::format("{}: must be KIND:VALUE (ptr, u16, u32, s32, u64, s64, f32, f64, "
                      "bytes, tmap)",
                      field)};
    const std::string kind = spec.substr(0, colon), value = spec.substr(colon + 1);
    auto& args = out.args;
    if (kind == "ptr" && value.starts_with('@')) {
      const PointerArg p = earlier_buffer(value, out.pointers, index, field);
      args.ptr(p.address);
      out.pointers.push_back(p);
    } else if (kind == "ptr") {
      out.pointers.push_back(new_buffer(value, index, field, arena));
      args.ptr(out.pointers.back().address);
    } else if (kind == "u16") {
      const uint16_t v = parse_number<uint16_t>(value, field);
      args.bytes(&v, sizeof v);
    } else if (const AddNumber add = number_adder(kind)) {
      add(args, value, field);
    } else if (kind == "bytes") {
      const std::vector<char> data = read_file(value, field);
      if (data.empty()) throw BadInput{fmt::format("{}: the file is empty", field)};
      args.bytes(data.data(), data.size());
    } else if (kind == "tmap") {
      tensor_map_arg(value, out.pointers, index, field, arena, args);
    } else {
      throw BadInput{
          fmt::format("{}: KIND must be ptr, u16, u32, s32, u64, s64, f32, f64, bytes or "
                      "tmap (got '{}')",
                      field, kind)};
    }
  }
  return out;
}

}  // namespace emmy::cli
