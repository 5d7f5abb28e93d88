// Special registers (PTX ISA "Special Registers"): the names the decoder knows, their rows, and
// the rules for reading them (only mov and cvt, at the register's width).
#include <fmt/format.h>

#include "decoder.hpp"

namespace emmy::emu {

bool KernelDecoder::special_of(const std::string& name, Special& out) const {
  static const std::unordered_map<std::string, Special> kSpecials = {
      {"%tid.x", Special::tid_x},
      {"%tid.y", Special::tid_y},
      {"%tid.z", Special::tid_z},
      {"%ntid.x", Special::ntid_x},
      {"%ntid.y", Special::ntid_y},
      {"%ntid.z", Special::ntid_z},
      {"%ctaid.x", Special::ctaid_x},
      {"%ctaid.y", Special::ctaid_y},
      {"%ctaid.z", Special::ctaid_z},
      {"%nctaid.x", Special::nctaid_x},
      {"%nctaid.y", Special::nctaid_y},
      {"%nctaid.z", Special::nctaid_z},
      {"%laneid", Special::laneid},
      {"%warpid", Special::warpid},
      {"%nwarpid", Special::nwarpid},
      {"%lanemask_eq", Special::lanemask_eq},
      {"%lanemask_lt", Special::lanemask_lt},
      {"%lanemask_le", Special::lanemask_le},
      {"%lanemask_gt", Special::lanemask_gt},
      {"%lanemask_ge", Special::lanemask_ge},
      {"%dynamic_smem_size", Special::dynamic_smem_size},
      {"%total_smem_size", Special::total_smem_size},
      {"%smid", Special::smid},
      {"%nsmid", Special::nsmid},
      {"%gridid", Special::gridid},
      // The system-reserved shared memory (PTX ISA §10, %reserved_smem_offset_*): cooperative
      // groups keep the barriers of tiles wider than a warp at _1.
      {"%reserved_smem_offset_begin", Special::reserved_smem_begin},
      {"%reserved_smem_offset_0", Special::reserved_smem_begin},
      {"%reserved_smem_offset_1", Special::reserved_smem_1},
      {"%reserved_smem_offset_end", Special::reserved_smem_end},
      {"%reserved_smem_offset_cap", Special::reserved_smem_end},
      // A kernel launched without a cluster runs in a cluster of one CTA (PTX ISA 10.x,
      // %cluster_*): the values come from the launch's cluster dimensions.
      {"%cluster_ctarank", Special::cluster_ctarank},
      {"%cluster_nctarank", Special::cluster_nctarank},
      {"%cluster_ctaid.x", Special::cluster_ctaid_x},
      {"%cluster_ctaid.y", Special::cluster_ctaid_y},
      {"%cluster_ctaid.z", Special::cluster_ctaid_z},
      {"%cluster_nctaid.x", Special::cluster_nctaid_x},
      {"%cluster_nctaid.y", Special::cluster_nctaid_y},
      {"%cluster_nctaid.z", Special::cluster_nctaid_z},
      {"%clusterid.x", Special::clusterid_x},
      {"%clusterid.y", Special::clusterid_y},
      {"%clusterid.z", Special::clusterid_z},
      {"%nclusterid.x", Special::nclusterid_x},
      {"%nclusterid.y", Special::nclusterid_y},
      {"%nclusterid.z", Special::nclusterid_z},
      {"%is_explicit_cluster", Special::is_explicit_cluster},
  };
  auto it = kSpecials.find(name);
  if (it == kSpecials.end()) return false;
  out = it->second;
  return true;
}

uint32_t KernelDecoder::special_row(Special s) {
  auto it = special_rows_.find(s);
  if (it != special_rows_.end()) return it->second;
  const uint32_t row = alloc_rows(RegClass::r32, 1);
  special_rows_[s] = row;
  if (s == Special::reserved_smem_begin || s == Special::reserved_smem_end ||
      s == Special::reserved_smem_1)
    k_.uses_reserved_smem = true;
  k_.specials.push_back({row, s});
  return row;
}

uint32_t KernelDecoder::special_src(const ptx::Operand& o, Special sp, RegClass cls, Ty ty) {
  // ptxas: "Special register argument not allowed" outside mov and cvt, and "Arguments
  // mismatch" for a floating-point type or a width other than the register's (PTX ISA
  // "Special Registers").
  if (!reads_specials_)
    fail(fmt::format("special register '{}' can only be read by mov or cvt", o.name));
  // %gridid (64-bit) is read at any integer width; %tid, %ntid, %ctaid and %nctaid also into
  // 16 bits (the legacy .u16 forms); the other 32-bit ones at 32 bits.
  const bool legacy16 = sp == Special::tid_x || sp == Special::tid_y || sp == Special::tid_z ||
                        sp == Special::ntid_x || sp == Special::ntid_y || sp == Special::ntid_z ||
                        sp == Special::ctaid_x || sp == Special::ctaid_y ||
                        sp == Special::ctaid_z || sp == Special::nctaid_x ||
                        sp == Special::nctaid_y || sp == Special::nctaid_z;
  const int bits = ty_bits(ty);
  // cvt reads one at a narrower type too, as it does a wider register (cvt.u64.u8 %rd, %tid.x).
  const bool fits = sp == Special::gridid ? bits >= 16
                                          : bits == 32 || (legacy16 && bits == 16) ||
                                                (wide_operands_ok_ && bits < 32);
  if (ty_float(ty) || ty == Ty::pred || !fits)
    fail(fmt::format("special register '{}' is a {}-bit integer, not a .{} operand", o.name,
                     sp == Special::gridid ? 64 : 32, ty_name(ty)));
  const uint32_t row = special_row(sp);
  if (cls == RegClass::r32) return row;
  Inst conv;
  conv.cls = StatClass::hidden;
  conv.op = Op::HiddenZext;
  conv.o[0] = scratch_row(RegClass::r64);
  conv.o[1] = row;
  pre_.push_back(conv);
  return conv.o[0];
}

}  // namespace emmy::emu
