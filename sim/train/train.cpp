#include "sim/train/train.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/common/error.h"

namespace tessera::sim {

namespace {

constexpr const char* kModeNames[] = {"nooverlap", "commopt", "compopt", "ace", "ideal"};

double non_negative(const JsonReader& r, const std::string& key) {
  const Json& v = r.value(key);
  if (!v.is_number() || v.get<double>() < 0 || !std::isfinite(v.get<double>()))
    r.fail(key, "expected a number >= 0");
  return v.get<double>();
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
  return static_cast<Cycles>(std::ceil(std::max(w.flops / flops_per_cycle, w.bytes / bytes_per_cycle)));
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
  return small <= chunk ? small : round_up(bytes, std::lcm(chunk, g));
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
    layer.parameters = l.u64("parameters");
    layer.forward = parse_work(l.object("forward"));
    layer.input_grad = parse_work(l.object("input_grad"));
    layer.weight_grad = parse_work(l.object("weight_grad"));
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
  std::vector<Cycles> fwd(n), bwd_wg(n), bwd_ig(n);
  for (std::size_t l = 0; l < n; ++l) {
    const TrainLayer& L = table.layers[l];
    fwd[l] = roofline(L.forward, flops, membw);
    bwd_wg[l] = roofline(L.weight_grad, flops, membw);
    bwd_ig[l] = roofline(L.input_grad, flops, membw);
    r.compute_cycles += fwd[l] + bwd_wg[l] + bwd_ig[l];
  }
  // iteration 1: forward, then backward from the last layer: its weight gradient (the
  // all-reduce goes out), then its input gradient
  Cycles t = 0;
  for (std::size_t l = 0; l < n; ++l) t += fwd[l];
  const Bytes g = granule(cfg.system);
  std::vector<std::pair<CollectiveSpec, Cycles>> issued;
  std::vector<std::size_t> layer_of;
  for (std::size_t l = n; l-- > 0;) {
    LayerTiming& lt = r.layers[l];
    lt.backward_start = t;
    t += bwd_wg[l];
    lt.allreduce_issued = t;
    t += bwd_ig[l];
    lt.backward_end = t;
    lt.gradient_bytes =
        padded_gradient(table.layers[l].parameters * table.bytes_per_parameter, spec.chunk_bytes, g);
    r.gradient_bytes += lt.gradient_bytes;
  }
  const Cycles end1 = t;
  for (std::size_t l = n; l-- > 0;) {
    LayerTiming& lt = r.layers[l];
    if (lt.gradient_bytes == 0) continue;
    if (!sh.overlap) lt.allreduce_issued = end1;
    CollectiveSpec s;
    s.op = CollectiveOp::AllReduce;
    s.algorithm = CollectiveAlgorithm::Hierarchical;
    s.bytes = lt.gradient_bytes;
    s.chunk_bytes = spec.chunk_bytes;
    s.chunks_in_flight = spec.chunks_in_flight;
    issued.emplace_back(s, lt.allreduce_issued);
    layer_of.push_back(l);
  }
  // the collectives on the engine, with what the configuration gives them
  Config comm_cfg = cfg;
  if (sh.engine != "ideal") {
    EndpointConfig e = cfg.system.endpoint.value_or(EndpointConfig{});
    e.memory_bytes_per_cycle = comm_memory;
    if (sh.engine == "cores") e.cores = sh.comm_sms;
    comm_cfg.system.endpoint = e;
  }
  Cycles gate = end1;
  if (!issued.empty()) {
    CollectiveBatchResult b = run_collectives(comm_cfg, sh.engine, issued);
    for (std::size_t i = 0; i < layer_of.size(); ++i) r.layers[layer_of[i]].allreduce_done = b.done[i];
    r.comm = std::move(b.totals);
    r.comm_cycles = r.comm.cycles - issued.front().second;
    if (!sh.overlap) gate = r.comm.cycles;  // compute waits for the one communication kernel
  }
  // iteration 2: each layer's forward pass waits for its gradient's all-reduce
  t = end1;
  for (std::size_t l = 0; l < n; ++l) {
    LayerTiming& lt = r.layers[l];
    lt.forward_start = std::max({t, lt.allreduce_done, gate});
    lt.forward_end = t = lt.forward_start + fwd[l];
  }
  for (std::size_t l = 0; l < n; ++l) t += bwd_wg[l] + bwd_ig[l];
  r.iteration_cycles = t - end1;
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
          {"comm_sms", spec.shares.comm_sms}, {"overlap", spec.shares.overlap}, {"chunk_bytes", spec.chunk_bytes},
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
