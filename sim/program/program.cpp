#include "sim/program/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <map>
#include <unordered_map>

#include "sim/common/error.h"
#include "sim/core/scratchpad.h"

namespace tessera::sim {

namespace {
std::string place_text(const CoreProgram& core, std::uint32_t w) {
  const ItemPlace& p = core.where[w];
  std::string s = p.parent == ItemPlace::kTop ? core.where_root : place_text(core, p.parent) + ".body";
  return p.index == ItemPlace::kWhole ? s : s + fmt::format("[{}]", p.index);
}
}  // namespace

std::string item_place(const CoreProgram& core, const Item& item) { return place_text(core, item.where); }

std::string item_location(const Program& prog, const CoreProgram& core, const Item& item) {
  std::string s = item_place(core, item);
  if (item.tag != kNoTag)
    s += fmt::format(" (operator '{}', {} phase)", prog.tags[item.tag].op, prog.tags[item.tag].phase);
  return s;
}

std::uint64_t Program::total_work_items() const {
  std::uint64_t n = 0;
  for (const auto& c : cores) n += c.work_items;
  return n;
}

namespace {

// Traffic and barrier counts gathered while reading, checked once every core is read.
struct Tally {
  // (src << 32 | dst) -> messages and bytes sent, and received; one hash entry per pair that
  // talks, so an all-to-all's tally is linear in the program's size
  struct Pair {
    std::uint64_t sent = 0, sent_bytes = 0, received = 0, received_bytes = 0;
  };
  std::unordered_map<std::uint64_t, Pair> pairs;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> syncs;  // (group, core)
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> relayouts;  // (relayout, core)
  // (collective, chip) -> the cores with an item of it there, and how often each runs it
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::pair<std::uint32_t, std::uint64_t>>> collectives;
  // Functional mode: the pieces of each relayout a core reads, computed once per relayout.
  struct Piece {
    RelayoutStep::Kind kind;
    std::uint32_t peer;
    std::size_t move;
    Box box;
  };
  std::map<std::uint32_t, StepsByCore<Piece>> pieces;
};

class CoreReader {
 public:
  CoreReader(const Config& cfg, Program& prog, Tally& tally, const std::string& what,
             const std::unordered_map<std::string, std::uint32_t>& group_index,
             const std::unordered_map<std::string, std::uint32_t>& tensor_index, CoreProgram& out,
             bool functional)
      : cfg_(cfg), prog_(prog), tally_(tally), what_(what), groups_(group_index),
        tensors_(tensor_index), out_(out), pad_(out.core, cfg.chip.core.sram_bytes),
        functional_(functional) {}

  // The items of the list at `path`, held by the repeat at place `parent` (ItemPlace::kTop: the
  // core's own list, whose path is CoreProgram::where_root).
  void read_items(const Json& items, const std::string& path, std::uint64_t multiplicity,
                  std::uint32_t parent = ItemPlace::kTop) {
    if (!items.is_array())
      throw ProgramError(fmt::format("{}: {}: expected an array of work items", what_, path));
    if (parent == ItemPlace::kTop) out_.where_root = path;
    for (std::size_t i = 0; i < items.size(); ++i) {
      place_ = ItemPlace{parent, static_cast<std::uint32_t>(i)};
      read_item(items[i], fmt::format("{}[{}]", path, i), multiplicity);
    }
  }

  void finish() {
    out_.peak_scratchpad_bytes = pad_.peak_bytes();
    for (const auto& [name, h] : handles_)
      if (h.pending)
        throw ProgramError(fmt::format("{}: {}: core {}: DMA handle '{}' is started here and never "
                                       "waited for (add {{\"op\": \"wait\", \"handle\": \"{}\"}})",
                                       what_, h.started_at, out_.core, name, name));
    out_.dma_handles = static_cast<std::uint32_t>(handles_.size());
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& msg) const {
    throw ProgramError(fmt::format("{}: {}: core {}: {}", what_, where, out_.core, msg));
  }

  // An item at the place being read (place_).
  void emit(Op op, std::uint32_t arg, std::uint64_t value, std::uint64_t multiplicity,
            ComputeKind kind = ComputeKind::Matmul) {
    Item it;
    it.op = op;
    it.kind = kind;
    it.arg = arg;
    it.value = value;
    it.where = static_cast<std::uint32_t>(out_.where.size());
    it.tag = tag_;
    out_.where.push_back(place_);
    out_.code.push_back(it);
    if (functional_) out_.functional.resize(out_.where.size());
    if (op != Op::LoopBegin && op != Op::LoopEnd && op != Op::Alloc && op != Op::Free && op != Op::Init)
      out_.work_items += multiplicity;
  }

  FunctionalItem& fn_item() { return out_.functional.back(); }

  // Functional mode: the slot a buffer name currently refers to.
  std::uint32_t slot(const JsonReader& r, const std::string& key, const std::string& buf) const {
    auto it = slots_.find(buf);
    if (it == slots_.end()) r.fail(key, fmt::format("no live buffer '{}'", buf));
    return it->second;
  }

  std::vector<std::int64_t> ints(const JsonReader& r, const Json& v, const std::string& key, std::size_t n) const {
    if (!v.is_array() || v.size() != n) r.fail(key, fmt::format("expected an array of {} integers", n));
    std::vector<std::int64_t> out;
    for (const auto& e : v) {
      if (!e.is_number_integer()) r.fail(key, fmt::format("expected an array of {} integers", n));
      out.push_back(e.get<std::int64_t>());
    }
    return out;
  }

  const std::vector<std::int64_t>& data_shape(const JsonReader& r, const std::string& key, const std::string& t) const {
    for (const auto& [name, shape] : prog_.data_tensors)
      if (name == t) return shape;
    r.fail(key, fmt::format("no data tensor '{}' (declare it in data_tensors)", t));
  }

  // alloc's "view": {"tensor", "origin", "extent", "cyclic"}.
  void read_view(const JsonReader& r, const std::string& buf) {
    View v;
    if (r.has("view")) {
      JsonReader vr(r.value("view"), what_, r.where("view"), 'p');
      v.tensor = vr.string("tensor");
      const std::size_t n = data_shape(vr, "tensor", v.tensor).size();
      v.origin = ints(vr, vr.value("origin"), "origin", n);
      v.extent = ints(vr, vr.value("extent"), "extent", n);
      for (auto e : v.extent)
        if (e <= 0) vr.fail("extent", "expected positive extents");
      v.cyclic.assign(n, false);
      if (vr.has("cyclic")) {
        const Json& c = vr.value("cyclic");
        if (!c.is_array() || c.size() != n) vr.fail("cyclic", fmt::format("expected an array of {} booleans", n));
        for (std::size_t d = 0; d < n; ++d) {
          if (!c[d].is_boolean()) vr.fail("cyclic", fmt::format("expected an array of {} booleans", n));
          v.cyclic[d] = c[d].get<bool>();
        }
      }
      vr.reject_unknown_keys();
    }
    if (!functional_) return;
    slots_[buf] = static_cast<std::uint32_t>(out_.views.size());
    out_.views.push_back(std::move(v));
  }

  void require_view(const JsonReader& r, const std::string& key, std::uint32_t s) const {
    if (out_.views[s].tensor.empty())
      r.fail(key, "functional mode needs this buffer to have a view (compile with --functional)");
  }

  // Functional mode: the slot of the buffer the last emitted item reads or writes values of.
  std::uint32_t value_buffer(const JsonReader& r, const std::string& key, const std::string& buf) const {
    const std::uint32_t s = slot(r, key, buf);
    require_view(r, key, s);
    return s;
  }

  std::uint32_t peer(const JsonReader& r) const {
    std::uint64_t p = r.u64("peer");
    if (p >= cfg_.total_cores())
      r.fail("peer", fmt::format("core {} does not exist (the config has {} cores)", p, cfg_.total_cores()));
    if (p == out_.core) r.fail("peer", "a core cannot send to or receive from itself");
    return static_cast<std::uint32_t>(p);
  }

  // Bytes moved by a send/recv/load/store: explicit, or the whole buffer.
  Bytes transfer_bytes(const JsonReader& r, const std::string& where) const {
    std::string buf = r.string("buffer");
    Bytes size = pad_.size_of(buf, where);
    Bytes bytes = r.u64("bytes", size);
    if (bytes == 0) r.fail("bytes", "expected at least 1 byte");
    if (bytes > size)
      r.fail("bytes", fmt::format("{} bytes exceed buffer '{}' of {} bytes", bytes, buf, size));
    return bytes;
  }

  void require_buffer(const std::string& buf, Bytes need, const std::string& where,
                      const std::string& role) const {
    Bytes size = pad_.size_of(buf, what_ + ": " + where);
    if (size < need)
      fail(where, fmt::format("{} buffer '{}' holds {} bytes but the operation needs {}", role, buf,
                              size, need));
  }

  std::vector<std::string> names(const JsonReader& r, const std::string& key) const {
    const Json& v = r.value(key);
    std::vector<std::string> out;
    if (!v.is_array()) r.fail(key, "expected an array of buffer names");
    for (const auto& e : v) {
      if (!e.is_string()) r.fail(key, "expected an array of buffer names");
      out.push_back(e.get<std::string>());
    }
    return out;
  }

  void read_compute(const JsonReader& r, const std::string& where, std::uint64_t mult) {
    const CoreConfig& core = cfg_.chip.core;
    std::string kind = r.string("kind");
    Dtype dtype;
    std::string dname = r.string("dtype", "fp16");
    if (!parse_dtype(dname, dtype))
      r.fail("dtype", fmt::format("unknown dtype \"{}\" (expected int8, fp16, fp32 or int32)", dname));
    const std::uint64_t s = dtype_bytes(dtype);
    auto inputs = names(r, "inputs");
    // With "eval", the expression says what is read (a window, a broadcast operand, im2col
    // patches of a convolution): dense operand sizes do not apply to inputs.
    const bool dense_inputs = !r.has("eval");
    std::string output = r.string("output");
    auto want_inputs = [&](std::size_t lo, std::size_t hi) {
      if (inputs.size() < lo || inputs.size() > hi)
        r.fail("inputs", fmt::format("'{}' takes {} input buffer(s), got {}", kind,
                                     lo == hi ? fmt::format("{}", lo) : fmt::format("{} or {}", lo, hi),
                                     inputs.size()));
    };
    auto positive = [&](const char* key) {
      std::uint64_t v = r.u64(key);
      if (v == 0) r.fail(key, "expected a positive extent");
      return v;
    };
    // An operand's bytes, its extents' product times the element size: checked, since a product
    // past 2^64 wrapped round to a size a small buffer passed (m = k = n = 2^32 simulated).
    auto bytes_of = [&](const char* key, std::initializer_list<std::uint64_t> extents) {
      Bytes b = s;
      for (std::uint64_t e : extents)
        if (__builtin_mul_overflow(b, e, &b)) r.fail(key, "the extents' product overflows 2^64 bytes");
      return b;
    };
    Cycles cycles = 0;
    ComputeKind ck;
    if (kind == "matmul") {
      ck = ComputeKind::Matmul;
      MatmulShape sh;
      sh.batch = r.u64("batch", 1);
      if (sh.batch == 0) r.fail("batch", "expected a positive batch");
      sh.m = positive("m");
      sh.k = positive("k");
      sh.n = positive("n");
      if (!core.matrix.macs_per_cycle.count(dtype))
        r.fail("dtype", fmt::format("the matrix unit of this config does not support {}", dname));
      want_inputs(2, 2);
      if (dense_inputs) {
        require_buffer(inputs[0], bytes_of("m", {sh.batch, sh.m, sh.k}), where, "input A");
        require_buffer(inputs[1], bytes_of("k", {sh.k, sh.n}), where, "input B");
      }
      require_buffer(output, bytes_of("n", {sh.batch, sh.m, sh.n}), where, "output");
      cycles = matmul_cycles(core, dtype, sh);
    } else if (auto op = parse_vec_op(kind)) {
      ck = ComputeKind::Elementwise;
      std::uint64_t n = positive("elements");
      bool binary = *op == VecOp::Add || *op == VecOp::Sub || *op == VecOp::Mul || *op == VecOp::Div ||
                    *op == VecOp::Max || *op == VecOp::Min || *op == VecOp::Pow;
      // A binary op with one input buffer takes its other operand as a constant (X * 0.125).
      want_inputs(1, binary ? 2 : 1);
      if (dense_inputs)
        for (const auto& in : inputs) require_buffer(in, bytes_of("elements", {n}), where, "input");
      require_buffer(output, bytes_of("elements", {n}), where, "output");
      cycles = elementwise_cycles(core, *op, n);
    } else if (auto row_kind = parse_compute_kind(kind)) {  // matmul and vector ops are above
      ck = *row_kind;
      std::uint64_t rows = positive("rows"), cols = positive("cols");
      bool reduce = ck == ComputeKind::ReduceSum || ck == ComputeKind::ReduceMax;
      if (ck == ComputeKind::Layernorm) want_inputs(1, 3); else want_inputs(1, 1);
      if (inputs.size() == 2) r.fail("inputs", "layernorm takes x, or x, gamma and beta");
      if (dense_inputs) {
        require_buffer(inputs[0], bytes_of("cols", {rows, cols}), where, "input");
        for (std::size_t i = 1; i < inputs.size(); ++i) require_buffer(inputs[i], bytes_of("cols", {cols}), where, "scale/shift");
      }
      require_buffer(output, reduce ? bytes_of("rows", {rows}) : bytes_of("cols", {rows, cols}), where, "output");
      cycles = row_op_cycles(core, ck, rows, cols);
    } else {
      r.fail("kind", fmt::format("unknown compute kind \"{}\" (expected matmul, reduce_sum, "
                                 "reduce_max, softmax, layernorm, or a vector op: add, sub, mul, "
                                 "div, max, relu, gelu, exp, copy, rsqrt)", kind));
    }
    emit(Op::Compute, 0, cycles, mult, ck);
    if (r.has("eval")) {
      JsonReader ev(r.value("eval"), what_, r.where("eval"), 'p');
      std::uint64_t x = ev.u64("expr");
      if (x >= prog_.exprs.size()) ev.fail("expr", fmt::format("expected < {} (the number of exprs)", prog_.exprs.size()));
      const Json& rg = ev.value("ranges");
      const std::size_t naxes = prog_.exprs[x].all_axes().size();
      if (!rg.is_array() || rg.size() != naxes) ev.fail("ranges", fmt::format("expected {} [lo, hi) pairs, one per axis", naxes));
      std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
      for (const auto& p : rg) {
        auto lh = ints(ev, p, "ranges", 2);
        if (lh[1] < lh[0]) ev.fail("ranges", "expected lo <= hi");
        ranges.push_back({lh[0], lh[1]});
      }
      ev.reject_unknown_keys();
      if (prog_.exprs[x].inputs.size() != inputs.size()) r.fail("inputs", fmt::format("the expression reads {} tensors but {} input buffers are given", prog_.exprs[x].inputs.size(), inputs.size()));
      if (functional_) {
        FunctionalItem& f = fn_item();
        f.expr = static_cast<int>(x);
        f.ranges = std::move(ranges);
        for (const auto& in : inputs) f.inputs.push_back(value_buffer(r, "inputs", in));
        f.buffer = value_buffer(r, "output", output);
      }
    }
    // A compute item without "eval" moves no values (the copy out of the shift buffer: the recv
    // already put the values in place).
  }

  std::uint32_t tensor(const JsonReader& r) const {
    std::string name = r.string("tensor");
    auto it = tensors_.find(name);
    if (it == tensors_.end()) r.fail("tensor", fmt::format("no off-chip tensor named '{}'", name));
    const OffchipTensor& t = prog_.tensors[it->second];
    if (t.chip != cfg_.chip_of(out_.core))
      r.fail("tensor", fmt::format("tensor '{}' lives in chip {}'s memory but core {} is on chip {}",
                                   name, t.chip, out_.core, cfg_.chip_of(out_.core)));
    return it->second;
  }

  // An asynchronous transfer's handle, started by the item just emitted.
  struct Handle {
    std::uint32_t slot = 0;
    bool pending = false;
    Op started_by = Op::Send;
    std::uint32_t buffer = 0;  // functional mode: where a receive's values go
    std::string started_at;
  };

  void start_handle(const JsonReader& r, const std::string& where) {
    if (!r.has("handle")) return;
    const std::string name = r.string("handle");
    if (name.empty()) r.fail("handle", "expected a non-empty name");
    Handle& h = handles_[name];
    if (h.slot == 0) h.slot = static_cast<std::uint32_t>(handles_.size());
    if (h.pending)
      r.fail("handle", fmt::format("handle '{}' is still in use (started at {}); wait for it first", name, h.started_at));
    h.pending = true;
    h.started_by = out_.code.back().op;
    h.started_at = where;
    if (functional_) h.buffer = fn_item().buffer;
    out_.code.back().handle = h.slot;
  }

  void read_wait(const JsonReader& r, std::uint64_t mult) {
    const std::string name = r.string("handle");
    auto it = handles_.find(name);
    if (it == handles_.end() || !it->second.pending)
      r.fail("handle", fmt::format("no transfer is in flight on handle '{}' here (start one with a "
                                   "send, recv, load, store or collective that names it)", name));
    Handle& h = it->second;
    h.pending = false;
    emit(Op::Wait, h.slot, static_cast<std::uint64_t>(h.started_by), mult);
    out_.code.back().handle = h.slot;
    if (functional_) fn_item().buffer = h.buffer;
  }

  std::vector<std::string> pending_handles() const {
    std::vector<std::string> out;
    for (const auto& [name, h] : handles_)
      if (h.pending) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
  }

  // A core's part of a re-layout: its buffers must be there and large enough for its boxes. In
  // functional mode the part is written out as the sends, copies and receives it stands for.
  void read_relayout(const JsonReader& r, const std::string& where, std::uint64_t mult) {
    const std::uint64_t id = r.u64("id");
    if (id >= prog_.relayouts.size())
      r.fail("id", fmt::format("expected < {} (the number of relayouts)", prog_.relayouts.size()));
    const auto rid = static_cast<std::uint32_t>(id);
    bool part = false;
    for (const Move& m : prog_.relayouts[rid].moves) {
      for (const auto& [layout, buf, role] : {std::tuple{m.from, m.source, "source"}, std::tuple{m.to, m.target, "target"}}) {
        const Layout& l = prog_.layouts[layout];
        const auto at = std::lower_bound(l.cores.begin(), l.cores.end(), out_.core);
        if (at == l.cores.end() || *at != out_.core) continue;
        part = true;
        const Box b = l.box(static_cast<std::size_t>(at - l.cores.begin()));
        require_buffer(buf, static_cast<Bytes>(b.elements()) * m.element_bytes, where,
                       fmt::format("relayout {} {}", id, role));
      }
    }
    if (!part)
      r.fail("id", fmt::format("core {} holds no box of relayout {}'s layouts: it has no part in it", out_.core, id));
    tally_.relayouts[{rid, out_.core}] += mult;
    prog_.relayout_runs[rid] += mult;
    if (functional_) expand_relayout(r, rid, mult);
    else emit(Op::Relayout, rid, 0, mult);
  }

  void expand_relayout(const JsonReader& r, std::uint32_t rid, std::uint64_t mult) {
    const Relayout& rl = prog_.relayouts[rid];
    auto cached = tally_.pieces.find(rid);
    if (cached == tally_.pieces.end())
      cached = tally_.pieces.emplace(rid, steps_by_core<Tally::Piece>(rl, prog_.layouts,
          [](RelayoutStep::Kind k, std::uint32_t peer, std::size_t move, const Box& b) {
            return Tally::Piece{k, peer, move, b};
          })).first;
    const StepsByCore<Tally::Piece>& all = cached->second;
    const Tally::Piece* first = all.first(out_.core);
    for (std::size_t i = 0; i < all.count(out_.core); ++i) {
      const Tally::Piece& p = first[i];
      const Move& m = rl.moves[p.move];
      tag_ = m.tag;
      const Bytes bytes = static_cast<Bytes>(p.box.elements()) * m.element_bytes;
      if (p.kind == RelayoutStep::Copy) {
        emit(Op::Compute, 0, elementwise_cycles(cfg_.chip.core, VecOp::Copy, static_cast<std::uint64_t>(p.box.elements())),
             mult, ComputeKind::Elementwise);
        FunctionalItem& f = fn_item();
        f.expr = static_cast<int>(copy_expr(p.box.origin.size()));
        for (std::size_t d = 0; d < p.box.origin.size(); ++d)
          f.ranges.push_back({p.box.origin[d], p.box.origin[d] + p.box.extent[d]});
        f.inputs.push_back(value_buffer(r, "id", m.source));
        f.buffer = value_buffer(r, "id", m.target);
        continue;
      }
      const bool send = p.kind == RelayoutStep::Send;
      const std::uint64_t key = send ? (std::uint64_t{out_.core} << 32 | p.peer) : (std::uint64_t{p.peer} << 32 | out_.core);
      Tally::Pair& t = tally_.pairs[key];
      (send ? t.sent : t.received) += mult;
      (send ? t.sent_bytes : t.received_bytes) += mult * bytes;
      emit(send ? Op::Send : Op::Recv, p.peer, bytes, mult);
      fn_item().buffer = value_buffer(r, "id", send ? m.source : m.target);
      if (send) fn_item().box = p.box;
    }
  }

  // The expression of a copy of a rank-n box, added to the program's expressions once.
  std::size_t copy_expr(std::size_t rank) {
    std::string ix;
    for (std::size_t d = 0; d < rank; ++d) ix += fmt::format("{}d{}", d ? "," : "", d);
    const std::string text = fmt::format("T[{}] = T[{}]", ix, ix);
    for (std::size_t i = 0; i < prog_.exprs.size(); ++i)
      if (prog_.exprs[i].text == text) return i;
    prog_.exprs.push_back(ir::parse_expr(text));
    return prog_.exprs.size() - 1;
  }

  void read_item(const Json& j, const std::string& where, std::uint64_t mult) {
    JsonReader r(j, what_, where, 'p');
    std::string op = r.string("op");
    tag_ = kNoTag;
    if (r.has("tag")) {
      std::uint64_t t = r.u64("tag");
      if (t >= prog_.tags.size()) r.fail("tag", fmt::format("expected < {} (the number of tags)", prog_.tags.size()));
      tag_ = static_cast<std::uint32_t>(t);
    }
    if (op == "alloc") {
      std::uint64_t bytes = r.u64("bytes");
      if (bytes == 0) r.fail("bytes", "expected at least 1 byte");
      const std::string buf = r.string("buffer");
      pad_.alloc(buf, bytes, what_ + ": " + where);
      read_view(r, buf);
      if (functional_) {
        emit(Op::Alloc, 0, 0, mult);
        fn_item().buffer = slots_[buf];
      }
    } else if (op == "free") {
      const std::string buf = r.string("buffer");
      pad_.free(buf, what_ + ": " + where);
      if (functional_) {
        emit(Op::Free, 0, 0, mult);
        fn_item().buffer = slot(r, "buffer", buf);
        slots_.erase(buf);
      }
    } else if (op == "init") {
      // A weight preloaded on chip before the run: no cycles, values in functional mode.
      const std::string buf = r.string("buffer");
      pad_.size_of(buf, what_ + ": " + where);
      if (functional_) {
        emit(Op::Init, 0, 0, mult);
        fn_item().buffer = value_buffer(r, "buffer", buf);
      }
    } else if (op == "compute") {
      read_compute(r, where, mult);
    } else if (op == "send" || op == "recv") {
      std::uint32_t p = peer(r);
      Bytes bytes = transfer_bytes(r, what_ + ": " + where);
      const std::uint64_t key = op == "send" ? (std::uint64_t{out_.core} << 32 | p) : (std::uint64_t{p} << 32 | out_.core);
      Tally::Pair& t = tally_.pairs[key];
      (op == "send" ? t.sent : t.received) += mult;
      (op == "send" ? t.sent_bytes : t.received_bytes) += mult * bytes;
      emit(op == "send" ? Op::Send : Op::Recv, p, bytes, mult);
      if (op == "send" && r.has("box")) {
        JsonReader br(r.value("box"), what_, r.where("box"), 'p');
        Box b;
        const std::string buf = r.string("buffer");
        std::size_t n = functional_ ? out_.views[slot(r, "buffer", buf)].origin.size() : br.value("origin").size();
        b.origin = ints(br, br.value("origin"), "origin", n);
        b.extent = ints(br, br.value("extent"), "extent", n);
        br.reject_unknown_keys();
        if (functional_) fn_item().box = std::move(b);
      } else if (op == "send" && functional_) {
        r.fail("box", "functional mode needs every send to name the box of values it carries");
      }
      if (functional_) fn_item().buffer = value_buffer(r, "buffer", r.string("buffer"));
      start_handle(r, where);
    } else if (op == "collective") {
      const std::uint64_t k = r.u64("collective");
      if (k >= prog_.collectives.size())
        r.fail("collective", fmt::format("expected < {} (the entries of the program's \"collectives\")",
                                         prog_.collectives.size()));
      // ACE admits chunks in the order of the collectives: every chip issues them in that order
      if (last_collective_ >= 0 && static_cast<std::int64_t>(k) <= last_collective_)
        r.fail("collective", fmt::format("collective {} after collective {} on this core; a chip takes part in the "
                                         "collectives in the order they are listed", k, last_collective_));
      last_collective_ = static_cast<std::int64_t>(k);
      tally_.collectives[{static_cast<std::uint32_t>(k), cfg_.chip_of(out_.core)}].emplace_back(out_.core, mult);
      emit(Op::Collective, static_cast<std::uint32_t>(k), 0, mult);
      start_handle(r, where);
    } else if (op == "wait") {
      read_wait(r, mult);
    } else if (op == "sync") {
      std::string g = r.string("group", "all");
      auto it = groups_.find(g);
      if (it == groups_.end()) r.fail("group", fmt::format("no group named '{}'", g));
      const auto& members = prog_.groups[it->second].members;
      if (it->second != 0 && !std::binary_search(members.begin(), members.end(), out_.core))
        r.fail("group", fmt::format("core {} is not a member of group '{}'", out_.core, g));
      tally_.syncs[{it->second, out_.core}] += mult;
      emit(Op::Sync, it->second, 0, mult);
    } else if (op == "load" || op == "store") {
      std::uint32_t t = tensor(r);
      Bytes bytes = transfer_bytes(r, what_ + ": " + where);
      if (bytes > prog_.tensors[t].bytes)
        r.fail("bytes", fmt::format("{} bytes exceed off-chip tensor '{}' of {} bytes", bytes,
                                    prog_.tensors[t].name, prog_.tensors[t].bytes));
      emit(op == "load" ? Op::Load : Op::Store, t, bytes, mult);
      if (functional_) fn_item().buffer = value_buffer(r, "buffer", r.string("buffer"));
      start_handle(r, where);
    } else if (op == "relayout") {
      read_relayout(r, where, mult);
    } else if (op == "repeat") {
      std::uint64_t count = r.u64("count");
      if (count == 0 || count > 0xffffffffu) r.fail("count", "expected 1..4294967295");
      if (functional_)
        r.fail("op", "functional mode needs unrolled programs (each iteration touches different "
                     "values); compile with --functional");
      pad_.begin_body();
      const auto handles_before = pending_handles();
      std::size_t begin = out_.code.size();
      const ItemPlace here = place_;
      emit(Op::LoopBegin, static_cast<std::uint32_t>(count), 0, mult);
      read_items(r.value("body"), where + ".body", mult * count, out_.code[begin].where);
      place_ = here;
      emit(Op::LoopEnd, static_cast<std::uint32_t>(begin), 0, mult);
      // Every iteration must leave the scratchpad as it found it, or iteration 2 would differ.
      if (!pad_.end_body())
        r.fail("body", "a repeat body must free every buffer it allocates and allocate every "
                       "buffer it frees");
      if (pending_handles() != handles_before)
        r.fail("body", "a repeat body must wait for every DMA handle it starts, and start none it "
                       "waits for");
    } else {
      r.fail("op", fmt::format("unknown op \"{}\" (expected alloc, free, init, compute, send, "
                               "recv, wait, sync, load, store, relayout or repeat)", op));
    }
    r.reject_unknown_keys();
  }

  const Config& cfg_;
  Program& prog_;
  Tally& tally_;
  const std::string& what_;
  const std::unordered_map<std::string, std::uint32_t>& groups_;
  const std::unordered_map<std::string, std::uint32_t>& tensors_;
  CoreProgram& out_;
  std::int64_t last_collective_ = -1;  // the last collective item read on this core
  Scratchpad pad_;
  const bool functional_;
  ItemPlace place_;  // of the item being read
  std::uint32_t tag_ = kNoTag;
  std::unordered_map<std::string, std::uint32_t> slots_;
  std::map<std::string, Handle> handles_;
};

void read_groups(const JsonReader& r, const Config& cfg, Program& prog,
                 std::unordered_map<std::string, std::uint32_t>& index) {
  prog.groups.push_back(Group{"all", {}, false});
  index["all"] = 0;
  if (!r.has("groups")) return;
  JsonReader g = r.object("groups");
  const Json& obj = r.value("groups");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key() == "all") g.fail("all", "'all' is built in (every core in the program)");
    const Json& v = g.value(it.key());
    if (!v.is_array() || v.empty()) g.fail(it.key(), "expected a non-empty array of core ids");
    Group grp{it.key(), {}, false};
    for (const auto& c : v) {
      if (!c.is_number_integer() || c.get<std::int64_t>() < 0 || c.get<std::uint64_t>() >= cfg.total_cores())
        g.fail(it.key(), fmt::format("{} is not a core id (the config has {} cores)", c.dump(), cfg.total_cores()));
      grp.members.push_back(c.get<std::uint32_t>());
    }
    std::sort(grp.members.begin(), grp.members.end());
    if (std::adjacent_find(grp.members.begin(), grp.members.end()) != grp.members.end())
      g.fail(it.key(), "a core is listed twice");
    index[it.key()] = static_cast<std::uint32_t>(prog.groups.size());
    prog.groups.push_back(std::move(grp));
  }
}

void read_tensors(const JsonReader& r, const Config& cfg, Program& prog,
                  std::unordered_map<std::string, std::uint32_t>& index) {
  if (!r.has("offchip_tensors")) return;
  const Json& arr = r.value("offchip_tensors");
  if (!arr.is_array()) r.fail("offchip_tensors", "expected an array");
  std::vector<Bytes> used(cfg.system.chips, 0);
  for (std::size_t i = 0; i < arr.size(); ++i) {
    JsonReader t(arr[i], r.what(), fmt::format("offchip_tensors[{}]", i), 'p');
    OffchipTensor ten{t.string("name"), static_cast<std::uint32_t>(t.u64("chip", 0)), t.u64("bytes")};
    t.reject_unknown_keys();
    if (ten.chip >= cfg.system.chips) t.fail("chip", fmt::format("expected < {}", cfg.system.chips));
    if (ten.bytes == 0) t.fail("bytes", "expected at least 1 byte");
    if (index.count(ten.name)) t.fail("name", fmt::format("tensor '{}' is declared twice", ten.name));
    used[ten.chip] += ten.bytes;
    if (used[ten.chip] > cfg.chip.offchip.capacity_bytes)
      t.fail("bytes", fmt::format("off-chip memory of chip {} overflows: {} bytes declared, "
                                  "capacity {} bytes", ten.chip, used[ten.chip],
                                  cfg.chip.offchip.capacity_bytes));
    index[ten.name] = static_cast<std::uint32_t>(prog.tensors.size());
    prog.tensors.push_back(ten);
  }
}

// Sends and receives must pair up, and every member of a group must sync on it equally often;
// otherwise the program would deadlock, and saying so before simulating is kinder.
void check_tally(const Tally& t, const Program& prog, const std::string& what) {
  // the first mismatched pair in (src, dst) order, so the message does not depend on hashing
  std::uint64_t worst = ~std::uint64_t{0};
  for (const auto& [key, c] : t.pairs)
    if ((c.sent != c.received || c.sent_bytes != c.received_bytes) && key < worst) worst = key;
  if (worst != ~std::uint64_t{0}) {
    const Tally::Pair& c = t.pairs.at(worst);
    const auto src = static_cast<std::uint32_t>(worst >> 32), dst = static_cast<std::uint32_t>(worst);
    if (c.sent != c.received)
      throw ProgramError(fmt::format("{}: core {} sends {} message(s) to core {} but core {} posts "
                                     "{} matching recv(s) from core {}",
                                     what, src, c.sent, dst, dst, c.received, src));
    throw ProgramError(fmt::format("{}: core {} sends {} bytes in total to core {} but core {} "
                                   "receives {} bytes from core {}",
                                   what, src, c.sent_bytes, dst, dst, c.received_bytes, src));
  }
  for (std::uint32_t g = 0; g < prog.groups.size(); ++g) {
    std::vector<std::uint32_t> members = prog.groups[g].members;
    std::uint64_t want = 0;
    bool any = false;
    for (auto c : members) {
      auto it = t.syncs.find({g, c});
      std::uint64_t n = it == t.syncs.end() ? 0 : it->second;
      if (!any) { want = n; any = true; continue; }
      if (n != want)
        throw ProgramError(fmt::format("{}: group '{}': core {} syncs {} time(s) but core {} "
                                       "syncs {} time(s); every member must sync equally often",
                                       what, prog.groups[g].name, members[0], want, c, n));
    }
  }
}

void read_functional_tables(const JsonReader& r, Program& prog) {
  if (r.has("tags")) {
    const Json& arr = r.value("tags");
    if (!arr.is_array()) r.fail("tags", "expected an array of {op, phase}");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      JsonReader t(arr[i], r.what(), fmt::format("tags[{}]", i), 'p');
      Tag tag{t.string("op"), t.string("phase", "main")};
      if (tag.phase != "setup" && tag.phase != "input" && tag.phase != "main")
        t.fail("phase", "expected \"setup\", \"input\" or \"main\"");
      t.reject_unknown_keys();
      prog.tags.push_back(std::move(tag));
    }
  }
  if (r.has("data_tensors")) {
    const Json& arr = r.value("data_tensors");
    if (!arr.is_array()) r.fail("data_tensors", "expected an array of {name, shape}");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      JsonReader t(arr[i], r.what(), fmt::format("data_tensors[{}]", i), 'p');
      std::string name = t.string("name");
      for (const auto& [earlier, unused] : prog.data_tensors)
        if (earlier == name) t.fail("name", fmt::format("data tensor '{}' is declared twice", name));
      const Json& sh = t.value("shape");
      std::vector<std::int64_t> shape;
      if (!sh.is_array() || sh.empty()) t.fail("shape", "expected a non-empty array of positive integers");
      for (const auto& d : sh) {
        if (!d.is_number_integer() || d.get<std::int64_t>() <= 0) t.fail("shape", "expected a non-empty array of positive integers");
        shape.push_back(d.get<std::int64_t>());
      }
      if (t.has("values")) {
        const Json& vals = t.value("values");
        std::int64_t n = 1;
        for (auto d : shape) n = n > (std::int64_t{1} << 40) / d ? (std::int64_t{1} << 40) : n * d;
        if (!vals.is_array() || static_cast<std::int64_t>(vals.size()) != n)
          t.fail("values", fmt::format("expected an array of {} numbers (the shape's elements, row-major)", n));
        std::vector<float> v;
        v.reserve(vals.size());
        for (const auto& x : vals) {
          if (!x.is_number()) t.fail("values", "expected numbers");
          v.push_back(x.get<float>());
        }
        prog.data_values[name] = std::move(v);
      }
      t.reject_unknown_keys();
      prog.data_tensors.push_back({name, shape});
    }
  }
  if (r.has("exprs")) {
    const Json& arr = r.value("exprs");
    if (!arr.is_array()) r.fail("exprs", "expected an array of tensor expressions");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      if (!arr[i].is_string()) r.fail("exprs", fmt::format("item {} is not a string", i));
      try {
        prog.exprs.push_back(ir::parse_expr(arr[i].get<std::string>()));
      } catch (const Error& e) {
        r.fail("exprs", fmt::format("item {}: {}", i, e.what()));
      }
    }
  }
}

// "collectives": [{"op", "bytes", "algorithm", "chunk_bytes", "chunks_in_flight"}], between all
// chips of the system (docs/program.md).
void read_collectives(const JsonReader& r, const Config& cfg, Program& prog) {
  if (!r.has("collectives")) return;
  const Json& arr = r.value("collectives");
  if (!arr.is_array()) r.fail("collectives", "expected an array of {op, bytes, algorithm, ...}");
  if (!arr.empty() && (cfg.system.chips < 2 || !cfg.system.afi))
    r.fail("collectives", fmt::format("config {} has {}: collectives run between chips through their AFI "
                                      "(system.afi, docs/config.md)", cfg.name,
                                      cfg.system.chips < 2 ? "one chip" : "no system.afi"));
  for (std::size_t i = 0; i < arr.size(); ++i) {
    JsonReader c(arr[i], r.what(), fmt::format("collectives[{}]", i), 'p');
    CollectiveSpec s;
    const std::string op = c.string("op"), algorithm = c.string("algorithm", "ring");
    try {
      s.op = parse_collective_op(op);
    } catch (const Error& e) {
      c.fail("op", e.what());
    }
    try {
      s.algorithm = parse_collective_algorithm(algorithm);
    } catch (const Error& e) {
      c.fail("algorithm", e.what());
    }
    s.bytes = c.u64("bytes");
    if (s.bytes == 0) c.fail("bytes", "expected at least 1 byte");
    s.chunk_bytes = c.u64("chunk_bytes", s.chunk_bytes);
    const std::uint64_t window = c.u64("chunks_in_flight", s.chunks_in_flight);
    if (window > 0xffffffffu) c.fail("chunks_in_flight", "expected 0..4294967295");
    s.chunks_in_flight = static_cast<std::uint32_t>(window);
    c.reject_unknown_keys();
    try {  // the chunks and messages must divide: say so now, not when the engine starts
      plan_collective(cfg, s);
    } catch (const Error& e) {
      c.fail("bytes", e.what());
    }
    prog.collectives.push_back(s);
  }
}

// Every chip takes part in every collective, once, on one core, the same core for all of them
// (so that it issues them in order).
void check_collectives(const Tally& t, const Program& prog, const Config& cfg, const std::string& what) {
  for (std::uint32_t k = 0; k < prog.collectives.size(); ++k)
    for (std::uint32_t chip = 0; chip < cfg.system.chips; ++chip) {
      auto it = t.collectives.find({k, chip});
      if (it == t.collectives.end())
        throw ProgramError(fmt::format("{}: collectives[{}]: no core of chip {} has a collective item for it (every "
                                       "chip takes part: one item on one core of each chip)", what, k, chip));
      const auto& v = it->second;
      if (v.size() > 1)
        throw ProgramError(fmt::format("{}: collectives[{}]: chip {} takes part on cores {} and {}; a chip takes "
                                       "part once, on one core", what, k, chip, v[0].first, v[1].first));
      if (v[0].second != 1)
        throw ProgramError(fmt::format("{}: collectives[{}]: core {} runs its item {} times (inside a repeat); a "
                                       "collective runs once: list one per run", what, k, v[0].first, v[0].second));
      const std::uint32_t first = t.collectives.at({0, chip})[0].first;
      if (v[0].first != first)
        throw ProgramError(fmt::format("{}: collectives[{}]: chip {} takes part on core {}, but in collectives[0] on "
                                       "core {}; one core of a chip takes part in all of them, in order",
                                       what, k, chip, v[0].first, first));
    }
}

// "layouts": [{"shape": [...], "boxes": [[core, origin..., extent...], ...]}]
Layout read_layout(const JsonReader& r, const Config& cfg) {
  Layout l;
  const Json& sh = r.value("shape");
  if (!sh.is_array() || sh.empty()) r.fail("shape", "expected a non-empty array of positive integers");
  for (const auto& d : sh) {
    if (!d.is_number_integer() || d.get<std::int64_t>() <= 0) r.fail("shape", "expected a non-empty array of positive integers");
    l.shape.push_back(d.get<std::int64_t>());
  }
  const std::size_t n = l.shape.size();
  const Json& boxes = r.value("boxes");
  if (!boxes.is_array()) r.fail("boxes", "expected an array of [core, origin..., extent...]");
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const Json& b = boxes[i];
    const std::string at = fmt::format("boxes[{}]", i);
    if (!b.is_array() || b.size() != 1 + 2 * n)
      r.fail("boxes", fmt::format("{}: expected [core, {} origin values, {} extents]", at, n, n));
    for (const auto& v : b)
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) r.fail("boxes", fmt::format("{}: expected non-negative integers", at));
    const auto core = b[0].get<std::uint64_t>();
    if (core >= cfg.total_cores())
      r.fail("boxes", fmt::format("{}: core {} does not exist (the config has {} cores)", at, core, cfg.total_cores()));
    if (!l.cores.empty() && core <= l.cores.back())
      r.fail("boxes", fmt::format("{}: expected boxes in ascending core order, one per core", at));
    for (std::size_t d = 0; d < n; ++d) {
      const auto lo = b[1 + d].get<std::int64_t>(), len = b[1 + n + d].get<std::int64_t>();
      if (len <= 0 || lo + len > l.shape[d])
        r.fail("boxes", fmt::format("{}: dimension {}: [{}, {}) is empty or outside the shape's {}", at, d, lo, lo + len, l.shape[d]));
    }
    l.cores.push_back(static_cast<std::uint32_t>(core));
    for (std::size_t k = 1; k < b.size(); ++k) l.boxes.push_back(b[k].get<std::int64_t>());
  }
  r.reject_unknown_keys();
  return l;
}

Move read_move(const JsonReader& r, const Program& prog, bool functional) {
  Move m;
  for (auto [key, dst] : {std::pair{"from", &m.from}, std::pair{"to", &m.to}}) {
    const std::uint64_t v = r.u64(key);
    if (v >= prog.layouts.size()) r.fail(key, fmt::format("expected < {} (the number of layouts)", prog.layouts.size()));
    *dst = static_cast<std::uint32_t>(v);
  }
  if (prog.layouts[m.from].shape != prog.layouts[m.to].shape)
    r.fail("to", "the two layouts are of different shapes");
  m.source = r.string("source");
  m.target = r.string("target");
  m.element_bytes = r.u64("element_bytes", 2);
  if (m.element_bytes == 0) r.fail("element_bytes", "expected at least 1");
  if (r.has("tag")) {
    const std::uint64_t t = r.u64("tag");
    if (t >= prog.tags.size()) r.fail("tag", fmt::format("expected < {} (the number of tags)", prog.tags.size()));
    m.tag = static_cast<std::uint32_t>(t);
  }
  m.tensor = r.string("tensor", "");
  if (functional && m.tensor.empty()) r.fail("tensor", "functional mode needs the data tensor each move carries");
  r.reject_unknown_keys();
  return m;
}

void read_relayouts(const JsonReader& r, const Config& cfg, Program& prog, bool functional) {
  if (r.has("layouts")) {
    const Json& arr = r.value("layouts");
    if (!arr.is_array()) r.fail("layouts", "expected an array of {shape, boxes}");
    for (std::size_t i = 0; i < arr.size(); ++i)
      prog.layouts.push_back(read_layout(JsonReader(arr[i], r.what(), fmt::format("layouts[{}]", i), 'p'), cfg));
  }
  if (!r.has("relayouts")) return;
  const Json& arr = r.value("relayouts");
  if (!arr.is_array()) r.fail("relayouts", "expected an array of {moves}");
  for (std::size_t i = 0; i < arr.size(); ++i) {
    JsonReader rr(arr[i], r.what(), fmt::format("relayouts[{}]", i), 'p');
    const Json& moves = rr.value("moves");
    if (!moves.is_array() || moves.empty()) rr.fail("moves", "expected a non-empty array of moves");
    Relayout rl;
    for (std::size_t k = 0; k < moves.size(); ++k)
      rl.moves.push_back(read_move(JsonReader(moves[k], r.what(), fmt::format("relayouts[{}].moves[{}]", i, k), 'p'), prog, functional));
    rr.reject_unknown_keys();
    prog.relayouts.push_back(std::move(rl));
  }
  prog.relayout_runs.assign(prog.relayouts.size(), 0);
}

// Every core that holds a box of a relayout's layouts runs it, and as often as the others.
void check_relayouts(const Tally& t, const Program& prog, const std::string& what) {
  for (std::uint32_t r = 0; r < prog.relayouts.size(); ++r) {
    if (prog.relayout_runs[r] == 0) continue;
    std::vector<std::uint32_t> cores;
    for (const Move& m : prog.relayouts[r].moves)
      for (auto l : {m.from, m.to}) cores.insert(cores.end(), prog.layouts[l].cores.begin(), prog.layouts[l].cores.end());
    std::sort(cores.begin(), cores.end());
    cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
    std::uint64_t want = 0;
    std::uint32_t first = 0;
    for (std::size_t i = 0; i < cores.size(); ++i) {
      auto it = t.relayouts.find({r, cores[i]});
      const std::uint64_t n = it == t.relayouts.end() ? 0 : it->second;
      if (i == 0) { want = n; first = cores[i]; continue; }
      if (n != want)
        throw ProgramError(fmt::format("{}: relayout {}: core {} runs it {} time(s) but core {} runs it {} "
                                       "time(s); every core that holds one of its boxes must run it equally often",
                                       what, r, first, want, cores[i], n));
    }
  }
}

}  // namespace

struct ProgramParser::State {
  State(const Json& h, const std::string& w, const Config& c, const ProgramOptions& o)
      : header(h), what(w), cfg(c), options(o), r(header, what, "", 'p') {}
  const Json& header;
  std::string what;
  const Config& cfg;
  ProgramOptions options;
  JsonReader r;
  Program prog;
  std::unordered_map<std::string, std::uint32_t> group_index, tensor_index;
  Tally tally;
  std::vector<std::uint32_t> ids;  // in listing order
  std::size_t next = 0;
};

ProgramParser::ProgramParser(const Json& header, const std::string& what, const Config& cfg,
                             const ProgramOptions& options, const Json* core_ids)
    : s_(std::make_unique<State>(header, what, cfg, options)) {
  JsonReader& r = s_->r;
  Program& prog = s_->prog;
  std::string format = r.string("format");
  if (format != "tessera-program") r.fail("format", "expected \"tessera-program\"");
  if (r.u64("version") != 1) r.fail("version", "expected 1 (the only version so far)");
  prog.name = r.string("name", "");
  read_groups(r, cfg, prog, s_->group_index);
  read_tensors(r, cfg, prog, s_->tensor_index);
  read_functional_tables(r, prog);
  read_relayouts(r, cfg, prog, options.functional);
  read_collectives(r, cfg, prog);
  if (options.functional && !prog.collectives.empty())
    r.fail("collectives", "functional mode does not compute collectives' values (simulate without --functional)");
  prog.functional = options.functional;
  if (options.functional && prog.data_tensors.empty())
    throw ProgramError(fmt::format("{}: functional mode needs data_tensors, exprs and views "
                                   "(compile with --functional)", what));
  // "all" is every core that appears in the program; collect it before reading syncs.
  if (core_ids) {
    if (!core_ids->is_array()) r.fail("core_ids", "expected an array of core ids");
    for (std::size_t i = 0; i < core_ids->size(); ++i) {
      const Json& v = (*core_ids)[i];
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= cfg.total_cores())
        r.fail("core_ids", fmt::format("[{}]: {} is not a core id (the config has {} cores)", i, v.dump(), cfg.total_cores()));
      s_->ids.push_back(v.get<std::uint32_t>());
    }
  } else {
    const Json& cores = r.value("cores");
    if (!cores.is_array()) r.fail("cores", "expected an array of {core, items}");
    if (cores.empty()) r.fail("cores", "no cores: a program runs on at least one (it simulated to 0 cycles)");
    for (std::size_t i = 0; i < cores.size(); ++i) {
      JsonReader c(cores[i], what, fmt::format("cores[{}]", i), 'p');
      std::uint64_t id = c.u64("core");
      if (id >= cfg.total_cores())
        c.fail("core", fmt::format("core {} does not exist (the config has {} cores)", id, cfg.total_cores()));
      s_->ids.push_back(static_cast<std::uint32_t>(id));
    }
  }
  auto& all = prog.groups[0].members;
  all = s_->ids;
  std::sort(all.begin(), all.end());
  if (auto dup = std::adjacent_find(all.begin(), all.end()); dup != all.end())
    throw ProgramError(fmt::format("{}: cores: core {} is listed twice", what, *dup));
  for (auto& g : prog.groups)
    g.spans_chips = !g.members.empty() && cfg.chip_of(g.members.front()) != cfg.chip_of(g.members.back());
  prog.cores.resize(s_->ids.size());
}

ProgramParser::~ProgramParser() = default;

std::size_t ProgramParser::cores() const { return s_->ids.size(); }

void ProgramParser::add_core(const Json& entry) {
  const std::size_t i = s_->next;
  const std::string path = fmt::format("cores[{}]", i);
  if (i >= s_->ids.size())
    throw ProgramError(fmt::format("{}: {}: more core entries than the {} listed", s_->what, path, s_->ids.size()));
  JsonReader c(entry, s_->what, path, 'p');
  CoreProgram& cp = s_->prog.cores[i];
  cp.core = static_cast<std::uint32_t>(c.u64("core"));
  if (cp.core != s_->ids[i])
    c.fail("core", fmt::format("core {}, but the list of cores has core {} in this place", cp.core, s_->ids[i]));
  CoreReader reader(s_->cfg, s_->prog, s_->tally, s_->what, s_->group_index, s_->tensor_index, cp,
                    s_->options.functional);
  reader.read_items(c.value("items"), path + ".items", 1);
  reader.finish();
  c.reject_unknown_keys();
  ++s_->next;
}

Program ProgramParser::finish() {
  if (s_->next != s_->ids.size())
    throw ProgramError(fmt::format("{}: cores: {} core(s) listed but {} read (the file ends early)", s_->what,
                                   s_->ids.size(), s_->next));
  Program& prog = s_->prog;
  std::sort(prog.cores.begin(), prog.cores.end(),
            [](const CoreProgram& a, const CoreProgram& b) { return a.core < b.core; });
  check_tally(s_->tally, prog, s_->what);
  check_relayouts(s_->tally, prog, s_->what);
  check_collectives(s_->tally, prog, s_->cfg, s_->what);
  s_->r.reject_unknown_keys();
  return std::move(prog);
}

Program parse_program(const Json& json, const std::string& what, const Config& cfg,
                      const ProgramOptions& options) {
  if (!json.is_object()) throw ProgramError(fmt::format("{}: expected a program object", what));
  ProgramParser p(json, what, cfg, options);
  const Json& cores = json.at("cores");
  for (std::size_t i = 0; i < cores.size(); ++i) p.add_core(cores[i]);
  return p.finish();
}

}  // namespace tessera::sim
