#include "cli/sweep/slurm.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/common/error.h"

namespace tessera::sweep {
namespace fs = std::filesystem;

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool on_path(const std::string& exe) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string dirs = path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / exe;
    if (access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

int run_and_wait(const std::vector<std::string>& args) {
  const pid_t pid = spawn(args, [] {});
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int submit_array(const std::vector<Point>& todo, const Store& store, const SlurmOptions& opt) {
  if (!on_path("sbatch"))
    throw Error("--backend slurm: sbatch is not on PATH (Slurm's client commands are needed; Debian: slurm-client)");
  fs::create_directories(store.path("slurm"));
  std::size_t n = 0;
  while (fs::exists(store.path(fmt::format("slurm/submission-{}.json", n)))) ++n;
  const std::size_t per = opt.chunk_points ? opt.chunk_points : (todo.size() + 99) / 100;
  Json chunks = Json::array();
  std::set<std::string> seen;
  for (const Point& p : todo) {
    if (!seen.insert(p.key).second) continue;
    if (chunks.empty() || chunks.back().size() >= per) chunks.push_back(Json::array());
    chunks.back().push_back(p.key);
  }
  const std::string chunk_file = fs::absolute(store.path(fmt::format("slurm/submission-{}.json", n))).string();
  std::ofstream(chunk_file) << Json{{"chunks", chunks}}.dump(1) << "\n";
  const std::string script = fs::absolute(store.path(fmt::format("slurm/submission-{}.sh", n))).string();
  {
    std::ofstream f(script);
    f << "#!/bin/sh\n# tessera sweep: one array task runs one chunk of points (docs/sweep.md)\n"
      << "exec " << shell_quote(opt.tessera) << " sweep " << shell_quote(fs::absolute(opt.spec_path).string())
      << " --out " << shell_quote(fs::absolute(opt.out_dir).string()) << " --worker-chunks " << shell_quote(chunk_file)
      << " --worker-task \"$SLURM_ARRAY_TASK_ID\"\n";
  }
  chmod(script.c_str(), 0755);
  std::vector<std::string> args{"sbatch", "--parsable", "--wait", fmt::format("--array=0-{}", chunks.size() - 1),
                                "--job-name=tessera-sweep",
                                "--output=" + fs::absolute(store.path("slurm")).string() + "/%A_%a.out"};
  args.insert(args.end(), opt.sbatch_args.begin(), opt.sbatch_args.end());
  args.push_back(script);
  fmt::print(stderr, "submitting {} points as a job array of {} tasks ({} points each): {}\n", seen.size(),
             chunks.size(), per, script);
  return run_and_wait(args);
}

RunSummary run_worker(const Spec& spec, const std::vector<Point>& points, const std::string& out_dir,
                      const std::string& chunks_file, std::size_t task, const RunOptions& opt) {
  const Json chunks = read_json_file(chunks_file).value("chunks", Json::array());
  if (task >= chunks.size())
    throw Error(fmt::format("{}: task {} of a submission with {} chunks", chunks_file, task, chunks.size()));
  std::set<std::string> keys;
  for (const auto& k : chunks[task]) keys.insert(k.get<std::string>());
  std::vector<Point> mine;
  for (const Point& p : points)
    if (keys.count(p.key)) mine.push_back(p);
  fs::create_directories(fs::path(out_dir) / "parts");
  const std::string part = fmt::format("{}/parts/{}-{}.jsonl", out_dir, fs::path(chunks_file).stem().string(), task);
  Store store(out_dir, part);
  return run_points(spec, mine, store, opt);
}

}  // namespace tessera::sweep
