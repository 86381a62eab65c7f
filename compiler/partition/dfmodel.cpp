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
  KernelShape shape;
};

// Column and head shards split a kernel's outputs (rows), row shards its dot products (depth).
Sharded shard(const Kernel& k, std::uint32_t tp) {
  const double t = tp;
  const bool vector = k.kind == Kernel::Kind::Elementwise;
  switch (k.shard) {
    case Shard::Column:
    case Shard::Heads:
      return {k.flops / t, k.weight_bytes / t, k.out_bytes / t, false, {k.rows / t, k.depth, 0, vector}};
    case Shard::Row: return {k.flops / t, k.weight_bytes / t, k.out_bytes, tp > 1, {k.rows, k.depth / t, 0, vector}};
    case Shard::Replicated: break;
  }
  return {k.flops, k.weight_bytes, k.out_bytes, false, {k.rows, k.depth, 0, vector}};
}

// The GEMMs of a kernel's backward pass, from its forward shape (after sharding). A weighted
// kernel of R outputs over D inputs: the input gradient (D outputs, dot products over R) and
// the weight gradient (R x D outputs, dot products over the tile's tokens). Attention, per
// head of width d over L keys: the scores' backward (dQ and dK, each like the context GEMM) and
// the context's (dP, like the scores; dV, like itself). Element-wise: one pass of the same.
std::vector<KernelShape> backward_shapes(Kernel::Kind kind, const KernelShape& f, double keys, double head_width,
                                         double tile_tokens) {
  switch (kind) {
    case Kernel::Kind::Weighted: return {{f.depth, f.rows, 0, false}, {f.rows, tile_tokens, f.depth, false}};
    case Kernel::Kind::Scores: {
      const KernelShape context{f.rows / keys * head_width, keys, 0, false};
      return {context, context};
    }
    case Kernel::Kind::Context: return {{f.rows / head_width * keys, head_width, 0, false}, f};
    case Kernel::Kind::Elementwise: break;
  }
  return {f};
}

// What the arrays' other side runs over: the tile's tokens unless the shape says otherwise.
double streamed(const KernelShape& k, double tile_tokens) { return k.streamed > 0 ? k.streamed : tile_tokens; }

// The fewest arrays on which kernel `k` takes at most `cycles` per tile of `tokens` (infinity if
// none does): lanes x stages arrays, stages tried one by one (a tile spans a few array heights).
double min_arrays(const KernelShape& k, double cycles, double tile_tokens, double array_rows, double array_cols) {
  const double row_blocks = std::ceil(k.rows / array_cols);
  const double tokens = streamed(k, tile_tokens);
  if (k.vector) {
    const double per_lane = std::floor(cycles / tokens);  // row blocks one lane can take
    return per_lane < 1 ? std::numeric_limits<double>::infinity() : std::ceil(row_blocks / per_lane);
  }
  const double token_blocks = std::ceil(tokens / array_rows), depth = std::ceil(k.depth);
  double best = std::numeric_limits<double>::infinity();
  for (double stages = 1; stages <= token_blocks; ++stages) {
    const double passes = std::ceil(token_blocks / stages);  // token blocks per stage, one after another
    const double per_lane = std::floor(cycles / (passes * depth));
    if (per_lane >= 1) best = std::min(best, std::ceil(row_blocks / per_lane) * stages);
  }
  return best;
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
  // the systolic compute model (LlmSpec::systolic; arrays 0: compute at peak)
  std::uint32_t arrays = 0, array_rows = 16, array_cols = 16;
  double tile_tokens = 0, tiles = 0, keys = 0, head_width = 0;
  bool weight_setup = false;
};

// At peak, kernels share the arrays in proportion to their FLOPs and all finish together, and
// backward (input and weight gradients) is twice the forward. On systolic arrays a partition
// runs at its slowest kernel's quantised rate, tile after tile, and its backward GEMMs share
// the arrays as the forward's do, or, for a partition of one kernel (kernel by kernel), run one
// after another with all of them.
void price_compute(const Context& c, PartitionCost& p) {
  if (c.arrays == 0) {
    p.compute_s = p.flops / c.sys.peak_flops;
    p.backward_compute_s = 2 * p.compute_s;
    return;
  }
  std::vector<KernelShape> forward, backward;
  for (std::size_t k = p.first; k <= p.last; ++k) {
    forward.push_back(c.sharded[k].shape);
    for (const KernelShape& b : backward_shapes(c.layer[k].kind, c.sharded[k].shape, c.keys, c.head_width, c.tile_tokens))
      backward.push_back(b);
  }
  if (forward.size() > c.arrays) {  // not a partition this chip can run: one array per kernel at least
    p.compute_s = p.backward_compute_s = std::numeric_limits<double>::infinity();
    return;
  }
  auto cycles = [&](const std::vector<KernelShape>& shapes) {
    return tile_cycles(shapes, c.tile_tokens, c.arrays, c.array_rows, c.array_cols);
  };
  p.tile_cycles = cycles(forward);
  p.tiles = c.tiles;
  p.compute_s = p.tile_cycles * c.tiles / c.sys.clock_hz;
  double backward_cycles = 0;
  if (p.first == p.last)
    for (const KernelShape& b : backward) backward_cycles += cycles({b});
  else
    backward_cycles = cycles(backward);
  p.backward_compute_s = backward_cycles * c.tiles / c.sys.clock_hz;
}

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
  price_compute(c, p);
  const double bw = c.sys.dram_bytes_per_s;
  if (c.weight_setup) {  // loaded before the partition starts; backward reads them and writes gradients
    p.memory_s = dram / bw;
    p.setup_s = weights / bw;
    p.backward_memory_s = 2 * p.memory_s;
    p.backward_setup_s = 2 * weights / bw;
  } else {  // streamed beside the compute
    p.memory_s = (dram + weights) / bw;
    p.backward_memory_s = 2 * p.memory_s + weights / bw;
  }
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
    if (!std::isfinite(out.back().compute_s)) {
      why = fmt::format("partition of kernels '{}'..'{}' has {} kernels; the chip has {} arrays", c.layer[at].name,
                        c.layer[at + s - 1].name, s, c.arrays);
      return false;
    }
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

// The chip's peak as whole arrays of rows x cols MACs a cycle (the DFModel code's A100: 432 of
// 16 x 16 at 1.41 GHz); sequence tiles of the micro-batch.
void set_arrays(const LlmSpec& llm, const SystemSpec& sys, Context& c) {
  if (llm.array_rows == 0 || llm.array_cols == 0) throw Error("systolic compute: the array needs rows and columns");
  if (!(sys.clock_hz > 0)) throw Error(fmt::format("system '{}': the systolic compute model needs the clock", sys.name));
  const double arrays = sys.peak_flops / (2.0 * llm.array_rows * llm.array_cols * sys.clock_hz);
  if (arrays < 1 || std::abs(arrays - std::round(arrays)) > 1e-6 * arrays)
    throw Error(fmt::format("system '{}': its peak ({:.4g} MACs a cycle) is not a whole number of {}x{} arrays",
                            sys.name, sys.peak_flops / (2 * sys.clock_hz), llm.array_rows, llm.array_cols));
  c.arrays = static_cast<std::uint32_t>(std::llround(arrays));
  c.array_rows = llm.array_rows;
  c.array_cols = llm.array_cols;
  c.tile_tokens = static_cast<double>(std::min(llm.seq_tile, llm.seq));
  c.tiles = std::ceil(static_cast<double>(llm.seq) / c.tile_tokens) * static_cast<double>(llm.micro_batch);
  c.keys = static_cast<double>(llm.seq);
  c.head_width = static_cast<double>(llm.hidden / llm.heads);
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
  std::vector<Kernel> layer = {k("Q", 2 * T * h * h, h * h * w, T * h * w, {-1}, Shard::Column),
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
  // Shapes per token (rows, depth): the scores have a row per head and key and dot products of
  // a head's width; the context (MHA2) sums over the keys.
  using K = Kernel::Kind;
  const struct {
    K kind;
    double rows, depth;
  } shapes[] = {{K::Weighted, h, h},    {K::Weighted, h, h},    {K::Weighted, h, h},    {K::Scores, a * L, h / a},
                {K::Elementwise, a * L, 0}, {K::Context, h, L},  {K::Weighted, h, h},    {K::Elementwise, h, 0},
                {K::Weighted, f, h},    {K::Weighted, h, f},    {K::Elementwise, h, 0}};
  for (std::size_t i = 0; i < layer.size(); ++i) {
    layer[i].kind = shapes[i].kind;
    layer[i].rows = shapes[i].rows;
    layer[i].depth = shapes[i].depth;
  }
  return layer;
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
  s.clock_hz = hz;
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

double PartitionCost::seconds() const { return std::max({compute_s, memory_s, network_s}) + setup_s; }
double PartitionCost::backward_seconds() const {
  return std::max({backward_compute_s, backward_memory_s, backward_network_s}) + backward_setup_s;
}

double tile_cycles(const std::vector<KernelShape>& kernels, double tile_tokens, std::uint32_t arrays,
                   std::uint32_t array_rows, std::uint32_t array_cols) {
  if (kernels.size() > arrays)
    throw Error(fmt::format("systolic compute: {} kernels in one partition, {} arrays on the chip (one each at least)",
                            kernels.size(), arrays));
  // On one array each kernel takes its longest; bisect down to the least feasible cycle count.
  auto arrays_for = [&](double cycles) {
    double sum = 0;
    for (const KernelShape& k : kernels) sum += min_arrays(k, cycles, tile_tokens, array_rows, array_cols);
    return sum;
  };
  double hi = 0;
  for (const KernelShape& k : kernels) {
    const double blocks = std::ceil(k.rows / array_cols), tokens = streamed(k, tile_tokens);
    hi = std::max(hi, k.vector ? blocks * tokens : blocks * std::ceil(tokens / array_rows) * std::ceil(k.depth));
  }
  double lo = 0;  // infeasible (no kernel runs in 0 cycles)
  while (hi - lo > 1) {
    const double mid = std::floor((lo + hi) / 2);
    (arrays_for(mid) <= arrays ? hi : lo) = mid;
  }
  return hi;
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
  if (llm.systolic) set_arrays(llm, sys, c);
  c.weight_setup = llm.weight_setup;
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
