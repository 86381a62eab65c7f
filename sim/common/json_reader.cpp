#include "sim/common/json_reader.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/common/error.h"

namespace tessera {

void throw_error(char kind, const std::string& message) {
  if (kind == 'c') throw ConfigError(message);
  if (kind == 'p') throw ProgramError(message);
  throw Error(message);
}

Json read_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error(fmt::format("{}: not a regular file (expected a JSON file)", path));
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return Json::parse(text.str());
  } catch (const Json::exception& e) {  // syntax, or a number out of range (1e400)
    throw Error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
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

bool JsonReader::has(const std::string& key) const { return obj_.contains(key); }

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
  std::string known;
  for (const auto& k : read_) known += (known.empty() ? "" : ", ") + k;
  throw_error(kind_, fmt::format("{}: unknown field(s) {} (known here: {})", what_, unknown, known));
}

}  // namespace tessera
