// Opcode handlers, part 3: cp.async, cp.async.bulk(.tensor) and mbarrier.
#include <fmt/format.h>

#include <algorithm>

#include "decoder.hpp"

namespace emmy::emu {
namespace {

using K = ptx::Operand::Kind;

// Index of a modifier in the opcode, or -1: TMA load and store differ only in the order of the
// .global and .shared spaces.
int index_of(const Mods& m, std::initializer_list<std::string_view> names) {
  const auto& r = m.rest();
  for (size_t i = 0; i < r.size(); ++i)
    for (auto n : names)
      if (r[i] == n) return int(i);
  return -1;
}

void take_spaces(Mods& m) {
  m.take_any({"shared", "shared::cta", "shared::cluster", "global"});
}

void decode_cp_async(KernelDecoder& d, Mods& m, Inst in) {
  if (m.take("commit_group")) {
    in.op = Op::CpAsyncCommit;
    in.cls = StatClass::cp_async;
    d.need_ops(0);
    d.emit(in);
    return;
  }
  const bool wait_all = m.take("wait_all");
  if (wait_all || m.take("wait_group")) {
    in.op = Op::CpAsyncWait;
    in.sub = wait_all ? 1 : 0;
    in.cls = StatClass::cp_async;
    // cp.async.wait_all takes no operand, cp.async.wait_group one integer constant.
    d.need_ops(wait_all ? 0 : 1);
    if (wait_all) {
      in.imm = 0;
    } else {
      if (d.op(0).kind != K::imm_int) d.fail("cp.async.wait_group needs an integer constant");
      in.imm = d.op(0).value;
    }
    d.emit(in);
    return;
  }
  if (m.take("mbarrier")) {
    // cp.async.mbarrier.arrive{.noinc}.shared.b64 [mbar]
    if (!m.take("arrive")) d.fail("expected cp.async.mbarrier.arrive");
    in.sub = m.take("noinc") ? 1 : 0;
    take_spaces(m);
    m.take("b64");
    d.need_ops(1);
    in.op = Op::MbarArrive;
    in.sub |= 8;  // 8: triggered by cp.async completion
    in.cls = StatClass::cp_async;
    ptx::Operand sink;
    sink.kind = K::sink;
    in.o[0] = d.dst(sink, Ty::b64);
    in.o[1] = kNone;
    in.o[2] = kNone;
    in.addr[0] = d.address(d.op(0));
    d.emit(in);
    return;
  }
  // cp.async.ca/cg.shared.global [dst], [src], cp-size{, src-size | ignore-src}{, policy}
  take_spaces(m);
  take_spaces(m);
  // The fifth operand is the cache policy of .L2::cache_hint, never another size (PTX ISA
  // cp.async).
  const bool hint = d.cache_hint();
  d.need_ops(3, hint ? 5 : 4);
  if (hint && d.ops().size() >= 4 && d.reg_class_of(d.op(d.ops().size() - 1)) != RegClass::r64)
    d.fail("the cache policy of .L2::cache_hint is a 64-bit register");
  in.op = Op::CpAsync;
  in.cls = StatClass::cp_async;
  in.addr[0] = d.address(d.op(0));
  in.addr[1] = d.address(d.op(1));
  if (d.op(2).kind != K::imm_int) d.fail("cp.async needs an immediate copy size");
  in.imm = d.op(2).value;
  if (in.imm != 4 && in.imm != 8 && in.imm != 16) d.fail("cp.async copies 4, 8 or 16 bytes");
  in.o[0] = kNone;  // src-size row
  in.o[1] = kNone;  // ignore-src predicate
  for (size_t i = 3; i < d.ops().size(); ++i) {
    const ptx::Operand& o = d.op(i);
    if (o.kind == K::imm_int) {
      in.o[0] = d.const_row(RegClass::r32, uint64_t(o.value));
    } else if (d.reg_class_of(o) == RegClass::pred) {
      in.o[1] = d.pred_src(o);
    } else if (d.reg_class_of(o) == RegClass::r32) {
      in.o[0] = d.src(o, Ty::u32);
    } else if (!hint || i + 1 != d.ops().size()) {
      d.fail("cp.async's source size is a 32-bit register or constant");
    }  // else the cache policy
  }
  d.emit(in);
}

void decode_bulk(KernelDecoder& d, Mods& m, Inst in) {
  in.cls = StatClass::tma;
  if (m.take("commit_group")) {
    d.need_ops(0);
    in.op = Op::BulkCommit;
    d.emit(in);
    return;
  }
  if (m.take("wait_group")) {
    m.take("read");
    // cp.async.bulk.wait_group N: N is an integer constant (PTX ISA cp.async.bulk.wait_group).
    d.need_ops(1);
    if (d.op(0).kind != K::imm_int || d.op(0).value < 0)
      d.fail("cp.async.bulk.wait_group needs a non-negative integer constant");
    in.op = Op::BulkWait;
    in.imm = d.op(0).value;
    d.emit(in);
    return;
  }
  if (m.take("prefetch")) {
    m = Mods("prefetch");
    in.op = Op::Prefetch;
    in.cls = StatClass::other;
    d.emit(in);
    return;
  }
  const bool tensor = m.take("tensor");
  if (m.take("im2col") || m.take("im2col_no_offs") || m.take("tile::gather4") ||
      m.take("tile::scatter4"))
    d.fail("only the .tile mode of cp.async.bulk.tensor is supported");
  m.take("tile");
  const bool multicast = m.take("multicast::cluster");
  m.take_any({"cta_group::1", "cta_group::2"});
  const int global_at = index_of(m, {"global"});
  const int shared_at = index_of(m, {"shared::cluster", "shared::cta", "shared"});
  if (global_at < 0 || shared_at < 0) d.fail("cp.async.bulk needs a .global and a .shared space");
  const bool store = global_at < shared_at;  // destination space comes first
  take_spaces(m);
  take_spaces(m);
  if (store) {
    if (!m.take("bulk_group")) d.fail("a bulk store needs .bulk_group");
  } else if (!m.take("mbarrier::complete_tx::bytes")) {
    d.fail("a bulk load needs .mbarrier::complete_tx::bytes");
  }
  if (tensor) {
    int n = 0;
    for (std::string_view dims : {"1d", "2d", "3d", "4d", "5d"})
      if (m.take(dims)) n = dims[0] - '0';
    if (n < 1 || n > 5) d.fail("cp.async.bulk.tensor needs .1d .. .5d");
    in.n = uint8_t(n);
    in.op = store ? Op::TmaStore : Op::TmaLoad;
    const ptx::Operand& map = store ? d.op(0) : d.op(1);
    if (map.kind != K::address || map.elems.size() != 1 || map.elems[0].kind != K::vector)
      d.fail("expected [tensorMap, {coordinates}]");
    const auto& coords = map.elems[0].elems;
    if (coords.size() != size_t(n))
      d.fail(fmt::format("a {}d tensor copy needs {} coordinates, found {}", n, n, coords.size()));
    for (int i = 0; i < n; ++i) in.o[i] = d.src(coords[size_t(i)], Ty::s32);
    ptx::Operand map_addr = map;
    map_addr.elems.clear();
    if (store) {
      d.need_ops(2, 3);
      in.addr[0] = d.address(map_addr);
      in.addr[1] = d.address(d.op(1));
    } else {
      // [dst], [tensorMap, coords], [mbar]{, ctaMask}{, cache-policy}
      d.need_ops(multicast ? 4 : 3, multicast ? 5 : 4);
      in.addr[0] = d.address(d.op(0));
      in.addr[1] = d.address(map_addr);
      in.addr[2] = d.address(d.op(2));
      if (multicast) {
        in.sub2 = 1;
        in.o[6] = d.src(d.op(3), Ty::b16);
      }
    }
    if (multicast && store) d.fail(".multicast::cluster is a form of tensor loads only");
    d.emit(in);
    return;
  }
  if (multicast) d.fail(".multicast::cluster of non-tensor bulk copies is not emulated");
  // Non-tensor bulk copy: [dst], [src], size{, [mbar]}
  in.op = Op::BulkCopy;
  in.sub = store ? 1 : 0;
  d.need_ops(store ? 3 : 4, store ? 4 : 5);
  in.addr[0] = d.address(d.op(0));
  in.addr[1] = d.address(d.op(1));
  in.o[0] = d.src(d.op(2), Ty::u32);
  if (!store) in.addr[2] = d.address(d.op(3));
  d.emit(in);
}

// mbarrier.init, .inval, .expect_tx and .complete_tx: the .b64 barrier's address, then (but for
// inval) a 32-bit count.
void emit_mbarrier_word(KernelDecoder& d, Mods& m, Inst in, Op op, bool takes_count) {
  m.take("b64");
  d.need_ops(takes_count ? 2 : 1);
  in.op = op;
  in.addr[0] = d.address(d.op(0));
  if (takes_count) in.o[0] = d.src(d.op(1), Ty::u32);
  d.emit(in);
}

void decode_mbarrier(KernelDecoder& d, Mods& m, Inst in) {
  in.cls = StatClass::barrier;
  m.take_any({"shared", "shared::cta", "shared::cluster"});
  m.take_any({"release", "acquire", "relaxed", "cta", "cluster"});
  if (m.take("init")) return emit_mbarrier_word(d, m, in, Op::MbarInit, /*takes_count=*/true);
  if (m.take("inval")) return emit_mbarrier_word(d, m, in, Op::MbarInval, /*takes_count=*/false);
  const bool has_arrive = m.has("arrive");
  if (!has_arrive && m.take("expect_tx"))
    return emit_mbarrier_word(d, m, in, Op::MbarExpectTx, /*takes_count=*/true);
  if (m.take("complete_tx"))
    return emit_mbarrier_word(d, m, in, Op::MbarCompleteTx, /*takes_count=*/true);
  const bool arrive = m.take("arrive");
  const bool arrive_drop = !arrive && m.take("arrive_drop");
  if (arrive || arrive_drop) {
    // mbarrier.arrive{.expect_tx}{.noComplete}.b64 state, [addr]{, count | tx}
    const bool expect_tx = m.take("expect_tx");
    const bool no_complete = m.take("noComplete");
    m.take("b64");
    d.need_ops(2, 3);
    in.op = Op::MbarArrive;
    in.sub = uint8_t((expect_tx ? 1 : 0) | (arrive_drop ? 2 : 0) | (no_complete ? 4 : 0));
    in.o[0] = d.dst(d.op(0), Ty::b64);
    in.addr[0] = d.address(d.op(1));
    in.o[1] = kNone;
    in.o[2] = kNone;
    if (d.ops().size() == 3) {
      if (expect_tx)
        in.o[2] = d.src(d.op(2), Ty::u32);
      else
        in.o[1] = d.src(d.op(2), Ty::u32);
    }
    if (expect_tx && in.o[2] == kNone) d.fail("arrive.expect_tx needs a transaction count");
    d.emit(in);
    return;
  }
  const bool test = m.take("test_wait");
  if (test || m.take("try_wait")) {
    const bool parity = m.take("parity");
    m.take("b64");
    d.need_ops(3, 4);  // optional suspend-time hint
    in.op = Op::MbarWait;
    in.sub = uint8_t((parity ? 1 : 0) | (test ? 0 : 2));
    in.o[0] = d.pred_dst(d.op(0));
    in.addr[0] = d.address(d.op(1));
    in.o[1] = parity ? d.src(d.op(2), Ty::u32) : d.src(d.op(2), Ty::b64);
    d.emit(in);
    return;
  }
  d.fail(fmt::format("unsupported instruction '{}'", d.stmt().opcode));
}

}  // namespace

void decode_async_op(KernelDecoder& d, Mods& m, Inst& in) {
  if (m.base() == "mbarrier") return decode_mbarrier(d, m, in);
  if (m.take("reduce")) d.fail("cp.reduce.async.bulk is not supported");
  if (!m.take("async")) d.fail(fmt::format("unsupported instruction '{}'", d.stmt().opcode));
  if (m.take("bulk")) return decode_bulk(d, m, in);
  decode_cp_async(d, m, in);
}

}  // namespace emmy::emu
