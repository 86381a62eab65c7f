#include "compiler/partition/dfmodel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "sim/common/error.h"

namespace tessera::partition {

namespace {

// What one chip of a tensor-parallel group of `tp` does and holds of a kernel.
struct Sharded {
  double flops, weight_bytes, out_bytes;
  bool allreduce;  // its output is a partial sum
};

Sharded shard(const Kernel& k, std::uint32_t tp) {
  const double t = tp;
  switch (k.shard) {
    case Shard::Column:
    case Shard::Heads: return {k.flops / t, k.weight_bytes / t, k.out_bytes / t, false};
    case Shard::Row: return {k.flops / t, k.weight_bytes / t, k.out_bytes, tp > 1};
    case Shard::Replicated: break;
  }
  return {k.flops, k.weight_bytes, k.out_bytes, false};
}

// The layer's input is the previous layer's output, whole on every chip of the group.
double layer_input_bytes(const std::vector<Kernel>& layer) { return layer.back().out_bytes; }

struct Context {
  const std::vector<Kernel>& layer;
  std::vector<Sharded> sharded;
  std::vector<std::vector<std::size_t>> consumers;
  const SystemSpec& sys;
  std::vector<std::size_t> tp_dims;
  double weight_tiles = 1;
  bool training = false;  // partitions are chosen for forward and backward together
  double tile = 1;        // a sequence tile's share of every tensor
};

// Kernels [first, last] as one partition on one chip.
PartitionCost partition_cost(const Context& c, std::size_t first, std::size_t last) {
  PartitionCost p;
  p.first = first;
  p.last = last;
  auto inside = [&](std::size_t k) { return k >= first && k <= last; };
  std::set<int> read;  // tensors read from DRAM (by producer; -1 the layer's input)
  std::set<int> reduced;  // training: input gradients all-reduced
  double dram = 0, flops = 0, weights = 0;
  for (std::size_t k = first; k <= last; ++k) {
    const Sharded& s = c.sharded[k];
    flops += s.flops;
    weights += s.weight_bytes;
    for (int i : c.layer[k].inputs) {
      if (c.layer[k].shard == Shard::Column && !c.tp_dims.empty() && reduced.insert(i).second) {
        const double in = i < 0 ? layer_input_bytes(c.layer) : c.sharded[static_cast<std::size_t>(i)].out_bytes;
        p.backward_network_s += allreduce_seconds(c.sys, c.tp_dims, in);
        p.backward_allreduce_bytes.push_back(in);
      }
      if (i >= 0 && inside(static_cast<std::size_t>(i))) continue;
      if (!read.insert(i).second) continue;  // read once for the whole partition
      const double bytes = i < 0 ? layer_input_bytes(c.layer) : c.sharded[static_cast<std::size_t>(i)].out_bytes;
      dram += bytes;
      p.sram_bytes += 2 * bytes * c.tile;
    }
    // Its output: written to DRAM once if anything outside reads it (or it is the layer's);
    // buffered for its readers inside, as deep as the pipeline between them.
    bool leaves = k + 1 == c.layer.size();
    std::size_t depth = 0;
    for (std::size_t r : c.consumers[k]) {
      if (inside(r)) depth = std::max(depth, r - k + 1);
      else leaves = true;
    }
    if (leaves) {
      dram += s.out_bytes;
      p.sram_bytes += 2 * s.out_bytes * c.tile;
    }
    p.sram_bytes += static_cast<double>(depth) * s.out_bytes * c.tile;
    if (s.allreduce) {
      p.network_s += allreduce_seconds(c.sys, c.tp_dims, s.out_bytes);
      p.allreduce_bytes.push_back(s.out_bytes);
    }
  }
  p.sram_bytes += weights * std::min(1.0, 2.0 / c.weight_tiles);  // two chunks of them at a time
  p.flops = flops;
  p.dram_bytes = dram + weights;
  p.weight_bytes = weights;
  p.compute_s = flops / c.sys.peak_flops;  // tiles shared in proportion to FLOPs: all finish together
  p.memory_s = (dram + weights) / c.sys.dram_bytes_per_s;
  p.backward_compute_s = 2 * p.compute_s;
  p.backward_memory_s = 2 * p.memory_s + weights / c.sys.dram_bytes_per_s;
  return p;
}

// The least sum of partition times over cuts of the kernel order into runs that fit the SRAM.
bool best_partitions(const Context& c, bool fused, std::vector<PartitionCost>& out, std::string& why) {
  const std::size_t n = c.layer.size();
  std::vector<double> best(n + 1, std::numeric_limits<double>::infinity());
  std::vector<PartitionCost> last(n + 1);
  best[0] = 0;
  for (std::size_t end = 1; end <= n; ++end)
    for (std::size_t begin = fused ? 0 : end - 1; begin < end; ++begin) {
      if (!std::isfinite(best[begin])) continue;
      const PartitionCost p = partition_cost(c, begin, end - 1);
      if (p.sram_bytes > c.sys.sram_bytes) {
        if (begin + 1 == end && why.empty())
          why = fmt::format("kernel '{}' alone needs {:.1f} MB of SRAM per chip; the chip has {:.1f} MB",
                            c.layer[begin].name, p.sram_bytes / 1e6, c.sys.sram_bytes / 1e6);
        continue;
      }
      const double t = p.seconds() + (c.training ? p.backward_seconds() : 0.0);
      if (best[begin] + t < best[end]) {
        best[end] = best[begin] + t;
        last[end] = p;
      }
    }
  if (!std::isfinite(best[n])) return false;
  out.clear();
  for (std::size_t end = n; end > 0; end = last[end].first) out.push_back(last[end]);
  std::reverse(out.begin(), out.end());
  return true;
}

bool fixed_partitions(const Context& c, const std::vector<std::size_t>& sizes, std::vector<PartitionCost>& out,
                      std::string& why) {
  std::size_t at = 0;
  out.clear();
  for (std::size_t s : sizes) {
    if (s == 0 || at + s > c.layer.size())
      throw Error(fmt::format("partition sizes: {} kernels in all, the layer has {}", at + s, c.layer.size()));
    out.push_back(partition_cost(c, at, at + s - 1));
    if (out.back().sram_bytes > c.sys.sram_bytes) {
      why = fmt::format("partition of kernels '{}'..'{}' needs {:.1f} MB of SRAM per chip; the chip has {:.1f} MB",
                        c.layer[at].name, c.layer[at + s - 1].name, out.back().sram_bytes / 1e6, c.sys.sram_bytes / 1e6);
      return false;
    }
    at += s;
  }
  if (at != c.layer.size())
    throw Error(fmt::format("partition sizes cover {} kernels; the layer has {}", at, c.layer.size()));
  return true;
}

// PP stages hand the layer's output on: each chip of a TP group sends its share, over the
// slowest link of the pipeline's dimensions.
double p2p_seconds(const SystemSpec& sys, const std::vector<Kernel>& layer, const Mapping& m, std::uint32_t tp) {
  double slowest = std::numeric_limits<double>::infinity();
  for (std::size_t d = 0; d < m.dims.size(); ++d)
    if (m.dims[d] == Strategy::PP) slowest = std::min(slowest, sys.dims[d].bytes_per_s);
  return std::isfinite(slowest) ? layer.back().out_bytes / tp / slowest : 0.0;
}

void check(const LlmSpec& s) {
  auto need = [&](bool ok, const char* what) {
    if (!ok) throw Error(fmt::format("model '{}': {}", s.name, what));
  };
  need(s.layers > 0, "layers must be at least 1");
  need(s.hidden > 0 && s.heads > 0 && s.seq > 0 && s.micro_batch > 0, "hidden, heads, seq and micro_batch must be positive");
  need(s.hidden % s.heads == 0, "hidden must be a multiple of heads");
  need(s.word_bytes > 0, "word_bytes must be positive");
  need(s.seq_tile > 0, "seq_tile must be positive");
  need(s.weight_tiles > 0, "weight_tiles must be positive");
}

}  // namespace

std::vector<Kernel> gpt_layer(const LlmSpec& s) {
  check(s);
  const double T = static_cast<double>(s.seq * s.micro_batch), h = static_cast<double>(s.hidden);
  const double f = static_cast<double>(s.ffn ? s.ffn : 4 * s.hidden), w = s.word_bytes;
  const double a = static_cast<double>(s.heads), L = static_cast<double>(s.seq), mb = static_cast<double>(s.micro_batch);
  auto k = [](std::string name, double flops, double weights, double out, std::vector<int> in, Shard sh) {
    return Kernel{std::move(name), flops, weights, out, std::move(in), sh};
  };
  const double scores = mb * a * L * L * w;
  return {k("Q", 2 * T * h * h, h * h * w, T * h * w, {-1}, Shard::Column),
          k("K", 2 * T * h * h, h * h * w, T * h * w, {-1}, Shard::Column),
          k("V", 2 * T * h * h, h * h * w, T * h * w, {-1}, Shard::Column),
          k("MHA1", 2 * T * L * h, 0, scores, {0, 1}, Shard::Heads),
          k("Softmax", 5 * mb * a * L * L, 0, scores, {3}, Shard::Heads),
          k("MHA2", 2 * T * L * h, 0, T * h * w, {4, 2}, Shard::Heads),
          k("Proj", 2 * T * h * h, h * h * w, T * h * w, {5}, Shard::Row),
          k("Add", T * h, 0, T * h * w, {6, -1}, Shard::Replicated),
          k("FFN0", 2 * T * h * f, h * f * w, T * f * w, {7}, Shard::Column),
          k("FFN1", 2 * T * f * h, f * h * w, T * h * w, {8}, Shard::Row),
          k("Add2", T * h, 0, T * h * w, {9, 7}, Shard::Replicated)};
}

double tile_share(const LlmSpec& s) {
  return static_cast<double>(std::min(s.seq_tile, s.seq)) / static_cast<double>(s.seq * s.micro_batch);
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::TP: return "TP";
    case Strategy::PP: return "PP";
    case Strategy::DP: return "DP";
  }
  return "?";
}

std::uint32_t SystemSpec::chips() const {
  std::uint32_t n = 1;
  for (const DimSpec& d : dims) n *= d.size;
  return n;
}

SystemSpec system_spec(const sim::Config& cfg) {
  SystemSpec s;
  s.name = cfg.name;
  const auto& mu = cfg.chip.core.matrix;
  const auto it = mu.macs_per_cycle.find(Dtype::Fp16);
  if (it == mu.macs_per_cycle.end())
    throw Error(fmt::format("config '{}': the matrix unit has no fp16 rate (chip.core.matrix.macs_per_cycle.fp16)", cfg.name));
  const double hz = cfg.clock_ghz * 1e9;
  s.peak_flops = static_cast<double>(cfg.chip.cores) * it->second * 2 * hz;
  s.sram_bytes = static_cast<double>(cfg.chip.cores) * static_cast<double>(cfg.chip.core.sram_bytes);
  s.dram_bytes_per_s = cfg.chip.offchip.channels * cfg.chip.offchip.channel_bytes_per_cycle * hz;
  s.dram_capacity = static_cast<double>(cfg.chip.offchip.capacity_bytes);
  for (const sim::Dimension& d : cfg.system.dimensions) s.dims.push_back({d.kind, d.size, d.bytes_per_cycle() * hz});
  return s;
}

double allreduce_seconds(const SystemSpec& s, const std::vector<std::size_t>& dims, double bytes) {
  double t = 0, left = bytes;
  for (std::size_t d : dims) {
    const DimSpec& dim = s.dims[d];
    const double p = dim.size;
    if (dim.size < 2) continue;
    switch (dim.kind) {
      case sim::DimensionKind::Ring:  // both ways round, except that two chips share one link each way
        t += 2 * (p - 1) / p * left / ((dim.size > 2 ? 2 : 1) * dim.bytes_per_s);
        break;
      case sim::DimensionKind::UnidirectionalRing:
      case sim::DimensionKind::Switch: t += 2 * (p - 1) / p * left / dim.bytes_per_s; break;
      case sim::DimensionKind::FullyConnected: t += 2 * left / (p * dim.bytes_per_s); break;
    }
    left /= p;  // the next dimension reduces what this one scattered
  }
  return t;
}

double PartitionCost::seconds() const { return std::max({compute_s, memory_s, network_s}); }
double PartitionCost::backward_seconds() const {
  return std::max({backward_compute_s, backward_memory_s, backward_network_s});
}

Evaluation evaluate(const LlmSpec& llm, const SystemSpec& sys, const Mapping& m) {
  if (m.dims.size() != sys.dims.size())
    throw Error(fmt::format("mapping: {} strategies for a system of {} dimensions", m.dims.size(), sys.dims.size()));
  if (!(sys.peak_flops > 0) || !(sys.dram_bytes_per_s > 0))
    throw Error(fmt::format("system '{}': needs a positive peak and DRAM bandwidth", sys.name));
  const std::vector<Kernel> layer = gpt_layer(llm);
  Evaluation e;
  e.mapping = m;
  Context c{layer, {}, std::vector<std::vector<std::size_t>>(layer.size()), sys, {}, static_cast<double>(llm.weight_tiles), llm.training,
            tile_share(llm)};
  for (std::size_t d = 0; d < m.dims.size(); ++d) {
    const std::uint32_t n = sys.dims[d].size;
    if (m.dims[d] == Strategy::TP) {
      e.tp *= n;
      c.tp_dims.push_back(d);
    } else if (m.dims[d] == Strategy::PP) {
      e.pp *= n;
    } else {
      e.dp *= n;
    }
  }
  for (const Kernel& k : layer) c.sharded.push_back(shard(k, e.tp));
  for (std::size_t k = 0; k < layer.size(); ++k)
    for (int i : layer[k].inputs)
      if (i >= 0) c.consumers[static_cast<std::size_t>(i)].push_back(k);
  if (llm.heads % e.tp != 0) {
    e.why = fmt::format("{} heads do not divide over TP {}", llm.heads, e.tp);
    return e;
  }
  const std::uint32_t per_stage = (llm.layers + e.pp - 1) / e.pp;
  if (e.pp > llm.layers) {
    e.why = fmt::format("PP {} is more stages than the model's {} layers", e.pp, llm.layers);
    return e;
  }
  double weights = 0, activations = 0;
  for (const Sharded& s : c.sharded) {
    weights += s.weight_bytes;
    activations += s.out_bytes;
  }
  if (llm.training) {
    const std::uint64_t per_step = static_cast<std::uint64_t>(e.dp) * llm.micro_batch;
    const std::uint64_t batch = llm.global_batch ? llm.global_batch : per_step;
    if (batch % per_step != 0) {
      e.why = fmt::format("a global batch of {} does not split into micro-batches of {} over DP {}", batch,
                          llm.micro_batch, e.dp);
      return e;
    }
    e.micro_batches = batch / per_step;
  }
  // Training keeps, per parameter, fp16 weights and gradients and fp32 master weights and two
  // Adam moments (16 B: 8 x the fp16 weights), and the activations of the micro-batches in
  // flight (1F1B: at most PP of them).
  const double in_flight = static_cast<double>(std::min<std::uint64_t>(e.micro_batches, e.pp));
  const double dram_need = llm.training ? per_stage * (8 * weights + in_flight * activations) : per_stage * weights;
  if (sys.dram_capacity > 0 && dram_need > sys.dram_capacity) {
    e.why = fmt::format("{} layers per stage hold {:.1f} GB per chip ({}); DRAM holds {:.1f} GB", per_stage,
                        dram_need / 1e9, llm.training ? "weights, gradients, optimiser state, activations" : "weights",
                        sys.dram_capacity / 1e9);
    return e;
  }
  const bool ok = m.sizes.empty() ? best_partitions(c, m.fused, e.partitions, e.why)
                                  : fixed_partitions(c, m.sizes, e.partitions, e.why);
  if (!ok) return e;
  e.feasible = true;
  for (const PartitionCost& p : e.partitions) {
    e.layer_s += p.seconds();
    e.compute_s += p.compute_s;
    e.memory_s += p.memory_s;
    e.network_s += p.network_s;
  }
  e.p2p_s = p2p_seconds(sys, layer, m, e.tp);
  double flops = 0;
  for (const Kernel& k : layer) flops += k.flops;
  if (!llm.training) {
    e.stage_s = per_stage * e.layer_s;
    e.interval_s = std::max(e.stage_s, e.p2p_s);
    e.utilisation = llm.layers * flops / (e.interval_s * sys.peak_flops * e.tp * e.pp);
    e.tokens_per_s = e.dp * static_cast<double>(llm.seq * llm.micro_batch) / e.interval_s;
    return e;
  }
  // Training, 1F1B: each stage runs every micro-batch forward and backward; the pipeline fills
  // and drains once per iteration (PP - 1 extra steps), a step being the slower of a stage's
  // work and the hand-off of activations and their gradients; then the DP replicas all-reduce
  // their gradients (not overlapped).
  for (const PartitionCost& p : e.partitions) e.backward_layer_s += p.backward_seconds();
  e.stage_s = per_stage * (e.layer_s + e.backward_layer_s);
  const double step = std::max(e.stage_s, 2 * e.p2p_s);
  std::vector<std::size_t> dp_dims;
  for (std::size_t d = 0; d < m.dims.size(); ++d)
    if (m.dims[d] == Strategy::DP) dp_dims.push_back(d);
  e.gradient_allreduce_s = allreduce_seconds(sys, dp_dims, per_stage * weights);
  e.interval_s = static_cast<double>(e.micro_batches + e.pp - 1) * step + e.gradient_allreduce_s;
  const double sequences = static_cast<double>(e.micro_batches * e.dp * llm.micro_batch);
  e.utilisation = 3 * llm.layers * flops * sequences / llm.micro_batch /
                  (e.interval_s * sys.peak_flops * e.tp * e.pp * e.dp);
  e.tokens_per_s = sequences * static_cast<double>(llm.seq) / e.interval_s;
  return e;
}

std::vector<Evaluation> search(const LlmSpec& llm, const SystemSpec& sys) {
  std::vector<Evaluation> all;
  const std::size_t d = sys.dims.size();
  std::size_t combos = 1;
  for (std::size_t i = 0; i < d; ++i) combos *= 3;
  for (int fused = 0; fused < 2; ++fused)
    for (std::size_t code = 0; code < combos; ++code) {
      Mapping m;
      m.fused = fused != 0;
      for (std::size_t i = 0, x = code; i < d; ++i, x /= 3) m.dims.push_back(static_cast<Strategy>(x % 3));
      all.push_back(evaluate(llm, sys, m));
    }
  rank(all);
  return all;
}

void rank(std::vector<Evaluation>& all) {
  std::stable_sort(all.begin(), all.end(), [](const Evaluation& a, const Evaluation& b) {
    if (a.feasible != b.feasible) return a.feasible;
    if (a.utilisation != b.utilisation) return a.utilisation > b.utilisation;
    return a.pp < b.pp;
  });
}

std::vector<std::vector<std::pair<bool, std::uint64_t>>> stage_orders(std::uint32_t pp, std::uint64_t m, bool training) {
  std::vector<std::vector<std::pair<bool, std::uint64_t>>> order(pp);
  for (std::uint32_t s = 0; s < pp; ++s) {
    const std::uint64_t warm = training ? std::min<std::uint64_t>(pp - 1 - s, m) : m;
    std::uint64_t nf = 0, nb = 0;
    for (; nf < warm; ++nf) order[s].push_back({true, nf});
    while (training && nb < m) {
      if (nf < m) order[s].push_back({true, nf++});
      order[s].push_back({false, nb++});
    }
  }
  return order;
}

std::vector<StageSpan> timeline(const Evaluation& e) {
  if (!e.feasible) throw Error("timeline: the mapping is not feasible");
  const std::uint32_t pp = e.pp;
  const std::uint64_t m = e.micro_batches;
  const bool training = e.backward_layer_s > 0;
  const double fwd = training ? e.stage_s * e.layer_s / (e.layer_s + e.backward_layer_s) : e.stage_s;
  const double bwd = e.stage_s - fwd;
  const auto order = stage_orders(pp, m, training);
  constexpr double kNotYet = -1;
  std::vector<std::vector<double>> f_end(pp, std::vector<double>(m, kNotYet)), b_end = f_end;
  std::vector<double> free(pp, 0.0);
  std::vector<std::size_t> next(pp, 0);
  std::vector<StageSpan> out;
  // Forwards wait for the stage before, backwards for the stage after: sweep the stages until
  // every item is placed, each as soon as its stage is free and its input has arrived.
  for (bool progress = true; progress;) {
    progress = false;
    for (std::uint32_t s = 0; s < pp; ++s)
      for (; next[s] < order[s].size(); ++next[s], progress = true) {
        const auto [forward, j] = order[s][next[s]];
        double ready = free[s];
        if (forward && s > 0) {
          if (f_end[s - 1][j] == kNotYet) break;
          ready = std::max(ready, f_end[s - 1][j] + e.p2p_s);
        } else if (!forward && s + 1 < pp) {
          if (b_end[s + 1][j] == kNotYet) break;
          ready = std::max(ready, b_end[s + 1][j] + e.p2p_s);
        }
        const double end = ready + (forward ? fwd : bwd);
        (forward ? f_end : b_end)[s][j] = end;
        free[s] = end;
        out.push_back({s, j, forward ? StageSpan::Forward : StageSpan::Backward, ready, end});
      }
  }
  for (std::uint32_t s = 0; s < pp; ++s)
    if (next[s] != order[s].size()) throw std::logic_error("timeline: a stage's work never became ready");
  if (training && e.gradient_allreduce_s > 0)
    for (std::uint32_t s = 0; s < pp; ++s)
      out.push_back({s, 0, StageSpan::GradientAllReduce, free[s], free[s] + e.gradient_allreduce_s});
  return out;
}

}  // namespace tessera::partition
