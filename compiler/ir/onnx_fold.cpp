#include "compiler/ir/onnx_fold.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "sim/common/error.h"

namespace tessera::ir {
namespace {

using Shape = std::vector<std::int64_t>;

// Folded tensors are shape arithmetic and masks; a node that would make a huge one (a Range or
// ConstantOfShape with a bogus size) is an error, not an allocation failure.
constexpr std::int64_t kMaxFoldedElements = std::int64_t{1} << 26;

[[noreturn]] void bad(const std::string& msg) { throw Error(msg); }

std::int64_t count(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) {
    if (d < 0) bad(fmt::format("negative dimension {}", d));
    if (d != 0 && n > kMaxFoldedElements / d) bad("the folded constant would have more than 2^26 elements");
    n *= d;
  }
  return n;
}

double half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

double bf16_to_double(std::uint16_t b) {
  std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// ---- attributes -------------------------------------------------------------------------------
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
std::int64_t attr_i(const onnx::NodeProto& n, const char* name, std::int64_t def) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : def;
}
std::optional<Shape> attr_ints(const onnx::NodeProto& n, const char* name) {
  const auto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return Shape(a->ints().begin(), a->ints().end());
}

std::int64_t norm_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) bad(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + r : axis;
}

const Dense& need(const std::vector<std::optional<Dense>>& in, std::size_t k) {
  if (k >= in.size() || !in[k]) bad(fmt::format("input {} is missing", k));
  return *in[k];
}

Shape ints(const Dense& d) {
  Shape s;
  for (double x : d.v) s.push_back(to_int64(x));
  return s;
}

Shape row_major_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Visits every index of `shape` in row-major order.
void for_each_index(const Shape& shape, const std::function<void(const Shape&)>& fn) {
  if (count(shape) == 0) return;
  Shape ix(shape.size(), 0);
  for (;;) {
    fn(ix);
    std::size_t d = shape.size();
    for (; d-- > 0;) {
      if (++ix[d] < shape[d]) break;
      ix[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const std::int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) bad(fmt::format("shapes {} and {} do not broadcast", shape_str(a), shape_str(b)));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Row-major offset in `s` of output index `ix` (numpy broadcasting: size-1 dims read at 0).
std::int64_t broadcast_offset(const Shape& s, const Shape& ix) {
  std::int64_t off = 0;
  const std::size_t lead = ix.size() - s.size();
  for (std::size_t d = 0; d < s.size(); ++d) off = off * s[d] + (s[d] == 1 ? 0 : ix[lead + d]);
  return off;
}

Dense elementwise(const std::vector<const Dense*>& ins, DenseType type,
                  const std::function<double(const std::vector<double>&)>& f) {
  Shape out;
  for (const Dense* d : ins) out = broadcast_shape(out, d->shape);
  Dense r{out, {}, type};
  r.v.reserve(static_cast<std::size_t>(count(out)));
  std::vector<double> args(ins.size());
  for_each_index(out, [&](const Shape& ix) {
    for (std::size_t k = 0; k < ins.size(); ++k)
      args[k] = ins[k]->v[static_cast<std::size_t>(broadcast_offset(ins[k]->shape, ix))];
    r.v.push_back(f(args));
  });
  return r;
}

DenseType arith_type(const std::vector<const Dense*>& ins) {
  for (const Dense* d : ins)
    if (d->type == DenseType::Float) return DenseType::Float;
  return DenseType::Int;
}

double int_div(double a, double b) {
  if (b == 0) bad("integer division by zero");
  return std::trunc(a / b);
}

Dense binary(const std::string& op, const Dense& a, const Dense& b, const onnx::NodeProto& n) {
  const DenseType t = arith_type({&a, &b});
  const bool ints = t == DenseType::Int;
  std::function<double(double, double)> f;
  DenseType out = t;
  if (op == "Add") f = [](double x, double y) { return x + y; };
  else if (op == "Sub") f = [](double x, double y) { return x - y; };
  else if (op == "Mul") f = [](double x, double y) { return x * y; };
  else if (op == "Div") f = [ints](double x, double y) { return ints ? int_div(x, y) : x / y; };
  else if (op == "Pow") f = [](double x, double y) { return std::pow(x, y); };
  else if (op == "Mod") {
    const bool fmod_mode = attr_i(n, "fmod", 0) != 0;
    f = [fmod_mode](double x, double y) {
      if (y == 0) bad("Mod by zero");
      double r = std::fmod(x, y);
      if (!fmod_mode && r != 0 && ((r < 0) != (y < 0))) r += y;  // the sign of the divisor
      return r;
    };
  } else if (op == "Min") f = [](double x, double y) { return std::min(x, y); };
  else if (op == "Max") f = [](double x, double y) { return std::max(x, y); };
  else {
    out = DenseType::Bool;
    if (op == "Equal") f = [](double x, double y) { return double(x == y); };
    else if (op == "Less") f = [](double x, double y) { return double(x < y); };
    else if (op == "LessOrEqual") f = [](double x, double y) { return double(x <= y); };
    else if (op == "Greater") f = [](double x, double y) { return double(x > y); };
    else if (op == "GreaterOrEqual") f = [](double x, double y) { return double(x >= y); };
    else if (op == "And") f = [](double x, double y) { return double(x != 0 && y != 0); };
    else if (op == "Or") f = [](double x, double y) { return double(x != 0 || y != 0); };
    else if (op == "Xor") f = [](double x, double y) { return double((x != 0) != (y != 0)); };
    else bad("internal: not a binary op");
  }
  return elementwise({&a, &b}, out, [&](const std::vector<double>& v) { return f(v[0], v[1]); });
}

Dense unary(const std::string& op, const Dense& a) {
  std::function<double(double)> f;
  DenseType t = a.type == DenseType::Bool ? DenseType::Int : a.type;
  if (op == "Neg") f = [](double x) { return -x; };
  else if (op == "Abs") f = [](double x) { return std::fabs(x); };
  else if (op == "Sqrt") { f = [](double x) { return std::sqrt(x); }; t = DenseType::Float; }
  else if (op == "Reciprocal") { f = [](double x) { return 1.0 / x; }; t = DenseType::Float; }
  else if (op == "Floor") f = [](double x) { return std::floor(x); };
  else if (op == "Ceil") f = [](double x) { return std::ceil(x); };
  else if (op == "Exp") { f = [](double x) { return std::exp(x); }; t = DenseType::Float; }
  else if (op == "Relu") f = [](double x) { return std::max(x, 0.0); };
  else if (op == "Not") { f = [](double x) { return double(x == 0); }; t = DenseType::Bool; }
  else bad("internal: not a unary op");
  return elementwise({&a}, t, [&](const std::vector<double>& v) { return f(v[0]); });
}

Dense gather(const Dense& data, const Dense& idx, const onnx::NodeProto& n) {
  if (data.shape.empty()) bad("data is a scalar");
  const auto axis = static_cast<std::size_t>(norm_axis(attr_i(n, "axis", 0), data.shape.size()));
  Shape out(data.shape.begin(), data.shape.begin() + static_cast<long>(axis));
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), data.shape.begin() + static_cast<long>(axis) + 1, data.shape.end());
  Dense r{out, {}, data.type};
  const Shape st = row_major_strides(data.shape);
  const std::int64_t dim = data.shape[axis];
  for_each_index(out, [&](const Shape& ix) {
    std::int64_t k = 0;  // the index tensor's element
    for (std::size_t d = 0; d < idx.shape.size(); ++d) k = k * idx.shape[d] + ix[axis + d];
    auto at = to_int64(idx.v[static_cast<std::size_t>(k)]);
    if (at < -dim || at >= dim) bad(fmt::format("index {} is out of range for dimension {} of size {}", at, axis, dim));
    if (at < 0) at += dim;
    std::int64_t off = 0;
    for (std::size_t d = 0; d < data.shape.size(); ++d) {
      const std::int64_t x = d < axis ? ix[d] : d == axis ? at : ix[d - 1 + idx.shape.size()];
      off += x * st[d];
    }
    r.v.push_back(data.v[static_cast<std::size_t>(off)]);
  });
  return r;
}

}  // namespace

SliceBounds slice_bounds(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  if (step == 0) bad("a slice step is 0");
  auto clampi = [](std::int64_t x, std::int64_t lo, std::int64_t hi) { return std::max(lo, std::min(x, hi)); };
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = clampi(start, 0, dim);
    end = clampi(end, 0, dim);
    return {start, step, end > start ? (end - start + step - 1) / step : 0};
  }
  start = clampi(start, -1, dim - 1);
  end = clampi(end, -1, dim - 1);
  return {start, step, start > end ? (start - end - step - 1) / -step : 0};
}

namespace {

Dense slice(const std::vector<std::optional<Dense>>& in, const onnx::NodeProto& n, std::int64_t opset) {
  const Dense& data = need(in, 0);
  Shape starts, ends, axes, steps;
  if (opset >= 10) {
    starts = ints(need(in, 1));
    ends = ints(need(in, 2));
    if (in.size() > 3 && in[3]) axes = ints(*in[3]);
    if (in.size() > 4 && in[4]) steps = ints(*in[4]);
  } else {
    starts = attr_ints(n, "starts").value_or(Shape{});
    ends = attr_ints(n, "ends").value_or(Shape{});
    axes = attr_ints(n, "axes").value_or(Shape{});
  }
  if (starts.size() != ends.size()) bad("starts and ends differ in length");
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) bad("starts, ends, axes and steps differ in length");
  std::vector<SliceBounds> dims;
  for (auto d : data.shape) dims.push_back({0, 1, d});
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto a = static_cast<std::size_t>(norm_axis(axes[i], data.shape.size()));
    dims[a] = slice_bounds(data.shape[a], starts[i], ends[i], steps[i]);
  }
  Shape out;
  for (const auto& d : dims) out.push_back(d.len);
  Dense r{out, {}, data.type};
  const Shape st = row_major_strides(data.shape);
  for_each_index(out, [&](const Shape& ix) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < ix.size(); ++d) off += (dims[d].start + ix[d] * dims[d].step) * st[d];
    r.v.push_back(data.v[static_cast<std::size_t>(off)]);
  });
  return r;
}

Dense concat(const std::vector<std::optional<Dense>>& in, const onnx::NodeProto& n) {
  const Dense& first = need(in, 0);
  if (first.shape.empty()) bad("inputs are scalars");
  const auto axis = static_cast<std::size_t>(norm_axis(attr_i(n, "axis", 0), first.shape.size()));
  Shape out = first.shape;
  out[axis] = 0;
  std::vector<const Dense*> parts;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const Dense& d = need(in, k);
    if (d.shape.size() != first.shape.size()) bad("inputs differ in rank");
    for (std::size_t i = 0; i < d.shape.size(); ++i)
      if (i != axis && d.shape[i] != first.shape[i])
        bad(fmt::format("input {} is {}, input 0 is {}", k, shape_str(d.shape), shape_str(first.shape)));
    out[axis] += d.shape[axis];
    parts.push_back(&d);
  }
  DenseType t = first.type;
  for (const Dense* d : parts)
    if (d->type != t) t = DenseType::Float;
  Dense r{out, {}, t};
  for_each_index(out, [&](const Shape& ix) {
    Shape local = ix;
    for (const Dense* d : parts) {
      if (local[axis] < d->shape[axis]) {
        std::int64_t off = 0;
        for (std::size_t i = 0; i < local.size(); ++i) off = off * d->shape[i] + local[i];
        r.v.push_back(d->v[static_cast<std::size_t>(off)]);
        return;
      }
      local[axis] -= d->shape[axis];
    }
  });
  return r;
}

Shape axes_of(const std::vector<std::optional<Dense>>& in, const onnx::NodeProto& n, std::int64_t opset) {
  if (opset >= 13) return in.size() > 1 && in[1] ? ints(*in[1]) : Shape{};
  return attr_ints(n, "axes").value_or(Shape{});
}

Dense reshape_to(const Dense& d, Shape s) {
  Dense r = d;
  r.shape = std::move(s);
  if (count(r.shape) != d.elements())
    bad(fmt::format("cannot reshape {} to {}", shape_str(d.shape), shape_str(r.shape)));
  return r;
}

Dense reshape(const Dense& data, const Dense& shape_in, const onnx::NodeProto& n) {
  return reshape_to(data, reshape_target(data.shape, ints(shape_in), attr_i(n, "allowzero", 0) != 0));
}

Dense transpose(const Dense& d, const onnx::NodeProto& n) {
  Shape perm = attr_ints(n, "perm").value_or(Shape{});
  if (perm.empty())
    for (std::size_t i = d.shape.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  Shape sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i)
    if (sorted.size() != d.shape.size() || sorted[i] != static_cast<std::int64_t>(i)) bad("perm is not a permutation");
  Shape out;
  for (auto p : perm) out.push_back(d.shape[static_cast<std::size_t>(p)]);
  const Shape st = row_major_strides(d.shape);
  Dense r{out, {}, d.type};
  for_each_index(out, [&](const Shape& ix) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < ix.size(); ++i) off += ix[i] * st[static_cast<std::size_t>(perm[i])];
    r.v.push_back(d.v[static_cast<std::size_t>(off)]);
  });
  return r;
}

Dense squeeze(const Dense& d, const Shape& axes, bool unsqueeze) {
  Shape out;
  if (unsqueeze) {
    const std::size_t r = d.shape.size() + axes.size();
    std::vector<bool> unit(r, false);
    for (auto a : axes) unit[static_cast<std::size_t>(norm_axis(a, r))] = true;
    std::size_t k = 0;
    for (std::size_t i = 0; i < r; ++i) out.push_back(unit[i] ? 1 : d.shape[k++]);
  } else {
    std::vector<bool> drop(d.shape.size(), axes.empty());
    if (axes.empty())
      for (std::size_t i = 0; i < d.shape.size(); ++i) drop[i] = d.shape[i] == 1;
    for (auto a : axes) {
      const auto i = static_cast<std::size_t>(norm_axis(a, d.shape.size()));
      if (d.shape[i] != 1) bad(fmt::format("axis {} has size {}, not 1", a, d.shape[i]));
      drop[i] = true;
    }
    for (std::size_t i = 0; i < d.shape.size(); ++i)
      if (!drop[i]) out.push_back(d.shape[i]);
  }
  return reshape_to(d, out);
}

Dense cast(const Dense& d, const onnx::NodeProto& n) {
  const auto to = attr_i(n, "to", onnx::TensorProto::FLOAT);
  Dense r = d;
  switch (to) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::DOUBLE: case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      r.type = DenseType::Float;
      break;
    case onnx::TensorProto::BOOL:
      r.type = DenseType::Bool;
      for (double& x : r.v) x = x != 0;
      break;
    case onnx::TensorProto::INT64: case onnx::TensorProto::INT32: case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT32: case onnx::TensorProto::UINT64:
      r.type = DenseType::Int;
      for (double& x : r.v) x = std::trunc(x);
      break;
    default: bad(fmt::format("cast to element type {} is not supported", to));
  }
  return r;
}

Dense range(const Dense& start, const Dense& limit, const Dense& delta) {
  if (start.elements() != 1 || limit.elements() != 1 || delta.elements() != 1) bad("start, limit and delta must be scalars");
  const double s = start.v[0], l = limit.v[0], d = delta.v[0];
  if (d == 0) bad("delta is 0");
  const auto len = static_cast<std::int64_t>(std::max(0.0, std::ceil((l - s) / d)));
  Dense r{{len}, {}, arith_type({&start, &limit, &delta})};
  count(r.shape);
  for (std::int64_t i = 0; i < len; ++i) r.v.push_back(s + static_cast<double>(i) * d);
  return r;
}

Dense constant_of_shape(const Dense& shape_in, const onnx::NodeProto& n) {
  Dense r{ints(shape_in), {}, DenseType::Float};
  double value = 0;
  if (const auto* a = find_attr(n, "value")) {
    auto d = dense_from_tensor(a->t());
    if (!d || d->elements() != 1) bad("attribute 'value' must be a one-element tensor");
    value = d->v[0];
    r.type = d->type;
  }
  r.v.assign(static_cast<std::size_t>(count(r.shape)), value);
  return r;
}

Dense expand(const Dense& d, const Dense& shape_in) {
  const Shape out = broadcast_shape(d.shape, ints(shape_in));
  count(out);
  Dense r{out, {}, d.type};
  for_each_index(out, [&](const Shape& ix) { r.v.push_back(d.v[static_cast<std::size_t>(broadcast_offset(d.shape, ix))]); });
  return r;
}

Dense tile(const Dense& d, const Dense& reps_in) {
  const Shape reps = ints(reps_in);
  if (reps.size() != d.shape.size()) bad("repeats must have one entry per dimension");
  Shape out;
  for (std::size_t i = 0; i < reps.size(); ++i) out.push_back(d.shape[i] * reps[i]);
  count(out);
  Dense r{out, {}, d.type};
  for_each_index(out, [&](const Shape& ix) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < ix.size(); ++i) off = off * d.shape[i] + ix[i] % d.shape[i];
    r.v.push_back(d.v[static_cast<std::size_t>(off)]);
  });
  return r;
}

Dense scatter_nd(const Dense& data, const Dense& idx, const Dense& upd) {
  if (idx.shape.empty()) bad("indices is a scalar");
  const auto k = static_cast<std::size_t>(idx.shape.back());
  if (k > data.shape.size()) bad("indices address more dimensions than data has");
  Dense r = data;
  const Shape st = row_major_strides(data.shape);
  std::int64_t slice = 1;
  for (std::size_t d = k; d < data.shape.size(); ++d) slice *= data.shape[d];
  const std::int64_t n = idx.elements() / static_cast<std::int64_t>(std::max<std::size_t>(k, 1));
  if (upd.elements() != n * slice) bad("updates do not match indices and data");
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < k; ++d) {
      auto x = to_int64(idx.v[static_cast<std::size_t>(i * static_cast<std::int64_t>(k)) + d]);
      if (x < 0) x += data.shape[d];
      if (x < 0 || x >= data.shape[d]) bad(fmt::format("index {} is out of range for dimension {}", x, d));
      off += x * st[d];
    }
    for (std::int64_t j = 0; j < slice; ++j)
      r.v[static_cast<std::size_t>(off + j)] = upd.v[static_cast<std::size_t>(i * slice + j)];
  }
  return r;
}

std::vector<Dense> split(const std::vector<std::optional<Dense>>& in, const onnx::NodeProto& n, std::int64_t opset) {
  const Dense& d = need(in, 0);
  const auto axis = static_cast<std::size_t>(norm_axis(attr_i(n, "axis", 0), d.shape.size()));
  Shape sizes = opset >= 13 ? (in.size() > 1 && in[1] ? ints(*in[1]) : Shape{}) : attr_ints(n, "split").value_or(Shape{});
  const auto parts = static_cast<std::int64_t>(n.output_size());
  if (sizes.empty()) {
    if (d.shape[axis] % parts != 0) bad(fmt::format("dimension {} ({}) does not split into {} equal parts", axis, d.shape[axis], parts));
    sizes.assign(static_cast<std::size_t>(parts), d.shape[axis] / parts);
  }
  std::vector<Dense> out;
  std::int64_t at = 0;
  for (auto s : sizes) {
    std::vector<std::optional<Dense>> args{d, Dense{{1}, {double(at)}, DenseType::Int}, Dense{{1}, {double(at + s)}, DenseType::Int},
                                           Dense{{1}, {double(axis)}, DenseType::Int}};
    out.push_back(slice(args, n, 13));
    at += s;
  }
  return out;
}

}  // namespace

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string o = "[";
  for (std::size_t i = 0; i < s.size(); ++i) o += (i ? "," : "") + std::to_string(s[i]);
  return o + "]";
}

std::vector<std::int64_t> reshape_target(const std::vector<std::int64_t>& in, const std::vector<std::int64_t>& want,
                                         bool allowzero) {
  Shape out;
  int infer = -1;
  for (std::size_t i = 0; i < want.size(); ++i) {
    std::int64_t d = want[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) bad(fmt::format("shape entry {} is 0 but the input has rank {}", i, in.size()));
      d = in[i];
    } else if (d == -1) {
      if (infer >= 0) bad("the target shape has more than one -1");
      infer = static_cast<int>(i);
      d = 1;
    } else if (d < 0) {
      bad(fmt::format("target shape entry {} is {}", i, d));
    }
    out.push_back(d);
  }
  if (infer >= 0) {
    const std::int64_t rest = count(out), total = count(in);
    if (rest == 0 || total % rest != 0) bad(fmt::format("cannot reshape {} to {}", shape_str(in), shape_str(want)));
    out[static_cast<std::size_t>(infer)] = total / rest;
  }
  return out;
}

std::int64_t to_int64(double x) {
  if (std::isnan(x)) bad("a NaN where an integer was expected");
  if (x >= 9.2233720368547758e18) return std::numeric_limits<std::int64_t>::max();
  if (x <= -9.2233720368547758e18) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(x);
}

std::int64_t Dense::elements() const { return static_cast<std::int64_t>(v.size()); }

std::vector<std::string> fold_attributes(const std::string& t, std::int64_t opset) {
  // as fold_node() reads them: Slice's bounds, Squeeze's axes and Split's sizes moved to inputs
  if (t == "Shape") return {"start", "end"};
  if (t == "Gather" || t == "Concat" || t == "Flatten") return {"axis"};
  if (t == "Slice") return opset < 10 ? std::vector<std::string>{"starts", "ends", "axes"} : std::vector<std::string>{};
  if (t == "Unsqueeze" || t == "Squeeze") return opset < 13 ? std::vector<std::string>{"axes"} : std::vector<std::string>{};
  if (t == "Split") return opset < 13 ? std::vector<std::string>{"axis", "split"} : std::vector<std::string>{"axis"};
  if (t == "Reshape") return {"allowzero"};
  if (t == "Transpose") return {"perm"};
  if (t == "Cast") return {"to"};
  if (t == "ConstantOfShape") return {"value"};
  if (t == "Mod") return {"fmod"};
  return {};
}

bool foldable_op(const std::string& t) {
  static const std::set<std::string> ops = {
      "Shape", "Size", "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose",
      "Identity", "Cast", "Range", "ConstantOfShape", "Equal", "Less", "LessOrEqual", "Greater",
      "GreaterOrEqual", "And", "Or", "Xor", "Not", "Where", "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Min", "Max",
      "Neg", "Abs", "Sqrt", "Reciprocal", "Floor", "Ceil", "Exp", "Relu", "Expand", "Tile", "ScatterND", "Split",
      "Dropout"};
  return ops.count(t) != 0;
}

std::vector<Dense> fold_node(const onnx::NodeProto& n, const std::vector<std::optional<Dense>>& in,
                             std::int64_t opset) {
  const std::string& t = n.op_type();
  if (t == "Shape" || t == "Size") {
    const Shape& s = need(in, 0).shape;
    if (t == "Size") return {Dense{{}, {double(count(s))}, DenseType::Int}};
    const auto r = static_cast<std::int64_t>(s.size());
    std::int64_t b = attr_i(n, "start", 0), e = attr_i(n, "end", r);
    if (b < 0) b += r;
    if (e < 0) e += r;
    b = std::clamp<std::int64_t>(b, 0, r);
    e = std::clamp<std::int64_t>(e, 0, r);
    Dense d{{std::max<std::int64_t>(0, e - b)}, {}, DenseType::Int};
    for (std::int64_t i = b; i < e; ++i) d.v.push_back(double(s[static_cast<std::size_t>(i)]));
    return {d};
  }
  if (t == "Gather") return {gather(need(in, 0), need(in, 1), n)};
  if (t == "Slice") return {slice(in, n, opset)};
  if (t == "Concat") return {concat(in, n)};
  if (t == "Unsqueeze" || t == "Squeeze") return {squeeze(need(in, 0), axes_of(in, n, opset), t == "Unsqueeze")};
  if (t == "Reshape") return {reshape(need(in, 0), need(in, 1), n)};
  if (t == "Flatten") {
    const Dense& d = need(in, 0);
    const auto r = static_cast<std::int64_t>(d.shape.size());
    std::int64_t axis = attr_i(n, "axis", 1);
    if (axis < -r || axis > r) bad(fmt::format("axis {} is out of range for rank {}", axis, r));
    if (axis < 0) axis += r;
    const Shape a(d.shape.begin(), d.shape.begin() + axis), b(d.shape.begin() + axis, d.shape.end());
    return {reshape_to(d, {count(a), count(b)})};
  }
  if (t == "Transpose") return {transpose(need(in, 0), n)};
  if (t == "Identity" || t == "Dropout") return {need(in, 0)};
  if (t == "Cast") return {cast(need(in, 0), n)};
  if (t == "Range") return {range(need(in, 0), need(in, 1), need(in, 2))};
  if (t == "ConstantOfShape") return {constant_of_shape(need(in, 0), n)};
  if (t == "Where") {
    const Dense &c = need(in, 0), &x = need(in, 1), &y = need(in, 2);
    return {elementwise({&c, &x, &y}, arith_type({&x, &y}),
                        [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; })};
  }
  if (t == "Expand") return {expand(need(in, 0), need(in, 1))};
  if (t == "Tile") return {tile(need(in, 0), need(in, 1))};
  if (t == "ScatterND") return {scatter_nd(need(in, 0), need(in, 1), need(in, 2))};
  if (t == "Split") return split(in, n, opset);
  if (t == "Not" || t == "Neg" || t == "Abs" || t == "Sqrt" || t == "Reciprocal" || t == "Floor" || t == "Ceil" ||
      t == "Exp" || t == "Relu")
    return {unary(t, need(in, 0))};
  if ((t == "Min" || t == "Max") && in.size() != 2) {  // variadic
    Dense acc = need(in, 0);
    for (std::size_t k = 1; k < in.size(); ++k) acc = binary(t, acc, need(in, k), n);
    return {acc};
  }
  return {binary(t, need(in, 0), need(in, 1), n)};
}

std::optional<Dense> dense_from_tensor(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  Dense d;
  d.shape.assign(t.dims().begin(), t.dims().end());
  std::int64_t n = 1;
  for (auto x : d.shape) {
    if (x < 0 || (x != 0 && n > (std::int64_t{1} << 40) / x)) return std::nullopt;
    n *= x;
  }
  const std::string& raw = t.raw_data();
  auto from_raw = [&](auto tag) {
    using T = decltype(tag);
    if (raw.size() != static_cast<std::size_t>(n) * sizeof(T)) return false;
    d.v.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, raw.data() + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
      d.v[static_cast<std::size_t>(i)] = static_cast<double>(x);
    }
    return true;
  };
  auto typed = [&](const auto& field) {
    for (auto x : field) d.v.push_back(static_cast<double>(x));
    return true;
  };
  auto small_ints = [&](auto tag) {  // element types ONNX keeps in int32_data when not raw
    d.type = DenseType::Int;
    return raw.empty() ? typed(t.int32_data()) : from_raw(tag);
  };
  bool ok = false;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: ok = raw.empty() ? typed(t.float_data()) : from_raw(float{}); break;
    case onnx::TensorProto::DOUBLE: ok = raw.empty() ? typed(t.double_data()) : from_raw(double{}); break;
    case onnx::TensorProto::INT64:
      d.type = DenseType::Int;
      ok = raw.empty() ? typed(t.int64_data()) : from_raw(std::int64_t{});
      break;
    case onnx::TensorProto::INT32: ok = small_ints(std::int32_t{}); break;
    case onnx::TensorProto::INT8: ok = small_ints(std::int8_t{}); break;
    case onnx::TensorProto::UINT8: ok = small_ints(std::uint8_t{}); break;
    case onnx::TensorProto::BOOL:
      d.type = DenseType::Bool;
      ok = raw.empty() ? typed(t.int32_data()) : from_raw(std::uint8_t{});
      for (double& x : d.v) x = x != 0;
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      const bool half = t.data_type() == onnx::TensorProto::FLOAT16;
      std::vector<std::uint16_t> bits;
      if (!raw.empty()) {
        if (raw.size() != static_cast<std::size_t>(n) * 2) return std::nullopt;
        for (std::int64_t i = 0; i < n; ++i) {
          std::uint16_t b;
          std::memcpy(&b, raw.data() + 2 * i, 2);
          bits.push_back(b);
        }
      } else {
        for (auto x : t.int32_data()) bits.push_back(static_cast<std::uint16_t>(x));
      }
      for (auto b : bits) d.v.push_back(half ? half_to_double(b) : bf16_to_double(b));
      ok = true;
      break;
    }
    default: return std::nullopt;
  }
  if (!ok || static_cast<std::int64_t>(d.v.size()) != n) return std::nullopt;
  return d;
}

onnx::TensorProto tensor_from_dense(const Dense& d, const std::string& name) {
  onnx::TensorProto t;
  t.set_name(name);
  for (auto x : d.shape) t.add_dims(x);
  switch (d.type) {
    case DenseType::Float:
      t.set_data_type(onnx::TensorProto::DOUBLE);
      for (double x : d.v) t.add_double_data(x);
      break;
    case DenseType::Int:
      t.set_data_type(onnx::TensorProto::INT64);
      for (double x : d.v) t.add_int64_data(to_int64(x));
      break;
    case DenseType::Bool:
      t.set_data_type(onnx::TensorProto::BOOL);
      for (double x : d.v) t.add_int32_data(x != 0 ? 1 : 0);
      break;
  }
  return t;
}

}  // namespace tessera::ir
