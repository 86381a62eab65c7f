#pragma once
// Strict reading of JSON objects: every value is type- and range-checked, every error names the
// file and the dotted path of the field, and keys that were never read are reported as unknown.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace tessera {

using Json = nlohmann::json;

// Reads a JSON file; a missing file, a syntax error or a key given twice in one object becomes
// an Error naming the file (and the key's path).
Json read_json_file(const std::string& path);
// The same for text already read; `what` names its source in errors.
Json parse_json_text(const std::string& text, const std::string& what);

class JsonReader {
 public:
  // `what` names the source (a file name); `path` the location of this object within it.
  // `error_kind` chooses the exception type: 'c' ConfigError, 'p' ProgramError.
  JsonReader(const Json& obj, std::string what, std::string path, char error_kind);

  bool has(const std::string& key) const;  // an optional field: listed as known in unknown-key errors
  bool present(const std::string& key) const { return obj_.contains(key); }  // not listed (an obsolete key)
  std::uint64_t u64(const std::string& key) const;
  std::uint64_t u64(const std::string& key, std::uint64_t def) const;
  double positive(const std::string& key) const;  // > 0, integer or fraction
  double positive(const std::string& key, double def) const;
  bool boolean(const std::string& key, bool def) const;
  std::string string(const std::string& key) const;
  std::string string(const std::string& key, const std::string& def) const;
  const Json& value(const std::string& key) const;  // any type, required
  JsonReader object(const std::string& key) const;  // required object
  // Throws naming every key that was not read (typos must not be silently ignored).
  void reject_unknown_keys() const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  std::string where(const std::string& key) const;
  const std::string& what() const { return what_; }

 private:
  const Json& obj_;
  std::string what_;
  std::string path_;
  char kind_;
  mutable std::set<std::string> read_;
  mutable std::set<std::string> asked_;  // keys has() was asked about: known here, read or not
};

[[noreturn]] void throw_error(char kind, const std::string& message);

}  // namespace tessera
