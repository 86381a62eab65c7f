#include "compiler/lower/join.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "sim/common/error.h"

namespace tessera::lower {

std::vector<sim::View> home_views(const ir::Workload& w, const schedule::Schedule& s, const std::string& tensor,
                                  std::size_t cores) {
  const int p = w.producer(tensor);
  if (p < 0) throw Error(fmt::format("tensor '{}' of '{}' is not produced by an operator", tensor, w.name));
  if (schedule::planner_of(s, static_cast<std::size_t>(p)) == "vgm") return stripes(w.tensor(tensor), cores);
  const plan::Plan& plan = s.ops[static_cast<std::size_t>(p)].active;
  return plan_views(plan, w.ops()[static_cast<std::size_t>(p)], plan.parts.size() - 1, cores);
}

namespace {

// Builds the joined program: the chips' tables appended one after another, every index in an
// item moved to the joined tables.
class Joiner {
 public:
  Joiner(const sim::Config& cfg, const std::string& name, bool functional, std::uint32_t chips_per_device)
      : n_(cfg.chip.cores * chips_per_device), chips_per_device_(chips_per_device) {
    out_.name = name;
    out_.functional = functional;
    const std::uint32_t total = cfg.total_cores();
    out_.cores.resize(total);
    out_.peak_bytes.assign(total, 0);
    std::vector<std::uint32_t> all(total);
    for (std::uint32_t c = 0; c < total; ++c) all[c] = c;
    out_.groups.push_back({"all", all});
  }

  // Chip c's program, its items in joined indices, one list per local core.
  std::vector<std::vector<LItem>> add_chip(const Lowered& p, std::uint32_t chip) {
    const std::uint32_t base = chip * n_;
    Maps m;
    m.comps = out_.comps.size();
    m.boxes = out_.boxes.size();
    m.views = out_.views.size();
    m.relayouts = out_.relayouts.size();
    const std::size_t exprs = out_.exprs.size(), layouts = out_.layouts.size();
    for (const auto& n : p.names) m.names.push_back(name(n));
    for (const auto& t : p.tags) m.tags.push_back(tag(t));
    for (std::size_t g = 0; g < p.groups.size(); ++g) {
      std::vector<std::uint32_t> members = p.groups[g].second;
      for (auto& c : members) c += base;
      const std::string dev = chips_per_device_ == 1 ? fmt::format("chip{}", chip) : fmt::format("device{}", chip);
      const std::string gname = g == 0 ? dev : fmt::format("{}.{}", dev, p.groups[g].first);
      m.groups.push_back(static_cast<std::uint32_t>(out_.groups.size()));
      out_.groups.push_back({gname, std::move(members)});
    }
    for (const auto& t : p.offchip) {  // on the chip the device's program put it on
      const std::uint32_t on = chip * chips_per_device_ + t.chip;
      m.offchip.push_back(static_cast<std::uint32_t>(out_.offchip.size()));
      out_.offchip.push_back({on == 0 ? t.name : fmt::format("{}@chip{}", t.name, on), on, t.bytes});
    }
    for (CompItem ci : p.comps) {
      for (int& i : ci.ins) i = m.names[static_cast<std::size_t>(i)];
      if (ci.out >= 0) ci.out = m.names[static_cast<std::size_t>(ci.out)];
      if (ci.expr >= 0) ci.expr += static_cast<int>(exprs);
      out_.comps.push_back(std::move(ci));
    }
    out_.boxes.insert(out_.boxes.end(), p.boxes.begin(), p.boxes.end());
    out_.views.insert(out_.views.end(), p.views.begin(), p.views.end());
    out_.exprs.insert(out_.exprs.end(), p.exprs.begin(), p.exprs.end());
    for (sim::Layout l : p.layouts) {
      for (auto& c : l.cores) c += base;
      out_.layouts.push_back(std::move(l));
    }
    for (sim::Relayout r : p.relayouts) {
      for (auto& mv : r.moves) {
        mv.from += static_cast<std::uint32_t>(layouts);
        mv.to += static_cast<std::uint32_t>(layouts);
        if (mv.tag != sim::kNoTag) mv.tag = static_cast<std::uint32_t>(m.tags[mv.tag]);
      }
      out_.relayouts.push_back(std::move(r));
    }
    for (const auto& dt : p.data_tensors)
      if (std::none_of(out_.data_tensors.begin(), out_.data_tensors.end(), [&](const auto& x) { return x.first == dt.first; }))
        out_.data_tensors.push_back(dt);
    out_.data_values.insert(p.data_values.begin(), p.data_values.end());
    std::vector<std::vector<LItem>> cores(p.cores.size());
    for (std::size_t c = 0; c < p.cores.size(); ++c)
      for (LItem it : p.cores[c]) cores[c].push_back(translate(it, m, base));
    return cores;
  }

  // A relayout moving one tensor between chips; returns its index.
  std::uint32_t add_transfer(const ChipTransfer& t, std::uint32_t total) {
    const auto global = [&](const std::vector<sim::View>& local, std::uint32_t chip) {
      std::vector<sim::View> v(total);
      for (std::size_t c = 0; c < local.size() && c < n_; ++c) v[chip * n_ + c] = local[c];
      return v;
    };
    sim::Move mv;
    mv.from = static_cast<std::uint32_t>(out_.layouts.size());
    out_.layouts.push_back(sim::layout_of(t.shape, global(t.src, t.from)));
    mv.to = static_cast<std::uint32_t>(out_.layouts.size());
    out_.layouts.push_back(sim::layout_of(t.shape, global(t.dst, t.to)));
    mv.tag = static_cast<std::uint32_t>(tag(sim::Tag{fmt::format("{} (chip {} -> {})", t.tensor, t.from, t.to), "main"}));
    mv.element_bytes = 2;
    mv.tensor = mv.source = mv.target = t.tensor;  // the home and the input buffer are named after it
    out_.relayouts.push_back(sim::Relayout{{std::move(mv)}});
    return static_cast<std::uint32_t>(out_.relayouts.size() - 1);
  }

  const sim::Layout& layout(std::uint32_t relayout, bool from) const {
    const sim::Move& mv = out_.relayouts[relayout].moves.front();
    return out_.layouts[from ? mv.from : mv.to];
  }
  Lowered& out() { return out_; }
  // The joined index of a tag (-2: no item carries it).
  int tag_of(const sim::Tag& t) const {
    auto it = tags_.find(t.op + "\n" + t.phase);
    return it == tags_.end() ? -2 : it->second;
  }

 private:
  struct Maps {
    std::size_t comps = 0, boxes = 0, views = 0, relayouts = 0;
    std::vector<int> names, tags;
    std::vector<std::uint32_t> groups, offchip;
  };

  LItem translate(LItem it, const Maps& m, std::uint32_t base) const {
    if (it.tag >= 0) it.tag = m.tags[static_cast<std::size_t>(it.tag)];
    if (it.buf >= 0) it.buf = m.names[static_cast<std::size_t>(it.buf)];
    switch (it.k) {
      case K::Alloc: if (it.aux >= 0) it.aux += static_cast<int>(m.views); break;
      case K::Compute: it.aux += static_cast<int>(m.comps); break;
      case K::Send:
        if (it.aux >= 0) it.aux += static_cast<int>(m.boxes);
        it.arg += base;
        break;
      case K::Recv: it.arg += base; break;
      case K::Sync: it.arg = m.groups[it.arg]; break;
      case K::Load: case K::Store: it.arg = m.offchip[it.arg]; break;
      case K::Relayout: it.arg += static_cast<std::uint32_t>(m.relayouts); break;
      case K::Free: case K::Init: case K::Begin: case K::End: break;
    }
    return it;
  }
  int name(const std::string& n) {
    auto [it, fresh] = names_.emplace(n, static_cast<int>(out_.names.size()));
    if (fresh) out_.names.push_back(n);
    return it->second;
  }
  int tag(const sim::Tag& t) {
    auto [it, fresh] = tags_.emplace(t.op + "\n" + t.phase, static_cast<int>(out_.tags.size()));
    if (fresh) out_.tags.push_back(t);
    return it->second;
  }

  std::uint32_t n_, chips_per_device_;
  Lowered out_;
  std::unordered_map<std::string, int> names_, tags_;
};

// One core's list (its sends already in place) as prologue (the leading allocations of buffers
// it never frees: weights and the shift buffer) and one micro-batch's body: the rest, with the
// receives after the body's leading allocations (the inputs they fill), and a free for every buffer
// the body allocates and never frees (outputs), so that every micro-batch leaves the scratchpad
// as it found it.
std::vector<LItem> assemble(const std::vector<LItem>& items, const std::vector<std::uint32_t>& recvs,
                            std::uint32_t micro_batches) {
  std::map<int, int> frees;
  for (const auto& it : items)
    if (it.k == K::Free) ++frees[it.buf];
  std::size_t lead = 0;
  while (lead < items.size() && (items[lead].k == K::Alloc || items[lead].k == K::Init)) ++lead;
  std::vector<LItem> prologue, body;
  for (std::size_t i = 0; i < lead; ++i) (frees.count(items[i].buf) ? body : prologue).push_back(items[i]);
  for (auto r : recvs) body.push_back(LItem{K::Relayout, -1, r});
  body.insert(body.end(), items.begin() + static_cast<std::ptrdiff_t>(lead), items.end());
  std::map<int, int> live;  // allocations the body does not undo, by buffer
  for (const auto& it : body) {
    if (it.k == K::Alloc) ++live[it.buf];
    if (it.k == K::Free) --live[it.buf];
  }
  for (const auto& [buf, n] : live)
    for (int i = 0; i < n; ++i) body.push_back(LItem{K::Free, -1, 0, 0, buf});
  if (body.size() == 0 || micro_batches == 1) {
    prologue.insert(prologue.end(), body.begin(), body.end());
    return prologue;
  }
  prologue.push_back(LItem{K::Begin, -1, micro_batches});
  prologue.insert(prologue.end(), body.begin(), body.end());
  prologue.push_back(LItem{K::End});
  return prologue;
}

// The most bytes a core's ledger holds at once (bodies leave it as they found it).
Bytes peak_of(const std::vector<LItem>& items) {
  std::map<int, std::vector<Bytes>> size;
  Bytes live = 0, peak = 0;
  for (const auto& it : items) {
    if (it.k == K::Alloc) {
      size[it.buf].push_back(static_cast<Bytes>(it.bytes));
      live += static_cast<Bytes>(it.bytes);
      peak = std::max(peak, live);
    } else if (it.k == K::Free && !size[it.buf].empty()) {
      live -= size[it.buf].back();
      size[it.buf].pop_back();
    }
  }
  return peak;
}

}  // namespace

Lowered join_chips(const std::vector<const Lowered*>& chips, const std::vector<ChipTransfer>& transfers,
                   const sim::Config& system, std::uint32_t micro_batches, const std::string& name,
                   std::uint32_t chips_per_device) {
  if (chips.empty()) throw Error("joining chip programs: there are none");
  if (chips_per_device == 0 || system.system.chips % chips_per_device != 0)
    throw Error(fmt::format("joining chip programs: devices of {} chips do not divide config '{}''s {} chips",
                            chips_per_device, system.name, system.system.chips));
  if (chips.size() > system.system.chips / chips_per_device)
    throw Error(fmt::format("joining chip programs: {} programs, but config '{}' has {} chips ({} per program)",
                            chips.size(), system.name, system.system.chips, chips_per_device));
  if (micro_batches == 0) throw Error("joining chip programs: micro-batches must be at least 1");
  const std::uint32_t n = system.chip.cores * chips_per_device;
  for (std::size_t c = 0; c < chips.size(); ++c) {
    if (chips[c]->cores.size() != n)
      throw Error(fmt::format("joining chip programs: program {} is for {} cores, config '{}' has {} per {}", c,
                              chips[c]->cores.size(), system.name, n, chips_per_device == 1 ? "chip" : "device"));
    if (chips[c]->functional != chips.front()->functional)
      throw Error("joining chip programs: some are functional and some are not");
  }
  Joiner j(system, name, chips.front()->functional, chips_per_device);
  std::vector<std::vector<std::vector<LItem>>> local;
  for (std::size_t c = 0; c < chips.size(); ++c) local.push_back(j.add_chip(*chips[c], static_cast<std::uint32_t>(c)));
  const std::uint32_t total = system.total_cores();
  std::vector<std::vector<std::uint32_t>> recvs(total);
  std::vector<std::vector<std::pair<std::size_t, std::uint32_t>>> sends(total);  // (after item, relayout)
  for (const auto& t : transfers) {
    if (t.from >= chips.size() || t.to >= chips.size() || t.from == t.to)
      throw Error(fmt::format("joining chip programs: tensor '{}' moves from chip {} to chip {}, expected two different "
                              "chips below {}", t.tensor, t.from, t.to, chips.size()));
    const std::uint32_t r = j.add_transfer(t, total);
    const int done = j.tag_of(sim::Tag{t.producer, "main"});
    for (auto c : j.layout(r, true).cores) {
      const auto& items = local[t.from][c - t.from * n];
      std::size_t at = items.size();
      while (at > 0 && items[at - 1].tag != done) --at;
      if (at == 0)
        throw Error(fmt::format("joining chip programs: core {} holds part of '{}' but runs nothing of '{}', which "
                                "produces it", c, t.tensor, t.producer));
      sends[c].push_back({at, r});
    }
    for (auto c : j.layout(r, false).cores) recvs[c].push_back(r);
  }
  Lowered& out = j.out();
  for (std::size_t chip = 0; chip < local.size(); ++chip)
    for (std::uint32_t c = 0; c < n; ++c) {
      const std::uint32_t g = static_cast<std::uint32_t>(chip) * n + c;
      std::vector<LItem>& items = local[chip][c];
      // Inserted from the back, so that earlier positions stay valid; equal ones keep their order.
      std::sort(sends[g].begin(), sends[g].end());
      for (auto it = sends[g].rbegin(); it != sends[g].rend(); ++it)
        items.insert(items.begin() + static_cast<std::ptrdiff_t>(it->first), LItem{K::Relayout, -1, it->second});
      out.cores[g] = assemble(items, recvs[g], micro_batches);
      out.peak_bytes[g] = peak_of(out.cores[g]);
    }
  return std::move(out);
}

}  // namespace tessera::lower
