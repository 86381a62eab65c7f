#include "sim/train/train.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "sim/collective/engines.h"
#include "sim/common/error.h"
#include "sim/core/compute_model.h"
#include "sim/noc/flit_net.h"

namespace tessera::sim {

namespace {

constexpr const char* kModeNames[] = {"nooverlap", "commopt", "compopt", "ace", "ideal"};

// A layer's FLOPs or bytes per pass: at most 1e18, so that its cycles stay far from overflow
// (1e300 FLOPs came out faster than the real table) — a million times GPT-3's training step.
constexpr double kMaxWork = 1e18;
// A layer's parameters, or the bytes of its all-to-all: at most 2^40 (a collective plan of more
// is refused anyway, and 2^62 parameters overflowed the gradient's bytes).
constexpr std::uint64_t kMaxLayerBytes = std::uint64_t{1} << 40;

double non_negative(const JsonReader& r, const std::string& key) {
  const Json& v = r.value(key);
  if (!v.is_number() || v.get<double>() < 0 || !std::isfinite(v.get<double>()) || v.get<double>() > kMaxWork)
    r.fail(key, fmt::format("expected a number from 0 to {:g}", kMaxWork));
  return v.get<double>();
}

std::uint64_t layer_bytes(const JsonReader& r, const std::string& key, std::optional<std::uint64_t> def = {}) {
  const std::uint64_t v = def ? r.u64(key, *def) : r.u64(key);
  if (v > kMaxLayerBytes) r.fail(key, fmt::format("expected at most 2^40 = {}", kMaxLayerBytes));
  return v;
}

LayerWork parse_work(const JsonReader& r) {
  LayerWork w;
  w.flops = non_negative(r, "flops");
  w.bytes = non_negative(r, "bytes");
  r.reject_unknown_keys();
  return w;
}

// Cycles of one part of a layer at compute's share of the NPU.
Cycles roofline(const LayerWork& w, double flops_per_cycle, double bytes_per_cycle) {
  return roofline_cycles(w.flops, w.bytes, flops_per_cycle, bytes_per_cycle);
}

// The smallest size every phase of the hierarchical all-reduce divides into equal messages on
// this system: each dimension's ring splits its share into up to twice its size.
Bytes granule(const SystemConfig& s) {
  Bytes g = 1;
  for (const Dimension& d : s.dimensions)
    if (d.size > 1) g *= 2 * Bytes{d.size};
  return g;
}

Bytes round_up(Bytes x, Bytes m) { return (x + m - 1) / m * m; }

// The gradient of a layer padded so that it splits into chunks and messages.
Bytes padded_gradient(Bytes bytes, Bytes chunk, Bytes g) {
  if (bytes == 0) return 0;
  const Bytes small = round_up(bytes, g);
  return chunk == 0 || small <= chunk ? small : round_up(bytes, std::lcm(chunk, g));  // chunk 0: one chunk
}


// One NPU's two iterations as steps, the same on every NPU (data parallel): compute, issue a
// collective, wait for one. Collectives are numbered in the order they are issued (ACE admits
// chunks in that order).
struct TrainStep {
  enum Kind : std::uint8_t { Compute, Issue, Wait, EndOfIteration1 } kind;
  Cycles cycles = 0;  // compute: at compute's share of the NPU
  Cycles full = 0;    // compute: with all of the NPU
  std::uint32_t collective = 0;
  std::int32_t layer = -1;
  enum Mark : std::uint8_t { None, BackwardStart, BackwardEnd, ForwardStart, ForwardEnd } mark = None;
};
struct TrainProgram {
  std::vector<TrainStep> steps;
  std::vector<CollectiveSpec> collectives;
  std::vector<std::int32_t> allreduce_layer;  // per collective: the layer whose gradient it is, or -1
};

// A part of a layer: its cycles at compute's share and with all of the NPU.
struct Work {
  Cycles shared = 0, full = 0;
  Work operator+(const Work& o) const { return {shared + o.shared, full + o.full}; }
};

TrainProgram training_program(const LayerTable& table, const TrainSpec& spec, const TrainResult& r,
                              const std::vector<Work>& fwd, const std::vector<Work>& wg,
                              const std::vector<Work>& ig, std::uint32_t chips) {
  TrainProgram p;
  const std::size_t n = table.layers.size();
  const auto add = [&](CollectiveOp op, Bytes bytes, std::int32_t layer) {
    CollectiveSpec s;
    s.op = op;
    s.algorithm = op == CollectiveOp::AllToAll ? CollectiveAlgorithm::Direct : CollectiveAlgorithm::Hierarchical;
    s.bytes = bytes;
    s.chunk_bytes = spec.chunk_bytes;
    s.chunks_in_flight = spec.chunks_in_flight;
    p.collectives.push_back(s);
    p.allreduce_layer.push_back(op == CollectiveOp::AllReduce ? layer : -1);
    return static_cast<std::uint32_t>(p.collectives.size() - 1);
  };
  const auto compute = [&](Work w, std::int32_t layer, TrainStep::Mark mark) {
    p.steps.push_back({TrainStep::Compute, w.shared, w.full, 0, layer, mark});
  };
  const auto issue_and_wait = [&](std::uint32_t k) {
    p.steps.push_back({TrainStep::Issue, 0, 0, k});
    p.steps.push_back({TrainStep::Wait, 0, 0, k});
  };
  // an all-to-all after the forward pass of a layer that has one, and of its gradient before the
  // layer's backward pass (model-parallel embeddings)
  const auto exchange = [&](std::size_t l) {
    const Bytes b = table.layers[l].alltoall_bytes;
    if (b) issue_and_wait(add(CollectiveOp::AllToAll, padded_gradient(b, spec.chunk_bytes, chips), -1));
  };
  std::vector<std::uint32_t> ar(n, ~0u);
  for (std::size_t l = 0; l < n; ++l) {
    compute(fwd[l], static_cast<std::int32_t>(l), TrainStep::None);
    exchange(l);
  }
  for (std::size_t l = n; l-- > 0;) {
    const auto L = static_cast<std::int32_t>(l);
    p.steps.push_back({TrainStep::Compute, 0, 0, 0, L, TrainStep::BackwardStart});
    exchange(l);
    compute(wg[l], L, TrainStep::None);
    if (r.layers[l].gradient_bytes && spec.shares.overlap) {
      ar[l] = add(CollectiveOp::AllReduce, r.layers[l].gradient_bytes, L);
      p.steps.push_back({TrainStep::Issue, 0, 0, ar[l]});
    }
    compute(ig[l], L, TrainStep::BackwardEnd);
  }
  p.steps.push_back({TrainStep::EndOfIteration1});
  if (!spec.shares.overlap) {  // one communication kernel after the backward pass; compute waits for it
    for (std::size_t l = n; l-- > 0;)
      if (r.layers[l].gradient_bytes) {
        ar[l] = add(CollectiveOp::AllReduce, r.layers[l].gradient_bytes, static_cast<std::int32_t>(l));
        p.steps.push_back({TrainStep::Issue, 0, 0, ar[l]});
      }
    for (std::size_t l = 0; l < n; ++l)
      if (ar[l] != ~0u) p.steps.push_back({TrainStep::Wait, 0, 0, ar[l]});
  }
  for (std::size_t l = 0; l < n; ++l) {
    if (ar[l] != ~0u) p.steps.push_back({TrainStep::Wait, 0, 0, ar[l]});
    p.steps.push_back({TrainStep::Compute, 0, 0, 0, static_cast<std::int32_t>(l), TrainStep::ForwardStart});
    compute(fwd[l], static_cast<std::int32_t>(l), TrainStep::ForwardEnd);
    exchange(l);
  }
  // The second backward pass. With shares held in flight its compute runs beside its own
  // all-reduces, so they are issued as in the first (and run; per-layer timings stay the first
  // iteration's); with static shares they change nothing measured and are left out.
  const bool second_allreduces = spec.hold == ShareHold::InFlight && spec.shares.overlap;
  for (std::size_t l = n; l-- > 0;) {
    exchange(l);
    if (!second_allreduces || !r.layers[l].gradient_bytes) {
      compute(wg[l] + ig[l], static_cast<std::int32_t>(l), TrainStep::None);
      continue;
    }
    compute(wg[l], static_cast<std::int32_t>(l), TrainStep::None);
    p.steps.push_back({TrainStep::Issue, 0, 0, add(CollectiveOp::AllReduce, r.layers[l].gradient_bytes, -1)});
    compute(ig[l], static_cast<std::int32_t>(l), TrainStep::None);
  }
  return p;
}

// The second iteration's compute with all of the NPU.
Cycles second_iteration_alone(const TrainProgram& prog) {
  Cycles sum = 0;
  bool second = false;
  for (const TrainStep& s : prog.steps) {
    if (s.kind == TrainStep::EndOfIteration1) second = true;
    if (second && s.kind == TrainStep::Compute) sum += s.full;
  }
  return sum;
}

// Runs the steps: compute advances the NPU's clock; an issue starts the collective on every
// chip at that cycle (after the network has run up to it); a wait runs the network until every
// chip's part is done.
void run_program(const Config& cfg, const std::string& engine, ShareHold hold, const TrainProgram& prog,
                 TrainResult& r) {
  std::vector<std::pair<CollectiveSpec, Cycles>> issued;  // each when the NPU's steps reach it
  for (const CollectiveSpec& s : prog.collectives) issued.emplace_back(s, 0);
  const CollectivePlan plan = plan_collectives(cfg, engine, issued);
  if (plan.collectives == 0) {  // nothing to communicate: compute only (with all of the NPU when shares are held in flight)
    if (hold == ShareHold::InFlight) r.compute_cycles = second_iteration_alone(prog);
    r.iteration_cycles = r.compute_cycles;
    return;
  }
  if (!cfg.system.afi)
    throw Error(fmt::format("train: config {} has no system.afi (docs/config.md)", cfg.name));
  const std::unique_ptr<RoutedTransport> links = make_chip_links(cfg);  // the collectives send from the AFIs only
  RoutedTransport& net = *links;
  const std::unique_ptr<CollectiveEngine> eng = make_engine(cfg, engine, plan, net, 0);
  net.set_listener(eng.get());
  const std::uint32_t chips = cfg.system.chips;
  std::vector<std::uint32_t> parts_done(plan.collectives, 0);
  std::uint32_t in_flight = 0;  // collectives issued and not done on every NPU
  Cycles freed_at = 0;          // when the last one in flight was done
  eng->on_done = [&](std::uint32_t c, std::uint32_t, Cycles when) {
    if (++parts_done[c] == chips && --in_flight == 0) freed_at = when;
  };
  Cycles processed = 0;
  bool any = false;
  const auto step = [&]() {
    const Cycles x = std::min(net.next_event(), eng->next_event());
    if (x == kNever) return false;
    eng->process(x);
    net.advance(x);
    processed = x;
    any = true;
    return true;
  };
  const auto next = [&] { return std::min(net.next_event(), eng->next_event()); };
  // In-flight shares: a compute step of `s.full` cycles alone and `s.cycles` beside communication
  // runs at the shared rate while a collective is in flight (the network runs alongside) and at
  // the full rate once none is; issues are steps of their own, so none starts during it.
  const auto compute = [&](const TrainStep& s, Cycles from) {
    double now = double(from), left = 1.0;  // of the step's work
    while (in_flight > 0 && next() <= from) step();
    while (in_flight > 0) {
      const double end = now + left * double(s.cycles);
      while (in_flight > 0 && double(next()) <= end) step();
      if (in_flight > 0) return static_cast<Cycles>(std::ceil(end));
      left -= (double(freed_at) - now) / double(s.cycles);
      now = double(freed_at);
    }
    return static_cast<Cycles>(std::ceil(now + left * double(s.full)));
  };
  std::vector<Cycles> issued_at(plan.collectives, 0);
  Cycles t = 0, end1 = 0, first_issue = kNever, compute2 = 0;
  bool second = false;
  for (const TrainStep& s : prog.steps) {
    switch (s.kind) {
      case TrainStep::Compute: {
        const Cycles from = t;
        t = hold == ShareHold::Static || s.cycles == s.full ? t + s.cycles : compute(s, t);
        if (second) compute2 += t - from;
        break;
      }
      case TrainStep::EndOfIteration1:
        end1 = t;
        second = true;
        break;
      case TrainStep::Issue: {
        while (std::min(net.next_event(), eng->next_event()) < t) step();
        const Cycles at = any && processed >= t ? processed + 1 : t;  // never behind the network
        issued_at[s.collective] = at;
        first_issue = std::min(first_issue, at);
        ++in_flight;  // before the chips issue it: one with nothing to do is done at once
        for (std::uint32_t chip = 0; chip < chips; ++chip) eng->issue(s.collective, chip, at);
        break;
      }
      case TrainStep::Wait:
        while (parts_done[s.collective] < chips)
          if (!step()) {  // the network ran dry first: say what never finished
            eng->check_finished();
            throw SimulationError(fmt::format("train: collective {} finished on {} of {} NPUs", s.collective,
                                              parts_done[s.collective], chips));
          }
        t = std::max(t, eng->done()[s.collective]);
        break;
    }
    if (s.layer < 0) continue;
    LayerTiming& lt = r.layers[static_cast<std::size_t>(s.layer)];
    if (s.mark == TrainStep::BackwardStart) lt.backward_start = t;
    if (s.mark == TrainStep::BackwardEnd) lt.backward_end = t;
    if (s.mark == TrainStep::ForwardStart) lt.forward_start = t;
    if (s.mark == TrainStep::ForwardEnd) lt.forward_end = t;
  }
  while (step()) {
  }
  eng->check_finished();
  eng->report(r.comm);
  r.comm.cycles = eng->last();
  for (std::uint32_t k = 0; k < plan.collectives; ++k)
    if (prog.allreduce_layer[k] >= 0) {
      LayerTiming& lt = r.layers[static_cast<std::size_t>(prog.allreduce_layer[k])];
      lt.allreduce_issued = issued_at[k];
      lt.allreduce_done = eng->done()[k];
    }
  r.comm_cycles = r.comm.cycles - first_issue;
  r.iteration_cycles = t - end1;
  if (hold == ShareHold::InFlight) r.compute_cycles = compute2;
}
}  // namespace

LayerTable parse_layer_table(const Json& json, const std::string& what) {
  JsonReader r(json, what, "", 'c');
  LayerTable t;
  t.name = r.string("name");
  t.description = r.string("description", "");
  const std::uint64_t batch = r.u64("batch_per_npu");
  if (batch < 1 || batch > (1u << 20)) r.fail("batch_per_npu", "expected 1 .. 2^20");
  t.batch_per_npu = static_cast<std::uint32_t>(batch);
  const std::uint64_t bpp = r.u64("bytes_per_parameter", 2);
  if (bpp < 1 || bpp > 8) r.fail("bytes_per_parameter", "expected 1 .. 8");
  t.bytes_per_parameter = static_cast<std::uint32_t>(bpp);
  const Json& layers = r.value("layers");
  if (!layers.is_array() || layers.empty()) r.fail("layers", "expected a non-empty list of layers");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    JsonReader l(layers[i], what, fmt::format("{}[{}]", r.where("layers"), i), 'c');
    TrainLayer layer;
    layer.name = l.string("name");
    layer.parameters = layer_bytes(l, "parameters");
    layer.forward = parse_work(l.object("forward"));
    layer.input_grad = parse_work(l.object("input_grad"));
    layer.weight_grad = parse_work(l.object("weight_grad"));
    layer.alltoall_bytes = layer_bytes(l, "alltoall_bytes", 0);
    l.reject_unknown_keys();
    t.layers.push_back(std::move(layer));
  }
  r.reject_unknown_keys();
  return t;
}

LayerTable load_layer_table(const std::string& path) { return parse_layer_table(read_json_file(path), path); }

TrainMode parse_train_mode(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kModeNames[i]) return static_cast<TrainMode>(i);
  throw Error(fmt::format("unknown training configuration \"{}\" (expected nooverlap, commopt, compopt, ace or ideal)",
                          name));
}

const char* train_mode_name(TrainMode m) { return kModeNames[static_cast<int>(m)]; }

ShareHold parse_share_hold(const std::string& name) {
  if (name == "static") return ShareHold::Static;
  if (name == "in-flight") return ShareHold::InFlight;
  throw Error(fmt::format("unknown share hold \"{}\" (expected static or in-flight)", name));
}

TrainShares default_shares(TrainMode mode, const NpuConfig& npu, double clock_ghz) {
  switch (mode) {
    case TrainMode::NoOverlap: return {"cores", npu.memory_bytes_per_cycle * clock_ghz, npu.sms, false};
    case TrainMode::CommOpt: return {"cores", 450, 6, true};
    case TrainMode::CompOpt: return {"cores", 128, 2, true};
    case TrainMode::Ace: return {"ace", 128, 0, true};
    case TrainMode::Ideal: break;
  }
  return {"ideal", 0, 0, true};
}

TrainResult run_training(const Config& cfg, const LayerTable& table, const TrainSpec& spec) {
  if (!cfg.system.npu)
    throw Error(fmt::format("train: config {} has no system.npu (the NPU's SMs, FLOPs and memory bandwidth; "
                            "docs/config.md)", cfg.name));
  const NpuConfig& npu = *cfg.system.npu;
  const TrainShares& sh = spec.shares;
  const double comm_memory = sh.comm_memory_gb_per_s / cfg.clock_ghz;  // B/cycle
  if (sh.overlap && (sh.comm_sms >= npu.sms || comm_memory >= npu.memory_bytes_per_cycle))
    throw Error(fmt::format("train {}: communication takes {} of {} SMs and {:.0f} of {:.0f} GB/s; compute needs "
                            "some of both", train_mode_name(spec.mode), sh.comm_sms, npu.sms, sh.comm_memory_gb_per_s,
                            npu.memory_bytes_per_cycle * cfg.clock_ghz));
  // compute's share (all of it when the two never overlap)
  const double flops = sh.overlap ? npu.fp16_flops_per_cycle * double(npu.sms - sh.comm_sms) / npu.sms
                                  : npu.fp16_flops_per_cycle;
  const double membw = sh.overlap ? npu.memory_bytes_per_cycle - comm_memory : npu.memory_bytes_per_cycle;

  TrainResult r;
  const std::size_t n = table.layers.size();
  r.layers.resize(n);
  std::vector<Work> fwd(n), bwd_wg(n), bwd_ig(n);
  const auto work = [&](const LayerWork& w) {
    return Work{roofline(w, flops, membw), roofline(w, npu.fp16_flops_per_cycle, npu.memory_bytes_per_cycle)};
  };
  for (std::size_t l = 0; l < n; ++l) {
    const TrainLayer& L = table.layers[l];
    fwd[l] = work(L.forward);
    bwd_wg[l] = work(L.weight_grad);
    bwd_ig[l] = work(L.input_grad);
    r.compute_cycles += fwd[l].shared + bwd_wg[l].shared + bwd_ig[l].shared;
  }
  const Bytes g = granule(cfg.system);
  for (std::size_t l = 0; l < n; ++l) {
    r.layers[l].gradient_bytes =
        padded_gradient(table.layers[l].parameters * table.bytes_per_parameter, spec.chunk_bytes, g);
    r.gradient_bytes += r.layers[l].gradient_bytes;
  }
  const TrainProgram prog = training_program(table, spec, r, fwd, bwd_wg, bwd_ig, cfg.system.chips);
  // the collectives on the engine, with what the configuration gives them
  Config comm_cfg = cfg;
  if (sh.engine != "ideal") {
    EndpointConfig e = cfg.system.endpoint.value_or(EndpointConfig{});
    e.memory_bytes_per_cycle = comm_memory;
    if (sh.engine == "cores") e.cores = sh.comm_sms;
    comm_cfg.system.endpoint = e;
  }
  run_program(comm_cfg, sh.engine, spec.hold, prog, r);
  r.exposed_cycles = r.iteration_cycles - r.compute_cycles;
  return r;
}

Json train_json(const Config& cfg, const LayerTable& table, const TrainSpec& spec, const TrainResult& r) {
  const double us = 1e-3 / cfg.clock_ghz;
  Json layers = Json::array();
  for (std::size_t l = 0; l < table.layers.size(); ++l) {
    const LayerTiming& lt = r.layers[l];
    layers.push_back({{"name", table.layers[l].name}, {"gradient_bytes", lt.gradient_bytes},
                      {"allreduce_issued_cycle", lt.allreduce_issued}, {"allreduce_done_cycle", lt.allreduce_done},
                      {"forward_start_cycle", lt.forward_start}, {"forward_end_cycle", lt.forward_end}});
  }
  const auto max_of = [](const std::vector<Bytes>& v) { return v.empty() ? Bytes{0} : *std::max_element(v.begin(), v.end()); };
  return {{"config", cfg.name}, {"chips", cfg.system.chips}, {"model", table.name},
          {"batch_per_npu", table.batch_per_npu}, {"mode", train_mode_name(spec.mode)},
          {"engine", spec.shares.engine}, {"comm_memory_gb_per_s", spec.shares.comm_memory_gb_per_s},
          {"comm_sms", spec.shares.comm_sms}, {"overlap", spec.shares.overlap},
          {"share_hold", spec.hold == ShareHold::Static ? "static" : "in-flight"}, {"chunk_bytes", spec.chunk_bytes},
          {"iteration_cycles", r.iteration_cycles}, {"iteration_us", double(r.iteration_cycles) * us},
          {"compute_cycles", r.compute_cycles}, {"exposed_comm_cycles", r.exposed_cycles},
          {"exposed_comm_share", r.iteration_cycles ? double(r.exposed_cycles) / double(r.iteration_cycles) : 0.0},
          {"comm_cycles", r.comm_cycles}, {"gradient_bytes", r.gradient_bytes},
          {"memory_read_bytes_per_npu", max_of(r.comm.memory_read_bytes)},
          {"memory_write_bytes_per_npu", max_of(r.comm.memory_write_bytes)}, {"layers", layers}};
}

Json train_trace(const Config& cfg, const LayerTable& table, const TrainSpec&, const TrainResult& r) {
  const double us = 1e-3 / cfg.clock_ghz;
  Json ev = Json::array();
  ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "compute (NPU 0)"}}}});
  ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 1}, {"args", {{"name", "all-reduces"}}}});
  const auto slice = [&](const std::string& name, Cycles from, Cycles to) {
    if (to > from)
      ev.push_back({{"ph", "X"}, {"name", name}, {"pid", 0}, {"tid", 0}, {"ts", double(from) * us},
                    {"dur", double(to - from) * us}});
  };
  for (std::size_t l = 0; l < table.layers.size(); ++l) {
    const LayerTiming& lt = r.layers[l];
    slice("bwd " + table.layers[l].name, lt.backward_start, lt.backward_end);
    slice("fwd " + table.layers[l].name, lt.forward_start, lt.forward_end);
    if (lt.gradient_bytes == 0) continue;
    Json args = {{"bytes", lt.gradient_bytes}};
    ev.push_back({{"ph", "b"}, {"cat", "allreduce"}, {"name", "allreduce " + table.layers[l].name}, {"id", l},
                  {"pid", 0}, {"tid", 1}, {"ts", double(lt.allreduce_issued) * us}, {"args", args}});
    ev.push_back({{"ph", "e"}, {"cat", "allreduce"}, {"name", "allreduce " + table.layers[l].name}, {"id", l},
                  {"pid", 0}, {"tid", 1}, {"ts", double(lt.allreduce_done) * us}});
  }
  return {{"traceEvents", ev}, {"displayTimeUnit", "ns"}};
}

}  // namespace tessera::sim
