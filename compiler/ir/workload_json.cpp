#include "compiler/ir/workload_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "sim/common/error.h"

namespace tessera::ir {

namespace {

constexpr char kErr = 'c';  // workload files are inputs like configs: ConfigError
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
constexpr std::int64_t kMaxElements = std::int64_t{1} << 50;

// A name the expression parser can read back: a letter or '_', then letters, digits, '_', '.',
// '/' or ':'.
bool valid_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == ':'))
      return false;
  return true;
}
const char* kNameRule = "letters, digits, '_', '.', '/' or ':', starting with a letter or '_'";

// A positive integer (integral floats such as 64.0 are accepted, as by JsonReader::u64), or -1.
std::int64_t positive_int(const Json& v) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    return u >= 1 && u <= static_cast<std::uint64_t>(kMaxDim) ? static_cast<std::int64_t>(u) : -1;
  }
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    return i >= 1 && i <= kMaxDim ? i : -1;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 1 && d <= static_cast<double>(kMaxDim) && std::floor(d) == d) return static_cast<std::int64_t>(d);
  }
  return -1;
}

std::string default_name(const std::string& what) {
  std::string s = what;
  auto slash = s.find_last_of('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0) s.resize(s.size() - 5);
  return s;
}

// Drops the "workload: " prefix of Workload's own messages (the file and field replace it).
std::string strip_prefix(const std::string& msg) {
  const std::string p = "workload: ";
  return msg.compare(0, p.size(), p) == 0 ? msg.substr(p.size()) : msg;
}

const Json& array_of(const JsonReader& r, const std::string& key, const char* what_items) {
  const Json& v = r.value(key);
  if (!v.is_array()) r.fail(key, fmt::format("expected an array of {}, got {}", what_items, v.type_name()));
  return v;
}

void read_tensor(const Json& j, const std::string& what, std::size_t i, Workload& w) {
  JsonReader t(j, what, fmt::format("tensors[{}]", i), kErr);
  const std::string name = t.string("name");
  if (!valid_name(name)) t.fail("name", fmt::format("\"{}\" is not a valid tensor name ({})", name, kNameRule));
  if (w.has_tensor(name)) t.fail("name", fmt::format("tensor '{}' is declared twice", name));
  const Json& shape = t.value("shape");
  if (!shape.is_array() || shape.empty())
    t.fail("shape", fmt::format("expected a non-empty array of positive integers, got {}", shape.dump()));
  std::vector<std::int64_t> dims;
  std::int64_t elements = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t n = positive_int(shape[d]);
    if (n < 0)
      t.fail(fmt::format("shape[{}]", d),
             fmt::format("expected a positive integer (at most 2^40), got {}", shape[d].dump()));
    if (elements > kMaxElements / n) t.fail("shape", "the tensor has more than 2^50 elements");
    elements *= n;
    dims.push_back(n);
  }
  const std::string role_s = t.string("role");
  TensorRole role;
  if (role_s == "input") role = TensorRole::Input;
  else if (role_s == "weight") role = TensorRole::Weight;
  else if (role_s == "activation") role = TensorRole::Activation;
  else t.fail("role", fmt::format("unknown role \"{}\" (expected input, weight or activation)", role_s));
  const std::string dtype_s = t.string("dtype", "fp16");
  Dtype dtype;
  if (!parse_dtype(dtype_s, dtype))
    t.fail("dtype", fmt::format("unknown dtype \"{}\" (expected int8, fp16, fp32 or int32)", dtype_s));
  t.reject_unknown_keys();
  w.add_tensor(name, std::move(dims), role, dtype);
}

void read_op(const Json& j, const std::string& what, std::size_t i, Workload& w) {
  JsonReader o(j, what, fmt::format("ops[{}]", i), kErr);
  const std::string name = o.string("name");
  const std::string expr = o.string("expr");
  const bool has_extents = o.has("extents");
  if (has_extents) o.object("extents");  // type check; marks the key as known
  o.reject_unknown_keys();
  if (name.empty()) o.fail("name", "an operator needs a name");
  for (const auto& op : w.ops())
    if (op.name == name) o.fail("name", fmt::format("an operator named '{}' already exists", name));
  Expr parsed;
  try {
    parsed = parse_expr(expr);
  } catch (const Error& e) {
    o.fail("expr", e.what());
  }
  std::map<std::string, std::int64_t> extents;
  if (has_extents) {
    JsonReader ext = o.object("extents");
    const Json& obj = o.value("extents");
    const auto axes = parsed.all_axes();
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(axes.begin(), axes.end(), it.key()) == axes.end())
        ext.fail(it.key(), fmt::format("the expression has no axis '{}'", it.key()));
      const std::int64_t n = positive_int(it.value());
      if (n < 0)
        ext.fail(it.key(), fmt::format("expected a positive integer (at most 2^40), got {}", it.value().dump()));
      extents[it.key()] = n;
    }
  }
  try {
    w.add_op(name, expr, extents);
  } catch (const Error& e) {
    o.fail("expr", strip_prefix(e.what()));
  }
}

}  // namespace

Workload parse_workload_json(const Json& json, const std::string& what) {
  JsonReader r(json, what, "", kErr);
  const std::string format = r.string("format");
  if (format != "tessera-workload")
    r.fail("format", fmt::format("expected \"tessera-workload\", got \"{}\"", format));
  const std::uint64_t version = r.u64("version");
  if (version != 1) r.fail("version", fmt::format("unsupported version {} (expected 1)", version));
  Workload w;
  w.name = r.string("name", default_name(what));
  const Json& tensors = array_of(r, "tensors", "tensors");
  const Json& ops = array_of(r, "ops", "operators");
  if (ops.empty()) r.fail("ops", "a workload needs at least one operator");
  const Json* outputs = r.has("outputs") ? &array_of(r, "outputs", "tensor names") : nullptr;
  r.reject_unknown_keys();

  for (std::size_t i = 0; i < tensors.size(); ++i) read_tensor(tensors[i], what, i, w);
  for (std::size_t i = 0; i < ops.size(); ++i) read_op(ops[i], what, i, w);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = w.tensors()[i];
    if (t.role == TensorRole::Activation && w.producer(t.name) < 0)
      r.fail(fmt::format("tensors[{}]", i),
             fmt::format("activation '{}' is declared but no operator produces it", t.name));
  }
  if (outputs) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      const std::string key = fmt::format("outputs[{}]", i);
      const Json& v = (*outputs)[i];
      if (!v.is_string()) r.fail(key, fmt::format("expected a tensor name, got {}", v.dump()));
      const std::string n = v.get<std::string>();
      if (!w.has_tensor(n)) r.fail(key, fmt::format("no tensor named '{}'", n));
      if (w.tensor(n).role != TensorRole::Activation)
        r.fail(key, fmt::format("'{}' is a(n) {}; only activations (operator results) can be outputs", n,
                                role_name(w.tensor(n).role)));
      if (!seen.insert(n).second) r.fail(key, fmt::format("'{}' is listed twice", n));
      w.mark_output(n);
    }
  }
  try {
    w.finalize();
  } catch (const Error& e) {
    throw_error(kErr, fmt::format("{}: {}", what, strip_prefix(e.what())));
  }
  return w;
}

Workload load_workload_json(const std::string& path) { return parse_workload_json(read_json_file(path), path); }

Json workload_to_json(const Workload& w) {
  Json tensors = Json::array();
  Json outputs = Json::array();
  for (const auto& t : w.tensors()) {
    tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"role", role_name(t.role)},
                       {"dtype", dtype_name(t.dtype)}});
    if (t.output) outputs.push_back(t.name);
  }
  Json ops = Json::array();
  for (const auto& op : w.ops()) {
    Json o = {{"name", op.name}, {"expr", op.expr.text}};
    // Axes that no plain index fixes (all tensors are written, so the output's axes are fixed).
    std::set<std::string> fixed;
    auto note = [&](const Access& a) {
      for (const auto& ix : a.indices)
        if (ix.plain()) fixed.insert(ix.terms[0].axis);
    };
    note(op.expr.output);
    for (const auto& in : op.expr.inputs) note(in);
    Json ext = Json::object();
    for (const auto& [axis, n] : op.extent)
      if (!fixed.count(axis)) ext[axis] = n;
    if (!ext.empty()) o["extents"] = ext;
    ops.push_back(o);
  }
  return {{"format", "tessera-workload"}, {"version", 1}, {"name", w.name},
          {"tensors", tensors}, {"ops", ops}, {"outputs", outputs}};
}

}  // namespace tessera::ir
