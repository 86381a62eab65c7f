#pragma once
// A sweep's results directory (docs/sweep.md): results.jsonl gains one line per finished point as
// it finishes (one write on an O_APPEND descriptor), results.csv is rewritten (write, rename) at
// most every 2 seconds while points finish, and a finished sweep rewrites both in point order, so that an interrupted and resumed sweep
// ends with the same files as one that ran through.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "cli/sweep/spec.h"

namespace tessera::sweep {

class Store {
 public:
  // `dir` is created if missing; `lines_file` is where append() writes (results.jsonl, or a
  // Slurm task's part file).
  Store(std::string dir, std::string lines_file = "");

  // Finished points by key: results.jsonl and every parts/*.jsonl. A torn last line (the sweep
  // killed mid-write) is ignored; that point runs again.
  std::map<std::string, Json> load() const;
  // Records one finished point (row: key, point, values, status, error, result); in
  // results.jsonl, also in results.csv if it is 2 s or more since the CSV was last written (a
  // rewrite costs all rows: every point would make a long sweep quadratic).
  void append(const Json& row);
  // Rewrites results.jsonl and results.csv: one row per point of `points` in index order (a
  // point whose key another point ran shares its result), then rows of keys the spec no longer
  // has. Part files are removed once their rows are in results.jsonl.
  void finalize(const std::vector<Point>& points, const std::map<std::string, Json>& done) const;
  // results.csv from rows (atomic replace).
  void write_csv(const std::vector<Json>& rows) const;

  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_, lines_;
  std::vector<Json> csv_rows_;  // rows so far, for results.csv (loaded at the first append)
  bool csv_loaded_ = false;
  std::chrono::steady_clock::time_point csv_written_{};
};

// A point's row as it will stand in results.jsonl.
Json make_row(const Point& p, const std::string& status, const std::string& error, const Json& result);
// Top-level scalars of a results JSON, and the scalars of its objects as "object.field"; arrays
// (per-operator tables, links) are left to the per-point file.
Json flatten_result(const Json& results);

}  // namespace tessera::sweep
