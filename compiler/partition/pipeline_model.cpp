#include "compiler/partition/pipeline_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "sim/common/error.h"

namespace tessera::partition {

namespace {

constexpr double kWord = 2;  // fp16 activations and weights

std::uint32_t add(PipeModel& m, PipeLayer l) {
  m.layers.push_back(std::move(l));
  return static_cast<std::uint32_t>(m.layers.size() - 1);
}

std::vector<std::uint32_t> after(std::int64_t input) {
  if (input < 0) return {};
  return {static_cast<std::uint32_t>(input)};
}

// A transformer layer for one sequence: QKV and the projection (4h^2), the FFN (2hf), scores and
// weighted values (2 x 2 s^2 h); it keeps Megatron-LM's count of activations for the backward
// pass, s h (34 + 5 a s / h) bytes in fp16 (no recomputation), written once.
PipeLayer transformer(const std::string& name, std::int64_t input, const TransformerShape& t) {
  const double s = double(t.seq), h = double(t.hidden), f = double(t.ffn), a = double(t.heads);
  PipeLayer l;
  l.name = name;
  l.inputs = after(input);
  l.params = 4 * h * h + 2 * h * f;
  l.flops = 2 * s * l.params + 4 * s * s * h;
  l.weight_read_bytes = kWord * l.params;
  l.stash_bytes = s * h * 34 + 5 * a * s * s;
  l.sample_bytes = l.stash_bytes;
  l.out_bytes = kWord * s * h;
  return l;
}

// Multi-head attention alone (the case study's blocks): 4h^2 weights, the attention part of the
// count above, 11 s h + 5 a s^2.
PipeLayer attention(const std::string& name, std::int64_t input, const TransformerShape& t) {
  const double s = double(t.seq), h = double(t.hidden), a = double(t.heads);
  PipeLayer l;
  l.name = name;
  l.inputs = after(input);
  l.params = 4 * h * h;
  l.flops = 2 * s * l.params + 4 * s * s * h;
  l.weight_read_bytes = kWord * l.params;
  l.stash_bytes = 11 * s * h + 5 * a * s * s;
  l.sample_bytes = l.stash_bytes;
  l.out_bytes = kWord * s * h;
  return l;
}

// A linear layer applied to `rows` rows per sample (tokens, or 1 for a feature vector): it keeps
// its input and output for the backward pass.
PipeLayer linear(const std::string& name, std::vector<std::uint32_t> inputs, double rows, double in, double out) {
  PipeLayer l;
  l.name = name;
  l.inputs = std::move(inputs);
  l.params = in * out;
  l.flops = 2 * rows * in * out;
  l.weight_read_bytes = kWord * l.params;
  l.sample_bytes = kWord * rows * (in + out);
  l.stash_bytes = l.sample_bytes;
  l.out_bytes = kWord * rows * out;
  return l;
}

// Joins branches: reads and writes every input once; nothing to keep.
PipeLayer concat(const std::string& name, std::vector<std::uint32_t> inputs, const PipeModel& m) {
  PipeLayer l;
  l.name = name;
  double bytes = 0;
  for (std::uint32_t i : inputs) bytes += m.layers[i].out_bytes;
  l.inputs = std::move(inputs);
  l.sample_bytes = 2 * bytes;
  l.out_bytes = bytes;
  return l;
}

// The search grows with the square of the branches (the join's options) and of the layers in a
// chain: beyond these it would look like a hang.
void check_count(const char* what, std::uint64_t n) {
  if (n == 0 || n > 64) throw Error(fmt::format("pipeline model: {} = {}: expected 1 to 64", what, n));
}

}  // namespace

double PipeModel::total_flops() const {
  double f = 0;
  for (const PipeLayer& l : layers) f += l.flops;
  return f;
}

double PipeModel::total_params() const {
  double p = 0;
  for (const PipeLayer& l : layers) p += l.params;
  return p;
}

void validate(const PipeModel& m) {
  if (m.layers.empty()) throw Error(fmt::format("pipeline model {}: no layers", m.name));
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const PipeLayer& l = m.layers[i];
    for (std::uint32_t in : l.inputs)
      if (in >= i)
        throw Error(fmt::format("pipeline model {}: layer {} ({}): input {} is not an earlier layer", m.name, i,
                                l.name, in));
    for (double v : {l.flops, l.params, l.weight_read_bytes, l.sample_bytes, l.out_bytes, l.stash_bytes})
      if (!std::isfinite(v) || v < 0)
        throw Error(fmt::format("pipeline model {}: layer {} ({}): figures must be finite and >= 0", m.name, i,
                                l.name));
  }
}

PipeModel mmt_model(std::uint32_t branches, std::uint32_t layers, const TransformerShape& t) {
  check_count("branches", branches);
  check_count("layers", layers);
  PipeModel m;
  m.name = fmt::format("mmt-{}x{}", branches, layers);
  std::vector<std::uint32_t> ends;
  for (std::uint32_t b = 0; b < branches; ++b) {
    std::int64_t prev = -1;
    for (std::uint32_t l = 0; l < layers; ++l) prev = add(m, transformer(fmt::format("b{}.layer{}", b, l), prev, t));
    ends.push_back(static_cast<std::uint32_t>(prev));
  }
  const std::uint32_t cat = add(m, concat("concat", ends, m));
  const double h = double(t.hidden);
  add(m, linear("fuse", {cat}, double(t.seq), branches * h, h));
  return m;
}

PipeModel candle_uno_model(std::uint32_t branches, std::uint32_t layers, std::uint64_t width) {
  check_count("branches", branches);
  check_count("layers", layers);
  PipeModel m;
  m.name = fmt::format("candle-uno-{}x{}", branches, layers);
  const double w = double(width);
  std::vector<std::uint32_t> ends;
  for (std::uint32_t b = 0; b < branches; ++b) {
    std::vector<std::uint32_t> prev;
    for (std::uint32_t l = 0; l < layers; ++l) prev = {add(m, linear(fmt::format("b{}.ff{}", b, l), prev, 1, w, w))};
    ends.push_back(prev[0]);
  }
  std::uint32_t x = add(m, concat("concat", ends, m));
  x = add(m, linear("top0", {x}, 1, branches * w, w));
  x = add(m, linear("top1", {x}, 1, w, w));
  add(m, linear("out", {x}, 1, w, 1));
  return m;
}

PipeModel dlrm_model(std::uint32_t dense, std::uint32_t sparse, std::uint64_t width, std::uint64_t rows,
                     std::uint64_t dim, std::uint64_t bag) {
  check_count("dense branches", dense);
  check_count("sparse branches", sparse);
  PipeModel m;
  m.name = fmt::format("dlrm-{}+{}", dense, sparse);
  const double w = double(width), d = double(dim);
  std::vector<std::uint32_t> ends;
  for (std::uint32_t b = 0; b < dense; ++b) {
    std::vector<std::uint32_t> prev;
    for (std::uint32_t l = 0; l < 4; ++l) prev = {add(m, linear(fmt::format("dense{}.ff{}", b, l), prev, 1, w, w))};
    ends.push_back(prev[0]);
  }
  for (std::uint32_t b = 0; b < sparse; ++b) {
    // An embedding bag: `bag` rows gathered and summed per sample; a sparse gradient, so no
    // weight traffic per micro-batch, only the rows touched.
    PipeLayer e;
    e.name = fmt::format("sparse{}.embedding", b);
    e.params = double(rows) * d;
    e.flops = double(bag) * d;
    e.sample_bytes = kWord * (double(bag) * d + d);
    e.stash_bytes = kWord * d;
    e.out_bytes = kWord * d;
    ends.push_back(add(m, e));
  }
  std::uint32_t x = add(m, concat("interaction", ends, m));
  x = add(m, linear("top0", {x}, 1, dense * w + sparse * d, w));
  x = add(m, linear("top1", {x}, 1, w, w));
  x = add(m, linear("top2", {x}, 1, w, w));
  add(m, linear("out", {x}, 1, w, 1));
  return m;
}

PipeModel two_branch_model(const TransformerShape& t) {
  PipeModel m;
  m.name = "two-branch";
  const double s = double(t.seq), h = double(t.hidden), f = double(t.ffn);
  std::vector<std::uint32_t> ends;
  for (std::uint32_t b = 0; b < 2; ++b) {
    std::int64_t prev = -1;
    for (std::uint32_t k = 0; k < 4; ++k) {
      prev = add(m, attention(fmt::format("b{}.block{}.mha", b, k), prev, t));
      prev = add(m, linear(fmt::format("b{}.block{}.fc1", b, k), after(prev), s, h, f));
      prev = add(m, linear(fmt::format("b{}.block{}.fc2", b, k), after(prev), s, f, h));
    }
    ends.push_back(static_cast<std::uint32_t>(prev));
  }
  const std::uint32_t cat = add(m, concat("concat", ends, m));
  add(m, linear("fuse", {cat}, s, 2 * h, h));
  return m;
}

const std::vector<std::string>& pipe_model_names() {
  static const std::vector<std::string> names = {"mmt", "candle-uno", "dlrm", "two-branch"};
  return names;
}

PipeModel pipe_model_by_name(const std::string& name, std::uint32_t branches) {
  if (name == "mmt") return branches ? mmt_model(branches) : mmt_model();
  if (name == "candle-uno") return branches ? candle_uno_model(branches) : candle_uno_model();
  if (name == "dlrm") return branches ? dlrm_model(branches, branches) : dlrm_model();
  if (name == "two-branch") {
    if (branches && branches != 2) throw Error("pipeline model two-branch: has 2 branches, not " + std::to_string(branches));
    return two_branch_model();
  }
  throw Error(fmt::format("unknown pipeline model '{}': expected one of {}", name, fmt::join(pipe_model_names(), ", ")));
}

}  // namespace tessera::partition
