#include "compiler/schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "compiler/cost/oracle.h"
#include "compiler/lower/lower.h"
#include "sim/common/error.h"
#include "sim/common/hash.h"

namespace tessera::schedule {

namespace {

// Operators that differ only in tensor names (the layers of a transformer) share plans.
std::string signature(const ir::Operator& op, const ir::Workload& w) {
  std::string s = fmt::format("{}|{}|{}|{}|", ir::kind_name(op.expr.kind), ir::fn_name(op.expr.fn),
                              static_cast<int>(op.expr.reduce), op.expr.scalar ? *op.expr.scalar : 0.0);
  auto acc = [&](const ir::Access& a) {
    s += fmt::format("{}:{}[", ir::role_name(w.tensor(a.tensor).role), dtype_name(w.tensor(a.tensor).dtype));
    for (const auto& ix : a.indices) s += ix.str() + ",";
    s += "]";
  };
  for (const auto& in : op.expr.inputs) acc(in);
  acc(op.expr.output);
  for (const auto& [a, e] : op.extent) s += fmt::format("{}={};", a, e);
  return s;
}

std::vector<plan::Plan> with_names(std::vector<plan::Plan> plans, const ir::Operator& op) {
  for (auto& p : plans) {
    for (std::size_t i = 0; i < op.expr.inputs.size(); ++i) p.parts[i].tensor = op.expr.inputs[i].tensor;
    p.parts.back().tensor = op.expr.output.tensor;
  }
  return plans;
}


// One operand's move into operator i's plan p: its part `part`, from part `from_part` of plan
// `from` (of operator from_op), or from stripes over every core when `from` is null.
struct Move {
  std::size_t part;
  const plan::Plan* from;
  std::size_t from_op, from_part;
};

// The features of gathering operands into a plan's layout (cost::Terms input or setup).
struct Gather {
  cost::GatherFeatures f;
  double oracle = 0;        // the moves replayed on the simulator's network engine (--price-by simulate)
  std::vector<Move> moves;  // by operand
};

void set_input(cost::Terms& t, const cost::GatherFeatures& f) {
  t.input_port_cycles = f.port_cycles;
  t.input_link_cycles = f.link_cycles;
  t.input_chip_link_cycles = std::max(0.0, f.chip_link_cycles - f.order_cycles);
  t.input_order_cycles = f.order_cycles;
  t.input_messages = f.messages;
  t.input_local_cycles = f.local_cycles;
  t.input_latency_cycles = f.latency_cycles;
}

void set_setup(cost::Terms& t, const cost::GatherFeatures& f) {
  t.setup_port_cycles = f.port_cycles;
  t.setup_link_cycles = f.link_cycles;
  t.setup_chip_link_cycles = std::max(0.0, f.chip_link_cycles - f.order_cycles);
  t.setup_order_cycles = f.order_cycles;
  t.setup_messages = f.messages;
  t.setup_local_cycles = f.local_cycles;
  t.setup_latency_cycles = f.latency_cycles;
}

// A gather's features (and, for the oracle, its replayed cycles).
struct Moved {
  cost::GatherFeatures f;
  double oracle = 0;
};
// Every core's view of one operand of a plan, and their hash.
struct Views {
  std::vector<sim::View> views;
  std::uint64_t hash = 1469598103934665603ull;
};
// What pricing exchanges learns that does not depend on the cost model's weights: views per
// plan part, gathers' features per pair of layouts, shift rings. All keyed by content, so the
// searches of one workload on one target share it (the calibrated and the analytical search,
// and the pricing of the analytical one's plans by the calibrated model), when they price with
// the same oracle (or none).
struct ExchangeMemo {
  const cost::Oracle* oracle = nullptr;
  std::map<std::uint64_t, Moved> layouts;
  std::unordered_map<std::uint64_t, std::unique_ptr<Views>> views;  // by plan_key
  std::map<std::string, std::unique_ptr<Views>> stripes;
  std::map<std::pair<const Views*, const Views*>, bool> same;
  std::map<std::uint64_t, std::vector<std::pair<std::size_t, std::size_t>>> ring_pairs;
  std::map<std::pair<std::uint64_t, Bytes>, cost::GatherFeatures> rings;
  std::map<std::pair<std::uint64_t, Bytes>, double> replayed_rings;
  // Each distinct operator's candidate plans with their terms, unpriced (by operator_key), kept
  // by a search for the one after it, which takes them.
  std::map<std::string, std::vector<plan::Plan>> candidates;
};

// Computes the gathers' features before each operator (weights: setup; activations: input) and
// the link feature of its plans' shifts, and prices them with the operator's cost model. A
// gather's features come from the messages lowering will emit (sim::for_each_piece), computed
// once per distinct pair of layouts and memoised per operator, operand and plan pair, so that the
// reconciliation's repeated pricing costs a lookup. With `--price-by simulate` (the oracle) the
// same messages are also replayed on the simulator's network engine.
class Exchanges {
 public:
  // `memo`: shared with other searches of `w` on this target (a fresh one if null or kept for
  // another oracle).
  Exchanges(const ir::Workload& w, const Options& o, std::shared_ptr<ExchangeMemo> memo = nullptr)
      : w_(w), cfg_(*o.target.config), view_cores_(cfg_.total_cores()),
        shift_buffer_bytes_(o.target.shift_buffer_bytes), fabric_(cfg_) {
    std::map<std::string, std::size_t> ids;
    for (const auto& op : w.ops()) {
      models_.push_back(&o.target.model_for(op));
      shape_of_.push_back(ids.emplace(signature(op, w), ids.size()).first->second);
    }
    if (o.target.model && o.target.model->simulate) {
      if (!o.oracle) throw Error("pricing by the oracle (--price-by simulate) needs one: schedule::Options::oracle is not set");
      oracle_ = o.oracle;
    }
    if (!memo || memo->oracle != oracle_) {
      memo = std::make_shared<ExchangeMemo>();
      memo->oracle = oracle_;
    }
    m_ = std::move(memo);
  }
  const std::shared_ptr<ExchangeMemo>& memo() const { return m_; }

  // Operator op's candidate plans (`enumerate`) with their shift terms set, left for the model to
  // price: from the memo when an earlier search kept them (taken out), else enumerated (and kept
  // when `keep`). The terms do not depend on the model's weights, so both searches see the same.
  template <class Enumerate>
  std::vector<plan::Plan> candidates(const ir::Operator& op, const std::string& key, bool keep, Enumerate&& enumerate) {
    if (auto it = m_->candidates.find(key); it != m_->candidates.end()) {
      std::vector<plan::Plan> all = std::move(it->second);
      m_->candidates.erase(it);
      return all;
    }
    std::vector<plan::Plan> all = enumerate();
    for (auto& p : all) shift_terms(op, p, p.cost.terms);
    if (keep) m_->candidates.emplace(key, all);
    return all;
  }

  // Per piece of every rotation, at the pieces' real sizes (the shift buffer splits a chunk by
  // rows, sometimes into more pieces than bytes / buffer): one round of the plan's ring sends
  // (its messages in order, and its latency) with the copy out of the shift buffer, the round's
  // busiest link apart, and the barrier before it; for the oracle, the round replayed.
  void shift_terms(const ir::Operator& op, const plan::Plan& p, cost::Terms& t) {
    const auto sync = static_cast<double>(plan::sync_latency_cycles(cfg_, p.cores));
    t.shift_cycles = t.shift_link_cycles = t.shift_chip_link_cycles = t.sync_cycles = t.oracle.shift = 0;
    std::int64_t events = 1;
    for (int a : p.loop) {
      events *= p.steps_on[static_cast<std::size_t>(a)];
      for (std::size_t k = 0; k < p.parts.size(); ++k) {
        if (p.parts[k].rot_axis != a) continue;
        double port = 0, link = 0, chip_link = 0, syncs = 0, replayed = 0;
        const auto add = [&](Bytes piece, double times) {
          const cost::GatherFeatures& r = ring(op, p, k, piece);
          port += times * (r.order_cycles + r.latency_cycles + fabric_.copy_cycles(piece));
          link += times * r.link_cycles;
          chip_link += times * std::max(0.0, r.chip_link_cycles - r.order_cycles);
          syncs += times * sync;
          if (oracle_) replayed += times * (sync + replay_round(op, p, k, piece) + oracle_->copy(piece));
        };
        // Piece by piece, in order, as the program sends them; a chunk larger than a core's
        // memory (a plan that can never run, whose pieces a huge operator has by the million)
        // by size, counted: the same sum up to rounding.
        if (p.parts[k].shift_bytes <= cfg_.chip.core.sram_bytes) {
          for (Bytes piece : lower::shift_pieces(p, op, k, shift_buffer_bytes_)) add(piece, 1.0);
        } else {
          for (const auto& [piece, n] : lower::shift_piece_counts(p, op, k, shift_buffer_bytes_))
            add(piece, static_cast<double>(n));
        }
        const auto e = static_cast<double>(events);
        t.shift_cycles += e * port;
        t.shift_link_cycles += e * link;
        t.shift_chip_link_cycles += e * chip_link;
        t.sync_cycles += e * syncs;
        t.oracle.shift += e * replayed;
      }
    }
  }

  // Plans are memoised by address: call when plan lists may have moved.
  void forget_plans() {
    memo_.clear();
  }

  // Laying operator i's weights out from the idle plan's layout into the active one.
  Gather setup(std::size_t i, const plan::Plan& idle, const plan::Plan& act) {
    Gather g;
    if (idle.same_as(act)) return g;
    for (std::size_t k = 0; k < act.parts.size(); ++k)
      if (const ir::Tensor& x = w_.tensor(act.parts[k].tensor); x.role == ir::TensorRole::Weight)
        g.moves.push_back({k, idle.weights_striped ? nullptr : &idle, i, k});
    const Moved& m = moved(i, act, g.moves);
    g.f = m.f;
    g.oracle = m.oracle;
    return g;
  }
  double setup_price(std::size_t i, const plan::Plan& idle, const plan::Plan& act) {
    const Gather g = setup(i, idle, act);
    cost::Terms t;
    set_setup(t, g.f);
    t.oracle.setup = g.oracle;
    return models_[i]->predict(t).setup;
  }

  // Gathering plan p's activation inputs (operator i) from where their producers left them
  // (their active plans in `fronts`/`act`), or from stripes over every core (model inputs).
  Gather input(const plan::Plan& p, std::size_t i, const std::vector<std::size_t>& act,
               const std::vector<std::vector<plan::Plan>>& fronts) {
    Gather g;
    const auto& op = w_.ops()[i];
    for (std::size_t k = 0; k < op.expr.inputs.size(); ++k) {
      const ir::Tensor& x = w_.tensor(op.expr.inputs[k].tensor);
      if (x.role == ir::TensorRole::Weight) continue;
      const int prod = w_.producer(x.name);
      if (prod >= 0 && static_cast<std::size_t>(prod) < i) {
        const plan::Plan* from = &fronts[static_cast<std::size_t>(prod)][act[static_cast<std::size_t>(prod)]];
        g.moves.push_back({k, from, static_cast<std::size_t>(prod), from->parts.size() - 1});
      } else {
        g.moves.push_back({k, nullptr, 0, 0});
      }
    }
    const Moved& m = moved(i, p, g.moves);
    g.f = m.f;
    g.oracle = m.oracle;
    return g;
  }
  double input_price(std::size_t i, const Gather& g) const {
    cost::Terms t;
    set_input(t, g.f);
    t.oracle.input = g.oracle;
    return models_[i]->predict(t).input;
  }

  // Operands of plan p (operator i) gathered from stripes over every core, priced as an input
  // gather: every part (what a VGM operator loads, and about what it stores back, the same
  // messages the other way), only the activations it reads (a T10 operator after a VGM one), or
  // only its output (a T10 operator storing for a VGM one, the same messages the other way).
  enum class Parts { All, ActivationsIn, Output };
  double striped_price(std::size_t i, const plan::Plan& p, Parts which) {
    Gather g;
    for (std::size_t k = 0; k < p.parts.size(); ++k) {
      const bool output = k + 1 == p.parts.size();
      const bool weight = w_.tensor(p.parts[k].tensor).role == ir::TensorRole::Weight;
      if (which == Parts::ActivationsIn && (output || weight)) continue;
      if (which == Parts::Output && !output) continue;
      g.moves.push_back({k, nullptr, 0, 0});
    }
    const Moved& m = moved(i, p, g.moves);
    g.f = m.f;
    g.oracle = m.oracle;
    return input_price(i, g);
  }

  // A VGM operator's time without its barrier: compute, and its operands gathered from stripes
  // and its output stored back.
  //
  // In rounds it is priced as lowering runs it: per round a gather of that round's slice of the
  // reduction axis from stripes, then compute; the output stored once at the end. A core goes on
  // to the next round's gather as soon as its own slice is in and computed, so rounds overlap:
  // the period is at least the round's gather G (the put-up order's chain to its last message)
  // and each core's busiest port plus its compute, max(G, port + C), and at most G + C; it is
  // priced at the middle of the two (docs/compiler.md, "Collage", has the measured error; the
  // sum of the rounds priced too high kept the collage off VGM where VGM is faster).
  double vgm_price(std::size_t i, const plan::Plan& p) {
    if (p.rounds <= 1 || p.round_axis < 0) return p.cost.compute_cycles + striped_price(i, p, Parts::All);
    const plan::Plan& q = round_plans_.emplace_back(plan::one_round(p));  // kept: moved() memoises by address
    Gather in;
    for (std::size_t k = 0; k + 1 < q.parts.size(); ++k) in.moves.push_back({k, nullptr, 0, 0});
    const Moved& m = moved(i, q, in.moves);
    in.f = m.f;
    in.oracle = m.oracle;
    const double gather = input_price(i, in);  // every round as the first: the slices are equal
    const double compute = p.cost.compute_cycles / static_cast<double>(p.rounds);
    const double low = std::max(gather, in.f.port_cycles + in.f.latency_cycles + compute);
    const double period = (low + gather + compute) / 2;
    return gather + compute + static_cast<double>(p.rounds - 1) * period + striped_price(i, p, Parts::Output);
  }

  // Final figures of operator i: the input features from its producers' chosen layouts, priced.
  OpSchedule finish(std::size_t i, const plan::Plan& act, const plan::Plan& idle, Gather input) {
    const Gather s = setup(i, idle, act);
    OpSchedule os;
    os.active = act;
    os.idle = idle;
    set_input(os.active.cost.terms, input.f);
    shift_terms(w_.ops()[i], act, os.active.cost.terms);
    // The program gathers weights and activations together: the joint gather J splits into the
    // inputs' share (their gather alone, at most J: with the oracle, the weights' messages can
    // reorder the inputs' into a faster gather) and what the weights add, feature by feature.
    Gather joint = input;
    if (!s.moves.empty()) {
      std::vector<Move> all = input.moves;
      all.insert(all.end(), s.moves.begin(), s.moves.end());
      std::sort(all.begin(), all.end(), [](const Move& a, const Move& b) { return a.part < b.part; });
      const Moved& m = moved(i, act, all);
      joint.f = m.f;
      joint.oracle = m.oracle;
      input.oracle = std::min(input.oracle, joint.oracle);
    }
    os.active.cost.terms.oracle.input = input.oracle;
    plan::price(os.active.cost, *models_[i]);
    os.terms = os.active.cost.terms;
    set_setup(os.terms, added(joint.f, input.f));
    os.terms.oracle.setup = joint.oracle - input.oracle;
    os.setup_cycles = models_[i]->predict(os.terms).setup;
    return os;
  }

 private:
  // What a joint gather's features add to the inputs' alone.
  static cost::GatherFeatures added(const cost::GatherFeatures& joint, const cost::GatherFeatures& in) {
    auto d = [](double a, double b) { return std::max(0.0, a - b); };
    cost::GatherFeatures f;
    f.port_cycles = d(joint.port_cycles, in.port_cycles);
    f.link_cycles = d(joint.link_cycles, in.link_cycles);
    f.chip_link_cycles = d(joint.chip_link_cycles, in.chip_link_cycles);
    f.order_cycles = d(joint.order_cycles, in.order_cycles);
    f.messages = d(joint.messages, in.messages);
    f.local_cycles = d(joint.local_cycles, in.local_cycles);
    f.latency_cycles = d(joint.latency_cycles, in.latency_cycles);
    return f;
  }

  // The moves into plan p of operator i, together, as the program makes them: their features
  // (and, for the oracle, their replay: every core's sends, then its copies, then its receives).
  const Moved& moved(std::size_t i, const plan::Plan& p, const std::vector<Move>& moves) {
    static const Moved none;
    if (moves.empty()) return none;
    std::uint64_t mk = 1469598103934665603ull;
    for (const Move& m : moves) {
      fnv(mk, m.part);
      fnv(mk, reinterpret_cast<std::uintptr_t>(m.from));
      fnv(mk, m.from_part);
    }
    const auto key = std::make_tuple(i, &p, mk);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    std::uint64_t h = 1469598103934665603ull;  // over the shapes and the layouts
    std::vector<std::tuple<const ir::Tensor*, const Views*, const Views*>> layouts;
    for (const Move& m : moves) {
      const ir::Tensor& x = w_.tensor(p.parts[m.part].tensor);
      const Views& dst = views(&p, i, m.part, x);
      const Views& src = m.from ? views(m.from, m.from_op, m.from_part, x) : views(nullptr, 0, 0, x);
      if (same(src, dst)) continue;  // the program reads it where it is
      for (auto d : x.shape) fnv(h, static_cast<std::uint64_t>(d));
      fnv(h, dtype_bytes(x.dtype));
      fnv(h, src.hash);
      fnv(h, dst.hash);
      layouts.push_back({&x, &src, &dst});
    }
    auto it = m_->layouts.find(h);
    if (it == m_->layouts.end()) {
      // The messages as compact records (no boxes kept): pricing many candidate pairs allocates
      // once per gather, not once per piece.
      messages_.clear();
      for (const auto& [x, src, dst] : layouts) {
        const Bytes element = dtype_bytes(x->dtype);
        sim::for_each_piece(sim::layout_of(x->shape, src->views), sim::layout_of(x->shape, dst->views),
                            [&](std::uint32_t from, std::uint32_t to, const sim::Box& b) {
                              messages_.push_back({from, to, static_cast<Bytes>(b.elements()) * element});
                            });
      }
      const double replayed = oracle_ ? oracle_->gather(messages_) : 0.0;
      it = m_->layouts.emplace(h, Moved{fabric_.gather(messages_), replayed}).first;
    }
    return memo_[key] = it->second;
  }
  static void fnv(std::uint64_t& h, std::uint64_t v) { h = (h ^ v) * 1099511628211ull; }

  // Every core's view of one operand of a plan (or of a tensor striped over every core, for a null
  // plan), computed once per distinct plan part and hashed: the search prices each plan against
  // many, and its plan lists move (so the key is what the views depend on, not an address).
  std::uint64_t plan_key(const plan::Plan& p, std::size_t op, std::size_t part) const {
    std::uint64_t h = 1469598103934665603ull;
    fnv(h, shape_of_[op]);  // operators that differ only in tensor names have the same views
    fnv(h, part);
    for (const auto* v : {&p.fop, &p.len, &p.pace, &p.steps_on})
      for (auto x : *v) fnv(h, static_cast<std::uint64_t>(x));
    for (const auto& x : p.parts) {
      for (auto f : x.ft) fnv(h, static_cast<std::uint64_t>(f));
      for (int a : x.share_axes) fnv(h, static_cast<std::uint64_t>(a));
      fnv(h, static_cast<std::uint64_t>(x.rot_dim + 1));
      fnv(h, static_cast<std::uint64_t>(x.rot_axis + 1));
      fnv(h, static_cast<std::uint64_t>(x.window_chunks));
    }
    fnv(h, static_cast<std::uint64_t>(p.cores));
    return h;
  }
  const Views& views(const plan::Plan* p, std::size_t op, std::size_t part, const ir::Tensor& x) {
    auto& slot = p ? m_->views[plan_key(*p, op, part)] : m_->stripes[x.name];
    if (!slot) {
      slot = std::make_unique<Views>();
      slot->views = p ? lower::plan_views(*p, w_.ops()[op], part, view_cores_) : lower::stripes(x, view_cores_);
      for (const auto& v : slot->views) {
        fnv(slot->hash, v.tensor.empty() ? 0 : 1);
        for (std::size_t d = 0; d < v.origin.size(); ++d)
          for (std::int64_t n : {v.origin[d], v.extent[d], static_cast<std::int64_t>(v.cyclic[d])})
            fnv(slot->hash, static_cast<std::uint64_t>(n));
      }
    }
    return *slot;
  }

  // Whether two layouts are the same (compared once per pair: layout following makes it common).
  bool same(const Views& a, const Views& b) {
    if (a.hash != b.hash) return false;
    auto [it, fresh] = m_->same.emplace(std::make_pair(&a, &b), false);
    if (fresh) {  // the boxes, not the tensor names (views are shared by same-shaped operators)
      it->second = a.views.size() == b.views.size();
      for (std::size_t c = 0; it->second && c < a.views.size(); ++c) {
        const sim::View &x = a.views[c], &y = b.views[c];
        it->second = x.tensor.empty() == y.tensor.empty() && x.origin == y.origin && x.extent == y.extent && x.cyclic == y.cyclic;
      }
    }
    return it->second;
  }

  // The ring neighbours of operand k of plan p depend only on the split factors, the operand's
  // share axes and its temporal factor.
  std::uint64_t ring_key(const plan::Plan& p, std::size_t k) {
    const plan::Part& x = p.parts[k];
    std::uint64_t h = 1469598103934665603ull;
    for (auto f : p.fop) fnv(h, static_cast<std::uint64_t>(f));
    fnv(h, 0xffff);
    for (int a : x.share_axes) fnv(h, static_cast<std::uint64_t>(a));
    fnv(h, static_cast<std::uint64_t>(x.ft[static_cast<std::size_t>(x.rot_dim)]));
    return h;
  }
  const std::vector<std::pair<std::size_t, std::size_t>>& pairs(const ir::Operator& op, const plan::Plan& p,
                                                               std::size_t k, std::uint64_t h) {
    auto it = m_->ring_pairs.find(h);
    if (it == m_->ring_pairs.end()) it = m_->ring_pairs.emplace(h, lower::shift_pairs(p, op, k)).first;
    return it->second;
  }
  // The features of one shift round of operand k of plan p moving `bytes` per core.
  const cost::GatherFeatures& ring(const ir::Operator& op, const plan::Plan& p, std::size_t k, Bytes bytes) {
    const std::uint64_t h = ring_key(p, k);
    auto it = m_->rings.find({h, bytes});
    if (it == m_->rings.end()) it = m_->rings.emplace(std::make_pair(h, bytes), fabric_.round(pairs(op, p, k, h), bytes)).first;
    return it->second;
  }
  double replay_round(const ir::Operator& op, const plan::Plan& p, std::size_t k, Bytes bytes) {
    const std::uint64_t h = ring_key(p, k);
    auto it = m_->replayed_rings.find({h, bytes});
    if (it == m_->replayed_rings.end())
      it = m_->replayed_rings.emplace(std::make_pair(h, bytes), oracle_->round(pairs(op, p, k, h), bytes)).first;
    return it->second;
  }

  const ir::Workload& w_;
  const sim::Config& cfg_;
  std::size_t view_cores_;
  Bytes shift_buffer_bytes_;
  cost::Oracle* oracle_ = nullptr;  // --price-by simulate only
  cost::Fabric fabric_;
  std::vector<cost::Message> messages_;            // scratch of moved()
  std::vector<const cost::ClassModel*> models_;
  std::vector<std::size_t> shape_of_;  // per operator: its signature's index
  std::map<std::tuple<std::size_t, const plan::Plan*, std::uint64_t>, Moved> memo_;  // by address: this search's
  std::shared_ptr<ExchangeMemo> m_;
  std::deque<plan::Plan> round_plans_;  // vgm_price()'s one-round plans (addresses stay put)
};

// Load-compute-store: every operand crosses the fabric once per use.
double vgm_transfer_cycles(const plan::Plan& p, const sim::Config& cfg) {
  Bytes moved = 0;
  for (const auto& part : p.parts) moved += part.bytes_per_core;
  return plan::transfer_cycles(cfg, moved);
}

// Where a FrontCache keeps a planner's fronts for these options (schedule.h): everything the
// fronts depend on besides the operator. Empty: not to be kept (the oracle prices them).
std::string front_scope(const Options& o, const char* planner) {
  if (o.oracle || (o.target.model && o.target.model->simulate)) return {};
  const plan::Target& t = o.target;
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|", planner, t.config->fingerprint, t.config->total_cores(), t.cores,
                     t.shift_buffer_bytes, t.min_parallelism, t.min_padding_ratio,
                     t.model ? fnv1a_hex(t.model->to_json().dump()) : std::string("analytical"));
}

// An operator's key: its signature and the shapes of the tensors it reads and writes (the
// signature has their indices, not their sizes). What its candidate plans depend on besides the
// target and the model.
std::string operator_key(const std::string& sig, const ir::Operator& op, const ir::Workload& w) {
  std::string k = sig;
  auto shape = [&](const ir::Access& a) {
    for (auto d : w.tensor(a.tensor).shape) k += fmt::format("{},", d);
    k += ";";
  };
  for (const auto& in : op.expr.inputs) shape(in);
  shape(op.expr.output);
  return k;
}

// Candidate plans per operator, computed by `make(op, operator key)` once per distinct operator
// (the layers of a model share them), then named for each operator. A shared cache (with a
// scope) keeps them for later schedules; otherwise this schedule keeps its own.
template <class Make>
std::vector<std::vector<plan::Plan>> plans_per_op(const ir::Workload& w, const std::vector<std::string>& sigs,
                                                  FrontCache* shared, const std::string& scope, Make&& make) {
  FrontCache own;
  FrontCache& cache = shared && !scope.empty() ? *shared : own;
  std::vector<std::vector<plan::Plan>> out;
  for (std::size_t i = 0; i < w.ops().size(); ++i) {
    const ir::Operator& op = w.ops()[i];
    const std::string key = operator_key(sigs[i], op, w);
    const std::vector<plan::Plan>* front = cache.find(scope + key);
    if (!front) front = &cache.put(scope + key, make(op, key));
    out.push_back(with_names(*front, op));
  }
  return out;
}

std::vector<std::string> signatures(const ir::Workload& w) {
  std::vector<std::string> sigs;
  for (const auto& op : w.ops()) sigs.push_back(signature(op, w));
  return sigs;
}

[[noreturn]] void does_not_fit(const ir::Workload& w, const ir::Operator& op, Bytes need, Bytes have,
                               const std::string& planner, const std::string& detail) {
  throw DoesNotFit(fmt::format("workload '{}' does not fit ({} planner): operator '{}' needs at least {} "
                          "bytes per core but {} are free ({}); short by {} bytes per core",
                          w.name, planner, op.name, need, have, detail, need - have));
}

// Operator i's plan in the layout of its input `in` as plan `from` leaves it (the same split per
// dimension, no rotation); none when an index of `in` is compound or no such plan exists.
std::optional<plan::Plan> follow_plan(std::size_t i, const ir::Workload& w, const ir::Access& in, const plan::Plan& from,
                                      const plan::Target& t) {
  const ir::Operator& op = w.ops()[i];
  const plan::Part& out = from.parts.back();
  std::map<std::string, std::int64_t> fop;
  for (std::size_t d = 0; d < in.indices.size(); ++d) {
    if (out.fs[d] == 1) continue;
    if (!in.indices[d].plain()) return std::nullopt;
    fop[in.indices[d].terms[0].axis] = out.fs[d];
  }
  return plan::make_plan(op, w, fop, {}, t);
}

// Element-wise and row-wise operators are cheap next to re-laying out their input: they follow
// their first produced input's layout (same split per dimension, no rotation), so that input
// needs no exchange at all.
std::optional<plan::Plan> follow_producer(std::size_t i, const ir::Workload& w, const std::vector<plan::Plan>& chosen,
                                          const plan::Target& t) {
  const ir::Operator& op = w.ops()[i];
  if (op.expr.kind == ir::ExprKind::Contraction) return std::nullopt;
  for (const auto& in : op.expr.inputs) {
    const int prod = w.producer(in.tensor);
    if (prod < 0 || static_cast<std::size_t>(prod) >= chosen.size()) continue;
    if (auto p = follow_plan(i, w, in, chosen[static_cast<std::size_t>(prod)], t)) return p;
  }
  return std::nullopt;
}

// Following as the look-ahead sees it: per operator that may follow, the producer it follows
// (its first produced input) and, per candidate plan of that producer, the index of its own
// plan in that layout (appended to its candidates; -1: none). The search itself sees only the
// candidates before them (`searched`), so its choices are those it makes without them.
struct Followers {
  std::vector<int> producer;               // -1: the operator does not follow
  std::vector<std::vector<int>> plan_for;  // [op][producer's candidate]
  std::vector<std::size_t> searched;       // per operator, its candidates before the followers' plans
};

// No following for the search to see: every candidate searched.
Followers no_followers(const std::vector<std::vector<plan::Plan>>& fronts) {
  Followers f{std::vector<int>(fronts.size(), -1), std::vector<std::vector<int>>(fronts.size()), {}};
  for (const auto& c : fronts) f.searched.push_back(c.size());
  return f;
}

// Adds to each operator that may follow a plan per candidate layout of its producer (in program
// order, so a chain of followers mirrors its head's candidates), and says which is which.
template <class Prepare>
Followers add_follower_plans(const ir::Workload& w, std::vector<std::vector<plan::Plan>>& fronts, const plan::Target& t,
                             Prepare&& prepare) {
  const std::size_t n = w.ops().size();
  Followers f = no_followers(fronts);
  for (std::size_t j = 0; j < n; ++j) {
    const ir::Operator& op = w.ops()[j];
    if (op.expr.kind == ir::ExprKind::Contraction) continue;
    const ir::Access* in = nullptr;
    int prod = -1;
    for (const auto& x : op.expr.inputs) {
      prod = w.producer(x.tensor);
      if (prod >= 0 && static_cast<std::size_t>(prod) < j) { in = &x; break; }
    }
    if (!in) continue;
    const auto& from = fronts[static_cast<std::size_t>(prod)];
    std::vector<int> idx(from.size(), -1);
    bool any = false;
    for (std::size_t q = 0; q < from.size(); ++q) {
      if (from[q].weights_striped) continue;
      auto p = follow_plan(j, w, *in, from[q], t);
      if (!p) continue;
      prepare(j, *p);
      idx[q] = static_cast<int>(fronts[j].size());
      fronts[j].push_back(std::move(*p));
      any = true;
    }
    if (!any) continue;
    f.producer[j] = prod;
    f.plan_for[j] = std::move(idx);
  }
  return f;
}

}  // namespace

const char* follow_name(Follow f) {
  switch (f) {
    case Follow::Auto: return "auto";
    case Follow::All: return "all";
    case Follow::Priced: return "priced";
    case Follow::None: return "none";
  }
  return "?";
}

Follow parse_follow(const std::string& name) {
  for (const Follow f : {Follow::Auto, Follow::All, Follow::Priced, Follow::None})
    if (name == follow_name(f)) return f;
  throw Error(fmt::format("layout following '{}': expected auto, all, priced or none", name));
}

Bytes weight_bytes(const plan::Plan& p, const ir::Workload& w) {
  Bytes b = 0;
  for (const auto& part : p.parts)
    if (w.tensor(part.tensor).role == ir::TensorRole::Weight) b += part.bytes_per_core;
  return b;
}

bool has_weights(const ir::Operator& op, const ir::Workload& w) {
  for (const auto& in : op.expr.inputs)
    if (w.tensor(in.tensor).role == ir::TensorRole::Weight) return true;
  return false;
}

plan::Plan striped_weights(const plan::Plan& p, const ir::Workload& w, std::int64_t cores) {
  plan::Plan q = p;
  q.weights_striped = true;
  for (auto& part : q.parts)
    if (w.tensor(part.tensor).role == ir::TensorRole::Weight)
      part.bytes_per_core = lower::stripe_bytes(w.tensor(part.tensor), static_cast<std::size_t>(cores));
  return q;
}

Bytes live_activation_bytes(const ir::Workload& w, std::int64_t cores) {
  const auto n = static_cast<int>(w.ops().size());
  // Each non-weight tensor is live from its producer (-1: before the first operator) to its last
  // reader (n: to the end, for outputs nobody reads).
  std::map<std::string, int> last;
  for (int i = 0; i < n; ++i)
    for (const auto& in : w.ops()[static_cast<std::size_t>(i)].expr.inputs) last[in.tensor] = i;
  std::vector<Bytes> live(static_cast<std::size_t>(n), 0);
  for (const auto& t : w.tensors()) {
    if (t.role == ir::TensorRole::Weight) continue;
    auto it = last.find(t.name);
    const int end = it == last.end() ? n : it->second;
    for (int i = std::max(0, w.producer(t.name)); i < end; ++i)
      live[static_cast<std::size_t>(i)] += ceil_div(t.bytes(), static_cast<Bytes>(cores));
  }
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

namespace {

// The operators that read operator i's output as an activation (later in program order).
std::vector<std::vector<std::size_t>> readers_of(const ir::Workload& w) {
  std::vector<std::vector<std::size_t>> readers(w.ops().size());
  for (std::size_t j = 0; j < w.ops().size(); ++j)
    for (const auto& in : w.ops()[j].expr.inputs) {
      if (w.tensor(in.tensor).role == ir::TensorRole::Weight) continue;
      const int prod = w.producer(in.tensor);
      if (prod < 0 || static_cast<std::size_t>(prod) >= j) continue;
      auto& r = readers[static_cast<std::size_t>(prod)];
      if (r.empty() || r.back() != j) r.push_back(j);
    }
  return readers;
}

// T10's memory reconciliation (Algorithm 1, lines 3-15) over each operator's candidate plans: idle
// layouts grow greedily from the leanest where they save the most setup per byte, and at every
// step the active plans are chosen two ways (the paper's fastest plan, and the plan with the
// least time + setup from its idle layout); the best state of each way is kept.
class Reconciler {
 public:
  struct State {
    double t = std::numeric_limits<double>::infinity();
    Bytes idle_bytes = 0;
    std::vector<std::size_t> idle, act;
  };

  // Throws DoesNotFit when the leanest idle layouts and the live activations exceed `sram`.
  Reconciler(const ir::Workload& w, const std::vector<std::string>& sigs,
             const std::vector<std::vector<plan::Plan>>& fronts, const Followers& followers, Exchanges& exchanges,
             Bytes sram, Bytes live)
      : w_(w), sigs_(sigs), fronts_(fronts), fol_(followers), searched_(followers.searched), ex_(exchanges),
        sram_(sram), live_(live), n_(w.ops().size()), setup_memo_(n_), input_memo_(n_), producers_(n_),
        readers_(readers_of(w)), wbytes_(n_) {
    for (std::size_t i = 0; i < n_; ++i) {
      for (const auto& p : fronts_[i]) wbytes_[i].push_back(weight_bytes(p, w_));
      // The producers Exchanges::input reads the active plans of (the input price's memo key).
      for (const auto& in : w_.ops()[i].expr.inputs) {
        const ir::Tensor& x = w_.tensor(in.tensor);
        const int prod = x.role == ir::TensorRole::Weight ? -1 : w_.producer(x.name);
        if (prod >= 0 && static_cast<std::size_t>(prod) < i) producers_[i].push_back(static_cast<std::size_t>(prod));
      }
    }
    lean_start();
  }

  // One reconciliation from the lean start, its idle moves steered by the active plans that one
  // way of choosing picks; with `both`, the other way is a candidate at every step too. Appends
  // its steps to `history` when given.
  void run(bool steer_with_setup, bool both, std::vector<Schedule::Step>* history) {
    std::vector<std::size_t> idle = lean_idle_, act(n_, 0), other(n_, 0);
    Bytes idle_bytes = lean_bytes_;
    for (std::size_t step = 0; step < 4 * n_ + 64; ++step) {
      const Bytes m_act = sram_ - idle_bytes - live_;
      const double t_steer = choose(steer_with_setup, idle, m_act, step == 0 ? &idle_bytes : nullptr, act);
      if (t_steer == kInf) break;
      if (history) history->push_back({idle_bytes, t_steer});
      keep(steer_with_setup, t_steer, idle_bytes, idle, act);
      if (both) keep(!steer_with_setup, choose(!steer_with_setup, idle, m_act, nullptr, other), idle_bytes, idle, other);
      if (!grow_idle(idle, idle_bytes, act)) break;
    }
  }
  const State& best(bool with_setup) const { return best_[with_setup ? 1 : 0]; }

  // The choices above go in program order: an operator's plan is priced with the gather of its
  // inputs from its producers' layouts, not with what its output layout costs its readers, and
  // layout following comes after them. On NeRF over 144 mesh cores at 4 B/cycle the output
  // matmul chose a plan for the layout fc2's ReLU had in the search, but the ReLU then followed
  // fc2's matmul onto 69 x 2 cores, and the output matmul gathered from there (3,110 cycles,
  // against 2,045 for a plan that rotates from that layout). So each kept state is revisited
  // (a copy is returned), operator by operator in program order: the plan that fits and
  // minimises its own time and setup, its followers' (each moved to its plan in the new layout,
  // where it fits) and their readers' input gathers, until a pass changes nothing (at most four
  // passes). Operators that follow move only with their producer.
  std::array<State, 2> looked_ahead() {
    std::array<State, 2> out = best_;
    for (State& st : out) {
      if (st.t == kInf) continue;
      const Bytes m_act = sram_ - st.idle_bytes - live_;
      for (int pass = 0; pass < 4; ++pass)
        if (!revisit(st.idle, m_act, st.act)) break;
      double t = 0;
      for (std::size_t i = 0; i < n_; ++i) t += own_price(i, st.act[i], st.idle, st.act);
      st.t = t;
    }
    return out;
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  Bytes idle_total(const std::vector<std::size_t>& idle) const {
    Bytes b = 0;
    for (std::size_t i = 0; i < n_; ++i) b += wbytes_[i][idle[i]];
    return b;
  }

  // The active memory plan q of operator j needs beside the idle weights: its own weights are
  // already resident when q is the idle plan.
  Bytes active_bytes(std::size_t j, std::size_t q, std::size_t idle) const {
    return fronts_[j][q].cost.memory_bytes - (q == idle ? wbytes_[j][q] : 0);
  }

  // Line 3: every operator's weights start in their most memory-efficient plan. An operator
  // whose every plan needs a second copy of its weights beside the lean idle ones may still fit
  // when its weights rest in a plan's own layout (no setup copy): it starts there.
  void lean_start() {
    lean_idle_.assign(n_, 0);
    for (std::size_t i = 0; i < n_; ++i)
      for (std::size_t q = 0; q < searched_[i]; ++q)
        if (wbytes_[i][q] < wbytes_[i][lean_idle_[i]]) lean_idle_[i] = q;
    const Bytes lean = idle_total(lean_idle_);
    const Bytes m_act0 = sram_ > lean + live_ ? sram_ - lean - live_ : 0;
    std::vector<std::size_t> resting;  // operators whose weights rest in a plan's own layout
    for (std::size_t i = 0; i < n_; ++i) {
      if (!has_weights(w_.ops()[i], w_)) continue;
      bool fits = false;
      for (std::size_t q = 0; q < searched_[i]; ++q)
        fits = fits || (!fronts_[i][q].weights_striped && fronts_[i][q].cost.memory_bytes <= m_act0);
      if (fits) continue;
      std::size_t pick = lean_idle_[i];
      for (std::size_t q = 0; q < searched_[i]; ++q)
        if (!fronts_[i][q].weights_striped &&
            (pick == lean_idle_[i] || fronts_[i][q].cost.memory_bytes < fronts_[i][pick].cost.memory_bytes))
          pick = q;
      lean_idle_[i] = pick;
      resting.push_back(i);
    }
    rest_fastest(resting);
    lean_bytes_ = idle_total(lean_idle_);
    if (lean_bytes_ + live_ > sram_)
      throw DoesNotFit(fmt::format("workload '{}' does not fit (t10 planner): weights need {} bytes per core in "
                                   "their leanest layout and live activations {}, but a core has {} bytes; short by {} "
                                   "bytes per core",
                                   w_.name, lean_bytes_, live_, sram_, lean_bytes_ + live_ - sram_));
  }

  // The smallest plan keeps the most room for the others, but can be far slower than a larger
  // one that still leaves room (OPT-13B at batch 2: its FFN matmuls in 732 steps of 7 columns
  // of k in 179,312 bytes per core, where plans of 237,568 and 204,800 bytes run 32 and 80
  // steps). So the resting operators move, one plan change at a time, to faster plans: at each
  // change the one that saves the most predicted cycles per added byte among those that still
  // leave every operator a plan that fits. Not in program order: an early operator that gains
  // little must not take the room a later one gains much from.
  void rest_fastest(const std::vector<std::size_t>& resting) {
    if (resting.empty()) return;
    // need[j]: the least active memory operator j needs beside the idle weights (its idle plan
    // runs in place); every operator fits while idle bytes + live + max need <= sram.
    auto need_of = [&](std::size_t j, std::size_t idle) {
      Bytes need = std::numeric_limits<Bytes>::max();
      for (std::size_t q = 0; q < searched_[j]; ++q)
        if (!fronts_[j][q].weights_striped) need = std::min(need, active_bytes(j, q, idle));
      return need;
    };
    std::vector<Bytes> need(n_);
    for (std::size_t j = 0; j < n_; ++j) need[j] = need_of(j, lean_idle_[j]);
    Bytes idle_bytes = idle_total(lean_idle_);
    for (;;) {
      // the largest need, and the largest apart from its operator's
      std::size_t top = 0;
      for (std::size_t j = 1; j < n_; ++j) if (need[j] > need[top]) top = j;
      Bytes second = 0;
      for (std::size_t j = 0; j < n_; ++j) if (j != top) second = std::max(second, need[j]);
      double best_ratio = 0;
      std::size_t bi = n_, bq = 0;
      for (std::size_t i : resting) {
        const std::size_t cur = lean_idle_[i];
        const double cur_t = fronts_[i][cur].cost.total_cycles;
        for (std::size_t q = 0; q < searched_[i]; ++q) {
          const plan::Plan& p = fronts_[i][q];
          if (p.weights_striped || p.cost.total_cycles >= cur_t) continue;
          const Bytes held = idle_bytes - wbytes_[i][cur] + wbytes_[i][q] + live_;
          const Bytes others = i == top ? second : need[top];
          if (held > sram_ || std::max(others, need_of(i, q)) > sram_ - held) continue;
          const Bytes added = wbytes_[i][q] > wbytes_[i][cur] ? wbytes_[i][q] - wbytes_[i][cur] : 0;
          const double ratio = (cur_t - p.cost.total_cycles) / static_cast<double>(std::max<Bytes>(1, added));
          if (ratio > best_ratio) { best_ratio = ratio; bi = i; bq = q; }
        }
      }
      if (bi == n_) return;
      idle_bytes = idle_bytes - wbytes_[bi][lean_idle_[bi]] + wbytes_[bi][bq];
      lean_idle_[bi] = bq;
      need[bi] = need_of(bi, bq);
    }
  }

  // Line 8: per operator in program order, the fastest plan that fits the active memory (the
  // op's own idle weights are already resident when the active plan equals the idle one). With
  // `with_setup`, each plan is priced with its setup from the operator's idle layout: a plan that
  // copies its weights to many cores is fast once set up, but receiving the copies can cost more
  // than they save. Returns the total, setup included, or infinity when an operator fits no plan
  // (a DoesNotFit error on the first step: `first_step_idle` is then given).
  double choose(bool with_setup, const std::vector<std::size_t>& idle, Bytes m_act, const Bytes* first_step_idle,
                std::vector<std::size_t>& a) {
    double total = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      double best_t = kInf;
      bool found = false;
      for (std::size_t q = 0; q < searched_[i]; ++q) {
        const plan::Plan& p = fronts_[i][q];
        if (p.weights_striped) continue;
        if (active_bytes(i, q, idle[i]) > m_act) continue;
        double t = p.cost.total_cycles - p.cost.input_cycles + input_price(i, q, a);
        if (with_setup) t += setup_price(i, idle[i], q);
        if (t < best_t) { best_t = t; a[i] = q; found = true; }
      }
      if (!found) {
        if (first_step_idle) {
          Bytes need = std::numeric_limits<Bytes>::max();
          for (std::size_t q = 0; q < searched_[i]; ++q) need = std::min(need, fronts_[i][q].cost.memory_bytes);
          does_not_fit(w_, w_.ops()[i], need, m_act, "t10",
                       fmt::format("{} bytes hold every operator's idle weights and {} bytes live activations",
                                   *first_step_idle, live_));
        }
        return kInf;
      }
      total += with_setup ? best_t : best_t + setup_price(i, idle[i], a[i]);
    }
    return total;
  }

  // Lines 9-15: the idle-plan change that saves the most setup time per added idle byte, applied
  // to its operator and every identical one (the layers of a model: same plans, same trade).
  // False when no change saves anything or the best one does not fit.
  bool grow_idle(std::vector<std::size_t>& idle, Bytes& idle_bytes, const std::vector<std::size_t>& act) {
    double best_ratio = 0;
    std::size_t bo = n_, bq = 0;
    Bytes bdelta = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      if (!has_weights(w_.ops()[i], w_)) continue;
      const double cur = setup_price(i, idle[i], act[i]);
      if (cur <= 0) continue;
      const Bytes cur_mem = wbytes_[i][idle[i]];
      for (std::size_t q = 0; q < searched_[i]; ++q) {
        const Bytes mem = wbytes_[i][q];
        if (mem < cur_mem || q == idle[i] || fronts_[i][q].weights_striped) continue;
        const double saved = cur - setup_price(i, q, act[i]);
        // A layout no bigger than the current idle one that saves setup is free: take it first.
        const double ratio = saved / static_cast<double>(std::max<Bytes>(1, mem - cur_mem));
        if (saved > 0 && ratio > best_ratio) { best_ratio = ratio; bo = i; bq = q; bdelta = mem - cur_mem; }
      }
    }
    if (bo == n_ || idle_bytes + bdelta + live_ > sram_) return false;
    // idle[bo] is read as it changes: an identical operator after bo moves only if its idle plan
    // is already bq (as the search has always done; moving them all is a different trajectory).
    for (std::size_t i = 0; i < n_; ++i)
      if (sigs_[i] == sigs_[bo] && idle[i] == idle[bo] && idle_bytes + wbytes_[i][bq] - wbytes_[i][idle[i]] + live_ <= sram_) {
        idle_bytes += wbytes_[i][bq] - wbytes_[i][idle[i]];
        idle[i] = bq;
      }
    return true;
  }

  void keep(bool with_setup, double t, Bytes idle_bytes, const std::vector<std::size_t>& idle,
            const std::vector<std::size_t>& act) {
    State& b = best_[with_setup ? 1 : 0];
    if (t < b.t) b = State{t, idle_bytes, idle, act};
  }

  // Operator i's time with plan q: compute and shifts, its inputs gathered from the plans `a`
  // gives its producers, and its weights set up from its idle layout.
  double own_price(std::size_t i, std::size_t q, const std::vector<std::size_t>& idle, const std::vector<std::size_t>& a) {
    const plan::Plan& p = fronts_[i][q];
    return p.cost.total_cycles - p.cost.input_cycles + input_price(i, q, a) + setup_price(i, idle[i], q);
  }

  // The operators a change of operator i's plan touches: i, the operators that may follow it
  // (and those that follow them), and every reader of these.
  void touched_by(std::size_t i) {
    chain_.assign(1, i);
    for (std::size_t c = 0; c < chain_.size(); ++c)
      for (std::size_t j : readers_[chain_[c]])
        if (fol_.producer[j] == static_cast<int>(chain_[c]) && std::find(chain_.begin(), chain_.end(), j) == chain_.end())
          chain_.push_back(j);
    touched_ = chain_;
    for (std::size_t h : chain_)
      for (std::size_t j : readers_[h])
        if (std::find(touched_.begin(), touched_.end(), j) == touched_.end()) touched_.push_back(j);
  }

  double touched_price(const std::vector<std::size_t>& idle, const std::vector<std::size_t>& a) {
    double t = 0;
    for (std::size_t u : touched_) t += own_price(u, a[u], idle, a);
    return t;
  }

  // One pass of looked_ahead(); true when a plan changed. Operator i takes plan q and its
  // followers the plans in q's layout (where they fit); priced over every operator that touches.
  bool revisit(const std::vector<std::size_t>& idle, Bytes m_act, std::vector<std::size_t>& a) {
    bool changed = false;
    for (std::size_t i = 0; i < n_; ++i) {
      if (fol_.producer[i] >= 0) continue;  // moved with its producer
      touched_by(i);
      saved_.clear();
      for (std::size_t u : touched_) saved_.push_back(a[u]);
      // a change must gain more than rounding, so that equal choices do not trade places
      double best_t = touched_price(idle, a) * (1 - 1e-9);
      bool moved = false;
      for (std::size_t q = 0; q < fronts_[i].size(); ++q) {
        if (fronts_[i][q].weights_striped || active_bytes(i, q, idle[i]) > m_act) continue;
        a[i] = q;
        for (std::size_t c = 1; c < chain_.size(); ++c) {
          const std::size_t j = chain_[c];
          const std::size_t h = static_cast<std::size_t>(fol_.producer[j]);
          const int k = fol_.plan_for[j][a[h]];
          a[j] = k >= 0 && active_bytes(j, static_cast<std::size_t>(k), idle[j]) <= m_act ? static_cast<std::size_t>(k)
                                                                                          : saved_[c];
        }
        // Gathers are what costs to price: a move that loses even with the others' gathers and
        // setup free is not priced further (prices are never negative: non-negative weights on
        // non-negative features, or the oracle's replayed cycles), so this prunes nothing that
        // could win.
        double bound = own_price(i, q, idle, a);
        for (std::size_t x = 1; x < touched_.size(); ++x) {
          const plan::Cost& c = fronts_[touched_[x]][a[touched_[x]]].cost;
          bound += c.total_cycles - c.input_cycles;
        }
        if (bound >= best_t) continue;
        if (const double t = touched_price(idle, a); t < best_t) {
          best_t = t;
          best_a_.clear();
          for (std::size_t u : touched_) best_a_.push_back(a[u]);
          moved = true;
        }
      }
      const std::vector<std::size_t>& keep = moved ? best_a_ : saved_;
      for (std::size_t x = 0; x < touched_.size(); ++x) {
        changed = changed || keep[x] != saved_[x];
        a[touched_[x]] = keep[x];
      }
    }
    return changed;
  }

  // Setup prices by (operator, idle candidate, active candidate), and input prices by (operator,
  // candidate, its producers' active candidates): the loops ask for the same few at every step.
  double setup_price(std::size_t i, std::size_t from, std::size_t to) {
    auto [it, fresh] = setup_memo_[i].try_emplace(from * fronts_[i].size() + to, 0.0);
    if (fresh) it->second = ex_.setup_price(i, fronts_[i][from], fronts_[i][to]);
    return it->second;
  }
  double input_price(std::size_t i, std::size_t q, const std::vector<std::size_t>& a) {
    std::uint64_t key = q;  // mixed radix: each index is below its front's size
    for (std::size_t p : producers_[i]) key = key * fronts_[p].size() + a[p];
    auto [it, fresh] = input_memo_[i].try_emplace(key, 0.0);
    if (fresh) it->second = ex_.input_price(i, ex_.input(fronts_[i][q], i, a, fronts_));
    return it->second;
  }

  const ir::Workload& w_;
  const std::vector<std::string>& sigs_;
  const std::vector<std::vector<plan::Plan>>& fronts_;
  const Followers& fol_;
  const std::vector<std::size_t>& searched_;  // fol_.searched: the candidates the search sees per operator
  Exchanges& ex_;
  Bytes sram_, live_;
  std::size_t n_;
  std::vector<std::unordered_map<std::size_t, double>> setup_memo_;
  std::vector<std::unordered_map<std::uint64_t, double>> input_memo_;
  std::vector<std::vector<std::size_t>> producers_;
  std::vector<std::vector<std::size_t>> readers_;  // readers_of(w_)
  std::vector<std::size_t> touched_, chain_;        // revisit()'s scratch
  std::vector<std::size_t> saved_, best_a_;
  std::vector<std::vector<Bytes>> wbytes_;  // each candidate's weight bytes per core
  std::vector<std::size_t> lean_idle_;
  Bytes lean_bytes_ = 0;
  std::array<State, 2> best_;  // [0] the paper's choice, [1] with setup
};

// The schedule of a search's choice: layout following for element-wise and row-wise operators
// (in program order, so a chain of them keeps one layout), then every operator priced as the
// program will run it. Works on a copy of the fronts, so that several choices can be finished.
//
// Following saves the operator's input exchange but hands its layout on to its readers. With
// Follow::Priced an operator follows unless it and its readers are predicted faster with the
// search's plan (a choice made in program order, with the readers' plans as the search left
// them, so it cannot see a chain of followers that only pays off as a whole).
Schedule finish_t10(const ir::Workload& w, const Options& o, Exchanges& exchanges,
                    std::vector<std::vector<plan::Plan>> fronts, std::vector<std::size_t> act,
                    std::vector<std::size_t> idle, Follow follow, Bytes spare) {
  const std::size_t n = w.ops().size();
  for (auto& f : fronts) f.reserve(f.size() + 1);  // following adds a plan: none moves (the memo keys by address)
  exchanges.forget_plans();  // plans priced by address: these are copies
  const std::vector<std::vector<std::size_t>> readers =
      follow == Follow::Priced ? readers_of(w) : std::vector<std::vector<std::size_t>>{};
  auto priced = [&](std::size_t k) {
    const plan::Plan& a = fronts[k][act[k]];
    const OpSchedule os = exchanges.finish(k, a, fronts[k][idle[k]], exchanges.input(a, k, act, fronts));
    return os.active.cost.total_cycles + os.setup_cycles;
  };
  auto with_readers = [&](std::size_t i) {
    double t = priced(i);
    for (std::size_t j : readers[i]) t += priced(j);
    return t;
  };
  std::vector<plan::Plan> chosen;
  for (std::size_t i = 0; i < n; ++i) {
    auto f = follow == Follow::None ? std::nullopt : follow_producer(i, w, chosen, o.target);
    if (f) {
      const double searched = follow == Follow::Priced ? with_readers(i) : 0;
      const std::size_t act0 = act[i], idle0 = idle[i];
      // Weights (a bias, layernorm's gamma and beta) rest in the followed plan's layout when
      // the room the search left per core takes the growth (`spare`, used up in program
      // order); else they keep their idle layout and the setup phase lays them out for the
      // followed plan. On vipu-2 NeRF's bias adds followed a matmul over both chips and set
      // their 256-element bias up from 256 cores to 2,736: 3,400 cycles each, 70% of the add.
      fronts[i].push_back(*f);
      act[i] = fronts[i].size() - 1;
      const Bytes spare0 = spare;
      if (!has_weights(w.ops()[i], w)) {
        idle[i] = act[i];
      } else {
        const Bytes was = weight_bytes(fronts[i][idle[i]], w), now = weight_bytes(*f, w);
        const Bytes growth = now > was ? now - was : 0;
        if (growth <= spare) {
          idle[i] = act[i];
          spare -= growth;
        }
      }
      if (follow == Follow::Priced && searched < with_readers(i)) {  // the search's plan stays (ties follow)
        act[i] = act0;
        idle[i] = idle0;
        spare = spare0;
        // The memo keeps prices under the popped plan's address; nothing takes that address
        // again (only a push to this front could, and i is past), so they are never read.
        fronts[i].pop_back();
      }
    }
    chosen.push_back(fronts[i][act[i]]);
  }
  Schedule s;
  for (std::size_t i = 0; i < n; ++i) {
    const plan::Plan& a = fronts[i][act[i]];
    const Gather input = exchanges.input(a, i, act, fronts);
    OpSchedule os = exchanges.finish(i, a, fronts[i][idle[i]], input);
    os.pareto_size = fronts[i].size();
    s.predicted_cycles += os.active.cost.total_cycles + os.setup_cycles;
    s.ops.push_back(std::move(os));
  }
  exchanges.forget_plans();  // the copies go
  return s;
}

// The plans T10's search chooses among for one operator: the (time, memory) front, the fastest
// of the weight-leanest plans (the idle plan minimises weight memory, which the front may miss),
// and for an operator with weights, its weights striped over all cores (an idle layout only).
std::vector<plan::Plan> t10_front(std::vector<plan::Plan> all, const ir::Operator& op, const ir::Workload& w,
                                  std::int64_t cores) {
  if (all.empty()) return all;
  const plan::Plan* lean = nullptr;
  for (const auto& p : all)
    if (!lean || weight_bytes(p, w) < weight_bytes(*lean, w) ||
        (weight_bytes(p, w) == weight_bytes(*lean, w) && p.cost.total_cycles < lean->cost.total_cycles))
      lean = &p;
  plan::Plan keep = *lean;
  auto front = plan::pareto_front(std::move(all));
  bool present = false;
  for (const auto& p : front) present = present || p.same_as(keep);
  if (!present) front.push_back(std::move(keep));
  if (has_weights(op, w)) {
    plan::Plan striped = striped_weights(front.front(), w, cores);
    striped.cost.total_cycles = std::numeric_limits<double>::infinity();  // never an active plan
    front.push_back(std::move(striped));
  }
  return front;
}

// T10's search (Algorithm 1) steered by the target's cost model.
// `keep_candidates`: another search of w follows (schedule_t10_candidates) and takes the
// operators' candidate plans from the memo instead of enumerating them again.
std::vector<Schedule> search_t10(const ir::Workload& w, const Options& o, std::shared_ptr<ExchangeMemo>& memo,
                    bool keep_candidates = false) {
  const sim::Config& cfg = *o.target.config;
  Schedule s;
  s.planner = "t10";
  const std::vector<std::string> sigs = signatures(w);
  Exchanges exchanges(w, o, memo);
  memo = exchanges.memo();
  // Per operator, the front of its plans made of first factors (plan::first_factors: what the
  // enumeration offered before it kept second factors), then the rest of the front of all its
  // plans: the search runs on both sets (below).
  auto fronts = plans_per_op(w, sigs, o.fronts, front_scope(o, "t10"), [&](const ir::Operator& op, const std::string& key) {
    std::vector<plan::Plan> all = exchanges.candidates(op, key, keep_candidates, [&] {
      return plan::enumerate_plans(op, w, o.target);
    });
    for (auto& p : all) plan::price(p.cost, o.target.model_for(op));
    std::vector<plan::Plan> first;
    for (const auto& p : all)
      if (plan::first_factors(p, o.target.cores)) first.push_back(p);
    std::vector<plan::Plan> front = t10_front(std::move(first), op, w, o.target.cores);
    for (auto& p : t10_front(std::move(all), op, w, o.target.cores)) {
      bool present = false;
      for (const auto& q : front) present = present || q.same_as(p);
      if (!present) front.push_back(std::move(p));
    }
    return front;
  });
  // T10 reserves the shift buffer on every core for the whole program.
  const Bytes reserved = o.reserve_bytes + o.target.shift_buffer_bytes;
  if (reserved >= cfg.chip.core.sram_bytes)
    throw DoesNotFit(fmt::format("workload '{}' does not fit (t10 planner): the shift buffer and reserve take {} of {} bytes per core",
                            w.name, reserved, cfg.chip.core.sram_bytes));
  const Bytes sram = cfg.chip.core.sram_bytes - reserved;
  const Bytes live = live_activation_bytes(w, o.target.cores);
  // The paper's reconciliation (fastest plans, setup added after) first: its history is the
  // schedule's. Steered by the choice with setup alone, it can settle on the plans cheapest to
  // set up from stripes and never reach the fast ones (ResNet-18 27% slower, calibrated), and
  // steered the paper's way alone it keeps weights copied to many cores whose setup costs more
  // than the copies save (BERT-large); so both run, and the best state of each choice is finished.
  //
  // And the search runs twice: on all the fronts, and on their plans of first factors alone. A
  // greedy search given more plans can end worse: with second factors, BERT-large's calibrated
  // search ended 0.7% slower predicted (1.6% simulated) while OPT-13B's found plans 35% faster.
  // Every best state is finished (layout following changes their predictions) and returned,
  // the fastest predicted first (on a tie the one found first: all fronts, the paper's choice):
  // the compiler lowers the first that fits its memory check.
  const std::size_t n = w.ops().size();
  std::vector<std::vector<plan::Plan>> firsts(n);
  bool differ = false;
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& p : fronts[i])
      if (plan::first_factors(p, o.target.cores)) firsts[i].push_back(p);
    if (firsts[i].empty()) firsts[i] = fronts[i];
    differ = differ || firsts[i].size() != fronts[i].size();
  }
  std::vector<Schedule> out;
  // Per core, what a state leaves beside its idle weights, the live activations and its largest
  // active plan (counted whole: its own weights as a second copy), for following's weights.
  auto spare_of = [&](const std::vector<std::vector<plan::Plan>>& f, const Reconciler::State& st) -> Bytes {
    Bytes active = 0;
    for (std::size_t i = 0; i < n; ++i) active = std::max(active, f[i][st.act[i]].cost.memory_bytes);
    const Bytes used = st.idle_bytes + live + active;
    return used < sram ? sram - used : 0;
  };
  // Layout following seen by the search (not by the paper's Algorithm 1, nor without following):
  // an operator that may follow gets a plan in each candidate layout of its producer, and the
  // look-ahead moves it with its producer.
  const bool look_ahead = o.look_ahead && !o.paper_reconciliation && o.layout_following != Follow::None;
  auto search = [&](std::vector<std::vector<plan::Plan>> f, std::vector<Schedule::Step>* history) {
    const Followers followers = look_ahead ? add_follower_plans(w, f, o.target, [&](std::size_t j, plan::Plan& p) {
      exchanges.shift_terms(w.ops()[j], p, p.cost.terms);
      plan::price(p.cost, o.target.model_for(w.ops()[j]));
    }) : no_followers(f);
    Reconciler r(w, sigs, f, followers, exchanges, sram, live);
    r.run(false, !o.paper_reconciliation, history);
    if (!o.paper_reconciliation) r.run(true, true, nullptr);
    // The search's two best states, then the same looked ahead (as candidates beside them: the
    // look-ahead prices the readers as the search does, before following)
    std::array<Reconciler::State, 2> ahead;
    if (look_ahead) ahead = r.looked_ahead();
    const Reconciler::State* best[4] = {&r.best(false), &r.best(true), &ahead[0], &ahead[1]};
    static const char* const kChoice[4] = {"fastest", "with-setup", "fastest, looked ahead", "with-setup, looked ahead"};
    for (std::size_t k = 0; k < 4; ++k) {
      // the choice with setup has no state with --paper-reconciliation, and one that agrees is a copy
      bool copy = false;
      for (std::size_t e = 0; e < k; ++e)
        copy = copy || (best[k]->act == best[e]->act && best[k]->idle == best[e]->idle);
      if (best[k]->t == std::numeric_limits<double>::infinity() || copy) continue;
      // Following everywhere, where priced, or nowhere: the fastest predicted (ties: following
      // more). On ResNet-18 following everywhere was 9% slower simulated than following nowhere
      // (a ReLU or an add taking a convolution's output layout, which the next convolution
      // re-lays out); on NeRF following only where priced was 9% slower than everywhere (a
      // chain of followers pays off as a whole); BERT-large, ViT-B and OPT-13B are faster
      // following everywhere than nowhere, and BERT-large faster still where priced.
      Schedule sch;
      bool first = true;
      for (const Follow mode : {Follow::All, Follow::Priced, Follow::None}) {
        if (o.layout_following != Follow::Auto && o.layout_following != mode) continue;
        Schedule other = finish_t10(w, o, exchanges, f, best[k]->act, best[k]->idle, mode, spare_of(f, *best[k]));
        other.layout_following = follow_name(mode);
        if (first || other.predicted_cycles < sch.predicted_cycles) sch = std::move(other);
        first = false;
      }
      sch.planner = s.planner;
      sch.plan_choice = kChoice[k];
      // the state's idle weights, and what followers' weights resting in their followed layout add
      sch.idle_bytes_per_core = 0;
      for (const OpSchedule& os : sch.ops) sch.idle_bytes_per_core += weight_bytes(os.idle, w);
      sch.active_bytes_per_core = sram > sch.idle_bytes_per_core + live ? sram - sch.idle_bytes_per_core - live : 0;
      auto at = out.begin();
      while (at != out.end() && at->predicted_cycles <= sch.predicted_cycles) ++at;
      out.insert(at, std::move(sch));
    }
  };
  search(fronts, &s.history);
  if (differ) {
    try {
      search(firsts, nullptr);
    } catch (const DoesNotFit&) {
      // the first factors' leanest layouts do not fit where all plans' do: that search is out
    }
  }
  for (Schedule& sch : out) sch.history = s.history;
  return out;
}

// A T10 schedule of given plans, priced (schedule_fixed), sharing `memo` with other pricings.
Schedule fixed(const ir::Workload& w, const Options& o, const std::vector<plan::Plan>& active,
               const std::vector<plan::Plan>& idle, std::shared_ptr<ExchangeMemo>& memo) {
  const std::size_t n = w.ops().size();
  if (active.size() != n || idle.size() != n)
    throw Error(fmt::format("workload '{}': a fixed schedule needs an active and an idle plan for each of its {} operators", w.name, n));
  Schedule s;
  s.planner = "t10";
  std::vector<std::vector<plan::Plan>> fronts;
  for (const auto& p : active) fronts.push_back({p});
  const std::vector<std::size_t> act(n, 0);
  Exchanges exchanges(w, o, memo);
  memo = exchanges.memo();
  for (std::size_t i = 0; i < n; ++i) {
    const Gather input = exchanges.input(active[i], i, act, fronts);
    OpSchedule os = exchanges.finish(i, active[i], idle[i], input);
    os.pareto_size = 1;
    s.predicted_cycles += os.active.cost.total_cycles + os.setup_cycles;
    s.idle_bytes_per_core += weight_bytes(idle[i], w);
    s.ops.push_back(std::move(os));
  }
  s.history.push_back({s.idle_bytes_per_core, s.predicted_cycles});
  return s;
}

}  // namespace

// The search is greedy, and its layout following comes after the plan choices it affects: with a
// calibrated model steering it, it can end below the plans the analytical model steers it to
// (NeRF on the mesh). So both searches are candidates, the analytically steered one priced by the
// calibrated model, fastest predicted first.
std::vector<Schedule> schedule_t10_candidates(const ir::Workload& w, const Options& o) {
  // the three pricings below share what does not depend on the model, and with o.memo so do
  // other calls on this workload and target
  std::shared_ptr<ExchangeMemo> memo = o.memo ? std::static_pointer_cast<ExchangeMemo>(o.memo->state) : nullptr;
  const bool calibrated = o.target.model && o.target.model->calibrated();
  std::vector<Schedule> out = search_t10(w, o, memo, calibrated);
  if (o.memo) o.memo->state = memo;
  if (!calibrated) return out;
  for (Schedule& c : out) c.steered_by = "calibrated";
  Options plain = o;
  plain.target.model = nullptr;
  Schedule a = std::move(search_t10(w, plain, memo).front());
  std::vector<plan::Plan> act, idle;
  for (const auto& op : a.ops) { act.push_back(op.active); idle.push_back(op.idle); }
  const Schedule priced = fixed(w, o, act, idle, memo);
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const std::size_t pareto = a.ops[i].pareto_size;
    a.ops[i] = priced.ops[i];
    a.ops[i].pareto_size = pareto;
  }
  a.predicted_cycles = priced.predicted_cycles;
  a.steered_by = "analytical";
  auto at = out.begin();
  while (at != out.end() && at->predicted_cycles <= a.predicted_cycles) ++at;
  out.insert(at, std::move(a));
  return out;
}

Schedule schedule_t10(const ir::Workload& w, const Options& o) {
  return std::move(schedule_t10_candidates(w, o).front());
}

Schedule schedule_fixed(const ir::Workload& w, const Options& o, const std::vector<plan::Plan>& active,
                        const std::vector<plan::Plan>& idle) {
  std::shared_ptr<ExchangeMemo> memo;
  return fixed(w, o, active, idle, memo);
}

Schedule schedule_vgm(const ir::Workload& w, const Options& o) {
  const sim::Config& cfg = *o.target.config;
  Schedule s;
  s.planner = "vgm";
  const Bytes sram = cfg.chip.core.sram_bytes - o.reserve_bytes;
  // Every weight and every live activation is striped over all cores' share of the VGM.
  Bytes vgm = live_activation_bytes(w, o.target.cores);
  for (const auto& t : w.tensors())
    if (t.role == ir::TensorRole::Weight) vgm += lower::stripe_bytes(t, static_cast<std::size_t>(o.target.cores));
  if (vgm > sram)
    throw DoesNotFit(fmt::format("workload '{}' does not fit (vgm planner): the virtual global memory needs {} bytes per core "
                            "but a core has {}; short by {} bytes per core", w.name, vgm, sram, vgm - sram));
  const Bytes local = sram - vgm;
  s.idle_bytes_per_core = vgm;
  s.active_bytes_per_core = local;
  const auto fronts = plans_per_op(w, signatures(w), o.fronts, front_scope(o, "vgm"), [&](const ir::Operator& op, const std::string&) {
    auto plans = plan::enumerate_plans(op, w, o.target, /*allow_rotation=*/false);
    for (auto& p : plans) {
      p.cost.shift_cycles = vgm_transfer_cycles(p, cfg);
      p.cost.total_cycles = p.cost.compute_cycles + p.cost.shift_cycles;
    }
    return plan::pareto_front(std::move(plans));
  });
  for (std::size_t i = 0; i < w.ops().size(); ++i) {
    const ir::Operator& op = w.ops()[i];
    const auto& front = fronts[i];
    const plan::Plan* pick = nullptr;
    for (const auto& p : front)
      if (p.cost.memory_bytes <= local) { pick = &p; break; }
    // Nothing fits whole: the fastest plan that fits when its sub-operator runs in rounds along a
    // reduction axis (load a slice, compute, accumulate; store once).
    plan::Plan rounded;
    if (!pick) {
      const auto red = op.expr.kind == ir::ExprKind::Contraction ? op.expr.reduction_axes() : std::vector<std::string>{};
      for (const auto& p : front)
        for (const auto& axis : red) {
          const int a = static_cast<int>(std::find(p.axes.begin(), p.axes.end(), axis) - p.axes.begin());
          for (std::int64_t r = 2; r <= p.len[static_cast<std::size_t>(a)]; r *= 2) {
            auto q = plan::with_rounds(p, op, w, a, r, o.target);
            // Every round loads its slices from the VGM: the whole operands still cross the
            // fabric once, in `r` transfers (the per-round latency is in input_cycles).
            q.cost.shift_cycles = vgm_transfer_cycles(p, cfg);
            q.cost.total_cycles = q.cost.compute_cycles + q.cost.shift_cycles + q.cost.input_cycles;
            if (q.cost.memory_bytes <= local && (!pick || q.cost.total_cycles < pick->cost.total_cycles)) {
              rounded = q;
              pick = &rounded;
            }
            if (q.cost.memory_bytes <= local) break;
          }
        }
    }
    if (!pick) {
      Bytes need = std::numeric_limits<Bytes>::max();
      for (const auto& p : front) need = std::min(need, p.cost.memory_bytes);
      does_not_fit(w, op, need, local, "vgm", fmt::format("the VGM reserves {} bytes", vgm));
    }
    OpSchedule os;
    os.active = *pick;
    os.idle = *pick;
    os.pareto_size = front.size();
    s.predicted_cycles += pick->cost.total_cycles;
    s.ops.push_back(std::move(os));
  }
  s.history.push_back({vgm, s.predicted_cycles});
  return s;
}

namespace {

// What the collage's choice prices, per operator: its T10 figures as the T10 schedule has them;
// its VGM plan's compute, its operands moved from stripes and back (the cost model's gather
// features, as for T10's re-layouts: the program moves them the same way) and the barrier every
// operator ends with; and, for a T10 operator, what reading its activations from stripes (a VGM
// producer) costs over reading them from its producers' layouts.
CollagePrices collage_prices(const ir::Workload& w, const Options& o, const Schedule& t10, const Schedule& vgm) {
  Exchanges ex(w, o);
  CollagePrices c;
  for (std::size_t i = 0; i < w.ops().size(); ++i) {
    const plan::Plan& tp = t10.ops[i].active;
    const plan::Plan& vp = vgm.ops[i].active;
    c.t10.push_back(tp.cost.total_cycles + t10.ops[i].setup_cycles);
    using P = Exchanges::Parts;
    c.vgm.push_back(ex.vgm_price(i, vp) + vp.cost.terms.barrier_cycles);
    c.restripe.push_back(std::max(0.0, ex.striped_price(i, tp, P::ActivationsIn) - tp.cost.input_cycles));
    c.store.push_back(ex.striped_price(i, tp, P::Output));
  }
  return c;
}

// An operator that reads what `prev` produced.
bool reads(const ir::Workload& w, std::size_t i, std::size_t prev) {
  for (const auto& in : w.ops()[i].expr.inputs)
    if (w.producer(in.tensor) == static_cast<int>(prev)) return true;
  return false;
}

// The chain DP (collage_choice) sees only the edge from the previous operator; an operator reading two
// producers (attention scores read q and k) pays for the other edge too. Priced over every edge,
// an operator moves to the other backend while that lowers the total (passes in execution order
// until none does; each pass is O(operators x edges), and every move lowers the price, so it
// ends). A mix is kept only if it is priced at least kMixMargin under the better of all-T10 and
// all-VGM: a switch of backends adds re-layouts the model prices within a few percent, and
// BERT-large's one mixed operator, priced 102 cycles (0.002%) under all-T10, simulated 70
// cycles over it (2026-11-28).
constexpr double kMixMargin = 0.005;

void improve_by_flips(const ir::Workload& w, const CollagePrices& c, std::vector<bool>& use_vgm) {
  const std::size_t n = use_vgm.size();
  double price = collage_price(w, c, use_vgm);
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t i = 0; i < n; ++i) {
      use_vgm[i] = !use_vgm[i];
      const double flipped = collage_price(w, c, use_vgm);
      if (flipped < price) {
        price = flipped;
        moved = true;
      } else {
        use_vgm[i] = !use_vgm[i];
      }
    }
  }
  const double t10 = collage_price(w, c, std::vector<bool>(n, false)), vgm = collage_price(w, c, std::vector<bool>(n, true));
  if (price > (1 - kMixMargin) * std::min(t10, vgm)) use_vgm.assign(n, vgm < t10);
}

}  // namespace

// The price of an assignment (true: VGM) over every edge: a T10 operator reading from a VGM one
// reads stripes; a T10 operator read by a VGM one stores its output to stripes (lowering does).
double collage_price(const ir::Workload& w, const CollagePrices& c, const std::vector<bool>& use_vgm) {
  double total = 0;
  std::vector<bool> stored(use_vgm.size(), false);
  for (std::size_t i = 0; i < use_vgm.size(); ++i) {
    total += use_vgm[i] ? c.vgm[i] : c.t10[i];
    bool restriped = false;
    for (const auto& in : w.ops()[i].expr.inputs) {
      const int p = w.producer(in.tensor);
      if (p < 0) continue;
      const auto q = static_cast<std::size_t>(p);
      if (!use_vgm[i] && use_vgm[q] && !restriped) {
        total += c.restripe[i];
        restriped = true;
      }
      if (use_vgm[i] && !use_vgm[q] && !stored[q]) {
        total += c.store[q];
        stored[q] = true;
      }
    }
  }
  return total;
}

std::vector<bool> collage_choice(const ir::Workload& w, const CollagePrices& c) {
  const std::size_t n = c.t10.size();
  // best[i][b]: least price of operators 0..i with operator i on backend b (0 T10, 1 VGM); only
  // the edge from operator i-1 depends on the state, other edges are priced afterwards.
  std::vector<std::array<double, 2>> best(n);
  std::vector<std::array<int, 2>> from(n, {0, 0});
  for (std::size_t i = 0; i < n; ++i)
    for (int b = 0; b < 2; ++b) {
      const double own = b ? c.vgm[i] : c.t10[i];
      if (i == 0) {
        best[i][b] = own;
        continue;
      }
      // switching backends between a producer and its reader: a T10 reader reads stripes, a VGM
      // reader makes its T10 producer store its output to stripes
      const double edge = !reads(w, i, i - 1) ? 0.0 : b ? c.store[i - 1] : c.restripe[i];
      const double same = best[i - 1][b], other = best[i - 1][1 - b] + edge;
      from[i][b] = same <= other ? b : 1 - b;
      best[i][b] = std::min(same, other) + own;
    }
  std::vector<bool> use_vgm(n, false);
  if (n > 0) {
    int b = best[n - 1][1] < best[n - 1][0] ? 1 : 0;
    for (std::size_t i = n; i-- > 0;) {
      use_vgm[i] = b == 1;
      b = from[i][b];
    }
  }
  improve_by_flips(w, c, use_vgm);
  return use_vgm;
}

Schedule schedule_collage(const ir::Workload& w, const Options& o, const Schedule& t10, const Schedule& vgm) {
  const std::size_t n = w.ops().size();
  if (t10.ops.size() != n || vgm.ops.size() != n) throw std::logic_error("schedule_collage: schedules of another workload");
  const CollagePrices c = collage_prices(w, o, t10, vgm);
  const std::vector<bool> use_vgm = collage_choice(w, c);
  Schedule s;
  s.planner = "collage";
  for (std::size_t i = 0; i < n; ++i) {
    OpSchedule os = (use_vgm[i] ? vgm : t10).ops[i];
    os.planner = use_vgm[i] ? "vgm" : "t10";
    s.ops.push_back(std::move(os));
  }
  s.predicted_cycles = collage_price(w, c, use_vgm);
  s.idle_bytes_per_core = std::max(t10.idle_bytes_per_core, vgm.idle_bytes_per_core);
  s.active_bytes_per_core = std::min(t10.active_bytes_per_core, vgm.active_bytes_per_core);
  return s;
}

}  // namespace tessera::schedule
