#pragma once
// Checks shared by the commands' options, beyond CLI11's own: CLI11 converts "-1" into an
// unsigned option as 2^64 - 1 and lets "nan" through PositiveNumber, and each would run with a
// silently wrong value.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/common/error.h"

namespace tessera::cli {

inline bool starts_with_minus(const std::string& s) {
  const auto at = s.find_first_not_of(" \t");
  return at != std::string::npos && s[at] == '-';
}

inline bool not_finite(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end != s.c_str() && !std::isfinite(v);
}

// A number >= 0 (for unsigned options: no minus sign; for floating ones: finite).
inline CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& s) {
        return starts_with_minus(s) || not_finite(s) ? std::string("expected a number >= 0, got " + s) : std::string();
      },
      "", "NON_NEGATIVE");
}

// A finite number > 0.
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& s) {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        const bool ok = end != s.c_str() && std::isfinite(v) && v > 0;
        return ok ? std::string() : std::string("expected a number > 0, got " + s);
      },
      "", "POSITIVE");
}

// A byte size (64KiB, 2MiB, 4096), not negative.
inline CLI::Validator size_value() {
  return CLI::Validator(
      [](std::string& s) {
        if (starts_with_minus(s)) return std::string("expected a size >= 0 (e.g. 64KiB), got " + s);
        static const CLI::AsSizeValue as_size(false);
        return as_size(s);
      },
      "SIZE", "SIZE");
}

// For floating-point options: a finite number (not nan, not inf; CLI::Range lets nan through).
inline CLI::Validator finite() {
  return CLI::Validator(
      [](std::string& s) { return not_finite(s) ? std::string("expected a finite number, got " + s) : std::string(); },
      "", "FINITE");
}

// An output file that can be written: checked before the run, so that hours of simulation are
// not lost to a mistyped directory at the end.
inline CLI::Validator writable_path() {
  return CLI::Validator(
      [](std::string& s) {
        namespace fs = std::filesystem;
        std::error_code ec;
        const fs::path p(s);
        const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
        if (fs::is_directory(p, ec)) return s + ": a directory; expected a file to write";
        if (!fs::is_directory(dir, ec)) return s + ": directory " + dir.string() + " does not exist";
        if (access(dir.c_str(), W_OK) != 0) return s + ": directory " + dir.string() + " is not writable";
        return std::string();
      },
      "", "WRITABLE");
}

// The entries of a comma-separated option, which may also be repeated: CLI11's own splitting
// drops an empty entry ("0.1,,0.2", a trailing comma) without a word, so the option takes its
// text whole and this splits it, naming the option on an empty entry.
inline std::vector<std::string> list_entries(const std::vector<std::string>& given, const std::string& option) {
  std::vector<std::string> out;
  for (const std::string& text : given) {
    std::size_t begin = 0;
    for (;;) {
      const std::size_t end = text.find(',', begin);
      const std::string entry = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
      if (entry.find_first_not_of(" \t") == std::string::npos)
        throw Error(option + " " + text + ": an empty entry (expected comma-separated values, none empty)");
      out.push_back(entry);
      if (end == std::string::npos) break;
      begin = end + 1;
    }
  }
  return out;
}

// One entry of a list of numbers: the whole text a finite number.
inline double number_entry(const std::string& entry, const std::string& option) {
  char* end = nullptr;
  const double v = std::strtod(entry.c_str(), &end);
  const bool whole = end != entry.c_str() && std::string(end).find_first_not_of(" \t") == std::string::npos;
  if (!whole || !std::isfinite(v)) throw Error(option + ": expected a finite number, got \"" + entry + "\"");
  return v;
}

}  // namespace tessera::cli
