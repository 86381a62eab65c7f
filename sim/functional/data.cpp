#include "sim/functional/data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/common/error.h"

namespace tessera::sim {

std::int64_t Box::elements() const {
  std::int64_t n = 1;
  for (auto e : extent) n *= e;
  return n;
}

std::int64_t View::elements() const {
  std::int64_t n = 1;
  for (auto e : extent) n *= e;
  return n;
}

float initial_value(const std::string& name, std::int64_t i) {
  // FNV-1a of the name, then splitmix64 of (hash, index): cheap, portable, well mixed.
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  std::uint64_t z = h + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  // Multiples of 1/64 in [-1, 1): exact in fp16 and fp32, so sums stay nearly exact.
  return static_cast<float>(static_cast<std::int64_t>(z % 128) - 64) / 64.0f;
}

void DataStore::add(const std::string& name, std::vector<std::int64_t> shape) {
  DataTensor t;
  t.name = name;
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  t.shape = std::move(shape);
  t.values.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) t.values[static_cast<std::size_t>(i)] = initial_value(name, i);
  tensors_[name] = std::move(t);
}

DataTensor& DataStore::at(const std::string& name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw SimulationError(fmt::format("functional mode: no data tensor '{}'", name));
  return it->second;
}

Buffer::Buffer(View view, std::vector<std::int64_t> shape) : view_(std::move(view)), shape_(std::move(shape)) {
  stride_.assign(view_.extent.size(), 1);
  for (std::size_t d = view_.extent.size(); d-- > 1;) stride_[d - 1] = stride_[d] * view_.extent[d];
  data_.assign(static_cast<std::size_t>(view_.elements()), 0.0f);
}

std::int64_t Buffer::locate(const std::int64_t* g) const {
  std::int64_t off = 0;
  for (std::size_t d = 0; d < stride_.size(); ++d) {
    std::int64_t l = g[d] - view_.origin[d];
    if (view_.cyclic[d]) {
      l %= view_.extent[d];
      if (l < 0) l += view_.extent[d];
    } else if (l < 0 || l >= view_.extent[d]) {
      return -1;
    }
    off += l * stride_[d];
  }
  return off;
}

static std::string coords(const std::int64_t* g, std::size_t n) {
  std::string s;
  for (std::size_t d = 0; d < n; ++d) s += fmt::format("{}{}", d ? "," : "", g[d]);
  return s;
}

float Buffer::get(const std::int64_t* g) const {
  std::int64_t off = locate(g);
  if (off < 0)
    throw SimulationError(fmt::format("functional mode: element [{}] of tensor '{}' is not in this "
                                      "core's buffer (a dependency the plan does not satisfy)",
                                      coords(g, stride_.size()), view_.tensor));
  return data_[static_cast<std::size_t>(off)];
}

void Buffer::set(const std::int64_t* g, float v) {
  std::int64_t off = locate(g);
  if (off < 0)
    throw SimulationError(fmt::format("functional mode: element [{}] of tensor '{}' is written "
                                      "outside this core's buffer", coords(g, stride_.size()), view_.tensor));
  data_[static_cast<std::size_t>(off)] = v;
}

namespace {

// Visits every coordinate of a box in row-major order; `fn(coord, i)` with i the running index.
template <class F>
void for_box(const Box& b, F&& fn) {
  const std::size_t n = b.extent.size();
  if (b.elements() <= 0) return;
  std::vector<std::int64_t> c(b.origin);
  for (std::int64_t i = 0;; ++i) {
    fn(c.data(), i);
    std::size_t d = n;
    while (d-- > 0) {
      if (++c[d] < b.origin[d] + b.extent[d]) break;
      c[d] = b.origin[d];
      if (d == 0) return;
    }
  }
}

bool inside(const std::int64_t* g, const std::vector<std::int64_t>& shape) {
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (g[d] < 0 || g[d] >= shape[d]) return false;
  return true;
}

}  // namespace

std::vector<float> Buffer::read_box(const Box& b) const {
  std::vector<float> out(static_cast<std::size_t>(b.elements()), 0.0f);
  for_box(b, [&](const std::int64_t* g, std::int64_t i) {
    if (inside(g, shape_)) out[static_cast<std::size_t>(i)] = get(g);
  });
  return out;
}

void Buffer::write_box(const Box& b, const std::vector<float>& values) {
  for_box(b, [&](const std::int64_t* g, std::int64_t i) {
    if (inside(g, shape_)) set(g, values[static_cast<std::size_t>(i)]);
  });
}

template <class F>
void Buffer::for_held(F&& fn) const {
  std::vector<std::int64_t> stride(shape_.size(), 1);
  for (std::size_t d = shape_.size(); d-- > 1;) stride[d - 1] = stride[d] * shape_[d];
  for_box(Box{view_.origin, view_.extent}, [&](const std::int64_t* g, std::int64_t) {
    if (!inside(g, shape_)) return;
    std::int64_t off = 0;
    for (std::size_t d = 0; d < shape_.size(); ++d) off += g[d] * stride[d];
    fn(g, static_cast<std::size_t>(off));
  });
}

void Buffer::load_from(const DataTensor& t) {
  for_held([&](const std::int64_t* g, std::size_t off) { set(g, t.values[off]); });
}

void Buffer::store_to(DataTensor& t) const {
  for_held([&](const std::int64_t* g, std::size_t off) { t.values[off] = get(g); });
  t.written = true;
}

namespace {

struct Bound {
  const ir::Access* access;
  const Buffer* buf;
  std::vector<std::vector<std::pair<int, std::int64_t>>> terms;  // per dim: (axis slot, coeff)
  std::vector<std::int64_t> offset;
  std::vector<std::int64_t> at;
  // Global coordinate of this access for axis values `v`; false when outside the tensor.
  bool coord(const std::vector<std::int64_t>& v) {
    const auto& shape = buf->shape();
    for (std::size_t d = 0; d < terms.size(); ++d) {
      std::int64_t x = offset[d];
      for (auto [slot, c] : terms[d]) x += c * v[static_cast<std::size_t>(slot)];
      if (x < 0 || x >= shape[d]) return false;
      at[d] = x;
    }
    return true;
  }
  float value() const { return buf->get(at.data()); }
};

Bound bind_access(const ir::Access& a, const Buffer* buf, const std::vector<std::string>& axes) {
  Bound b{&a, buf, {}, {}, std::vector<std::int64_t>(a.indices.size())};
  if (buf->shape().size() != a.indices.size())
    throw SimulationError(fmt::format("functional mode: buffer of '{}' has {} dims, expression '{}' uses {}",
                                      buf->view().tensor, buf->shape().size(), a.str(), a.indices.size()));
  for (const auto& ix : a.indices) {
    std::vector<std::pair<int, std::int64_t>> t;
    for (const auto& term : ix.terms)
      t.push_back({static_cast<int>(std::find(axes.begin(), axes.end(), term.axis) - axes.begin()), term.coeff});
    b.terms.push_back(std::move(t));
    b.offset.push_back(ix.offset);
  }
  return b;
}

float apply(ir::Fn fn, float a, float b) {
  switch (fn) {
    case ir::Fn::Copy: return a;
    case ir::Fn::Add: return a + b;
    case ir::Fn::Sub: return a - b;
    case ir::Fn::Mul: return a * b;
    case ir::Fn::Div: return a / b;
    case ir::Fn::Max: return std::max(a, b);
    case ir::Fn::Relu: return std::max(a, 0.0f);
    case ir::Fn::Gelu: return 0.5f * a * (1.0f + std::erf(a / std::sqrt(2.0f)));
    case ir::Fn::Exp: return std::exp(a);
    case ir::Fn::Min: return std::min(a, b);
    case ir::Fn::Pow: return std::pow(a, b);
    case ir::Fn::Sigmoid: return 1.0f / (1.0f + std::exp(-a));
    case ir::Fn::Tanh: return std::tanh(a);
    case ir::Fn::Erf: return std::erf(a);
    case ir::Fn::Sqrt: return std::sqrt(a);
    default: return a;
  }
}

}  // namespace

void evaluate(const ir::Expr& e, const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges,
              const std::vector<const Buffer*>& inputs, Buffer& output) {
  const auto axes = e.all_axes();
  const std::size_t nout = e.output.indices.size();
  if (ranges.size() != axes.size() || inputs.size() != e.inputs.size())
    throw SimulationError(fmt::format("functional mode: expression '{}' needs {} axis ranges and {} inputs", e.text, axes.size(), e.inputs.size()));
  std::vector<Bound> ins;
  for (std::size_t i = 0; i < inputs.size(); ++i) ins.push_back(bind_access(e.inputs[i], inputs[i], axes));
  Bound out = bind_access(e.output, &output, axes);
  // Clip output axes to the tensor; reduction ranges stay (absent elements are skipped).
  std::vector<std::int64_t> lo(axes.size()), hi(axes.size());
  for (std::size_t a = 0; a < axes.size(); ++a) {
    lo[a] = ranges[a].first;
    hi[a] = ranges[a].second;
    if (a < nout) { lo[a] = std::max<std::int64_t>(lo[a], 0); hi[a] = std::min(hi[a], output.shape()[a]); }
    if (lo[a] >= hi[a]) return;
  }
  const bool rowwise = e.kind == ir::ExprKind::Softmax || e.kind == ir::ExprKind::Layernorm;
  // Outer loop: output axes (all but the last for row-wise ops); inner: the rest.
  const std::size_t outer = rowwise ? nout - 1 : nout;
  std::vector<std::int64_t> v(lo);
  auto advance = [&](std::size_t from, std::size_t to) {  // odometer over axes [from, to)
    for (std::size_t d = to; d-- > from;) {
      if (++v[d] < hi[d]) return true;
      v[d] = lo[d];
    }
    return false;
  };
  for (;;) {
    for (std::size_t d = outer; d < axes.size(); ++d) v[d] = lo[d];
    if (rowwise) {
      const std::size_t last = nout - 1;
      std::vector<float> row;
      for (v[last] = lo[last]; v[last] < hi[last]; ++v[last]) row.push_back(ins[0].coord(v) ? ins[0].value() : 0.0f);
      std::vector<float> res(row.size());
      if (e.kind == ir::ExprKind::Softmax) {
        float mx = *std::max_element(row.begin(), row.end());
        double sum = 0;
        for (std::size_t i = 0; i < row.size(); ++i) sum += (res[i] = std::exp(row[i] - mx));
        for (auto& r : res) r = static_cast<float>(r / sum);
      } else {
        double mean = 0, var = 0;
        for (float x : row) mean += x;
        mean /= static_cast<double>(row.size());
        for (float x : row) var += (x - mean) * (x - mean);
        var /= static_cast<double>(row.size());
        const double inv = 1.0 / std::sqrt(var + e.epsilon.value_or(ir::kLayernormEpsilon));
        for (std::size_t i = 0; i < row.size(); ++i) res[i] = static_cast<float>((row[i] - mean) * inv);
      }
      std::size_t i = 0;
      for (v[last] = lo[last]; v[last] < hi[last]; ++v[last], ++i) {
        float r = res[i];
        if (ins.size() == 3) {
          ins[1].coord(v);
          ins[2].coord(v);
          r = r * ins[1].value() + ins[2].value();
        }
        out.coord(v);
        output.set(out.at.data(), r);
      }
      v[last] = lo[last];
    } else if (e.kind == ir::ExprKind::Elementwise) {
      out.coord(v);
      float a = e.scalar && e.scalar_first ? static_cast<float>(*e.scalar) : (ins[0].coord(v) ? ins[0].value() : 0.0f);
      float b = 0;
      if (e.scalar) b = e.scalar_first ? (ins[0].coord(v) ? ins[0].value() : 0.0f) : static_cast<float>(*e.scalar);
      else if (ins.size() > 1) b = ins[1].coord(v) ? ins[1].value() : 0.0f;
      output.set(out.at.data(), apply(e.fn, a, b));
    } else {
      // Contraction or reduction over the remaining axes.
      double acc = 0;
      float mx = -std::numeric_limits<float>::infinity();
      std::int64_t present = 0;
      for (;;) {
        bool ok = true;
        for (auto& b : ins) ok = ok && b.coord(v);
        if (ok) {
          float x = ins[0].value();
          if (e.kind == ir::ExprKind::Contraction) x *= ins[1].value();
          acc += x;
          mx = std::max(mx, x);
          ++present;
        }
        if (outer == axes.size() || !advance(outer, axes.size())) break;
      }
      out.coord(v);
      float r;
      if (e.kind == ir::ExprKind::Contraction || e.reduce == ir::Reduce::Sum)
        r = output.get(out.at.data()) + static_cast<float>(acc);
      else if (e.reduce == ir::Reduce::Max)
        r = present ? mx : 0.0f;
      else
        r = present ? static_cast<float>(acc / static_cast<double>(present)) : 0.0f;
      output.set(out.at.data(), r);
    }
    if (outer == 0 || !advance(0, outer)) break;
  }
}

}  // namespace tessera::sim
