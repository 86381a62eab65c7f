#include "sim/common/json_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "sim/common/error.h"

namespace tessera {

void throw_error(char kind, const std::string& message) {
  if (kind == 'c') throw ConfigError(message);
  if (kind == 'p') throw ProgramError(message);
  throw Error(message);
}

namespace {

// Builds the document as nlohmann's own parser does, but refuses a key given twice in one object
// (that parser keeps the last silently: a config with two "sram_bytes" would run with whichever
// came second). An object's insertion already looks its key up, so the check costs nothing extra;
// a parse callback that kept the keys aside made a large program file a third slower to read.
class StrictDom : public nlohmann::json_sax<Json> {
 public:
  explicit StrictDom(Json& root) : root_(root) {}

  bool null() override { return put(nullptr) != nullptr; }
  bool boolean(bool v) override { return put(v) != nullptr; }
  bool number_integer(number_integer_t v) override { return put(v) != nullptr; }
  bool number_unsigned(number_unsigned_t v) override { return put(v) != nullptr; }
  bool number_float(number_float_t v, const string_t&) override { return put(v) != nullptr; }
  bool string(string_t& v) override { return put(std::move(v)) != nullptr; }
  bool binary(binary_t& v) override { return put(Json::binary(std::move(v))) != nullptr; }
  bool start_object(std::size_t) override { return open(put(Json::object())); }
  bool start_array(std::size_t) override { return open(put(Json::array())); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = e.what();  // syntax, or a number out of range (1e400)
    return false;
  }

  const std::string& error() const { return error_; }
  const std::string& duplicate() const { return duplicate_; }

 private:
  // Places a value in the innermost open container (or as the root); nullptr when its key is
  // there already.
  template <class V>
  Json* put(V&& v) {
    if (stack_.empty()) {
      root_ = Json(std::forward<V>(v));
      return &root_;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(Json(std::forward<V>(v)));
      return &top.back();
    }
    auto [it, added] = top.get_ref<Json::object_t&>().emplace(key_, Json(std::forward<V>(v)));
    if (!added) {
      const std::string at = path();
      duplicate_ = at + (at.empty() ? "" : ".") + key_;
      return nullptr;
    }
    return &it->second;
  }
  bool open(Json* slot) {
    if (!slot) return false;
    if (!stack_.empty()) names_.push_back(stack_.back()->is_array() ? fmt::format("[{}]", stack_.back()->size() - 1)
                                                                    : (names_.empty() ? "" : ".") + key_);
    stack_.push_back(slot);
    return true;
  }
  bool close() {
    stack_.pop_back();
    if (!stack_.empty()) names_.pop_back();  // every open container but the root has a name
    return true;
  }
  std::string path() const {
    std::string p;
    for (const auto& n : names_) p += n;
    return p;
  }

  Json& root_;
  std::vector<Json*> stack_;       // the open containers, innermost last
  std::vector<std::string> names_;  // how each open container below the root is reached: .key or [i]
  std::string key_;                 // the key of the value that comes next in an object
  std::string error_, duplicate_;
};

}  // namespace

Json parse_json_text(const std::string& text, const std::string& what) {
  Json j;
  StrictDom dom(j);
  if (!Json::sax_parse(text, &dom)) {
    if (!dom.duplicate().empty())
      throw Error(fmt::format("{}: {}: the key is given twice in one object (JSON would keep only one of them; "
                              "remove the other)", what, dom.duplicate()));
    throw Error(fmt::format("{}: not valid JSON: {}", what, dom.error()));
  }
  return j;
}

Json read_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error(fmt::format("{}: not a regular file (expected a JSON file)", path));
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_json_text(text.str(), path);
}

JsonReader::JsonReader(const Json& obj, std::string what, std::string path, char kind)
    : obj_(obj), what_(std::move(what)), path_(std::move(path)), kind_(kind) {
  if (!obj_.is_object())
    throw_error(kind_, fmt::format("{}: {}: expected an object, got {}", what_,
                                   path_.empty() ? "top level" : path_, obj_.type_name()));
}

std::string JsonReader::where(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonReader::fail(const std::string& key, const std::string& message) const {
  throw_error(kind_, fmt::format("{}: {}: {}", what_, where(key), message));
}

bool JsonReader::has(const std::string& key) const {
  asked_.insert(key);  // an optional field: known here even when the file leaves it out
  return obj_.contains(key);
}

const Json& JsonReader::value(const std::string& key) const {
  read_.insert(key);
  if (!obj_.contains(key)) fail(key, "required field is missing");
  return obj_.at(key);
}

std::uint64_t JsonReader::u64(const std::string& key) const {
  const Json& v = value(key);
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::uint64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 0 && std::floor(d) == d && d < 1.8e19) return static_cast<std::uint64_t>(d);
  }
  fail(key, fmt::format("expected a non-negative integer, got {}", v.dump()));
}

std::uint64_t JsonReader::u64(const std::string& key, std::uint64_t def) const {
  read_.insert(key);
  return has(key) ? u64(key) : def;
}

double JsonReader::positive(const std::string& key) const {
  const Json& v = value(key);
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    fail(key, fmt::format("expected a positive number, got {}", v.dump()));
  return v.get<double>();
}

double JsonReader::positive(const std::string& key, double def) const {
  read_.insert(key);
  return has(key) ? positive(key) : def;
}

bool JsonReader::boolean(const std::string& key, bool def) const {
  read_.insert(key);
  if (!has(key)) return def;
  const Json& v = obj_.at(key);
  if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", v.dump()));
  return v.get<bool>();
}

std::string JsonReader::string(const std::string& key) const {
  const Json& v = value(key);
  if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", v.dump()));
  return v.get<std::string>();
}

std::string JsonReader::string(const std::string& key, const std::string& def) const {
  read_.insert(key);
  return has(key) ? string(key) : def;
}

JsonReader JsonReader::object(const std::string& key) const {
  const Json& v = value(key);
  if (!v.is_object()) fail(key, fmt::format("expected an object, got {}", v.type_name()));
  return JsonReader(v, what_, where(key), kind_);
}

void JsonReader::reject_unknown_keys() const {
  std::string unknown;
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (!read_.count(it.key())) unknown += (unknown.empty() ? "" : ", ") + where(it.key());
  if (unknown.empty()) return;
  std::set<std::string> all = read_;  // the fields read, and the optional ones asked about
  all.insert(asked_.begin(), asked_.end());
  std::string known;
  for (const auto& k : all) known += (known.empty() ? "" : ", ") + k;
  throw_error(kind_, fmt::format("{}: unknown field(s) {} (known here: {})", what_, unknown, known));
}

}  // namespace tessera
