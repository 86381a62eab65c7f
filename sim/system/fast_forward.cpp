#include "sim/system/fast_forward.h"

#include <algorithm>

namespace tessera::sim {

namespace {
constexpr std::uint32_t kNone = ~0u;
constexpr std::size_t kMaxTags = 1024;  // a stretch with more distinct tags is not fingerprinted

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

// Two independent 64-bit lanes, each order-dependent: a 128-bit fingerprint of a sequence.
class Segments::Hasher {
 public:
  void add(std::uint64_t v) {
    a_ = mix(a_ + 0x9e3779b97f4a7c15ull + v);
    b_ = mix(b_ ^ (v * 0xff51afd7ed558ccdull + 0xc4ceb9fe1a85ec53ull)) + 0x632be59bd9b4e019ull;
  }
  void add(const Key& k) {
    add(k.a);
    add(k.b);
  }
  Key key() const { return {a_, b_}; }

 private:
  std::uint64_t a_ = 0x243f6a8885a308d3ull, b_ = 0x13198a2e03707344ull;
};

Segments::Segments(const Program& prog) {
  cut(prog);
  if (keys_.empty()) return;
  fingerprint(prog);
  // A fingerprint is a hash: a stretch is only taken for the first of its key after an item by
  // item comparison, so that two different stretches never share a recording.
  std::unordered_map<Key, std::pair<std::size_t, std::size_t>, KeyHash> groups;  // key -> first stretch, members
  for (std::size_t s = 1; s < keys_.size(); ++s) {  // stretch 0 starts the program: never replayed
    if (!eligible_[s]) continue;
    auto [it, added] = groups.try_emplace(keys_[s], s, 0);
    if (!added && !same(prog, it->second.first, s)) eligible_[s] = false;
    else ++it->second.second;
  }
  repeats_.assign(keys_.size(), false);
  for (std::size_t s = 1; s < keys_.size(); ++s) repeats_[s] = eligible_[s] && groups.at(keys_[s]).second > 1;
}

std::size_t Segments::repeating() const { return static_cast<std::size_t>(std::count(repeats_.begin(), repeats_.end(), true)); }

// The closing barriers: syncs on group 0 ("all") at the top level of each core's list. Usable
// only when every core has as many and arrives at group 0 equally often in each stretch, so
// that the k-th closing barrier is one and the same barrier on every core.
void Segments::cut(const Program& prog) {
  const std::size_t n = prog.cores.size();
  bounds_.assign(n, {});
  std::vector<std::vector<std::uint64_t>> arrivals(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::uint64_t> mult{1};
    std::uint64_t inner = 0;
    const std::vector<Item>& code = prog.cores[i].code;
    for (std::size_t pc = 0; pc < code.size(); ++pc) {
      const Item& it = code[pc];
      if (it.op == Op::LoopBegin) mult.push_back(mult.back() * it.arg);
      else if (it.op == Op::LoopEnd) mult.pop_back();
      else if (it.op == Op::Sync && it.arg == 0) {
        if (mult.size() == 1) {
          bounds_[i].push_back(static_cast<std::uint32_t>(pc));
          arrivals[i].push_back(inner);
          inner = 0;
        } else {
          inner += mult.back();
        }
      }
    }
  }
  for (std::size_t i = 1; i < n; ++i)
    if (arrivals[i] != arrivals[0]) {
      bounds_.assign(n, {});
      return;
    }
  if (n == 0) return;
  keys_.assign(bounds_[0].size(), Key{});
  tags_.assign(keys_.size(), {});
  eligible_.assign(keys_.size(), true);
}

std::uint32_t Segments::tag_index(std::size_t s, std::uint32_t tag) {
  if (tag == kNoTag) return kNoTag;
  std::vector<std::uint32_t>& list = tags_[s];
  // most items carry the tag of the item before: look from the back
  for (std::size_t k = list.size(); k-- > 0;)
    if (list[k] == tag) return static_cast<std::uint32_t>(k);
  if (list.size() >= kMaxTags) {
    eligible_[s] = false;
    return kNoTag;
  }
  list.push_back(tag);
  return static_cast<std::uint32_t>(list.size() - 1);
}

Segments::Key Segments::layout_key(const Program& prog, std::uint32_t l) {
  if (layout_keys_[l]) return *layout_keys_[l];
  const Layout& lay = prog.layouts[l];
  Hasher h;
  h.add(lay.shape.size());
  for (auto v : lay.shape) h.add(static_cast<std::uint64_t>(v));
  h.add(lay.cores.size());
  for (auto v : lay.cores) h.add(v);
  for (auto v : lay.boxes) h.add(static_cast<std::uint64_t>(v));
  return *(layout_keys_[l] = h.key());
}

// A relayout's messages and copies follow from its layouts and element sizes alone.
Segments::Key Segments::relayout_key(const Program& prog, std::uint32_t r) {
  if (relayout_keys_[r]) return *relayout_keys_[r];
  Hasher h;
  const Relayout& rl = prog.relayouts[r];
  h.add(rl.moves.size());
  for (const Move& m : rl.moves) {
    h.add(layout_key(prog, m.from));
    h.add(layout_key(prog, m.to));
    h.add(m.element_bytes);
  }
  return *(relayout_keys_[r] = h.key());
}

void Segments::fingerprint(const Program& prog) {
  layout_keys_.assign(prog.layouts.size(), std::nullopt);
  relayout_keys_.assign(prog.relayouts.size(), std::nullopt);
  std::vector<Hasher> hs(keys_.size());
  // A relayout dropped after its last run must have all its runs inside one stretch (a replay
  // runs none of them, so none may be left for another stretch).
  std::vector<std::size_t> relayout_stretch(prog.relayouts.size(), ~std::size_t{0});
  auto spans = [&](std::uint32_t r, std::size_t s) {  // s == count(): after the last closing barrier
    std::size_t& at = relayout_stretch[r];
    if (at == ~std::size_t{0}) at = s;
    if (at == s) return;
    for (const std::size_t x : {at, s})
      if (x < keys_.size()) eligible_[x] = false;
  };
  for (std::size_t i = 0; i < prog.cores.size(); ++i) {
    const std::vector<Item>& code = prog.cores[i].code;
    std::size_t s = 0;
    std::uint64_t counted = 0;
    for (std::size_t pc = 0; pc < code.size(); ++pc) {
      const Item& it = code[pc];
      const bool tail = s >= keys_.size();  // after the last closing barrier: in no stretch
      if (it.op == Op::Alloc || it.op == Op::Free || it.op == Op::Init) continue;
      if (it.op == Op::Relayout) spans(it.arg, s);
      if (tail) continue;
      if (it.op == Op::Collective) eligible_[s] = false;
      Hasher& h = hs[s];
      ++counted;
      h.add(static_cast<std::uint64_t>(it.op) << 8 | static_cast<std::uint64_t>(it.kind));
      switch (it.op) {
        case Op::Compute:
        case Op::Load:
        case Op::Store: break;  // timing reads the cycles or bytes, not what is computed or moved
        case Op::LoopEnd: h.add(pc - it.arg); break;
        case Op::Relayout: {
          h.add(relayout_key(prog, it.arg));
          for (const Move& m : prog.relayouts[it.arg].moves) h.add(tag_index(s, m.tag));
          break;
        }
        default: h.add(it.arg); break;
      }
      h.add(it.value);
      h.add(it.handle);
      h.add(tag_index(s, it.tag));
      if (pc == bounds_[i][s]) {  // the closing barrier: the core's part of stretch s ends
        h.add(0xc0de0000ull + counted);
        counted = 0;
        ++s;
      }
    }
  }
  for (std::size_t s = 0; s < keys_.size(); ++s) keys_[s] = hs[s].key();
}

// Stretches a and b (both fingerprinted the same) compared item by item on every core, in what
// the fingerprint covers: the same ops, peers, bytes, cycles, handles, loop structure, relayouts
// of equal layouts and element sizes, and tags at the same places in each stretch's order.
bool Segments::same(const Program& prog, std::size_t a, std::size_t b) const {
  const auto slot = [&](std::size_t s, std::uint32_t tag) -> std::uint32_t {
    if (tag == kNoTag) return kNoTag;
    const auto& list = tags_[s];
    return static_cast<std::uint32_t>(std::find(list.begin(), list.end(), tag) - list.begin());
  };
  const auto same_relayout = [&](std::uint32_t ra, std::uint32_t rb) {
    const auto& ma = prog.relayouts[ra].moves;
    const auto& mb = prog.relayouts[rb].moves;
    if (ma.size() != mb.size()) return false;
    for (std::size_t k = 0; k < ma.size(); ++k)
      if (!(prog.layouts[ma[k].from] == prog.layouts[mb[k].from]) || !(prog.layouts[ma[k].to] == prog.layouts[mb[k].to]) ||
          ma[k].element_bytes != mb[k].element_bytes || slot(a, ma[k].tag) != slot(b, mb[k].tag))
        return false;
    return true;
  };
  const auto timed = [](const Item& it) { return it.op != Op::Alloc && it.op != Op::Free && it.op != Op::Init; };
  for (std::size_t i = 0; i < prog.cores.size(); ++i) {
    const std::vector<Item>& code = prog.cores[i].code;
    std::size_t pa = bounds_[i][a - 1] + 1, pb = bounds_[i][b - 1] + 1;
    const std::size_t ea = bounds_[i][a], eb = bounds_[i][b];
    for (;;) {
      while (pa <= ea && !timed(code[pa])) ++pa;
      while (pb <= eb && !timed(code[pb])) ++pb;
      if (pa > ea || pb > eb) {
        if (pa <= ea || pb <= eb) return false;  // one is longer
        break;
      }
      const Item &x = code[pa], &y = code[pb];
      if (x.op != y.op || x.kind != y.kind || x.value != y.value || x.handle != y.handle ||
          slot(a, x.tag) != slot(b, y.tag))
        return false;
      bool args = true;
      switch (x.op) {
        case Op::Compute:
        case Op::Load:
        case Op::Store: break;
        case Op::LoopEnd: args = pa - x.arg == pb - y.arg; break;
        case Op::Relayout: args = same_relayout(x.arg, y.arg); break;
        default: args = x.arg == y.arg; break;
      }
      if (!args) return false;
      ++pa;
      ++pb;
    }
  }
  return true;
}

FastForward::FastForward(const Program& prog, Network& network, OffchipMemory& memory, Barrier& barrier,
                         const std::vector<std::unique_ptr<Dma>>& dmas, RelayoutRunner& relayouts, TagStats& tags)
    : prog_(prog), segments_(prog), network_(network), memory_(memory), barrier_(barrier), dmas_(dmas),
      relayouts_(relayouts), tags_(tags) {
  std::vector<std::uint64_t> c;
  network_.read_counters(c);
  network_counters_ = c.size();
  active_.assign(prog.cores.size(), false);
  busy0_.resize(prog.cores.size());
  items0_.resize(prog.cores.size());
  tag_slot_.assign(prog.tags.size(), kNone);
}

std::unique_ptr<FastForward> FastForward::make(const Program& prog, Network& network, OffchipMemory& memory,
                                               Barrier& barrier, const std::vector<std::unique_ptr<Dma>>& dmas,
                                               RelayoutRunner& relayouts, TagStats& tags) {
  auto ff = std::make_unique<FastForward>(prog, network, memory, barrier, dmas, relayouts, tags);
  if (ff->segments_.repeating() == 0) return nullptr;
  return ff;
}

bool FastForward::quiet(Cycles now, std::uint32_t except_group) const {
  if (!barrier_.idle_except(except_group)) return false;
  for (const auto& d : dmas_)
    if (!d->idle()) return false;
  return network_.quiet_at(now) && memory_.quiet_at(now);
}

void FastForward::read_counters(std::vector<std::uint64_t>& out) const {
  out.clear();
  network_.read_counters(out);
  memory_.read_counters(out);
}

void FastForward::add_counter(std::size_t i, std::uint64_t delta) {
  if (i < network_counters_) network_.add_counter(i, delta);
  else memory_.add_counter(i - network_counters_, delta);
}

// The first core to start stretch s decides for all (they all start it at the same cycle: the
// barrier before it releases every core at once).
void FastForward::decide(std::size_t s, Cycles now) {
  current_ = s;
  mode_ = Mode::Simulate;
  recording = false;
  if (!segments_.repeats(s) || !quiet(now, kNone)) return;
  auto it = records_.find(segments_.key(s));
  if (it == records_.end()) {
    start_recording(s, now);
    return;
  }
  replay(it->second, s, now);
  mode_ = Mode::Replay;
  replaying_ = &it->second;
  ++replayed_;
}

const SegmentHook::CoreDelta* FastForward::begin(std::size_t s, std::size_t core_index, Cycles now,
                                                 const std::array<Cycles, kActivities>& busy, std::uint64_t items) {
  if (s != current_) decide(s, now);
  if (mode_ == Mode::Replay) return &replaying_->cores[core_index];
  if (mode_ == Mode::Record) {
    if (now != t0_) valid_ = false;  // cannot happen after a global barrier; guards the invariant
    active_[core_index] = true;
    busy0_[core_index] = busy;
    items0_[core_index] = items;
  }
  return nullptr;
}

void FastForward::start_recording(std::size_t s, Cycles now) {
  mode_ = Mode::Record;
  recording = true;
  valid_ = true;
  t0_ = now;
  arrived_ = 0;
  rec_ = Record{};
  rec_.cores.assign(prog_.cores.size(), CoreDelta{});
  rec_.tags.assign(segments_.tags(s).size(), TagDelta{});
  for (std::size_t k = 0; k < segments_.tags(s).size(); ++k) tag_slot_[segments_.tags(s)[k]] = static_cast<std::uint32_t>(k);
  read_counters(counters0_);
  barriers0_ = barrier_.barriers();
  held0_ = relayouts_.held();
  relayouts_.watch();
}

void FastForward::note(std::size_t core_index, std::uint32_t tag, Activity a, Cycles start, Cycles end) {
  if (!active_[core_index] || tag == kNoTag) return;
  const std::uint32_t k = tag_slot_[tag];
  if (k == kNone || start < t0_) {  // not one of the stretch's own: do not trust the recording
    valid_ = false;
    return;
  }
  TagDelta& d = rec_.tags[k];
  d.busy[static_cast<int>(a)] += end - start;
  d.first = std::min(d.first, start - t0_);
  d.last = std::max(d.last, end - t0_);
}

void FastForward::end(std::size_t s, std::size_t core_index, Cycles now, const std::array<Cycles, kActivities>& busy,
                      std::uint64_t items) {
  if (mode_ != Mode::Record || s != current_ || !active_[core_index]) return;
  active_[core_index] = false;
  CoreDelta& d = rec_.cores[core_index];
  d.cycles = now - t0_;
  for (int a = 0; a < kActivities; ++a) d.busy[a] = busy[a] - busy0_[core_index][a];
  d.items = items - items0_[core_index];
  if (++arrived_ == prog_.cores.size()) finish_recording(now);
}

// The last core is at the closing barrier: keep the recording if the system is idle again
// (all but that barrier's own arrivals), so a replay leaves it as the simulation would.
void FastForward::finish_recording(Cycles now) {
  mode_ = Mode::Simulate;
  recording = false;
  for (const std::uint32_t t : segments_.tags(current_)) tag_slot_[t] = kNone;
  if (!valid_ || !quiet(now, 0) || relayouts_.held() != held0_) return;
  read_counters(counters1_);
  for (std::size_t i = 0; i < counters1_.size(); ++i)
    if (counters1_[i] != counters0_[i]) rec_.counters.emplace_back(static_cast<std::uint32_t>(i), counters1_[i] - counters0_[i]);
  rec_.barriers = barrier_.barriers() - barriers0_;
  rec_.relayout_peak_rise = relayouts_.watched_peak() - held0_;
  records_.emplace(segments_.key(current_), std::move(rec_));
  rec_ = Record{};
}

void FastForward::replay(const Record& r, std::size_t s, Cycles now) {
  for (const auto& [i, d] : r.counters) add_counter(i, d);
  barrier_.add_barriers(r.barriers);
  relayouts_.replay_peak(relayouts_.held() + r.relayout_peak_rise);
  const std::vector<std::uint32_t>& tags = segments_.tags(s);
  for (std::size_t k = 0; k < tags.size(); ++k) {
    const TagDelta& d = r.tags[k];
    if (d.first == kNever) continue;  // no item of it ran
    const std::uint32_t t = tags[k];
    for (int a = 0; a < kActivities; ++a) tags_.busy[t][a] += d.busy[a];
    tags_.first[t] = std::min(tags_.first[t], now + d.first);
    tags_.last[t] = std::max(tags_.last[t], now + d.last);
  }
}

}  // namespace tessera::sim
