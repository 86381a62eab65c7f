#include "cli/sweep/spec.h"

#include <fmt/format.h>
#include <muParser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "sim/common/error.h"
#include "sim/common/hash.h"

namespace tessera::sweep {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void spec_error(const std::string& path, const std::string& msg) {
  throw ConfigError(fmt::format("{}: {}", path, msg));
}

// Aliases can make a YAML document refer to itself (`&c [*c]`: endless recursion, a segfault)
// or expand exponentially (a kilobyte of nested aliases is a billion values): a spec is small,
// so nesting and size are bounded.
constexpr int kMaxYamlDepth = 64;
constexpr std::size_t kMaxYamlValues = 1000000;

// YAML scalars become JSON numbers, booleans or null where they read as such, unless quoted.
Json yaml_to_json(const YAML::Node& n, int depth, std::size_t& values) {
  if (depth > kMaxYamlDepth)
    throw ConfigError(fmt::format("nested deeper than {} levels (an alias that contains itself?)", kMaxYamlDepth));
  if (++values > kMaxYamlValues)
    throw ConfigError(fmt::format("more than {} values (aliases expanding?); a sweep spec is small", kMaxYamlValues));
  switch (n.Type()) {
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const auto& e : n) a.push_back(yaml_to_json(e, depth + 1, values));
      return a;
    }
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : n) {
        const std::string key = kv.first.as<std::string>();
        // yaml-cpp keeps both; the JSON object would keep the last silently
        if (o.contains(key))
          throw ConfigError(fmt::format("line {}: key \"{}\" is given twice in one mapping (remove one)",
                                        kv.first.Mark().line + 1, key));
        o[key] = yaml_to_json(kv.second, depth + 1, values);
      }
      return o;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      if (s == "true" || s == "false") return s == "true";
      if (s == "null" || s == "~") return nullptr;
      try {
        std::size_t used = 0;
        const long long i = std::stoll(s, &used);
        if (used == s.size()) return i;
        const double d = std::stod(s, &used);
        if (used == s.size()) return d;
      } catch (const std::exception&) {
      }
      return s;
    }
    default:
      return nullptr;
  }
}

bool valid_name(const std::string& n) {
  if (n.empty() || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool all_integers(const std::vector<double>& xs) {
  return std::all_of(xs.begin(), xs.end(), [](double x) { return std::floor(x) == x && std::abs(x) < 9e15; });
}

Json number(double x, bool integer) { return integer ? Json(static_cast<long long>(std::llround(x))) : Json(x); }

// {from, to, step}: from, from + step, ... up to `to` (included when it is hit).
std::vector<Json> linear_range(const JsonReader& r) {
  const Json& from = r.value("from");
  const Json& to = r.value("to");
  if (!from.is_number() || !to.is_number()) r.fail("from", "expected numbers for 'from' and 'to'");
  const double a = from.get<double>(), b = to.get<double>(), step = r.positive("step");
  if (b < a) r.fail("to", fmt::format("expected 'to' ({}) at least 'from' ({})", b, a));
  const bool ints = all_integers({a, b, step});
  if ((b - a) / step > 100000) r.fail("step", "more than 100000 values");
  std::vector<Json> out;
  for (double k = 0;; ++k) {
    const double x = a + k * step;
    if (x > b + 1e-9 * std::max(1.0, std::abs(b))) break;
    out.push_back(number(x, ints));
  }
  return out;
}

// {from, to, factor} (multiplying) or {from, to, points} (that many, evenly spaced in log).
std::vector<Json> log_range(const JsonReader& r) {
  const double a = r.positive("from"), b = r.positive("to");
  if (b < a) r.fail("to", fmt::format("expected 'to' ({}) at least 'from' ({})", b, a));
  std::vector<Json> out;
  if (r.has("factor") == r.has("points")) r.fail("factor", "give one of 'factor' and 'points'");
  if (r.has("factor")) {
    const double f = r.positive("factor");
    if (f <= 1) r.fail("factor", fmt::format("expected a factor above 1, got {}", f));
    const bool ints = all_integers({a, b, f});
    for (double x = a; x <= b * (1 + 1e-9); x *= f) out.push_back(number(x, ints));
  } else {
    const std::uint64_t n = r.u64("points");
    if (n < 2 || n > 100000) r.fail("points", fmt::format("expected 2 to 100000 points, got {}", n));
    for (std::uint64_t k = 0; k < n; ++k)
      out.push_back(a * std::pow(b / a, static_cast<double>(k) / static_cast<double>(n - 1)));
  }
  return out;
}

// JSON kinds that may stand for one another in a config field (an integer where a fraction was).
const char* kind_of(const Json& v) {
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_array()) return "list";
  if (v.is_object()) return "object";
  return "null";
}

// The fields a pointer names in `doc`: itself, or with "*" segments every element (array) or
// member (object) there. Lets one axis set a field of every dimension of a system.
std::vector<Json::json_pointer> matching_fields(const Json& doc, const std::string& pattern) {
  std::vector<std::string> segs;
  for (std::size_t at = 1; at <= pattern.size();) {  // pattern is "" or starts with '/'
    const std::size_t next = std::min(pattern.find('/', at), pattern.size());
    segs.push_back(pattern.substr(at, next - at));
    at = next + 1;
  }
  std::vector<Json::json_pointer> found;
  std::vector<std::pair<Json::json_pointer, const Json*>> frontier{{Json::json_pointer(), &doc}};
  for (std::size_t i = 0; i < segs.size() && !frontier.empty(); ++i) {
    std::vector<std::pair<Json::json_pointer, const Json*>> next;
    for (const auto& [ptr, node] : frontier) {
      if (segs[i] == "*") {
        if (node->is_array())
          for (std::size_t k = 0; k < node->size(); ++k) next.emplace_back(ptr / k, &(*node)[k]);
        else if (node->is_object())
          for (const auto& [key, child] : node->items()) next.emplace_back(ptr / key, &child);
        continue;
      }
      const Json::json_pointer one = ptr / Json::json_pointer("/" + segs[i]);  // throws on a bad escape
      try {
        if (doc.contains(one)) next.emplace_back(one, &doc.at(one));
      } catch (const Json::exception&) {  // a name where a list index belongs: no such field
      }
    }
    frontier = std::move(next);
  }
  for (const auto& f : frontier) found.push_back(f.first);
  return found;
}

std::string default_name(const Axis& a) {
  if (!a.option.empty()) {
    std::string n = a.option.substr(a.option.find_first_not_of('-'));
    std::replace(n.begin(), n.end(), '-', '_');
    return n;
  }
  return a.pointer.substr(a.pointer.rfind('/') + 1);
}

Axis parse_axis(const JsonReader& r, const Json& json, const Spec& spec) {
  static const std::set<std::string> known{"name",  "pointer",   "option", "values",
                                           "range", "log_range", "labels", "zip"};
  for (const auto& [k, v] : json.items())  // a typo is named before it makes another check fail
    if (!known.count(k))
      r.fail(k, "unknown key (an axis has name, pointer or option, values, range or log_range, labels, zip)");
  Axis a;
  a.pointer = r.string("pointer", "");
  a.option = r.string("option", "");
  if (a.pointer.empty() == a.option.empty()) r.fail("pointer", "give one of 'pointer' (a config field) and 'option'");
  if (!a.option.empty() && a.option.rfind("--", 0) != 0)
    r.fail("option", fmt::format("expected a long option such as --batch, got '{}'", a.option));
  if (a.option == "--config" || a.option == "--out")  // as in args: every point failed with "At Most 1"
    r.fail("option", fmt::format("'{}' is set by the sweep for each point (vary the config with 'pointer')", a.option));
  std::vector<Json::json_pointer> fields;
  if (!a.pointer.empty()) {
    try {
      if (a.pointer[0] != '/') throw std::invalid_argument("it must start with '/'");
      fields = matching_fields(spec.base_config, a.pointer);
    } catch (const std::exception& e) {
      r.fail("pointer", fmt::format("'{}' is not a JSON pointer ({})", a.pointer, e.what()));
    }
    if (fields.empty())
      r.fail("pointer", fmt::format("'{}' is not a field of the base config {}", a.pointer, spec.config_path));
  }
  const int kinds = r.has("values") + r.has("range") + r.has("log_range");
  if (kinds != 1) r.fail("values", "give one of 'values', 'range' and 'log_range'");
  if (r.has("values")) {
    const Json& v = r.value("values");
    if (!v.is_array() || v.empty()) r.fail("values", "expected a non-empty list");
    for (const auto& x : v) {
      if (!a.option.empty() && !(x.is_string() || x.is_number()))
        r.fail("values", "an option's values must be strings or numbers");
      a.values.push_back(x);
    }
  } else if (r.has("range")) {
    a.values = linear_range(r.object("range"));
  } else {
    a.values = log_range(r.object("log_range"));
  }
  for (const auto& f : fields) {  // the base config's fields say what a value must be
    const Json& base = spec.base_config.at(f);
    for (std::size_t i = 0; i < a.values.size(); ++i)
      if (kind_of(a.values[i]) != kind_of(base))
        r.fail(r.has("values") ? "values" : r.has("range") ? "range" : "log_range",
               fmt::format("value {} ({}) is not a {} like the base config's '{}' ({})", i, a.values[i].dump(),
                           kind_of(base), f.to_string(), base.dump()));
  }
  if (r.has("labels")) {
    const Json& l = r.value("labels");
    std::set<std::string> seen;
    if (!l.is_array() || l.size() != a.values.size())
      r.fail("labels", fmt::format("expected a list of {} names, one per value", a.values.size()));
    for (const auto& x : l) {
      if (!x.is_string() || !seen.insert(x.get<std::string>()).second)
        r.fail("labels", "expected distinct strings, one per value");
      a.labels.push_back(x.get<std::string>());
    }
  }
  a.name = r.string("name", default_name(a));
  if (!valid_name(a.name)) r.fail("name", fmt::format("'{}' is not a name (letters, digits, _)", a.name));
  a.zip = r.string("zip", "");
  r.reject_unknown_keys();
  return a;
}

// The shorthand lists: workloads, planners, batches.
void add_shorthand(const JsonReader& r, const char* key, const char* name, const char* option, Spec& s) {
  if (!r.has(key)) return;
  const Json& v = r.value(key);
  if (!v.is_array() || v.empty()) r.fail(key, "expected a non-empty list");
  Axis a{name, "", option, {}, {}, ""};
  for (const auto& x : v) {
    if (!(x.is_string() || x.is_number())) r.fail(key, "expected strings or numbers");
    a.values.push_back(x);
  }
  s.axes.push_back(a);
}

std::string arg_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Groups of axis indices varying together: zip groups, then single axes, in first-axis order.
std::vector<std::vector<std::size_t>> axis_groups(const Spec& s) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::string, std::size_t> zip_group;
  for (std::size_t i = 0; i < s.axes.size(); ++i) {
    const std::string& z = s.axes[i].zip;
    if (z.empty()) {
      groups.push_back({i});
      continue;
    }
    auto [it, fresh] = zip_group.emplace(z, groups.size());
    if (fresh) groups.emplace_back();
    auto& g = groups[it->second];
    if (!g.empty() && s.axes[g[0]].values.size() != s.axes[i].values.size())
      spec_error(s.path, fmt::format("axes '{}' and '{}' share zip group '{}' but have {} and {} values",
                                     s.axes[g[0]].name, s.axes[i].name, z, s.axes[g[0]].values.size(),
                                     s.axes[i].values.size()));
    g.push_back(i);
  }
  return groups;
}

// The filter, compiled once; numeric axes by name, string axes as <name>_index.
class Filter {
 public:
  Filter(const Spec& s) : vars_(s.axes.size(), 0.0) {
    if (s.filter.empty()) return;
    try {
      for (std::size_t i = 0; i < s.axes.size(); ++i) {
        const bool numeric = s.axes[i].labels.empty() &&
                             std::all_of(s.axes[i].values.begin(), s.axes[i].values.end(),
                                         [](const Json& v) { return v.is_number() || v.is_boolean(); });
        parser_.DefineVar(numeric ? s.axes[i].name : s.axes[i].name + "_index", &vars_[i]);
      }
      parser_.SetExpr(s.filter);
      parser_.Eval();  // syntax and unknown names now, not at the first point
    } catch (const mu::Parser::exception_type& e) {
      spec_error(s.path, fmt::format("filter: {} (in '{}'; variables are the numeric axes by name and string axes "
                                     "as <name>_index)", e.GetMsg(), s.filter));
    }
    active_ = true;
  }
  bool keep(const Spec& s, const std::vector<std::size_t>& choice) {
    if (!active_) return true;
    for (std::size_t i = 0; i < s.axes.size(); ++i) {
      const Json& v = s.axes[i].values[choice[i]];
      vars_[i] = !s.axes[i].labels.empty() ? static_cast<double>(choice[i])
                 : v.is_number()             ? v.get<double>()
                 : v.is_boolean()            ? v.get<bool>()
                                             : static_cast<double>(choice[i]);
    }
    try {
      return parser_.Eval() != 0;
    } catch (const mu::Parser::exception_type& e) {
      spec_error(s.path, fmt::format("filter: {}", e.GetMsg()));
    }
  }

 private:
  mu::Parser parser_;
  std::vector<double> vars_;  // stable addresses, bound to the parser
  bool active_ = false;
};

Point make_point(const Spec& s, const std::vector<std::size_t>& choice, const std::string& build_id) {
  Point p;
  p.values = Json::object();
  p.config = s.base_config;
  for (std::size_t i = 0; i < s.axes.size(); ++i) {
    const Axis& a = s.axes[i];
    const Json& v = a.values[choice[i]];
    p.values[a.name] = a.labels.empty() ? v : Json(a.labels[choice[i]]);
    if (!a.pointer.empty()) {  // on the config as the earlier axes left it (a "*" sees their lists)
      const auto fields = matching_fields(p.config, a.pointer);
      if (fields.empty())
        spec_error(s.path, fmt::format("axis '{}': '{}' names no field of the config once the axes before it are "
                                       "set ({})", a.name, a.pointer, p.values.dump()));
      for (const auto& f : fields) p.config[f] = v;
    } else {
      p.options.push_back(a.option);
      p.options.push_back(arg_text(v));
    }
  }
  p.options.insert(p.options.end(), s.args.begin(), s.args.end());
  const Json id{{"command", s.command}, {"config", p.config}, {"options", p.options}, {"build", build_id}};
  p.key = fnv1a_hex(id.dump());
  return p;
}

}  // namespace

const std::vector<std::string>& sweep_commands() {
  static const std::vector<std::string> c{"run", "simulate", "collective", "traffic"};
  return c;
}

Spec load_spec(const std::string& path) {
  const fs::path p(path);
  const std::string ext = p.extension().string();
  if (ext != ".yaml" && ext != ".yml") return parse_spec(read_json_file(path), path);
  if (!fs::is_regular_file(p)) spec_error(path, "cannot read the file: it does not exist or is not a regular file");
  try {
    std::size_t values = 0;
    Json j;
    try {
      j = yaml_to_json(YAML::LoadFile(path), 0, values);
    } catch (const ConfigError& e) {
      spec_error(path, e.what());
    }
    return parse_spec(j, path);
  } catch (const YAML::Exception& e) {
    spec_error(path, fmt::format("not valid YAML: {}", e.what()));
  }
}

Spec parse_spec(const Json& json, const std::string& path) {
  if (!json.is_object()) spec_error(path, "expected a sweep spec object (docs/sweep.md)");
  JsonReader r(json, path, "", 'c');
  Spec s;
  s.path = path;
  s.command = r.string("command", "run");
  const auto& cmds = sweep_commands();
  if (std::find(cmds.begin(), cmds.end(), s.command) == cmds.end())
    r.fail("command", fmt::format("'{}' cannot be swept; expected one of run, simulate, collective, traffic", s.command));
  const fs::path cfg = r.string("config");
  s.config_path = (cfg.is_absolute() ? cfg : fs::path(path).parent_path() / cfg).lexically_normal().string();
  s.base_config = read_json_file(s.config_path);
  add_shorthand(r, "workloads", "workload", "--workload", s);
  add_shorthand(r, "planners", "planner", "--planner", s);
  add_shorthand(r, "batches", "batch", "--batch", s);
  if (r.has("axes")) {
    const Json& axes = r.value("axes");
    if (!axes.is_array()) r.fail("axes", "expected a list of axes");
    for (std::size_t i = 0; i < axes.size(); ++i) {
      if (!axes[i].is_object()) r.fail("axes", fmt::format("entry {} is not an object", i));
      s.axes.push_back(parse_axis(JsonReader(axes[i], path, fmt::format("axes[{}]", i), 'c'), axes[i], s));
    }
  }
  std::set<std::string> names{"point", "key", "status", "error", "values", "result"};  // row fields
  for (const auto& a : s.axes)
    if (!names.insert(a.name).second)
      spec_error(path, fmt::format("axis name '{}' is taken (by another axis or a results field); give the axis "
                                   "a \"name\"", a.name));
  if (r.has("args")) {
    const Json& args = r.value("args");
    if (!args.is_array()) r.fail("args", "expected a list of strings");
    for (const auto& x : args) {
      if (!x.is_string()) r.fail("args", "expected a list of strings");
      const std::string a = x.get<std::string>();
      if (a == "--config" || a == "--out") r.fail("args", fmt::format("'{}' is set by the sweep for each point", a));
      s.args.push_back(a);
    }
  }
  s.filter = r.string("filter", "");
  if (r.has("limits")) {
    const JsonReader l = r.object("limits");
    s.limits.time_s = l.positive("time_s", s.limits.time_s);
    s.limits.memory_gb = l.has("memory_gb") ? l.positive("memory_gb") : 0;
    if (s.limits.memory_gb != 0 && (s.limits.memory_gb < kMinPointMemoryGb || s.limits.memory_gb > 1e6))
      l.fail("memory_gb", fmt::format("expected {:g} .. 1e6 GiB (below, a point cannot start; above, no limit is one "
                                      "the machine has)", kMinPointMemoryGb));
    l.reject_unknown_keys();
  }
  r.reject_unknown_keys();
  axis_groups(s);  // zip lengths checked now
  Filter f(s);     // and the filter
  return s;
}

std::vector<Point> expand(const Spec& s, const std::string& build_id) {
  const auto groups = axis_groups(s);
  std::size_t total = 1;
  for (const auto& g : groups) {
    total *= s.axes[g[0]].values.size();
    if (total > 1000000) spec_error(s.path, "more than 1,000,000 points; narrow the axes or split the sweep");
  }
  Filter filter(s);
  std::vector<Point> points;
  std::vector<std::size_t> pos(groups.size(), 0), choice(s.axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (std::size_t i : groups[g]) choice[i] = pos[g];
    if (filter.keep(s, choice)) {
      points.push_back(make_point(s, choice, build_id));
      points.back().index = n;
    }
    for (std::size_t g = groups.size(); g-- > 0;) {  // last group fastest
      if (++pos[g] < s.axes[groups[g][0]].values.size()) break;
      pos[g] = 0;
    }
  }
  return points;
}

}  // namespace tessera::sweep
