#include "cli/sweep/store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/common/error.h"

namespace tessera::sweep {
namespace fs = std::filesystem;

namespace {

// Writes `text` to `path` through a temporary file and a rename: readers see the old file or
// the new one, never half of one.
void replace_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f.flush()) throw Error(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
  }
  fs::rename(tmp, path);
}

void read_lines(const std::string& path, std::map<std::string, Json>& done) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    Json row = Json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object() || !row.contains("key")) continue;  // torn by a kill
    done[row["key"].get<std::string>()] = row;
  }
}

std::string csv_field(const Json& v) {
  std::string s = v.is_null() ? "" : v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

Store::Store(std::string dir, std::string lines_file) : dir_(std::move(dir)), lines_(std::move(lines_file)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error(fmt::format("{}: cannot create the results directory: {}", dir_, ec.message()));
  if (lines_.empty()) lines_ = path("results.jsonl");
}

std::map<std::string, Json> Store::load() const {
  std::map<std::string, Json> done;
  read_lines(path("results.jsonl"), done);
  const fs::path parts = path("parts");
  if (fs::is_directory(parts)) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(parts))
      if (e.path().extension() == ".jsonl") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) read_lines(f, done);
  }
  return done;
}

void Store::append(const Json& row) {
  const std::string line = row.dump() + "\n";
  const int fd = ::open(lines_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("{}: cannot open for appending: {}", lines_, std::strerror(errno)));
  const ssize_t n = ::write(fd, line.data(), line.size());  // one write: a line is whole or absent
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    throw Error(fmt::format("{}: cannot append a result: {}", lines_, std::strerror(err)));
  if (lines_ != path("results.jsonl")) return;  // a Slurm task's part: the gathering sweep writes the CSV
  if (!csv_loaded_) {  // rows of an earlier run (--resume) and this one
    for (auto& [key, r] : load()) csv_rows_.push_back(std::move(r));
    csv_loaded_ = true;
  } else {
    csv_rows_.push_back(row);
  }
  const auto now = std::chrono::steady_clock::now();
  if (csv_written_ != std::chrono::steady_clock::time_point{} && now - csv_written_ < std::chrono::seconds(2)) return;
  write_csv(csv_rows_);
  csv_written_ = now;
}

void Store::finalize(const std::vector<Point>& points, const std::map<std::string, Json>& done) const {
  std::vector<Json> rows;
  std::set<std::string> in_spec;
  for (const Point& p : points) {
    in_spec.insert(p.key);
    auto it = done.find(p.key);
    if (it == done.end()) continue;
    Json row = it->second;
    row["point"] = p.index;
    row["values"] = p.values;
    rows.push_back(row);
  }
  for (const auto& [key, row] : done)
    if (!in_spec.count(key)) rows.push_back(row);
  std::string text;
  for (const auto& r : rows) text += r.dump() + "\n";
  replace_file(path("results.jsonl"), text);
  write_csv(rows);
  std::error_code ec;
  fs::remove_all(path("parts"), ec);
}

void Store::write_csv(const std::vector<Json>& rows) const {
  std::vector<std::string> value_cols, result_cols;
  std::set<std::string> seen_v, seen_r;
  for (const auto& r : rows) {
    const Json values = r.value("values", Json::object()), result = r.value("result", Json::object());
    for (const auto& [k, v] : values.items())
      if (seen_v.insert(k).second) value_cols.push_back(k);
    for (const auto& [k, v] : result.items())
      if (seen_r.insert(k).second) result_cols.push_back(k);
  }
  std::sort(result_cols.begin(), result_cols.end());
  // a result field named like an axis (run's "planner") gets a prefix: column names stay unique
  auto result_header = [&](const std::string& c) { return seen_v.count(c) || c == "error" ? "result." + c : c; };
  std::ostringstream out;
  out << "point,key,status";
  for (const auto& c : value_cols) out << "," << csv_field(c);
  out << ",error";
  for (const auto& c : result_cols) out << "," << csv_field(result_header(c));
  out << "\n";
  for (const auto& r : rows) {
    out << csv_field(r.value("point", Json())) << "," << csv_field(r["key"]) << "," << csv_field(r["status"]);
    const Json values = r.value("values", Json::object()), result = r.value("result", Json::object());
    for (const auto& c : value_cols) out << "," << csv_field(values.value(c, Json()));
    out << "," << csv_field(r.value("error", Json("")));
    for (const auto& c : result_cols) out << "," << csv_field(result.value(c, Json()));
    out << "\n";
  }
  replace_file(path("results.csv"), out.str());
}

Json make_row(const Point& p, const std::string& status, const std::string& error, const Json& result) {
  return Json{{"key", p.key}, {"point", p.index}, {"values", p.values}, {"status", status}, {"error", error},
              {"result", result}};
}

Json flatten_result(const Json& results) {
  Json flat = Json::object();
  if (!results.is_object()) return flat;
  for (const auto& [k, v] : results.items()) {
    if (v.is_primitive()) flat[k] = v;
    else if (v.is_object())
      for (const auto& [k2, v2] : v.items())
        if (v2.is_primitive()) flat[k + "." + k2] = v2;
  }
  return flat;
}

}  // namespace tessera::sweep
