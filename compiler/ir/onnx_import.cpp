#include "compiler/ir/onnx_import.h"

// Layout views. A value that a layout-only node (Reshape, Transpose, ...) produces is not a
// tensor but a view of one (its "base"). A view is described by "fine" dimensions: every base
// dimension is an affine combination of fine dimensions (`8*f1 + f2` after a split of 32 into
// 4 x 8), and every view dimension is a row-major group of fine dimensions (several when a
// Reshape merged dimensions). When an operator reads a view:
//   - a view dimension made of one fine dimension passes the operator's index through, so splits,
//     transposes and unit dimensions become rewritten indices of the base tensor;
//   - a view dimension made of several fine dimensions (a merge) must be read by a plain axis,
//     which is then split into one axis per fine dimension throughout the expression
//     (`r0` -> `r0_0, r0_1`, and `W[r0,..]` becomes `W[8*r0_0+r0_1,..]`). When that axis is an
//     output axis, the operator's output tensor keeps the split dimensions and the ONNX value
//     becomes a merging view of it (same row-major layout).
// A Reshape is a view when old and new dimensions can be refined into common fine dimensions
// (each boundary's size divides the next one's); otherwise it is an error.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "compiler/ir/onnx_fold.h"
#include "sim/common/error.h"

namespace tessera::ir {
namespace {

using Shape = std::vector<std::int64_t>;

const char* kSupported =
    "Add, AveragePool, BatchNormalization, Cast (to float), Clip, Concat, Constant, Conv (grouped too), Div, "
    "Dropout, Einsum (one or two operands), Erf, Exp, Expand, Flatten, Gather (constant indices), Gelu, Gemm, GlobalAveragePool, GlobalMaxPool, "
    "HardSigmoid, HardSwish, Identity, LayerNormalization, MatMul, Max, MaxPool, Min, Mul, Neg, Pad (zeros), Pow, "
    "Reciprocal, ReduceMax, ReduceMean, ReduceSum, Relu, Reshape, Sigmoid, Slice, Softmax, Split, Sqrt, Squeeze, "
    "Sub, Sum, Tanh, Transpose, Unsqueeze, Where (constant condition), and on constants also Shape, Size, Range, "
    "ConstantOfShape, Equal, Less, Greater, And, Or, Not, Mod, Tile, ScatterND (docs/onnx.md)";

// Attributes that only matter while training (or for number formats the importer has not got):
// an inference import may ignore them whatever their value.
bool no_effect_on_inference(const std::string& op, const std::string& attr) {
  if (op == "Dropout") return attr == "seed" || attr == "ratio" || attr == "is_test";
  if (op == "BatchNormalization") return attr == "momentum";
  if (op == "Cast") return attr == "saturate";  // float8 conversions only
  return false;
}

constexpr std::int64_t kMaxOpset = 21;

std::int64_t product(const Shape& s) {
  std::int64_t p = 1;
  for (auto d : s) p *= d;
  return p;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == ':';
}

// Characters the expression parser does not accept in names become '_'; names start with a letter
// or '_'.
std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += (static_cast<unsigned char>(c) < 128 && name_char(c)) ? c : '_';
  if (o.empty() || !(std::isalpha(static_cast<unsigned char>(o[0])) || o[0] == '_')) o = "_" + o;
  return o;
}

std::string unique_name(std::set<std::string>& used, const std::string& want) {
  if (used.insert(want).second) return want;
  for (int i = 2;; ++i) {
    std::string n = fmt::format("{}_{}", want, i);
    if (used.insert(n).second) return n;
  }
}

const char* onnx_type_name(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return "float";
    case onnx::TensorProto::UINT8: return "uint8";
    case onnx::TensorProto::INT8: return "int8";
    case onnx::TensorProto::UINT16: return "uint16";
    case onnx::TensorProto::INT16: return "int16";
    case onnx::TensorProto::INT32: return "int32";
    case onnx::TensorProto::INT64: return "int64";
    case onnx::TensorProto::STRING: return "string";
    case onnx::TensorProto::BOOL: return "bool";
    case onnx::TensorProto::FLOAT16: return "float16";
    case onnx::TensorProto::DOUBLE: return "double";
    case onnx::TensorProto::UINT32: return "uint32";
    case onnx::TensorProto::UINT64: return "uint64";
    case onnx::TensorProto::BFLOAT16: return "bfloat16";
    default: return "an unsupported element type";
  }
}

bool is_float_type(int t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::FLOAT16 ||
         t == onnx::TensorProto::BFLOAT16 || t == onnx::TensorProto::DOUBLE;
}

// The values of a constant tensor, or nullopt when they are not stored in the model (external
// data) or have an element type we do not read.
std::optional<std::vector<double>> tensor_values(const onnx::TensorProto& t) {
  auto d = dense_from_tensor(t);
  if (!d) return std::nullopt;
  return std::move(d->v);
}

Index plain(const std::string& axis) {
  Index i;
  i.terms.push_back({1, axis});
  return i;
}

// into += c * v, merging terms of the same axis.
void add_scaled(Index& into, const Index& v, std::int64_t c) {
  for (const auto& t : v.terms) {
    auto it = std::find_if(into.terms.begin(), into.terms.end(), [&](const IndexTerm& x) { return x.axis == t.axis; });
    if (it != into.terms.end()) it->coeff += c * t.coeff;
    else into.terms.push_back({c * t.coeff, t.axis});
  }
  into.offset += c * v.offset;
}

struct View {
  std::vector<std::int64_t> fine;                                 // extents of the fine dimensions
  std::vector<std::vector<std::pair<std::int64_t, int>>> base;    // base dim -> sum of coeff * fine
  std::vector<std::vector<int>> groups;                           // view dim -> fine dims, row-major
};

View identity_view(const Shape& s) {
  View v;
  for (std::size_t i = 0; i < s.size(); ++i) {
    v.fine.push_back(s[i]);
    v.base.push_back({{1, static_cast<int>(i)}});
    v.groups.push_back({static_cast<int>(i)});
  }
  return v;
}

bool is_identity(const View& v) {
  if (v.fine.size() != v.base.size() || v.groups.size() != v.base.size()) return false;
  for (std::size_t i = 0; i < v.base.size(); ++i)
    if (v.base[i] != std::vector<std::pair<std::int64_t, int>>{{1, static_cast<int>(i)}} ||
        v.groups[i] != std::vector<int>{static_cast<int>(i)})
      return false;
  return true;
}

// Whether the view reads its tensor in the tensor's own row-major order (it only merges, splits
// or adds unit dimensions): then the view and the tensor hold the same bytes.
bool row_major(const View& v) {
  std::vector<int> by_base, by_view;
  std::vector<int> uses(v.fine.size(), 0);
  for (const auto& b : v.base) {
    if (b.size() != 1 || b[0].first != 1) return false;
    uses[static_cast<std::size_t>(b[0].second)]++;
    if (v.fine[static_cast<std::size_t>(b[0].second)] > 1) by_base.push_back(b[0].second);
  }
  for (const auto& g : v.groups)
    for (int f : g)
      if (v.fine[static_cast<std::size_t>(f)] > 1) {
        if (uses[static_cast<std::size_t>(f)] != 1) return false;
        by_view.push_back(f);
      }
  return by_base == by_view;
}

// What an ONNX value name stands for.
struct Value {
  std::string tensor;        // the workload tensor holding the data
  Shape shape;               // the ONNX shape
  std::optional<View> view;  // none: the tensor itself
};

// An operator under construction: input accesses are written against ONNX values (views
// included); emit() rewrites them against workload tensors.
struct Operand {
  std::string value;
  std::vector<Index> idx;
};

struct OpBuild {
  std::string name;         // operator name (already unique)
  std::string out_key;      // key of the output in the value table
  std::string out_hint;     // wanted name of the output tensor
  std::vector<std::string> out_axes;
  std::map<std::string, std::int64_t> extent;  // every axis
  std::string assign = "=";
  std::string rhs;          // "{0}", "{1}", "{2}" stand for the operands' accesses
  std::vector<Operand> in;
  bool norm_last = false;   // softmax / layernorm: the last output axis must stay whole
};

std::vector<std::string> axes(const char* prefix, std::size_t n) {
  std::vector<std::string> a;
  for (std::size_t i = 0; i < n; ++i) a.push_back(fmt::format("{}{}", prefix, i));
  return a;
}

std::string fmt_number(double v) { return fmt::format("{}", v); }

class Importer {
 public:
  Importer(std::string path, ImportOptions options) : path_(std::move(path)), options_(std::move(options)) {}

  Workload run() {
    load();
    wl_.name = std::filesystem::path(path_).stem().string();
    if (wl_.name.empty()) wl_.name = "onnx";
    const auto& g = model_.graph();
    for (const auto& t : g.initializer()) consts_[t.name()] = &t;
    for (const auto& in : g.input())
      if (!consts_.count(in.name())) guarded({in.name()}, {in.name()}, [&] { declare_input(in); });
    report_symbolic_dims();
    index_consumers();
    // Constant nodes first: the GELU pattern's constants may come from them.
    for (int i = 0; i < g.node_size(); ++i)
      if (g.node(i).op_type() == "Constant") {
        guarded_node(i, [&] {
          enter(i);
          constant_node();
        });
        skip_.insert(i);
      }
    find_gelu_patterns();
    for (int i = 0; i < g.node_size(); ++i) {
      auto f = fused_.find(i);
      if (f != fused_.end()) {
        const FusedGelu& fg = f->second;
        guarded({fg.x}, {fg.y}, [&] {
          enter(fg.erf);
          unary(op_name(), fg.x, fg.y, fg.y, "gelu({0})");
        });
      }
      if (skip_.count(i)) continue;
      guarded_node(i, [&] {
        enter(i);
        import_node();
      });
    }
    node_ = nullptr;
    for (const auto& out : g.output()) {
      if (poisoned_.count(out.name())) continue;  // its node's problem is reported
      auto it = values_.find(out.name());
      if (it == values_.end() || wl_.tensor(it->second.tensor).role != TensorRole::Activation)
        fail(fmt::format("graph output '{}' is not computed by any operator (it is an input, a weight, a "
                         "layout view of one, or not produced by a node)", out.name()));
      if (it->second.view && !row_major(*it->second.view)) it = copy_output(out.name());
      wl_.mark_output(it->second.tensor);
    }
    report_problems();
    try {
      wl_.finalize();
    } catch (const Error& e) {
      fail(e.what());
    }
    return std::move(wl_);
  }

 private:
  // ---- errors ---------------------------------------------------------------------------------
  [[noreturn]] void fail(const std::string& msg) const { throw Error(fmt::format("{}: {}", path_, msg)); }
  [[noreturn]] void fail_node(const std::string& msg) const {
    if (!node_) fail(msg);
    throw Error(fmt::format("{}: node '{}' ({}): {}", path_, node_name_, node_->op_type(), msg));
  }

  // Runs one import step; an error is recorded and the step's outputs are marked as not
  // computed, so the import goes on and reports every problem at the end. A step that reads a
  // value some failed step should have made is skipped silently (its cause is reported).
  void guarded(const std::vector<std::string>& ins, const std::vector<std::string>& outs,
               const std::function<void()>& step) {
    bool blocked = false;
    for (const auto& in : ins) blocked = blocked || poisoned_.count(in) != 0;
    if (!blocked) {
      try {
        step();
        return;
      } catch (const SymbolicDim&) {
        // reported with every other symbolic dimension by report_symbolic_dims()
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.rfind(path_ + ": ", 0) == 0) msg = msg.substr(path_.size() + 2);
        problems_.push_back(msg);
        problem_ops_[node_ ? node_->op_type() : std::string("(graph input)")]++;
      }
    }
    for (const auto& o : outs)
      if (!o.empty()) poisoned_.insert(o);
  }
  void guarded_node(int i, const std::function<void()>& step) {
    const auto& n = model_.graph().node(i);
    guarded({n.input().begin(), n.input().end()}, {n.output().begin(), n.output().end()}, step);
  }

  void report_problems() const {
    if (problems_.empty()) return;
    if (problems_.size() == 1) fail(problems_[0]);
    std::string ops;
    for (const auto& [op, n] : problem_ops_) ops += fmt::format("{}{} {}", ops.empty() ? "" : ", ", n, op);
    std::string msg = fmt::format("{} problems ({}); nodes that only depend on them are not listed:", problems_.size(), ops);
    for (const auto& p : problems_) msg += "\n  " + p;
    fail(msg);
  }

  void enter(int i) {
    node_ = &model_.graph().node(i);
    node_name_ = node_->name().empty() ? fmt::format("{}_{}", node_->op_type(), i) : node_->name();
  }

  // ---- reading --------------------------------------------------------------------------------
  void load() {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path_, ec)) fail("cannot open the file: it does not exist");
    if (!fs::is_regular_file(path_, ec)) fail("cannot read the file: it is not a regular file");
    std::ifstream f(path_, std::ios::binary);
    if (!f) fail("cannot open the file");
    if (!model_.ParseFromIstream(&f)) fail("not an ONNX model (the file does not parse as an ONNX ModelProto)");
    if (!model_.has_graph() || model_.graph().node_size() == 0) fail("not an ONNX model (it has no graph or no nodes)");
    opset_ = 0;
    for (const auto& o : model_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = std::max<std::int64_t>(opset_, o.version());
    if (opset_ == 0) opset_ = 1;
    // Operators keep their meaning across opsets only as far as the importer was written for:
    // its opset-dependent forms (inputs that were attributes) go to 18, and 19-21 added types and
    // attributes, which the attribute check names. A later opset may change an operator's meaning.
    if (opset_ > kMaxOpset)
      fail(fmt::format("opset {} of the default domain is newer than the importer knows (at most {}); re-export the "
                       "model with an older opset (torch.onnx.export(..., opset_version=17))", opset_, kMaxOpset));
  }

  void declare_input(const onnx::ValueInfoProto& in) {
    if (!in.type().has_tensor_type()) fail(fmt::format("input '{}' is not a tensor", in.name()));
    const auto& tt = in.type().tensor_type();
    if (!is_float_type(tt.elem_type())) {
      unavailable_[in.name()] = fmt::format("a graph input of element type {}; only floating-point tensors "
                                            "(float, float16, bfloat16, double) are supported",
                                            onnx_type_name(tt.elem_type()));
      return;
    }
    if (!tt.has_shape()) fail(fmt::format("input '{}' has no shape; the importer needs static shapes", in.name()));
    Shape s;
    bool missing = false;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() > 0) { s.push_back(dim.dim_value()); continue; }
      if (dim.has_dim_param()) {
        const std::string& p = dim.dim_param();
        auto it = options_.dims.find(p);
        if (it != options_.dims.end()) {
          s.push_back(it->second);
          used_dims_.insert(it->first);
          continue;
        }
        static const std::set<std::string> batch_names = {"batch", "batch_size", "batchsize", "N", "B"};
        static const std::set<std::string> seq_names = {"seq", "seq_len", "seqlen", "sequence", "sequence_length", "T"};
        if (options_.batch > 0 && batch_names.count(p)) { s.push_back(options_.batch); continue; }
        if (options_.seq > 0 && seq_names.count(p)) { s.push_back(options_.seq); continue; }
        symbolic_[dim.dim_param()].push_back(fmt::format("'{}' dimension {}", in.name(), d));
        missing = true;
        s.push_back(1);
        continue;
      }
      fail(fmt::format("input '{}': dimension {} is unknown or not positive; the importer needs static shapes",
                       in.name(), d));
    }
    if (missing) throw SymbolicDim();
    // the workload format's bound (docs/workload.md): a dimension of 2^62 made element counts
    // overflow and compile spin (it was given as a shape, or as --batch / --dim)
    for (std::size_t d = 0; d < s.size(); ++d)
      if (s[d] > (std::int64_t{1} << 40))
        fail(fmt::format("input '{}': dimension {} is {}; at most 2^40", in.name(), d, s[d]));
    declare_tensor(in.name(), s, TensorRole::Input);
  }

  // Declares a workload tensor for an ONNX value (a rank-0 value becomes a [1] tensor seen through
  // a view with no dimensions).
  void declare_tensor(const std::string& key, const Shape& s, TensorRole role) {
    std::string name = unique_name(tensor_names_, sanitize(key));
    try {
      wl_.add_tensor(name, s.empty() ? Shape{1} : s, role, Dtype::Fp16);
    } catch (const Error& e) {
      if (node_) fail_node(e.what());
      fail(e.what());
    }
    Value v{name, s, std::nullopt};
    if (s.empty()) v.view = View{{1}, {{{1, 0}}}, {}};
    values_[key] = v;
  }

  void index_consumers() {
    const auto& g = model_.graph();
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& in : g.node(i).input())
        if (!in.empty()) consumers_[in].push_back(i);
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& out : g.node(i).output())
        if (!out.empty()) producer_[out] = i;
    for (const auto& o : g.output()) graph_outputs_.insert(o.name());
  }

  // ---- constants and values -------------------------------------------------------------------
  const onnx::TensorProto* constant(const std::string& name) const {
    auto it = consts_.find(name);
    return it == consts_.end() ? nullptr : it->second;
  }

  // The value of a one-element constant, if `name` is one.
  std::optional<double> scalar_const(const std::string& name) const {
    const auto* t = constant(name);
    if (!t) return std::nullopt;
    std::int64_t n = 1;
    for (auto d : t->dims()) n *= d;
    if (n != 1) return std::nullopt;
    auto v = tensor_values(*t);
    if (!v) return std::nullopt;
    return (*v)[0];
  }

  std::vector<std::int64_t> int_const(const std::string& name, const char* what) {
    const auto* t = constant(name);
    if (!t) fail_node(fmt::format("{} '{}' must be a constant (an initializer or a Constant node)", what, name));
    auto v = tensor_values(*t);
    if (!v || (t->data_type() != onnx::TensorProto::INT64 && t->data_type() != onnx::TensorProto::INT32))
      fail_node(fmt::format("{} '{}' must be an int64 constant stored in the model", what, name));
    std::vector<std::int64_t> out;
    for (double x : *v) out.push_back(to_int64(x));
    return out;
  }

  // The value an operator reads; a constant becomes a Weight tensor on first use.
  const Value& value(const std::string& name) {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    if (auto e = empty_.find(name); e != empty_.end())
      fail_node(fmt::format("input '{}' is empty ({}); only Concat accepts empty inputs", name, shape_str(e->second)));
    auto un = unavailable_.find(name);
    if (un != unavailable_.end()) fail_node(fmt::format("input '{}' is {}", name, un->second));
    if (const auto* t = constant(name)) {
      if (!is_float_type(t->data_type()))
        fail_node(fmt::format("constant '{}' has element type {}; only floating-point tensors are supported as operands",
                              name, onnx_type_name(t->data_type())));
      Shape s(t->dims().begin(), t->dims().end());
      declare_tensor(name, s, TensorRole::Weight);
      if (options_.keep_values) {
        if (auto d = dense_from_tensor(*t)) {
          std::vector<float>& v = wl_.tensor_mut(values_.at(name).tensor).values;
          v.assign(d->v.begin(), d->v.end());
        }
      }
      return values_.at(name);
    }
    fail_node(fmt::format("input '{}' is not a graph input, an initializer, or an output of an earlier node", name));
  }

  // Inputs are noted as attributes are: one the handler never asked for would be ignored.
  const std::string& input(int k) const {
    static const std::string none;
    if (k >= 0 && k < 64) inputs_read_ |= std::uint64_t{1} << k;
    return k < node_->input_size() ? node_->input(k) : none;
  }
  const std::string& output(int k = 0) const {
    if (k >= node_->output_size() || node_->output(k).empty()) fail_node(fmt::format("output {} is missing", k));
    return node_->output(k);
  }
  const std::string& need_input(int k) const {
    if (input(k).empty()) fail_node(fmt::format("input {} is missing", k));
    return input(k);
  }

  // ---- attributes -----------------------------------------------------------------------------
  // Every attribute a handler asks for is noted: an attribute of the node nobody asked for would
  // be ignored, and the model computed as if it had its default (check_attributes()).
  const onnx::AttributeProto* attr(const std::string& n) const {
    attrs_read_.push_back(n);
    for (const auto& a : node_->attribute())
      if (a.name() == n) return &a;
    return nullptr;
  }
  std::int64_t attr_int(const std::string& n, std::int64_t def) const {
    const auto* a = attr(n);
    return a ? a->i() : def;
  }
  double attr_float(const std::string& n, double def) const {
    const auto* a = attr(n);
    return a ? a->f() : def;
  }
  std::string attr_string(const std::string& n, const std::string& def) const {
    const auto* a = attr(n);
    return a ? a->s() : def;
  }
  std::optional<std::vector<std::int64_t>> attr_ints(const std::string& n) const {
    const auto* a = attr(n);
    if (!a) return std::nullopt;
    return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
  }

  std::int64_t norm_axis(std::int64_t axis, std::size_t rank, const char* what) const {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r) fail_node(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
    return axis < 0 ? axis + r : axis;
  }

  // ---- names ----------------------------------------------------------------------------------
  std::string op_name(const std::string& suffix = "") {
    return unique_name(op_names_, sanitize(node_name_) + suffix);
  }
  std::string internal_key(const std::string& n) { return "\x01" + n; }

  // A graph output that reads its tensor in another order (a final Transpose, or a Reshape of
  // one) becomes a tensor of its own, so that results hold its values in ONNX order.
  std::map<std::string, Value>::iterator copy_output(const std::string& name) {
    node_name_ = name;
    guarded({name}, {name}, [&] {
      const Shape shape = value(name).shape;
      const std::string key = internal_key(name + ".out");
      OpBuild b = start(op_name(".output"), key, name, shape);
      b.rhs = "{0}";
      b.in.push_back({name, plain_idx(b.out_axes)});
      emit(std::move(b));
      values_[name] = values_.at(key);
    });
    return values_.find(name);
  }

  // ---- layout views ---------------------------------------------------------------------------
  Value reshape(const Value& v, const Shape& target) {
    if (auto out = view_reshape(v, target)) return *out;
    not_a_view(v.shape, target);
  }

  [[noreturn]] void not_a_view(const Shape& from, const Shape& to) const {
    fail_node(fmt::format("reshape from {} to {} is not a layout view: the sizes of old and new dimensions do not "
                          "divide each other. Supported: splitting a dimension into several, merging adjacent "
                          "dimensions (read by plain axes only), and adding or removing dimensions of size 1",
                          shape_str(from), shape_str(to)));
  }

  // Reshape of a named input. When the input is itself a view that merged dimensions (say 56 read
  // as 8 x 7 windows) and the new shape splits them another way (7 x 8), no view of that view
  // exists: the input is made solid first (one copy), and the reshape is a view of the copy.
  Value reshape_input(const std::string& x, const Shape& target) {
    if (auto out = view_reshape(value(x), target)) return *out;
    const std::string flat = solid(x);
    if (flat != x)
      if (auto out = view_reshape(value(flat), target)) return *out;
    not_a_view(value(x).shape, target);
  }

  // The reshape as a view of v's layout, or nothing when the sizes do not line up.
  std::optional<Value> view_reshape(const Value& v, const Shape& target) {
    if (product(v.shape) != product(target))
      fail_node(fmt::format("cannot reshape {} ({} elements) to {}", shape_str(v.shape), product(v.shape), shape_str(target)));
    View view = v.view ? *v.view : identity_view(v.shape);
    std::vector<int> flat;                       // non-unit fine dims in view order
    std::vector<std::pair<std::size_t, int>> units;  // unit fine dims, with their position in flat
    for (const auto& grp : view.groups)
      for (int f : grp) {
        if (view.fine[f] == 1) units.push_back({flat.size(), f});
        else flat.push_back(f);
      }
    std::vector<std::vector<int>> groups;
    std::size_t pos = 0;
    for (std::int64_t t : target) {
      if (t == 1) {
        auto u = std::find_if(units.begin(), units.end(), [&](const auto& x) { return x.first == pos && x.second >= 0; });
        if (u != units.end()) {
          groups.push_back({u->second});
          u->second = -1;
        } else {
          view.fine.push_back(1);
          groups.push_back({static_cast<int>(view.fine.size()) - 1});
        }
        continue;
      }
      std::vector<int> grp;
      std::int64_t need = t;
      while (need > 1) {
        if (pos >= flat.size()) return std::nullopt;
        const int f = flat[pos];
        const std::int64_t e = view.fine[f];
        if (e <= need) {
          if (need % e != 0) return std::nullopt;
          grp.push_back(f);
          need /= e;
          ++pos;
        } else {
          if (e % need != 0) return std::nullopt;
          // f = (e/need) * outer + inner
          const int outer = static_cast<int>(view.fine.size());
          const int inner = outer + 1;
          view.fine.push_back(need);
          view.fine.push_back(e / need);
          for (auto& b : view.base) {
            std::vector<std::pair<std::int64_t, int>> nb;
            for (auto [c, x] : b) {
              if (x == f) {
                nb.push_back({c * (e / need), outer});
                nb.push_back({c, inner});
              } else {
                nb.push_back({c, x});
              }
            }
            b = nb;
          }
          grp.push_back(outer);
          flat[pos] = inner;
          need = 1;
        }
      }
      groups.push_back(grp);
    }
    view.groups = groups;
    Value out{v.tensor, target, view};
    if (is_identity(view)) out.view.reset();
    return out;
  }

  Value transpose(const Value& v, const std::vector<std::int64_t>& perm) {
    View view = v.view ? *v.view : identity_view(v.shape);
    Value out{v.tensor, {}, std::nullopt};
    std::vector<std::vector<int>> groups;
    for (auto p : perm) {
      groups.push_back(view.groups[p]);
      out.shape.push_back(v.shape[p]);
    }
    view.groups = groups;
    if (!is_identity(view)) out.view = view;
    return out;
  }

  // ---- emitting operators ---------------------------------------------------------------------
  // The axes that split into parts to read input k's merged dimensions, or nothing when k cannot
  // be read that way: a merged dimension read by a window (a convolution's 'a2+r1'), or merged
  // in another way than an earlier input merged the same axis (56 as 8 x 7 here, 7 x 8 there).
  std::optional<std::map<std::size_t, std::pair<std::string, std::vector<std::int64_t>>>> merged_reads(
      const OpBuild& b, std::size_t k, const std::map<std::string, std::vector<std::int64_t>>& split) {
    std::map<std::size_t, std::pair<std::string, std::vector<std::int64_t>>> out;  // dim -> (axis, parts)
    const Value& v = value(b.in[k].value);
    if (!v.view) return out;
    for (std::size_t i = 0; i < v.view->groups.size(); ++i) {
      const auto& grp = v.view->groups[i];
      if (grp.size() < 2) continue;
      const Index& ix = b.in[k].idx[i];
      if (!ix.plain()) return std::nullopt;
      std::vector<std::int64_t> parts;
      for (int f : grp) parts.push_back(v.view->fine[f]);
      const std::string& a = ix.terms[0].axis;
      auto it = split.find(a);
      if (it != split.end() && it->second != parts) return std::nullopt;
      for (const auto& [d, prev] : out)
        if (prev.first == a && prev.second != parts) return std::nullopt;
      out[i] = {a, parts};
    }
    return out;
  }

  void emit(OpBuild b) {
    // 1. Merged view dimensions: their reading axis is split into one axis per fine dimension.
    // An input that cannot be read so is made solid first (a copy; see solid()).
    std::map<std::string, std::vector<std::int64_t>> split;  // axis -> extents of its parts
    std::map<std::pair<std::size_t, std::size_t>, std::string> merged_axis;  // (operand, dim) -> axis
    for (std::size_t k = 0; k < b.in.size(); ++k) {
      auto reads = merged_reads(b, k, split);
      if (!reads) {
        b.in[k].value = solid(b.in[k].value);
        reads.emplace();
      }
      for (const auto& [i, axis_parts] : *reads) {
        split.emplace(axis_parts.first, axis_parts.second);
        merged_axis[{k, i}] = axis_parts.first;
      }
    }
    auto part_name = [](const std::string& a, std::size_t t) { return fmt::format("{}_{}", a, t); };
    std::vector<std::vector<std::size_t>> out_groups;  // ONNX output dim -> tensor dims
    std::vector<std::string> out_axes;
    for (const auto& a : b.out_axes) {
      out_groups.emplace_back();
      auto it = split.find(a);
      std::size_t parts = it == split.end() ? 1 : it->second.size();
      for (std::size_t t = 0; t < parts; ++t) {
        out_groups.back().push_back(out_axes.size());
        out_axes.push_back(it == split.end() ? a : part_name(a, t));
      }
    }
    if (b.norm_last && !b.out_axes.empty() && split.count(b.out_axes.back()))
      fail_node("normalizing along a merged dimension (a Reshape that merged dimensions) is not supported");
    for (const auto& [a, parts] : split) {
      b.extent.erase(a);
      for (std::size_t t = 0; t < parts.size(); ++t) b.extent[part_name(a, t)] = parts[t];
    }
    for (auto& op : b.in)
      for (auto& ix : op.idx) {
        Index n;
        n.offset = ix.offset;
        for (const auto& term : ix.terms) {
          auto it = split.find(term.axis);
          if (it == split.end()) { add_scaled(n, Index{{term}, 0}, 1); continue; }
          std::int64_t stride = product(it->second);
          for (std::size_t t = 0; t < it->second.size(); ++t) {
            stride /= it->second[t];
            add_scaled(n, plain(part_name(term.axis, t)), term.coeff * stride);
          }
        }
        ix = n;
      }

    // 2. Accesses of the underlying tensors.
    std::vector<std::string> texts;
    std::set<std::string> used(out_axes.begin(), out_axes.end());
    for (std::size_t k = 0; k < b.in.size(); ++k) {
      const Value& v = value(b.in[k].value);
      Access acc;
      acc.tensor = v.tensor;
      if (!v.view) {
        acc.indices = b.in[k].idx;
      } else {
        const View& view = *v.view;
        std::vector<Index> val(view.fine.size());  // unset fine dims are 0
        for (std::size_t i = 0; i < view.groups.size(); ++i) {
          const auto& grp = view.groups[i];
          if (grp.size() == 1) val[grp[0]] = b.in[k].idx[i];
          else
            for (std::size_t t = 0; t < grp.size(); ++t) val[grp[t]] = plain(part_name(merged_axis.at({k, i}), t));
        }
        for (const auto& bd : view.base) {
          Index ix;
          for (auto [c, f] : bd) add_scaled(ix, val[f], c);
          acc.indices.push_back(ix);
        }
      }
      for (const auto& ix : acc.indices)
        for (const auto& t : ix.terms) used.insert(t.axis);
      texts.push_back(acc.str());
    }

    // 3. The output tensor and the value the ONNX name now stands for.
    Shape tshape;
    for (const auto& a : out_axes) tshape.push_back(b.extent.at(a));
    Shape onnx_shape;
    for (const auto& a : b.out_axes) onnx_shape.push_back(split.count(a) ? product(split.at(a)) : b.extent.at(a));
    const std::string tname = unique_name(tensor_names_, sanitize(b.out_hint));
    Access out{tname, {}};
    for (const auto& a : out_axes) out.indices.push_back(plain(a));
    std::string rhs;
    for (std::size_t i = 0; i < b.rhs.size(); ++i) {
      if (b.rhs[i] == '{' && i + 2 < b.rhs.size() && b.rhs[i + 2] == '}') {
        rhs += texts.at(static_cast<std::size_t>(b.rhs[i + 1] - '0'));
        i += 2;
      } else {
        rhs += b.rhs[i];
      }
    }
    const std::string text = fmt::format("{} {} {}", out.str(), b.assign, rhs);
    std::map<std::string, std::int64_t> extents;
    for (const auto& [a, e] : b.extent)
      if (used.count(a)) extents[a] = e;
    try {
      wl_.add_op(b.name, text, extents, true);
    } catch (const Error& e) {
      fail_node(e.what());
    }
    Value res{tname, onnx_shape, std::nullopt};
    if (out_axes.size() != b.out_axes.size()) {
      View view;
      for (std::size_t j = 0; j < out_axes.size(); ++j) {
        view.fine.push_back(tshape[j]);
        view.base.push_back({{1, static_cast<int>(j)}});
      }
      for (const auto& grp : out_groups) view.groups.emplace_back(grp.begin(), grp.end());
      res.view = view;
    }
    values_[b.out_key] = res;
  }

  // Indices of an operand broadcast (numpy rules) against an output of shape `out`.
  std::vector<Index> bcast_idx(const Shape& s, const Shape& out, const std::vector<std::string>& ax) const {
    std::vector<Index> idx;
    const std::size_t off = out.size() - s.size();
    for (std::size_t d = 0; d < s.size(); ++d) idx.push_back(s[d] == out[off + d] ? plain(ax[off + d]) : Index{});
    return idx;
  }

  Shape broadcast(const Shape& a, const Shape& b) const {
    Shape out(std::max(a.size(), b.size()), 1);
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
      std::int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
      if (x != y && x != 1 && y != 1)
        fail_node(fmt::format("shapes {} and {} do not broadcast", shape_str(a), shape_str(b)));
      out[i] = std::max(x, y);
    }
    return out;
  }

  OpBuild start(const std::string& name, const std::string& out_key, const std::string& out_hint, const Shape& out_shape) {
    OpBuild b;
    b.name = name;
    b.out_key = out_key;
    b.out_hint = out_hint;
    b.out_axes = axes("a", out_shape.size());
    for (std::size_t i = 0; i < out_shape.size(); ++i) b.extent[b.out_axes[i]] = out_shape[i];
    return b;
  }

  std::vector<Index> plain_idx(const std::vector<std::string>& ax) const {
    std::vector<Index> idx;
    for (const auto& a : ax) idx.push_back(plain(a));
    return idx;
  }

  // Y = fn(X) element-wise ("relu({0})", "gelu({0})", "softmax({0})").
  void unary(const std::string& name, const std::string& x_in, const std::string& out_key, const std::string& out_hint,
             const std::string& rhs, bool norm_last = false) {
    const std::string x = norm_last && merges_last(x_in) ? solid(x_in) : x_in;
    const Value& v = value(x);
    if (v.shape.empty()) fail_node(fmt::format("input '{}' is a scalar; it needs at least one dimension", x));
    OpBuild b = start(name, out_key, out_hint, v.shape);
    b.rhs = rhs;
    b.norm_last = norm_last;
    b.in.push_back({x, plain_idx(b.out_axes)});
    emit(std::move(b));
  }

  // Whether the last dimension of `x` is a merge of several (softmax and layernorm need it whole).
  bool merges_last(const std::string& x) {
    const Value& v = value(x);
    return v.view && !v.view->groups.empty() && v.view->groups.back().size() > 1;
  }

  // Y = A op B with numpy broadcasting, or with a one-element constant operand as a scalar.
  // `op`: + - * / max min pow.
  void binary(const std::string& name, const std::string& op, const std::string& a, const std::string& bn,
              const std::string& out_key, const std::string& out_hint) {
    auto ca = scalar_const(a), cb = scalar_const(bn);
    if (ca && cb) fail_node("both operands are constants; constant folding is not supported");
    if (ca || cb) {
      const bool scalar_first = ca.has_value();
      const std::string& x = scalar_first ? bn : a;
      double c = scalar_first ? *ca : *cb;
      if (!std::isfinite(c)) fail_node(fmt::format("the constant operand is not finite ({})", c));
      const Value& v = value(x);
      const auto* ct = constant(scalar_first ? a : bn);
      Shape cshape(ct->dims().begin(), ct->dims().end());
      Shape full = broadcast(v.shape, cshape);
      std::string rhs;
      if (op == "+" && c < 0) rhs = "{0} - " + fmt_number(-c);
      else if (op == "-" && !scalar_first && c < 0) rhs = "{0} + " + fmt_number(-c);
      else if (scalar_first && (op == "+" || op == "*" || op == "max" || op == "min")) rhs = "{0} " + op + " " + fmt_number(c);
      else if (scalar_first) rhs = fmt_number(c) + " " + op + " {0}";
      else rhs = "{0} " + op + " " + fmt_number(c);
      if (v.shape.empty()) fail_node(fmt::format("input '{}' is a scalar; it needs at least one dimension", x));
      OpBuild b = start(name, out_key, out_hint, v.shape);
      b.rhs = rhs;
      b.in.push_back({x, plain_idx(b.out_axes)});
      emit(std::move(b));
      if (full != v.shape) values_[out_key] = reshape(values_.at(out_key), full);  // leading unit dims
      return;
    }
    const Value& va = value(a);
    const Value& vb = value(bn);
    Shape out = broadcast(va.shape, vb.shape);
    if (out.empty()) fail_node("both operands are scalars; they need at least one dimension");
    OpBuild b = start(name, out_key, out_hint, out);
    b.rhs = "{0} " + op + " {1}";
    b.in.push_back({a, bcast_idx(va.shape, out, b.out_axes)});
    b.in.push_back({bn, bcast_idx(vb.shape, out, b.out_axes)});
    emit(std::move(b));
  }

  // C = A x B (numpy matmul: batch dimensions broadcast, 1-D operands promoted).
  void matmul(const std::string& name, const std::string& a, const std::string& bn, bool ta, bool tb,
              const std::string& out_key, const std::string& out_hint) {
    const Shape sa = value(a).shape, sb = value(bn).shape;
    if (sa.empty() || sb.empty()) fail_node("operands must have at least one dimension");
    const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
    Shape ma = a1 ? Shape{1, sa[0]} : sa, mb = b1 ? Shape{sb[0], 1} : sb;
    const std::size_t ra = ma.size(), rb = mb.size();
    const std::int64_t M = ta ? ma[ra - 1] : ma[ra - 2], Ka = ta ? ma[ra - 2] : ma[ra - 1];
    const std::int64_t Kb = tb ? mb[rb - 1] : mb[rb - 2], N = tb ? mb[rb - 2] : mb[rb - 1];
    if (Ka != Kb)
      fail_node(fmt::format("inner dimensions do not match: {} x {}{}{}", shape_str(sa), shape_str(sb),
                            ta ? " (A transposed)" : "", tb ? " (B transposed)" : ""));
    Shape ba(ma.begin(), ma.end() - 2), bb(mb.begin(), mb.end() - 2);
    Shape batch = broadcast(ba, bb);
    Shape out = batch;
    if (!a1) out.push_back(M);
    if (!b1) out.push_back(N);
    if (out.empty()) fail_node("a product of two vectors (a scalar result) is not supported");
    OpBuild b = start(name, out_key, out_hint, out);
    const std::vector<std::string> bax(b.out_axes.begin(), b.out_axes.begin() + static_cast<long>(batch.size()));
    const std::string m_axis = a1 ? "" : b.out_axes[batch.size()];
    const std::string n_axis = b1 ? "" : b.out_axes.back();
    b.extent["r0"] = Ka;
    auto ia = bcast_idx(ba, batch, bax);
    if (a1) ia.push_back(plain("r0"));
    else if (ta) { ia.push_back(plain("r0")); ia.push_back(plain(m_axis)); }
    else { ia.push_back(plain(m_axis)); ia.push_back(plain("r0")); }
    auto ib = bcast_idx(bb, batch, bax);
    if (b1) ib.push_back(plain("r0"));
    else if (tb) { ib.push_back(plain(n_axis)); ib.push_back(plain("r0")); }
    else { ib.push_back(plain("r0")); ib.push_back(plain(n_axis)); }
    b.assign = "+=";
    b.rhs = "{0} * {1}";
    b.in.push_back({a, ia});
    b.in.push_back({bn, ib});
    emit(std::move(b));
  }

  // Spatial geometry shared by Conv and the pools.
  struct Window {
    Shape kernel, strides, pad_begin, out;
  };
  Window window(const Shape& x, const Shape& kernel, bool allow_ceil) {
    const std::size_t n = kernel.size();
    Window w;
    w.kernel = kernel;
    w.strides = attr_ints("strides").value_or(Shape(n, 1));
    if (w.strides.size() != n) fail_node(fmt::format("strides has {} values for {} spatial dimensions", w.strides.size(), n));
    for (auto s : w.strides)
      if (s < 1) fail_node("strides must be positive");
    if (auto d = attr_ints("dilations"))
      for (auto v : *d)
        if (v != 1) fail_node("only dilations of 1 are supported");
    Shape pads = attr_ints("pads").value_or(Shape(2 * n, 0));
    if (pads.size() != 2 * n) fail_node(fmt::format("pads has {} values for {} spatial dimensions", pads.size(), n));
    const std::string auto_pad = attr_string("auto_pad", "NOTSET");
    const bool ceil_mode = attr_int("ceil_mode", 0) != 0;
    if (ceil_mode && !allow_ceil) fail_node("ceil_mode is not supported");
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t in = x[2 + i], k = kernel[i], s = w.strides[i];
      std::int64_t pb = pads[i], pe = pads[n + i];
      if (auto_pad == "VALID") {
        pb = pe = 0;
      } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        const std::int64_t o = (in + s - 1) / s;
        const std::int64_t total = std::max<std::int64_t>(0, (o - 1) * s + k - in);
        pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe = total - pb;
      } else if (auto_pad != "NOTSET") {
        fail_node(fmt::format("auto_pad '{}' is not supported", auto_pad));
      }
      if (pb < 0 || pe < 0) fail_node("pads must not be negative");
      const std::int64_t span = in + pb + pe - k;
      if (span < 0) fail_node(fmt::format("the kernel ({}) is larger than the padded input ({})", k, in + pb + pe));
      std::int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (ceil_mode && (o - 1) * s >= in + pb) --o;  // a window must start inside the input or its begin padding
      w.pad_begin.push_back(pb);
      w.out.push_back(o);
    }
    return w;
  }

  // Index of input position for output axis `a` and kernel axis `r`: s*a + r - pad.
  static Index window_index(const std::string& a, std::int64_t s, const std::string& r, std::int64_t pad) {
    Index ix;
    ix.terms.push_back({s, a});
    ix.terms.push_back({1, r});
    ix.offset = -pad;
    return ix;
  }

  // An attribute of the node outside `known` (those its operator's handler read, or for a folded
  // node those fold_node() reads) is not implemented: a newer opset's option, a typo, a mode
  // there is no code for. Ignoring it would compute something else than the model says.
  void check_attributes(const std::vector<std::string>& known) const {
    for (const auto& a : node_->attribute()) {
      if (std::find(known.begin(), known.end(), a.name()) != known.end()) continue;
      if (no_effect_on_inference(node_->op_type(), a.name())) continue;
      std::vector<std::string> listed;
      for (const auto& k : known)
        if (std::find(listed.begin(), listed.end(), k) == listed.end()) listed.push_back(k);
      fail_node(fmt::format("attribute '{}' is not supported ({})", a.name(),
                            listed.empty() ? "the importer reads no attribute of " + node_->op_type()
                                           : fmt::format("the importer reads {}", fmt::join(listed, ", "))));
    }
  }

  // A given input (not an empty name) its handler never asked for: an optional operand the
  // importer has no code for (a third operand given to MatMul, a future opset's new input).
  void check_inputs() const {
    for (int k = 0; k < node_->input_size(); ++k) {
      if (node_->input(k).empty() || (k < 64 && (inputs_read_ >> k & 1))) continue;
      fail_node(fmt::format("input {} ('{}') is not supported: the importer reads {} input{} of {}", k, node_->input(k),
                            __builtin_popcountll(inputs_read_), __builtin_popcountll(inputs_read_) == 1 ? "" : "s",
                            node_->op_type()));
    }
  }

  // ---- constant folding -------------------------------------------------------------------------
  void import_node() {
    outputs_supported_ = 1;
    attrs_read_.clear();
    inputs_read_ = 0;
    if (fold()) {
      check_attributes(fold_attributes(node_->op_type(), opset_));
      return;
    }
    convert();
    check_attributes(attrs_read_);
    check_inputs();
    for (int k = outputs_supported_; k < node_->output_size(); ++k)
      if (!node_->output(k).empty())
        unavailable_[node_->output(k)] = fmt::format("output {} of node '{}' ({}), which the importer does not compute",
                                                     k, node_name_, node_->op_type());
  }

  // A node whose inputs are all constants (or, for Shape and Size, whose input's shape is known)
  // is evaluated now; its outputs become constants. Layout nodes on large floating-point
  // constants stored in the model (weights) stay views of the weight instead.
  bool fold() {
    const std::string& t = node_->op_type();
    if (!foldable_op(t)) return false;
    const bool layout = t == "Reshape" || t == "Flatten" || t == "Transpose" || t == "Squeeze" ||
                        t == "Unsqueeze" || t == "Identity" || t == "Dropout";
    for (int k = 0; k < node_->input_size(); ++k) {
      const std::string& name = node_->input(k);
      if (name.empty() || ((t == "Shape" || t == "Size") && k == 0)) continue;
      const auto* c = constant(name);
      if (!c) return false;
      if (k == 0 && layout && is_float_type(c->data_type()) && !folded_.count(name)) {  // a weight
        std::int64_t n = 1;
        for (auto d : c->dims()) n *= d;
        if (n > 1024) return false;
      }
    }
    std::vector<std::optional<Dense>> in;
    for (int k = 0; k < node_->input_size(); ++k) {
      const std::string& name = node_->input(k);
      if (name.empty()) {
        in.emplace_back();
      } else if (const auto* c = constant(name)) {
        auto d = dense_from_tensor(*c);
        if (!d) return false;  // external data: the operator path reports it
        in.push_back(std::move(*d));
      } else {
        in.push_back(Dense{value(name).shape, {}, DenseType::Float});  // Shape / Size: only the shape
      }
    }
    std::vector<Dense> out;
    try {
      out = fold_node(*node_, in, opset_);
    } catch (const Error& e) {
      fail_node(e.what());
    }
    outputs_supported_ = static_cast<int>(out.size());
    for (int k = 0; k < node_->output_size() && k < static_cast<int>(out.size()); ++k)
      if (!node_->output(k).empty()) {
        set_constant(node_->output(k), out[static_cast<std::size_t>(k)]);
        folded_.insert(node_->output(k));
      }
    return true;
  }

  void set_constant(const std::string& name, const Dense& d) {
    owned_consts_.push_back(tensor_from_dense(d, name));
    consts_[name] = &owned_consts_.back();
  }

  std::optional<Dense> dense_const(const std::string& name) const {
    const auto* c = constant(name);
    if (!c) return std::nullopt;
    return dense_from_tensor(*c);
  }

  // ---- operators ------------------------------------------------------------------------------
  void convert() {
    const std::string& t = node_->op_type();
    outputs_supported_ = 1;
    if (convert_more(t)) return;
    if (t == "MatMul") {
      matmul(op_name(), need_input(0), need_input(1), false, false, output(), output());
    } else if (t == "Gemm") {
      gemm();
    } else if (t == "Conv") {
      conv();
    } else if (t == "Add" || t == "Sub" || t == "Mul" || t == "Div") {
      const std::string op = t == "Add" ? "+" : t == "Sub" ? "-" : t == "Mul" ? "*" : "/";
      binary(op_name(), op, need_input(0), need_input(1), output(), output());
    } else if (t == "Relu") {
      unary(op_name(), need_input(0), output(), output(), "relu({0})");
    } else if (t == "Gelu") {
      unary(op_name(), need_input(0), output(), output(), "gelu({0})");
    } else if (t == "Softmax") {
      const std::size_t rank = value(need_input(0)).shape.size();
      if (rank == 0) fail_node("the input is a scalar");
      const std::int64_t axis_attr = attr_int("axis", opset_ >= 13 ? -1 : 1);
      if (norm_axis(axis_attr, rank, "axis") != static_cast<std::int64_t>(rank) - 1)
        fail_node(fmt::format("axis {} is not the last axis of the rank-{} input; only softmax along the last axis "
                              "is supported", axis_attr, rank));
      unary(op_name(), need_input(0), output(), output(), "softmax({0})", true);
    } else if (t == "LayerNormalization") {
      layernorm();
    } else if (t == "MaxPool" || t == "AveragePool") {
      pool(t == "MaxPool");
    } else if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
      global_pool(t == "GlobalMaxPool");
    } else if (t == "Reshape") {
      const Value& v = value(need_input(0));
      const auto want = int_const(need_input(1), "the target shape");
      Shape target;
      try {
        target = reshape_target(v.shape, want, attr_int("allowzero", 0) != 0);
      } catch (const Error& e) {
        fail_node(e.what());
      }
      for (std::size_t i = 0; i < target.size(); ++i)
        if (target[i] == 0) fail_node(fmt::format("target shape entry {} is 0", i));
      values_[output()] = reshape_input(need_input(0), target);
    } else if (t == "Flatten") {
      const Value& v = value(need_input(0));
      const auto r = static_cast<std::int64_t>(v.shape.size());
      std::int64_t axis = attr_int("axis", 1);
      if (axis < -r || axis > r) fail_node(fmt::format("axis {} is out of range for rank {}", axis, r));
      if (axis < 0) axis += r;
      const auto mid = v.shape.begin() + axis;
      values_[output()] = reshape_input(need_input(0), {product(Shape(v.shape.begin(), mid)), product(Shape(mid, v.shape.end()))});
    } else if (t == "Transpose") {
      const Value& v = value(need_input(0));
      Shape perm = attr_ints("perm").value_or(Shape{});
      if (!attr("perm"))
        for (std::size_t i = v.shape.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
      Shape sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (std::size_t i = 0; i < sorted.size(); ++i)
        if (sorted[i] != static_cast<std::int64_t>(i) || sorted.size() != v.shape.size())
          fail_node(fmt::format("perm {} is not a permutation of the input's {} dimensions", shape_str(perm), v.shape.size()));
      values_[output()] = transpose(v, perm);
    } else if (t == "Squeeze" || t == "Unsqueeze") {
      squeeze(t == "Unsqueeze");
    } else if (t == "Identity" || t == "Dropout") {
      // Dropout passes its input on in inference, and in training with a ratio of 0 (Swin's
      // attention exports training_mode true with ratio 0); otherwise it would drop values
      if (t == "Dropout") {
        const std::string& ratio_in = input(1);
        if (!input(2).empty() && scalar_const(input(2)).value_or(1) != 0) {
          const double ratio = ratio_in.empty() ? 0.5 : scalar_const(ratio_in).value_or(NAN);
          if (ratio != 0)
            fail_node(fmt::format("training_mode is true (or not a constant) with ratio {}: dropout that drops values "
                                  "is not supported (export the model in eval mode)", ratio));
        }
      }
      if (const auto* c = constant(need_input(0)); c && !values_.count(need_input(0))) consts_[output()] = c;
      else values_[output()] = value(need_input(0));
    } else {
      fail_node(fmt::format("unsupported operator; supported: {}", kSupported));
    }
  }

  // ---- operators beyond the original set (issue 11) --------------------------------------------
  bool convert_more(const std::string& t) {
    static const std::map<std::string, std::string> unary_fns = {
        {"Sigmoid", "sigmoid({0})"}, {"Tanh", "tanh({0})"}, {"Erf", "erf({0})"}, {"Sqrt", "sqrt({0})"},
        {"Exp", "exp({0})"},         {"Neg", "0 - {0}"},    {"Reciprocal", "1 / {0}"}};
    // operators whose conversion takes nothing but the node
    static const std::map<std::string, void (Importer::*)()> handlers = {
        {"Clip", &Importer::clip},       {"Concat", &Importer::concat},   {"Slice", &Importer::slice_data},
        {"Split", &Importer::split_data}, {"Gather", &Importer::gather_data}, {"Pad", &Importer::pad},
        {"Expand", &Importer::expand},   {"Where", &Importer::where},     {"BatchNormalization", &Importer::batchnorm},
        {"Einsum", &Importer::einsum}};
    if (auto it = unary_fns.find(t); it != unary_fns.end()) {
      unary(op_name(), need_input(0), output(), output(), it->second);
    } else if (auto h = handlers.find(t); h != handlers.end()) {
      (this->*h->second)();
    } else if (t == "Pow" || t == "Min" || t == "Max" || t == "Sum") {
      const std::string op = t == "Pow" ? "pow" : t == "Min" ? "min" : t == "Max" ? "max" : "+";
      variadic(op);
    } else if (t == "HardSigmoid" || t == "HardSwish") {
      hard(t == "HardSwish");
    } else if (t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax") {
      reduce(t == "ReduceMean" ? "avg=" : t == "ReduceSum" ? "+=" : "max=");
    } else if (t == "Cast") {
      const auto to = attr_int("to", onnx::TensorProto::FLOAT);
      if (!is_float_type(static_cast<int>(to)))
        fail_node(fmt::format("cast of computed values to {} is not supported (only to floating-point types, which "
                              "tessera computes in fp16 anyway)", onnx_type_name(static_cast<int>(to))));
      values_[output()] = value(need_input(0));
    } else if (t == "LSTM" || t == "GRU" || t == "RNN") {
      recurrent(t);
    } else if (t == "Shape" || t == "Size" || t == "Equal" || t == "Less" || t == "Greater" || t == "Not" ||
               t == "And" || t == "Or" || t == "Mod" || t == "Range" || t == "ConstantOfShape" || t == "ScatterND" ||
               t == "Tile" || t == "Floor" || t == "Ceil" || t == "Abs") {
      fail_node("supported only on constants (shape and mask arithmetic, folded at import); here an input is "
                "computed at run time");
    } else {
      return false;
    }
    return true;
  }

  // Y = X1 op X2 op ... (two or more inputs, numpy broadcasting; Pow, Min, Max, Sum).
  void variadic(const std::string& op) {
    if (node_->input_size() < 1) fail_node("no inputs");
    if (node_->input_size() == 1) {
      values_[output()] = value(need_input(0));
      return;
    }
    std::string acc = need_input(0);
    for (int k = 1; k < node_->input_size(); ++k) {
      const bool last = k + 1 == node_->input_size();
      const std::string key = last ? output() : internal_key(fmt::format("{}.{}", output(), k));
      binary(op_name(last ? "" : fmt::format(".{}", k)), op, acc, need_input(k), key,
             last ? output() : fmt::format("{}.{}", output(), k));
      acc = key;
    }
  }

  // A chain of element-wise steps on one input ("{0} max 0", "{0} min 6") ending in `out` (by
  // default the node's output): step k is operator `<node>.k` writing `<out>.k`, the last one is
  // `<node><last_suffix>` writing `out`.
  void chain(const std::string& x, const std::vector<std::string>& steps, const std::string& out_key = "",
             const std::string& out_hint = "", const std::string& last_suffix = "") {
    const std::string key_last = out_key.empty() ? output() : out_key, hint_last = out_hint.empty() ? output() : out_hint;
    std::string in = x;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const bool last = k + 1 == steps.size();
      const std::string key = last ? key_last : internal_key(fmt::format("{}.{}", output(), k));
      unary(op_name(last ? last_suffix : fmt::format(".{}", k)), in, key,
            last ? hint_last : fmt::format("{}.{}", output(), k), steps[k]);
      in = key;
    }
    if (steps.empty()) values_[key_last] = value(x);
  }

  std::optional<double> bound(int input_index, const char* attr_name) {
    if (opset_ >= 11) {
      const std::string& n = input(input_index);
      if (n.empty()) return std::nullopt;
      auto c = scalar_const(n);
      if (!c) fail_node(fmt::format("input '{}' must be a one-element constant", n));
      return c;
    }
    if (!attr(attr_name)) return std::nullopt;
    return attr_float(attr_name, 0);
  }

  void clip() {
    std::vector<std::string> steps;
    const auto lo = bound(1, "min"), hi = bound(2, "max");
    if (lo && std::isfinite(*lo)) steps.push_back("{0} max " + fmt_number(*lo));
    if (hi && std::isfinite(*hi)) steps.push_back("{0} min " + fmt_number(*hi));
    chain(need_input(0), steps);
  }

  // HardSigmoid: max(0, min(1, alpha x + beta)); HardSwish: x * HardSigmoid(x) with 1/6, 1/2.
  void hard(bool swish) {
    const double alpha = swish ? 1.0 / 6 : attr_float("alpha", 0.2), beta = swish ? 0.5 : attr_float("beta", 0.5);
    const std::string x = need_input(0);
    const std::vector<std::string> steps{"{0} * " + fmt_number(alpha), "{0} + " + fmt_number(beta), "{0} max 0",
                                         "{0} min 1"};
    if (!swish) {
      chain(x, steps);
      return;
    }
    const std::string key = internal_key(output() + ".3");
    chain(x, steps, key, output() + ".3", ".3");
    binary(op_name(), "*", x, key, output(), output());
  }

  std::vector<std::int64_t> reduce_axes(std::size_t rank) {
    std::optional<std::vector<std::int64_t>> ax;
    if (opset_ >= 18 || (node_->op_type() == "ReduceSum" && opset_ >= 13)) {
      if (!input(1).empty()) ax = int_const(input(1), "axes");
    } else {
      ax = attr_ints("axes");
    }
    std::vector<std::int64_t> out;
    if (!ax || ax->empty()) {
      if (attr_int("noop_with_empty_axes", 0) != 0) return out;
      for (std::size_t i = 0; i < rank; ++i) out.push_back(static_cast<std::int64_t>(i));
      return out;
    }
    for (auto a : *ax) out.push_back(norm_axis(a, rank, "axis"));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // Y[kept] (avg=|+=|max=) X[kept and reduced]; with keepdims the output is a view with unit
  // dimensions where the reduced ones were.
  void reduce(const std::string& assign) {
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    if (sx.empty()) fail_node("the input is a scalar");
    const auto axes = reduce_axes(sx.size());
    if (axes.empty()) {
      values_[output()] = value(x);
      return;
    }
    Shape kept;
    std::vector<bool> red(sx.size(), false);
    for (auto a : axes) red[static_cast<std::size_t>(a)] = true;
    for (std::size_t i = 0; i < sx.size(); ++i)
      if (!red[i]) kept.push_back(sx[i]);
    if (kept.empty()) fail_node("reducing every dimension to a scalar is not supported");
    const bool keep = attr_int("keepdims", 1) != 0;
    const std::string key = keep ? internal_key(output() + ".reduced") : output();
    OpBuild b = start(op_name(), key, output(), kept);
    std::vector<Index> ix;
    std::size_t k = 0, r = 0;
    for (std::size_t i = 0; i < sx.size(); ++i) {
      if (red[i]) {
        const std::string ra = fmt::format("r{}", r++);
        b.extent[ra] = sx[i];
        ix.push_back(plain(ra));
      } else {
        ix.push_back(plain(b.out_axes[k++]));
      }
    }
    b.assign = assign;
    b.rhs = "{0}";
    b.in.push_back({x, ix});
    emit(std::move(b));
    if (keep) {
      Shape out = sx;
      for (auto a : axes) out[static_cast<std::size_t>(a)] = 1;
      values_[output()] = reshape(values_.at(key), out);
    }
  }

  // A value whose view merges dimensions, copied into a tensor of its own: an index that is not a
  // plain axis cannot read a merged dimension.
  // The expression language cannot flatten (an output index is a plain axis), so the merged
  // dimension is read by a reduction axis against a constant identity matrix:
  //   Y[..,a_i,..] += X[..,r0_0,r0_1,..] * I[e1*r0_0+r0_1, a_i]
  // exact (every product is x * 1 or absent), at 2 * |Y| * M FLOPs for a merge of M elements.
  std::string solid(const std::string& x) {
    std::string cur = x;
    for (int pass = 0;; ++pass) {
      const Value& v = value(cur);
      int dim = -1;
      if (v.view)
        for (std::size_t i = 0; i < v.view->groups.size() && dim < 0; ++i)
          if (v.view->groups[i].size() > 1) dim = static_cast<int>(i);
      if (dim < 0) return cur;
      const auto d = static_cast<std::size_t>(dim);
      const std::int64_t m = v.shape[d];
      if (m > 4096)
        fail_node(fmt::format("input '{}' merges dimensions into one of {} elements, which must be made one "
                              "dimension here; at most 4096 are supported", x, m));
      const std::string eye = fmt::format("identity_{}", m);
      if (!consts_.count(eye)) {
        Dense id{{m, m}, std::vector<double>(static_cast<std::size_t>(m * m), 0.0), DenseType::Float};
        for (std::int64_t i = 0; i < m; ++i) id.v[static_cast<std::size_t>(i * m + i)] = 1.0;
        set_constant(eye, id);
      }
      const std::string key = internal_key(fmt::format("{}.flat{}", x, pass));
      if (values_.count(key)) {  // made solid for an earlier reader already
        cur = key;
        continue;
      }
      OpBuild b = start(op_name(fmt::format(".flat{}", pass)), key, fmt::format("{}.flat", x), v.shape);
      b.extent["r0"] = m;
      std::vector<Index> ix = plain_idx(b.out_axes);
      ix[d] = plain("r0");
      b.assign = "+=";
      b.rhs = "{0} * {1}";
      b.in.push_back({cur, ix});
      b.in.push_back({eye, {plain("r0"), plain(b.out_axes[d])}});
      emit(std::move(b));
      cur = key;
    }
  }

  // Y = X read at a shifted, strided or fixed position per dimension: `idx[d]` is the index of
  // input dimension d in terms of the output axes (a copy operator).
  void copy_op(const std::string& name, const std::string& x, const Shape& out_shape, const std::string& out_key,
               const std::string& out_hint, const std::function<Index(std::size_t, const std::vector<std::string>&)>& idx) {
    if (out_shape.empty()) fail_node("the result is a scalar; it needs at least one dimension");
    for (auto d : out_shape)
      if (d < 1) fail_node(fmt::format("the result {} has an empty dimension", shape_str(out_shape)));
    const std::string src = solid(x);
    OpBuild b = start(name, out_key, out_hint, out_shape);
    b.rhs = "{0}";
    std::vector<Index> ix;
    for (std::size_t d = 0; d < value(src).shape.size(); ++d) ix.push_back(idx(d, b.out_axes));
    b.in.push_back({src, ix});
    emit(std::move(b));
  }

  static Index affine(std::int64_t coeff, const std::string& axis, std::int64_t offset) {
    Index ix;
    if (coeff != 0) ix.terms.push_back({coeff, axis});
    ix.offset = offset;
    return ix;
  }

  // Concat of computed values: out = X0 + X1 shifted + ... (a read past an input's end is absent,
  // i.e. zero), one operator per extra input.
  void concat() {
    std::vector<std::string> parts;
    for (int k = 0; k < node_->input_size(); ++k)
      if (!empty_.count(need_input(k))) parts.push_back(need_input(k));
    if (parts.empty()) fail_node("every input is empty");
    concat_parts(parts, attr_int("axis", 0), output());
  }

  // `parts` joined along `axis_attr` into the value `out_key` (also the output tensor's name).
  void concat_parts(const std::vector<std::string>& parts, std::int64_t axis_attr, const std::string& out_key) {
    const std::string& first = parts[0];
    const Shape s0 = value(first).shape;
    if (s0.empty()) fail_node("inputs are scalars");
    const auto axis = static_cast<std::size_t>(norm_axis(axis_attr, s0.size(), "axis"));
    Shape out = s0;
    std::vector<std::int64_t> at;
    out[axis] = 0;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const Shape sk = value(parts[k]).shape;
      if (sk.size() != s0.size()) fail_node("inputs differ in rank");
      for (std::size_t i = 0; i < sk.size(); ++i)
        if (i != axis && sk[i] != s0[i])
          fail_node(fmt::format("input {} is {} but input 0 is {}", k, shape_str(sk), shape_str(s0)));
      at.push_back(out[axis]);
      out[axis] += sk[axis];
    }
    if (parts.size() == 1) {
      values_[out_key] = value(first);
      return;
    }
    const std::string hint = out_key.rfind('\x01', 0) == 0 ? out_key.substr(1) : out_key;
    std::string acc = first;
    for (std::size_t k = 1; k < parts.size(); ++k) {
      const bool last = k + 1 == parts.size();
      const std::string key = last ? out_key : internal_key(fmt::format("{}.{}", hint, k));
      const bool node_output = node_->output_size() > 0 && out_key == node_->output(0);  // a Concat node's
      const std::string name = node_output ? op_name(last ? "" : fmt::format(".{}", k))
                                           : op_name(fmt::format(".{}.{}", hint, k));
      OpBuild b = start(name, key, last ? hint : fmt::format("{}.{}", hint, k), out);
      b.rhs = "{0} + {1}";
      b.in.push_back({acc, plain_idx(b.out_axes)});
      std::vector<Index> ix = plain_idx(b.out_axes);
      ix[axis] = affine(1, b.out_axes[axis], -at[k]);
      b.in.push_back({solid(parts[k]), ix});
      emit(std::move(b));
      acc = key;
    }
  }

  void slice_data() {
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    std::vector<std::int64_t> starts, ends, axes, steps;
    if (opset_ >= 10) {
      starts = int_const(need_input(1), "starts");
      ends = int_const(need_input(2), "ends");
      if (!input(3).empty()) axes = int_const(input(3), "axes");
      if (!input(4).empty()) steps = int_const(input(4), "steps");
    } else {
      starts = attr_ints("starts").value_or(Shape{});
      ends = attr_ints("ends").value_or(Shape{});
      axes = attr_ints("axes").value_or(Shape{});
    }
    if (axes.empty())
      for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
      fail_node("starts, ends, axes and steps differ in length");
    std::vector<SliceBounds> dims;
    for (auto d : sx) dims.push_back({0, 1, d});
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const auto a = static_cast<std::size_t>(norm_axis(axes[i], sx.size(), "axis"));
      if (steps[i] < 1) fail_node(fmt::format("step {} on axis {}: only positive steps are supported on computed values", steps[i], axes[i]));
      dims[a] = slice_bounds(sx[a], starts[i], ends[i], steps[i]);
    }
    sliced(x, dims, output());
  }

  // The value `x` restricted to `dims` (first, step, count per dimension) becomes `out`. An empty
  // result (torch.roll by a whole window exports one) is remembered as such: Concat skips it.
  void sliced(const std::string& x, const std::vector<SliceBounds>& dims, const std::string& out) {
    const Shape sx = value(x).shape;
    Shape shape;
    for (const auto& d : dims)
      if (d.len == 0) {
        for (const auto& e : dims) shape.push_back(e.len);
        empty_[out] = shape;
        return;
      }
    bool whole = true;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      shape.push_back(dims[d].len);
      whole = whole && dims[d].start == 0 && dims[d].step == 1 && dims[d].len == sx[d];
    }
    if (whole) {
      values_[out] = value(x);
      return;
    }
    copy_op(op_name(out == output() ? "" : "." + out), x, shape, out, out,
            [&](std::size_t d, const std::vector<std::string>& ax) { return affine(dims[d].step, ax[d], dims[d].start); });
  }

  // ---- recurrent layers (LSTM, GRU, RNN), unrolled over the static sequence ----------------------
  // Per direction and time step, each gate is x_t W_g^T + h R_g^T + bias as matmuls and adds, the
  // gates' activations and the state update element-wise (ONNX's equations; Sigmoid, Tanh or Relu);
  // Y is the steps' hidden states joined, Y_h (Y_c) the last. A zero initial state (what PyTorch
  // exports when none is given) drops the first step's recurrent terms.
  struct Recurrence {
    std::string kind;
    int gates = 1, dirs = 1;
    std::int64_t steps = 0, batch = 0, in = 0, hidden = 0;
    bool linear_before_reset = false;
    Dense w, r;
    std::optional<Dense> b;
    std::string base;  // names of what it emits
    std::map<std::string, std::string> made;  // the weight slices made for this node, by what they are
    // per direction: the activations as expressions of {0} (LSTM f, g, h; GRU f, g; RNN f)
    std::vector<std::vector<std::string>> act;
  };

  void recurrent(const std::string& kind) {
    Recurrence rc;
    rc.kind = kind;
    rc.gates = kind == "LSTM" ? 4 : kind == "GRU" ? 3 : 1;
    rc.hidden = attr_int("hidden_size", 0);
    if (rc.hidden <= 0 || rc.hidden > (1 << 24)) fail_node(fmt::format("hidden_size {}: expected 1 .. 2^24", rc.hidden));
    const std::string dir = attr_string("direction", "forward");
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
      fail_node(fmt::format("direction '{}': expected forward, reverse or bidirectional", dir));
    rc.dirs = dir == "bidirectional" ? 2 : 1;
    if (attr_int("layout", 0) != 0) fail_node("layout = 1 (batch first inside the node) is not supported");
    if (attr("clip")) fail_node("clip is not supported");
    if (kind == "LSTM" && attr_int("input_forget", 0) != 0) fail_node("input_forget = 1 is not supported");
    rc.act = activations(kind, rc.dirs);
    rc.linear_before_reset = kind == "GRU" && attr_int("linear_before_reset", 0) != 0;
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    if (sx.size() != 3) fail_node(fmt::format("X is {}; expected [sequence, batch, input]", shape_str(sx)));
    rc.steps = sx[0];
    rc.batch = sx[1];
    rc.in = sx[2];
    if (rc.steps * rc.dirs > 4096)  // about 25 operators a step: a workload past 100,000 operators
      fail_node(fmt::format("unrolling {} steps{} is past the limit of 4096 step-directions", rc.steps,
                            rc.dirs > 1 ? " in both directions" : ""));
    const std::int64_t gh = rc.gates * rc.hidden;
    rc.w = recurrent_weight(need_input(1), "W", {rc.dirs, gh, rc.in});
    rc.r = recurrent_weight(need_input(2), "R", {rc.dirs, gh, rc.hidden});
    if (!input(3).empty()) rc.b = recurrent_weight(input(3), "B", {rc.dirs, 2 * gh});
    if (!input(4).empty()) {
      const auto lens = int_const(input(4), "sequence_lens");
      for (auto l : lens)
        if (l != rc.steps)
          fail_node(fmt::format("sequence_lens has {} where the sequence is {} long; only full-length sequences are "
                                "supported", l, rc.steps));
    }
    if (kind == "LSTM" && !input(7).empty()) fail_node("peephole weights (P) are not supported");
    rc.base = unique_name(recurrent_bases_, sanitize(node_name_));  // node names need not be unique
    std::vector<std::vector<std::string>> hs(static_cast<std::size_t>(rc.dirs));  // per direction, per step
    std::vector<std::string> h_last, c_last;
    const std::vector<std::string> xs = recurrent_inputs(x, rc);
    for (int d = 0; d < rc.dirs; ++d) {
      const bool reverse = dir == "reverse" || d == 1;
      std::string h = initial_state(input(5), d, rc, "h0"), c;
      if (kind == "LSTM") c = initial_state(input(6), d, rc, "c0");
      hs[static_cast<std::size_t>(d)].resize(static_cast<std::size_t>(rc.steps));
      for (std::int64_t s = 0; s < rc.steps; ++s) {
        const std::int64_t t = reverse ? rc.steps - 1 - s : s;
        const std::string tag = fmt::format("t{}.d{}", t, d);
        if (kind == "LSTM") std::tie(h, c) = lstm_step(rc, d, xs[static_cast<std::size_t>(t)], h, c, tag);
        else if (kind == "GRU") h = gru_step(rc, d, xs[static_cast<std::size_t>(t)], h, tag);
        else h = rnn_step(rc, d, xs[static_cast<std::size_t>(t)], h, tag);
        hs[static_cast<std::size_t>(d)][static_cast<std::size_t>(t)] = h;
      }
      h_last.push_back(h);
      c_last.push_back(c);
    }
    recurrent_outputs(rc, hs, h_last, c_last);
  }

  // The node's activations (ONNX's defaults when it names none): Sigmoid, Tanh or Relu, the
  // others a named error. PyTorch writes Relu for an RNN with nonlinearity 'relu'.
  std::vector<std::vector<std::string>> activations(const std::string& kind, int dirs) const {
    const std::vector<std::string> defaults = kind == "LSTM" ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
                                              : kind == "GRU" ? std::vector<std::string>{"sigmoid", "tanh"}
                                                              : std::vector<std::string>{"tanh"};
    std::vector<std::vector<std::string>> out(static_cast<std::size_t>(dirs));
    const auto* a = attr("activations");
    if (a && a->strings_size() != static_cast<int>(defaults.size()) * dirs)
      fail_node(fmt::format("{} activations given; {} expects {} per direction", a->strings_size(), kind, defaults.size()));
    for (int d = 0; d < dirs; ++d)
      for (std::size_t k = 0; k < defaults.size(); ++k) {
        std::string name = a ? a->strings(d * static_cast<int>(defaults.size()) + static_cast<int>(k)) : defaults[k];
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        if (name != "sigmoid" && name != "tanh" && name != "relu")
          fail_node(fmt::format("activation '{}' is not supported; Sigmoid, Tanh and Relu are", name));
        out[static_cast<std::size_t>(d)].push_back(name + "({0})");
      }
    return out;
  }

  Dense recurrent_weight(const std::string& name, const char* what, const Shape& want) {
    auto d = dense_const(name);
    if (!d) fail_node(fmt::format("{} '{}' must be a constant (an initializer)", what, name));
    if (d->shape != want) fail_node(fmt::format("{} is {}; expected {}", what, shape_str(d->shape), shape_str(want)));
    return *d;
  }

  // Rows [row, row + rows) of direction d of a [dirs, R, C] constant as a new [rows, C] constant;
  // `plus`: add the same rows of another (the two biases).
  std::string weight_rows(Recurrence& rc, const Dense& m, int d, std::int64_t row, std::int64_t rows,
                          const std::string& what, const Dense* plus = nullptr, std::int64_t plus_row = 0) {
    const std::string id = fmt::format("{}.d{}", what, d);
    if (auto it = rc.made.find(id); it != rc.made.end()) return it->second;  // made once, read by every step
    const std::int64_t cols = m.shape.size() == 3 ? m.shape[2] : 1, per_dir = m.shape[1] * cols;
    Dense out{m.shape.size() == 3 ? Shape{rows, cols} : Shape{rows}, {}, DenseType::Float};
    for (std::int64_t i = 0; i < rows * cols; ++i) {
      double v = m.v[static_cast<std::size_t>(d * per_dir + row * cols + i)];
      if (plus) v += plus->v[static_cast<std::size_t>(d * per_dir + plus_row * cols + i)];
      out.v.push_back(v);
    }
    std::string name = rc.base + "." + id;
    for (int k = 1; constant(name) || values_.count(name); ++k) name = fmt::format("{}.{}_{}", rc.base, id, k);
    set_constant(name, out);
    return rc.made[id] = name;
  }

  // Gate g of direction d: its input and recurrent weights, and the bias Wb + Rb (GRU's
  // candidate keeps Rb apart when linear_before_reset), or "" without B.
  std::string gate_w(Recurrence& rc, int d, int g) {
    return weight_rows(rc, rc.w, d, g * rc.hidden, rc.hidden, fmt::format("W{}", g));
  }
  std::string gate_r(Recurrence& rc, int d, int g) {
    return weight_rows(rc, rc.r, d, g * rc.hidden, rc.hidden, fmt::format("R{}", g));
  }
  std::string gate_bias(Recurrence& rc, int d, int g, bool both) {
    if (!rc.b) return "";
    const std::int64_t gh = rc.gates * rc.hidden;
    return both ? weight_rows(rc, *rc.b, d, g * rc.hidden, rc.hidden, fmt::format("B{}", g), &*rc.b, gh + g * rc.hidden)
                : weight_rows(rc, *rc.b, d, g * rc.hidden, rc.hidden, fmt::format("Wb{}", g));
  }
  std::string gate_rbias(Recurrence& rc, int d, int g) {
    if (!rc.b) return "";
    return weight_rows(rc, *rc.b, d, rc.gates * rc.hidden + g * rc.hidden, rc.hidden, fmt::format("Rb{}", g));
  }

  // Each step's input x_t as a [batch, input] value.
  std::vector<std::string> recurrent_inputs(const std::string& x, const Recurrence& rc) {
    std::vector<std::string> xs;
    for (std::int64_t t = 0; t < rc.steps; ++t) {
      xs.push_back(r_step_slice(rc, x, t, rc.in, fmt::format("x{}", t)));
    }
    return xs;
  }

  // The initial state of direction d as a [batch, hidden] value, or "" when it is absent or a
  // constant zero.
  std::string initial_state(const std::string& name, int d, const Recurrence& rc, const std::string& what) {
    if (name.empty()) return "";
    const Shape want{rc.dirs, rc.batch, rc.hidden};
    if (auto c = dense_const(name)) {
      if (c->shape != want) fail_node(fmt::format("{} is {}; expected {}", what, shape_str(c->shape), shape_str(want)));
      if (std::all_of(c->v.begin(), c->v.end(), [](double v) { return v == 0; })) return "";
    }
    if (value(name).shape != want)
      fail_node(fmt::format("{} is {}; expected {}", what, shape_str(value(name).shape), shape_str(want)));
    return r_step_slice(rc, name, d, rc.hidden, fmt::format("{}.d{}", what, d));
  }

  // Entry i of the first dimension of a [n, batch, width] value, as a [batch, width] value.
  std::string r_step_slice(const Recurrence& rc, const std::string& x, std::int64_t i, std::int64_t width,
                           const std::string& what) {
    const std::string key = rkey(rc, what);
    copy_op(op_name("." + what), x, {rc.batch, width}, key, rc.base + "." + what,
            [&](std::size_t d, const std::vector<std::string>& ax) { return d == 0 ? affine(0, "", i) : plain(ax[d - 1]); });
    return key;
  }

  // An emitted value: key and tensor name from the node's base name and `what`.
  std::string rkey(const Recurrence& rc, const std::string& what) { return internal_key(rc.base + "." + what); }
  std::string r_unary(const Recurrence& rc, const std::string& x, const std::string& rhs, const std::string& what) {
    const std::string k = rkey(rc, what);
    unary(op_name("." + what), x, k, rc.base + "." + what, rhs);
    return k;
  }
  std::string r_binary(const Recurrence& rc, const std::string& a, const std::string& op, const std::string& b,
                       const std::string& what) {
    const std::string k = rkey(rc, what);
    binary(op_name("." + what), op, a, b, k, rc.base + "." + what);
    return k;
  }
  // x W^T (+ h R^T when there is an h) (+ bias): a gate's pre-activation.
  std::string r_linear(const Recurrence& rc, const std::string& x, const std::string& w, const std::string& h,
                       const std::string& r, const std::string& bias, const std::string& what) {
    std::string acc = rkey(rc, what + ".x");
    matmul(op_name("." + what + ".x"), x, w, false, true, acc, rc.base + "." + what + ".x");
    if (!h.empty()) {
      const std::string hr = rkey(rc, what + ".h");
      matmul(op_name("." + what + ".h"), h, r, false, true, hr, rc.base + "." + what + ".h");
      acc = r_binary(rc, acc, "+", hr, what + ".xh");
    }
    if (!bias.empty()) acc = r_binary(rc, acc, "+", bias, what + ".b");
    return acc;
  }

  // i, o, f, c~ (ONNX's gate order); C = f C' + i c~, H = o tanh(C).
  std::pair<std::string, std::string> lstm_step(Recurrence& rc, int d, const std::string& x, const std::string& h,
                                                const std::string& c, const std::string& tag) {
    static const char* names[4] = {"i", "o", "f", "c"};
    std::string g[4];
    for (int k = 0; k < 4; ++k) {
      if (k == 2 && c.empty()) continue;  // the forget gate multiplies a zero cell
      const std::string what = fmt::format("{}.{}", tag, names[k]);
      const std::string pre = r_linear(rc, x, gate_w(rc, d, k), h, gate_r(rc, d, k),
                                       gate_bias(rc, d, k, true), what);
      g[k] = r_unary(rc, pre, rc.act[d][k == 3 ? 1 : 0], what + ".act");
    }
    std::string cell = r_binary(rc, g[0], "*", g[3], tag + ".ic");
    if (!c.empty()) cell = r_binary(rc, r_binary(rc, g[2], "*", c, tag + ".fc"), "+", cell, tag + ".C");
    const std::string hidden = r_binary(rc, g[1], "*", r_unary(rc, cell, rc.act[d][2], tag + ".tC"), tag + ".H");
    return {hidden, cell};
  }

  // z, r, h~ (ONNX's gate order); H = (1 - z) h~ + z H'.
  std::string gru_step(Recurrence& rc, int d, const std::string& x, const std::string& h, const std::string& tag) {
    const std::string z = r_unary(rc, r_linear(rc, x, gate_w(rc, d, 0), h, gate_r(rc, d, 0),
                                               gate_bias(rc, d, 0, true), tag + ".z"), rc.act[d][0], tag + ".z.act");
    // the reset gate multiplies h' (or, before reset, Rbh): none of it with a zero state and no bias
    const bool reset = !h.empty() || (rc.linear_before_reset && rc.b);
    const std::string r = !reset ? "" : r_unary(rc, r_linear(rc, x, gate_w(rc, d, 1), h, gate_r(rc, d, 1),
                                                             gate_bias(rc, d, 1, true), tag + ".r"),
                                                rc.act[d][0], tag + ".r.act");
    std::string pre;
    if (reset && rc.linear_before_reset) {  // x Wh + Wbh + r (h Rh + Rbh); h' = 0: r Rbh
      const std::string hr = h.empty() ? gate_rbias(rc, d, 2)
                                       : r_linear(rc, h, gate_r(rc, d, 2), "", "", gate_rbias(rc, d, 2), tag + ".hR");
      pre = r_linear(rc, x, gate_w(rc, d, 2), "", "", gate_bias(rc, d, 2, false), tag + ".n");
      pre = r_binary(rc, pre, "+", r_binary(rc, r, "*", hr, tag + ".rhR"), tag + ".n.r");
    } else {  // x Wh + (r h) Rh + Wbh + Rbh; h' = 0: no (r h) term
      const std::string rh = h.empty() ? "" : r_binary(rc, r, "*", h, tag + ".rh");
      pre = r_linear(rc, x, gate_w(rc, d, 2), rh, gate_r(rc, d, 2), gate_bias(rc, d, 2, true), tag + ".n");
    }
    const std::string cand = r_unary(rc, pre, rc.act[d][1], tag + ".n.act");
    const std::string keep = r_binary(rc, r_unary(rc, z, "1 - {0}", tag + ".1z"), "*", cand, tag + ".zn");
    if (h.empty()) return keep;
    return r_binary(rc, keep, "+", r_binary(rc, z, "*", h, tag + ".zh"), tag + ".H");
  }

  // H = tanh(x Wi + H' Ri + Wbi + Rbi).
  std::string rnn_step(Recurrence& rc, int d, const std::string& x, const std::string& h, const std::string& tag) {
    const std::string pre = r_linear(rc, x, gate_w(rc, d, 0), h, gate_r(rc, d, 0),
                                     gate_bias(rc, d, 0, true), tag + ".a");
    return r_unary(rc, pre, rc.act[d][0], tag + ".H");
  }

  // Y [steps, dirs, batch, hidden], Y_h and Y_c [dirs, batch, hidden], whichever the node names.
  void recurrent_outputs(const Recurrence& rc, const std::vector<std::vector<std::string>>& hs,
                         const std::vector<std::string>& h_last, const std::vector<std::string>& c_last) {
    // an output nothing reads is not computed (PyTorch's exports name Y_h and Y_c whether or not
    // the model uses them)
    const auto wanted = [&](int k) {
      if (k >= node_->output_size() || node_->output(k).empty()) return false;
      const std::string& o = node_->output(k);
      return consumers_.count(o) > 0 || graph_outputs_.count(o) > 0;
    };
    // each [batch, hidden] state copied into a tensor with unit dimensions in front (a view would
    // not do: Concat reads its parts past their ends, which must read nothing)
    const auto stacked = [&](const std::vector<std::string>& parts, const Shape& unit, const std::string& what) {
      std::vector<std::string> keys;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::string w = fmt::format("{}{}", what, i), k = rkey(rc, w);
        const std::size_t lead = unit.size() - 2;
        copy_op(op_name("." + w), parts[i], unit, k, rc.base + "." + w,
                [&](std::size_t d, const std::vector<std::string>& ax) { return plain(ax[lead + d]); });
        keys.push_back(k);
      }
      return keys;
    };
    if (wanted(0)) {
      std::vector<std::string> per_step;
      for (std::int64_t t = 0; t < rc.steps; ++t) {
        std::vector<std::string> dirs;
        for (const auto& h : hs) dirs.push_back(h[static_cast<std::size_t>(t)]);
        const std::string k = rkey(rc, fmt::format("Y{}", t));
        concat_parts(stacked(dirs, {1, 1, rc.batch, rc.hidden}, fmt::format("y{}.", t)), 1, k);
        per_step.push_back(k);
      }
      // joined two by two, level by level: each level copies Y once (a chain would copy it once
      // per step, quadratic in the sequence)
      for (int level = 0; per_step.size() > 2; ++level) {
        std::vector<std::string> next;
        for (std::size_t i = 0; i < per_step.size(); i += 2) {
          if (i + 1 == per_step.size()) { next.push_back(per_step[i]); continue; }
          const std::string k = rkey(rc, fmt::format("Y.l{}.{}", level, i / 2));
          concat_parts({per_step[i], per_step[i + 1]}, 0, k);
          next.push_back(k);
        }
        per_step = std::move(next);
      }
      concat_parts(per_step, 0, output(0));
    }
    if (wanted(1)) concat_parts(stacked(h_last, {1, rc.batch, rc.hidden}, "yh"), 0, output(1));
    if (rc.kind == "LSTM" && wanted(2)) concat_parts(stacked(c_last, {1, rc.batch, rc.hidden}, "yc"), 0, output(2));
    outputs_supported_ = node_->output_size();
  }

  void split_data() {
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    if (sx.empty()) fail_node("the input is a scalar");
    const auto axis = static_cast<std::size_t>(norm_axis(attr_int("axis", 0), sx.size(), "axis"));
    std::vector<std::int64_t> sizes;
    if (opset_ >= 13 && !input(1).empty()) sizes = int_const(input(1), "split");
    else if (opset_ < 13) sizes = attr_ints("split").value_or(Shape{});
    const auto parts = static_cast<std::int64_t>(node_->output_size());
    if (sizes.empty()) {
      if (sx[axis] % parts != 0) fail_node(fmt::format("dimension {} ({}) does not split into {} equal parts", axis, sx[axis], parts));
      sizes.assign(static_cast<std::size_t>(parts), sx[axis] / parts);
    }
    if (static_cast<std::int64_t>(sizes.size()) != parts) fail_node("split sizes do not match the outputs");
    std::int64_t at = 0;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      std::vector<SliceBounds> dims;
      for (auto d : sx) dims.push_back({0, 1, d});
      dims[axis] = {at, 1, sizes[k]};
      at += sizes[k];
      if (!node_->output(static_cast<int>(k)).empty()) sliced(x, dims, node_->output(static_cast<int>(k)));
    }
    if (at != sx[axis]) fail_node(fmt::format("split sizes add up to {}, the dimension is {}", at, sx[axis]));
    outputs_supported_ = static_cast<int>(parts);
  }

  // Gather with constant indices: a scalar index reads one position (the dimension disappears);
  // evenly spaced indices are a strided read.
  void gather_data() {
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    if (sx.empty()) fail_node("data is a scalar");
    const auto idx = dense_const(need_input(1));
    if (!idx)
      fail_node(fmt::format("indices '{}' are computed at run time (an embedding lookup?); only constant indices are "
                            "supported", need_input(1)));
    const auto axis = static_cast<std::size_t>(norm_axis(attr_int("axis", 0), sx.size(), "axis"));
    std::vector<std::int64_t> at;
    for (double v : idx->v) {
      auto i = to_int64(v);
      if (i < -sx[axis] || i >= sx[axis]) fail_node(fmt::format("index {} is out of range for size {}", i, sx[axis]));
      at.push_back(i < 0 ? i + sx[axis] : i);
    }
    if (idx->shape.size() > 1) fail_node("indices of rank > 1 are supported only on constants");
    const std::int64_t step = at.size() > 1 ? at[1] - at[0] : 1;
    for (std::size_t k = 1; k < at.size(); ++k)
      if (at[k] - at[k - 1] != step || step < 1)
        fail_node("indices that are not evenly spaced and increasing are supported only on constants");
    if (at.empty()) fail_node("no indices");
    Shape out;
    for (std::size_t d = 0; d < sx.size(); ++d) {
      if (d != axis) out.push_back(sx[d]);
      else if (!idx->shape.empty()) out.push_back(static_cast<std::int64_t>(at.size()));
    }
    const bool scalar = idx->shape.empty();
    copy_op(op_name(), x, out, output(), output(), [&](std::size_t d, const std::vector<std::string>& ax) {
      if (d == axis) return scalar ? affine(0, "", at[0]) : affine(step, ax[d], at[0]);
      return plain(ax[d < axis || !scalar ? d : d - 1]);
    });
  }

  void pad() {
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    const std::string mode = attr_string("mode", "constant");
    if (mode != "constant") fail_node(fmt::format("mode '{}' is not supported (only constant padding with 0)", mode));
    std::vector<std::int64_t> pads = opset_ >= 11 ? int_const(need_input(1), "pads") : attr_ints("pads").value_or(Shape{});
    const double fill = opset_ >= 11 ? (input(2).empty() ? 0.0 : scalar_const(input(2)).value_or(NAN)) : attr_float("value", 0);
    if (fill != 0) fail_node("only padding with 0 is supported (the value must be a constant 0)");
    if (opset_ >= 18 && !input(3).empty()) fail_node("the axes input is not supported");
    if (pads.size() != 2 * sx.size()) fail_node(fmt::format("pads has {} values for rank {}", pads.size(), sx.size()));
    Shape out;
    for (std::size_t d = 0; d < sx.size(); ++d) {
      if (pads[d] < 0 || pads[d + sx.size()] < 0) fail_node("negative pads (cropping) are not supported");
      out.push_back(sx[d] + pads[d] + pads[d + sx.size()]);
    }
    copy_op(op_name(), x, out, output(), output(),
            [&](std::size_t d, const std::vector<std::string>& ax) { return affine(1, ax[d], -pads[d]); });
  }

  void expand() {
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    const Shape out = broadcast(sx, int_const(need_input(1), "shape"));
    if (out == sx) {
      values_[output()] = value(x);
      return;
    }
    const std::size_t lead = out.size() - sx.size();
    copy_op(op_name(), x, out, output(), output(), [&](std::size_t d, const std::vector<std::string>& ax) {
      return sx[d] == out[lead + d] ? plain(ax[lead + d]) : Index{};
    });
  }

  // Where with a constant condition: Y = A * K + M, with K 1 where the condition holds and 0
  // elsewhere and M the other branch's constant (or B * (1 - K) when both branches are computed).
  // A branch of -inf (an attention mask) is one addition: A + M, M 0 or -inf.
  void where() {
    const auto cond = dense_const(need_input(0));
    if (!cond) fail_node("the condition is computed at run time; only a constant condition (a mask) is supported");
    const std::string &a = need_input(1), &b = need_input(2);
    auto ca = scalar_const(a), cb = scalar_const(b);
    if (ca && cb) fail_node("both branches are constants");
    auto mask = [&](bool keep_true, double other) {
      Dense m{cond->shape, {}, DenseType::Float};
      for (double c : cond->v) m.v.push_back((c != 0) == keep_true ? 0.0 : other);
      return m;
    };
    auto make = [&](const std::string& suffix, const Dense& d) {
      const std::string name = output() + suffix;
      set_constant(name, d);
      return name;
    };
    if (ca || cb) {
      const bool data_on_true = cb.has_value();
      const std::string& x = data_on_true ? a : b;
      const double c = data_on_true ? *cb : *ca;
      if (std::isinf(c) && c < 0) {
        binary(op_name(), "+", x, make(".mask", mask(data_on_true, c)), output(), output());
        return;
      }
      const std::string k = make(".keep", mask(!data_on_true, 1.0));  // 1 where x is kept
      const std::string key = internal_key(output() + ".kept");
      binary(op_name(".keep"), "*", x, k, key, output() + ".kept");
      binary(op_name(), "+", key, make(".fill", mask(data_on_true, c)), output(), output());
      return;
    }
    const std::string ka = make(".keep_a", mask(false, 1.0)), kb = make(".keep_b", mask(true, 1.0));
    const std::string ta = internal_key(output() + ".a"), tb = internal_key(output() + ".b");
    binary(op_name(".a"), "*", a, ka, ta, output() + ".a");
    binary(op_name(".b"), "*", b, kb, tb, output() + ".b");
    binary(op_name(), "+", ta, tb, output(), output());
  }

  // Einsum with one or two operands and an explicit output ("bhid,bhjd->bhij"): letters become
  // axes, letters not in the output are summed over. A tensor expression says exactly this.
  void einsum() {
    std::string eq;
    for (char c : attr_string("equation", "")) if (c != ' ') eq += c;
    const auto arrow = eq.find("->");
    if (arrow == std::string::npos) fail_node(fmt::format("equation '{}' has no '->'; an explicit output is required", eq));
    if (eq.find("...") != std::string::npos) fail_node(fmt::format("equation '{}': ellipsis is not supported", eq));
    std::vector<std::string> terms;
    std::string cur;
    for (char c : eq.substr(0, arrow)) {
      if (c == ',') { terms.push_back(cur); cur.clear(); } else { cur += c; }
    }
    terms.push_back(cur);
    const std::string out = eq.substr(arrow + 2);
    if (terms.size() != static_cast<std::size_t>(node_->input_size()) || terms.size() > 2)
      fail_node(fmt::format("equation '{}' has {} operands; one or two are supported, as many as the inputs", eq, terms.size()));
    std::map<char, std::int64_t> extent;
    for (std::size_t k = 0; k < terms.size(); ++k) {
      const Shape sk = value(need_input(static_cast<int>(k))).shape;
      if (sk.size() != terms[k].size())
        fail_node(fmt::format("operand {} '{}' has {} letters but the input is {}", k, terms[k], terms[k].size(), shape_str(sk)));
      for (std::size_t d = 0; d < sk.size(); ++d) {
        const char c = terms[k][d];
        if (!std::isalpha(static_cast<unsigned char>(c))) fail_node(fmt::format("equation '{}': '{}' is not a letter", eq, c));
        if (terms[k].find(c) != d) fail_node(fmt::format("equation '{}': a repeated letter in one operand (a diagonal)", eq));
        auto [it, fresh] = extent.emplace(c, sk[d]);
        if (!fresh && it->second != sk[d])
          fail_node(fmt::format("equation '{}': '{}' is {} in one operand and {} in another", eq, c, it->second, sk[d]));
      }
    }
    Shape shape;
    for (char c : out) {
      if (!extent.count(c)) fail_node(fmt::format("equation '{}': output letter '{}' is in no operand", eq, c));
      shape.push_back(extent.at(c));
    }
    if (shape.empty()) fail_node("a scalar result is not supported");
    OpBuild b = start(op_name(), output(), output(), shape);
    std::map<char, std::string> axis;
    for (std::size_t i = 0; i < out.size(); ++i) axis[out[i]] = b.out_axes[i];
    int r = 0;
    for (const auto& [c, e] : extent)
      if (!axis.count(c)) {
        axis[c] = fmt::format("r{}", r++);
        b.extent[axis[c]] = e;
      }
    for (std::size_t k = 0; k < terms.size(); ++k) {
      std::vector<Index> ix;
      for (char c : terms[k]) ix.push_back(plain(axis.at(c)));
      b.in.push_back({need_input(static_cast<int>(k)), ix});
    }
    b.assign = r > 0 ? "+=" : "=";
    b.rhs = terms.size() == 2 ? "{0} * {1}" : "{0}";
    emit(std::move(b));
  }

  // Inference BatchNormalization: Y = X * S[c] + T[c] with S = scale / sqrt(var + eps) and
  // T = B - mean * S folded at import.
  void batchnorm() {
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    if (sx.size() < 2) fail_node("expects X [N,C,...]");
    if (attr_int("training_mode", 0) != 0) fail_node("training_mode = 1 is not supported");
    std::vector<Dense> p;
    for (int k = 1; k <= 4; ++k) {
      auto d = dense_const(need_input(k));
      if (!d || d->shape != Shape{sx[1]})
        fail_node(fmt::format("input {} ('{}') must be a constant of shape [{}]", k, need_input(k), sx[1]));
      p.push_back(std::move(*d));
    }
    const double eps = attr_float("epsilon", 1e-5);
    Dense scale{{sx[1]}, {}, DenseType::Float}, shift{{sx[1]}, {}, DenseType::Float};
    for (std::int64_t c = 0; c < sx[1]; ++c) {
      const auto i = static_cast<std::size_t>(c);
      const double sc = p[0].v[i] / std::sqrt(p[3].v[i] + eps);
      scale.v.push_back(sc);
      shift.v.push_back(p[1].v[i] - p[2].v[i] * sc);
    }
    set_constant(output() + ".bn_scale", scale);
    set_constant(output() + ".bn_shift", shift);
    const std::string key = internal_key(output() + ".scaled");
    for (int pass = 0; pass < 2; ++pass) {
      OpBuild b = start(op_name(pass == 0 ? ".scale" : ""), pass == 0 ? key : output(),
                        pass == 0 ? output() + ".scaled" : output(), sx);
      b.rhs = pass == 0 ? "{0} * {1}" : "{0} + {1}";
      b.in.push_back({pass == 0 ? x : key, plain_idx(b.out_axes)});
      b.in.push_back({output() + (pass == 0 ? ".bn_scale" : ".bn_shift"), {plain("a1")}});
      emit(std::move(b));
    }
  }

  void gemm() {
    const double alpha = attr_float("alpha", 1.0), beta = attr_float("beta", 1.0);
    const std::string& a = need_input(0);
    const std::string& bn = need_input(1);
    if (value(a).shape.size() != 2 || value(bn).shape.size() != 2)
      fail_node(fmt::format("A and B must be 2-D (got {} and {})", shape_str(value(a).shape), shape_str(value(bn).shape)));
    const bool ta = attr_int("transA", 0) != 0, tb = attr_int("transB", 0) != 0;
    std::string c = input(2);
    if (beta == 0) c.clear();
    const bool scaled = alpha != 1.0;
    if (c.empty() && !scaled) {
      matmul(op_name(), a, bn, ta, tb, output(), output());
      return;
    }
    const std::string key = internal_key(output() + ".mm");
    matmul(op_name(), a, bn, ta, tb, key, output() + ".mm");
    std::string prod = key;
    if (scaled) {  // alpha * (A x B)
      prod = c.empty() ? output() : internal_key(output() + ".alpha");
      unary(op_name(".alpha"), key, prod, c.empty() ? output() : output() + ".alpha", "{0} * " + fmt_number(alpha));
      if (c.empty()) return;
    }
    if (beta != 1.0) {  // beta * C
      const std::string cb = internal_key(output() + ".beta");
      if (auto k = scalar_const(c)) {
        set_constant(output() + ".beta_c", Dense{{}, {*k * beta}, DenseType::Float});
        c = output() + ".beta_c";
      } else {
        unary(op_name(".beta"), c, cb, output() + ".beta", "{0} * " + fmt_number(beta));
        c = cb;
      }
    }
    binary(op_name(".bias"), "+", prod, c, output(), output());
  }

  void conv() {
    const std::string& w = need_input(1);
    const Shape sx = value(need_input(0)).shape, sw = value(w).shape;
    if (sx.size() < 3 || sx.size() != sw.size())
      fail_node(fmt::format("expects X [N,C,spatial...] and W [F,C,kernel...] of the same rank (got {} and {})",
                            shape_str(sx), shape_str(sw)));
    const std::int64_t groups = attr_int("group", 1);
    if (groups < 1 || sx[1] % groups != 0 || sw[0] % groups != 0)
      fail_node(fmt::format("group = {} does not divide the {} input and {} output channels", groups, sx[1], sw[0]));
    if (sw[1] * groups != sx[1])
      fail_node(fmt::format("W {} has {} input channels per group but X {} has {} in {} group(s)", shape_str(sw), sw[1],
                            shape_str(sx), sx[1], groups));
    const std::size_t n = sx.size() - 2;
    Shape kernel(sw.begin() + 2, sw.end());
    if (auto ks = attr_ints("kernel_shape"))
      if (*ks != kernel) fail_node(fmt::format("kernel_shape {} does not match W {}", shape_str(*ks), shape_str(sw)));
    Window win = window(sx, kernel, false);
    Shape out{sx[0], sw[0]};
    out.insert(out.end(), win.out.begin(), win.out.end());
    // Grouped (and depthwise): the output channel f is split into (group, channel in group), so
    // that the group selects the input channels by an affine index,
    //   O[n,g,f,y,x] += X[n,(C/G)*g+c,..] * W[(F/G)*g+f,c,..],
    // and the ONNX value merges (g, f). A merged input channel dimension (ShuffleNet's channel
    // shuffle) cannot take that index: emit() makes it one dimension first.
    const bool grouped = groups > 1;
    const std::string x = need_input(0);
    Shape shape{sx[0]};
    if (grouped) shape.insert(shape.end(), {groups, sw[0] / groups});
    else shape.push_back(sw[0]);
    shape.insert(shape.end(), win.out.begin(), win.out.end());
    const std::string& bias = input(2);
    const std::string key = bias.empty() && !grouped ? output() : internal_key(output() + ".conv");
    OpBuild b = start(op_name(), key, bias.empty() && !grouped ? output() : output() + ".conv", shape);
    b.extent["r0"] = sw[1];
    std::vector<Index> ix{plain("a0"), plain("r0")}, iw{plain("a1"), plain("r0")};
    if (grouped) {
      ix[1] = affine(sw[1], "a1", 0);
      add_scaled(ix[1], plain("r0"), 1);
      iw[0] = affine(sw[0] / groups, "a1", 0);
      add_scaled(iw[0], plain("a2"), 1);
    }
    const std::size_t spatial = grouped ? 3 : 2;  // first spatial output axis
    for (std::size_t i = 0; i < n; ++i) {
      const std::string r = fmt::format("r{}", i + 1);
      b.extent[r] = kernel[i];
      ix.push_back(window_index(b.out_axes[spatial + i], win.strides[i], r, win.pad_begin[i]));
      iw.push_back(plain(r));
    }
    b.assign = "+=";
    b.rhs = "{0} * {1}";
    b.in.push_back({x, ix});
    b.in.push_back({w, iw});
    emit(std::move(b));
    std::string conv = key;
    if (grouped) {
      conv = bias.empty() ? output() : internal_key(output() + ".merged");
      values_[conv] = reshape(values_.at(key), out);
    }
    if (bias.empty()) return;
    const Shape sb = value(bias).shape;
    if (sb != Shape{sw[0]}) fail_node(fmt::format("bias B must be [{}], got {}", sw[0], shape_str(sb)));
    OpBuild bb = start(op_name(".bias"), output(), output(), out);
    bb.rhs = "{0} + {1}";
    bb.in.push_back({conv, plain_idx(bb.out_axes)});
    bb.in.push_back({bias, {plain("a1")}});
    emit(std::move(bb));
  }

  void pool(bool is_max) {
    if (is_max) outputs_supported_ = 1;  // Indices is not computed
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    if (sx.size() < 3) fail_node(fmt::format("expects X [N,C,spatial...], got {}", shape_str(sx)));
    auto ks = attr_ints("kernel_shape");
    if (!ks || ks->size() != sx.size() - 2) fail_node("kernel_shape must give one size per spatial dimension");
    for (auto k : *ks)
      if (k < 1) fail_node("kernel_shape must be positive");
    Window win = window(sx, *ks, true);
    // avg= divides by the window's elements inside the input (sim/functional/data.cpp), which
    // is count_include_pad 0; with 1 a window over padding divides by the whole kernel
    if (!is_max && attr_int("count_include_pad", 0) != 0)
      for (std::size_t i = 0; i < ks->size(); ++i)
        if (win.pad_begin[i] > 0 || (win.out[i] - 1) * win.strides[i] - win.pad_begin[i] + (*ks)[i] > sx[2 + i])
          fail_node("count_include_pad 1 with windows over padding is not supported (padded positions are not "
                    "counted: count_include_pad 0, or no padding)");
    if (is_max) attr("storage_order");  // orders the Indices output only, which is not computed
    Shape out{sx[0], sx[1]};
    out.insert(out.end(), win.out.begin(), win.out.end());
    OpBuild b = start(op_name(), output(), output(), out);
    std::vector<Index> ix{plain("a0"), plain("a1")};
    for (std::size_t i = 0; i < ks->size(); ++i) {
      const std::string r = fmt::format("r{}", i);
      b.extent[r] = (*ks)[i];
      ix.push_back(window_index(b.out_axes[2 + i], win.strides[i], r, win.pad_begin[i]));
    }
    b.assign = is_max ? "max=" : "avg=";
    b.rhs = "{0}";
    b.in.push_back({x, ix});
    emit(std::move(b));
  }

  // Y [N,C,1,..] reduces X [N,C,spatial..]: the tensor is [N,C], seen through a view with the
  // unit dimensions.
  void global_pool(bool is_max) {
    const std::string& x = need_input(0);
    const Shape sx = value(x).shape;
    if (sx.size() < 3) fail_node(fmt::format("expects X [N,C,spatial...], got {}", shape_str(sx)));
    const std::string key = internal_key(output() + ".pool");
    OpBuild b = start(op_name(), key, output(), {sx[0], sx[1]});
    std::vector<Index> ix{plain("a0"), plain("a1")};
    for (std::size_t i = 2; i < sx.size(); ++i) {
      const std::string r = fmt::format("r{}", i - 2);
      b.extent[r] = sx[i];
      ix.push_back(plain(r));
    }
    b.assign = is_max ? "max=" : "avg=";
    b.rhs = "{0}";
    b.in.push_back({x, ix});
    emit(std::move(b));
    Shape out{sx[0], sx[1]};
    out.resize(sx.size(), 1);
    values_[output()] = reshape(values_.at(key), out);
  }

  void layernorm() {
    const std::string x = merges_last(need_input(0)) ? solid(need_input(0)) : need_input(0);
    const std::string& scale = need_input(1);
    const std::string& bias = input(2);
    const Shape sx = value(x).shape;
    if (sx.empty()) fail_node("the input is a scalar");
    const std::int64_t axis_attr = attr_int("axis", -1);
    if (norm_axis(axis_attr, sx.size(), "axis") != static_cast<std::int64_t>(sx.size()) - 1)
      fail_node(fmt::format("axis {} normalizes more than the last axis of the rank-{} input; only the last axis is "
                            "supported", axis_attr, sx.size()));
    // The expression's epsilon, written only when it is not the default, as the shortest text
    // of the float ONNX stores (1e-6 arrives as 9.99999997e-07 and is written 1e-06)
    const double eps = attr_float("epsilon", kLayernormEpsilon);
    if (!(eps > 0) || !std::isfinite(eps)) fail_node(fmt::format("epsilon {}: expected a positive number", eps));
    const std::string eps_arg = std::abs(eps - kLayernormEpsilon) <= kLayernormEpsilon * 1e-6
                                    ? ""
                                    : fmt::format(", {}", static_cast<float>(eps));
    const Shape want{sx.back()};
    if (value(scale).shape != want) fail_node(fmt::format("Scale must be {}, got {}", shape_str(want), shape_str(value(scale).shape)));
    if (!bias.empty() && value(bias).shape != want)
      fail_node(fmt::format("B must be {}, got {}", shape_str(want), shape_str(value(bias).shape)));
    if (!bias.empty()) {
      OpBuild b = start(op_name(), output(), output(), sx);
      b.rhs = "layernorm({0}, {1}, {2}" + eps_arg + ")";
      b.norm_last = true;
      b.in.push_back({x, plain_idx(b.out_axes)});
      b.in.push_back({scale, {plain(b.out_axes.back())}});
      b.in.push_back({bias, {plain(b.out_axes.back())}});
      emit(std::move(b));
      return;
    }
    // layernorm(x) * Scale: the expression language's layernorm takes gamma and beta together.
    const std::string key = internal_key(output() + ".norm");
    unary(op_name(), x, key, output() + ".norm", "layernorm({0}" + eps_arg + ")", true);
    OpBuild b = start(op_name(".scale"), output(), output(), sx);
    b.rhs = "{0} * {1}";
    b.in.push_back({key, plain_idx(b.out_axes)});
    b.in.push_back({scale, {plain(b.out_axes.back())}});
    emit(std::move(b));
  }

  void squeeze(bool unsqueeze) {
    const Value& v = value(need_input(0));
    std::optional<std::vector<std::int64_t>> ax;
    if (!input(1).empty()) ax = int_const(input(1), "axes");
    else ax = attr_ints("axes");
    Shape out;
    if (unsqueeze) {
      if (!ax) fail_node("axes are required");
      const std::size_t r = v.shape.size() + ax->size();
      std::vector<bool> unit(r, false);
      for (auto a : *ax) {
        auto n = static_cast<std::size_t>(norm_axis(a, r, "axis"));
        if (unit[n]) fail_node(fmt::format("axis {} is given twice", a));
        unit[n] = true;
      }
      std::size_t k = 0;
      for (std::size_t i = 0; i < r; ++i) out.push_back(unit[i] ? 1 : v.shape[k++]);
    } else {
      std::vector<bool> drop(v.shape.size(), false);
      if (!ax) {
        for (std::size_t i = 0; i < v.shape.size(); ++i) drop[i] = v.shape[i] == 1;
      } else {
        for (auto a : *ax) {
          auto n = static_cast<std::size_t>(norm_axis(a, v.shape.size(), "axis"));
          if (v.shape[n] != 1) fail_node(fmt::format("axis {} has size {}, not 1", a, v.shape[n]));
          drop[n] = true;
        }
      }
      for (std::size_t i = 0; i < v.shape.size(); ++i)
        if (!drop[i]) out.push_back(v.shape[i]);
    }
    values_[output()] = reshape(v, out);
  }

  void constant_node() {
    onnx::TensorProto t;
    if (node_->attribute_size() != 1) fail_node("expects exactly one value attribute");
    const auto& a = node_->attribute(0);
    attrs_read_.push_back(a.name());  // checked below: an unknown one is an error there
    if (a.name() == "value") {
      t = a.t();
    } else if (a.name() == "value_float") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_float_data(a.f());
    } else if (a.name() == "value_floats") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(a.floats_size());
      for (float f : a.floats()) t.add_float_data(f);
    } else if (a.name() == "value_int") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_int64_data(a.i());
    } else if (a.name() == "value_ints") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_dims(a.ints_size());
      for (auto i : a.ints()) t.add_int64_data(i);
    } else {
      fail_node(fmt::format("attribute '{}' is not supported (value, value_float(s), value_int(s) are)", a.name()));
    }
    t.set_name(output());
    owned_consts_.push_back(std::move(t));
    consts_[output()] = &owned_consts_.back();
  }

  // ---- GELU written with Erf ------------------------------------------------------------------
  struct FusedGelu {
    int erf;  // node index
    std::string x, y;
  };

  int single_consumer(const std::string& v) const {
    auto it = consumers_.find(v);
    if (it == consumers_.end() || it->second.size() != 1 || graph_outputs_.count(v)) return -1;
    return it->second[0];
  }
  bool near(const std::string& name, double want) const {
    auto c = scalar_const(name);
    return c && std::fabs(*c - want) <= 1e-3 * std::fabs(want);
  }
  // For a binary node `n` with a constant operand close to `c`: the other operand.
  std::optional<std::string> other_than_const(const onnx::NodeProto& n, double c) const {
    if (n.input_size() != 2) return std::nullopt;
    if (near(n.input(1), c)) return n.input(0);
    if (near(n.input(0), c)) return n.input(1);
    return std::nullopt;
  }

  // x -> Div(x, sqrt 2) | Mul(x, 1/sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5), with the
  // two final multiplications in any order; every intermediate value has this one consumer.
  void find_gelu_patterns() {
    const auto& g = model_.graph();
    for (int e = 0; e < g.node_size(); ++e) {
      const auto& erf = g.node(e);
      if (erf.op_type() != "Erf" || erf.input_size() != 1 || erf.output_size() != 1) continue;
      auto pit = producer_.find(erf.input(0));
      if (pit == producer_.end() || single_consumer(erf.input(0)) != e) continue;
      const int d = pit->second;
      const auto& div = g.node(d);
      std::optional<std::string> x;
      if (div.op_type() == "Div" && div.input_size() == 2 && near(div.input(1), std::sqrt(2.0))) x = div.input(0);
      if (div.op_type() == "Mul") x = other_than_const(div, 1.0 / std::sqrt(2.0));
      if (!x) continue;
      const int ad = single_consumer(erf.output(0));
      if (ad < 0 || g.node(ad).op_type() != "Add" || other_than_const(g.node(ad), 1.0) != erf.output(0)) continue;
      const int m1 = single_consumer(g.node(ad).output(0));
      if (m1 < 0 || g.node(m1).op_type() != "Mul" || g.node(m1).input_size() != 2) continue;
      const auto& n1 = g.node(m1);
      const std::string o = n1.input(0) == g.node(ad).output(0) ? n1.input(1) : n1.input(0);
      std::vector<int> nodes{d, e, ad, m1};
      std::string y;
      if (o == *x || near(o, 0.5)) {
        // Mul(x, t) then Mul(., 0.5), or Mul(t, 0.5) then Mul(., x)
        const int m2 = single_consumer(n1.output(0));
        if (m2 < 0 || g.node(m2).op_type() != "Mul" || g.node(m2).input_size() != 2) continue;
        const auto& n2 = g.node(m2);
        const std::string o2 = n2.input(0) == n1.output(0) ? n2.input(1) : n2.input(0);
        if (!(o == *x ? near(o2, 0.5) : o2 == *x)) continue;
        nodes.push_back(m2);
        y = n2.output(0);
      } else {
        // Mul(x, 0.5) then Mul(., t)
        auto hp = producer_.find(o);
        if (hp == producer_.end() || single_consumer(o) != m1) continue;
        const auto& h = g.node(hp->second);
        if (h.op_type() != "Mul" || other_than_const(h, 0.5) != *x) continue;
        nodes.push_back(hp->second);
        y = n1.output(0);
      }
      const int last = *std::max_element(nodes.begin(), nodes.end());
      bool taken = false;
      for (int n : nodes) taken = taken || skip_.count(n);
      if (taken || fused_.count(last)) continue;
      for (int n : nodes) skip_.insert(n);
      fused_[last] = FusedGelu{e, *x, y};
    }
  }

  // Symbolic input dimensions without a value: reported together, with how to set them.
  struct SymbolicDim {};
  void report_symbolic_dims() {
    for (const auto& [name, value] : options_.dims)
      if (value < 1) fail(fmt::format("--dim {}={}: expected a positive size", name, value));
    for (const auto& [name, value] : options_.dims)
      if (!used_dims_.count(name) && !symbolic_.count(name)) {
        std::string known;
        for (const auto& in : model_.graph().input())
          if (in.type().has_tensor_type() && in.type().tensor_type().has_shape())
            for (const auto& d : in.type().tensor_type().shape().dim())
              if (d.has_dim_param()) known += fmt::format("{}'{}'", known.empty() ? "" : ", ", d.dim_param());
        fail(fmt::format("--dim {}: the model has no symbolic input dimension of that name ({})", name,
                         known.empty() ? "it has none" : "it has " + known));
      }
    if (symbolic_.empty()) return;
    std::string list, example;
    for (const auto& [name, where] : symbolic_) {
      std::string w;
      for (const auto& x : where) w += (w.empty() ? "" : ", ") + x;
      list += fmt::format("{}'{}' ({})", list.empty() ? "" : "; ", name, w);
      example += fmt::format(" --dim {}=N", name);
    }
    fail(fmt::format("symbolic input dimensions need values: {}. Set them with{}", list, example));
  }

  std::string path_;
  ImportOptions options_;
  std::set<std::string> used_dims_, poisoned_;
  std::map<std::string, std::vector<std::string>> symbolic_;
  std::vector<std::string> problems_;
  std::map<std::string, int> problem_ops_;
  onnx::ModelProto model_;
  std::int64_t opset_ = 0;
  mutable std::vector<std::string> attrs_read_;  // attribute names the current node's handler asked for
  mutable std::uint64_t inputs_read_ = 0;        // bit k: the handler asked for input k
  Workload wl_;
  std::map<std::string, Value> values_;
  std::map<std::string, Shape> empty_;  // values with no elements (empty slices)
  std::set<std::string> folded_;        // constants computed by fold(), not stored in the model
  std::map<std::string, const onnx::TensorProto*> consts_;
  std::deque<onnx::TensorProto> owned_consts_;
  std::map<std::string, std::string> unavailable_;  // value -> why it cannot be read
  std::set<std::string> tensor_names_, op_names_, recurrent_bases_;
  std::map<std::string, std::vector<int>> consumers_;
  std::map<std::string, int> producer_;
  std::set<std::string> graph_outputs_;
  std::map<int, FusedGelu> fused_;  // emitted in place of node index
  std::set<int> skip_;
  const onnx::NodeProto* node_ = nullptr;
  std::string node_name_;
  int outputs_supported_ = 1;
};

}  // namespace

OnnxSummary summarize_onnx(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot open the file", path));
  onnx::ModelProto m;
  if (!m.ParseFromIstream(&f) || !m.has_graph())
    throw Error(fmt::format("{}: not an ONNX model (the file does not parse as an ONNX ModelProto)", path));
  OnnxSummary s;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") s.opset = std::max<std::int64_t>(s.opset, o.version());
  const auto& g = m.graph();
  s.nodes = g.node_size();
  s.initializers = g.initializer_size();
  for (const auto& n : g.node()) s.op_counts[n.op_type()]++;
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) inits.insert(t.name());
  for (const auto& in : g.input()) {
    if (inits.count(in.name())) continue;
    std::vector<std::string> dims;
    if (in.type().has_tensor_type() && in.type().tensor_type().has_shape())
      for (const auto& d : in.type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
    s.inputs.push_back({in.name(), dims});
  }
  return s;
}

Workload import_onnx(const std::string& path, const ImportOptions& options) {
  return Importer(path, options).run();
}

}  // namespace tessera::ir
