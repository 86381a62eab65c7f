#include "cli/sweep/runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "sim/common/error.h"
#include "sim/common/hash.h"
#include "sim/common/host.h"

namespace tessera::sweep {
namespace fs = std::filesystem;

namespace {

std::atomic<int> g_stop_signal{0};  // set by the handler only; read by the wait loop
void on_stop(int sig) { g_stop_signal = sig; }

struct Running {
  std::size_t point = 0;  // index into the points vector
  pid_t pid = 0;
  std::chrono::steady_clock::time_point start;
  bool timed_out = false;
};

std::string last_line(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    // CLI11's closing hint says nothing about the point; the line before it names the option
    if (line.find_first_not_of(" \t\r") != std::string::npos && line != "Run with --help for more information.")
      last = line;
  const std::string prefix = "tessera: error: ";
  if (last.rfind(prefix, 0) == 0) last = last.substr(prefix.size());
  return last.size() > 2000 ? last.substr(0, 2000) + "..." : last;
}

// Starts one point: its config file, its log, a process group of its own (so a timeout kills
// whatever it started too), the memory limit both as an rlimit and for tessera to name.
pid_t launch(const Spec& spec, const Point& p, const Store& store, const RunOptions& opt, double memory_gb) {
  const std::string cfg = store.path("configs/" + p.key + ".json");
  {
    std::ofstream f(cfg);
    f << p.config.dump(2) << "\n";
    if (!f.flush()) throw Error(fmt::format("{}: cannot write the point's config", cfg));
  }
  std::vector<std::string> args{opt.tessera, spec.command, "--config", cfg};
  args.insert(args.end(), p.options.begin(), p.options.end());
  args.push_back("--out");
  args.push_back(store.path("points/" + p.key + ".json"));
  std::error_code ec;
  fs::remove(args.back(), ec);  // a stale result from a killed run must not pass for this one
  const std::string log = store.path("logs/" + p.key + ".log");
  const std::string mem = fmt::format("{:.3f}", memory_gb);
  const pid_t pid = spawn(args, [&] {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed sweep leaves no point running
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    const auto bytes = static_cast<rlim_t>(memory_gb * 1024 * 1024 * 1024);
    const rlimit lim{bytes, bytes};
    setrlimit(RLIMIT_AS, &lim);
    setenv("TESSERA_MEMORY_LIMIT_GB", mem.c_str(), 1);
  });
  setpgid(pid, pid);
  return pid;
}

// The row of a point whose process ended with `status`.
Json finish_row(const Point& p, const Store& store, int status, bool timed_out, double time_s) {
  const std::string log = store.path("logs/" + p.key + ".log");
  if (timed_out) return make_row(p, "timeout", fmt::format("stopped after {:g} s (limits.time_s)", time_s), Json::object());
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return make_row(p, "crashed", fmt::format("killed by signal {} ({}); last output: {}", sig, strsignal(sig), last_line(log)),
                    Json::object());
  }
  const int code = WEXITSTATUS(status);
  if (code != 0) return make_row(p, "error", last_line(log), Json::object());
  const std::string out = store.path("points/" + p.key + ".json");
  std::ifstream f(out);
  Json results = Json::parse(f, nullptr, false);
  if (results.is_discarded()) return make_row(p, "error", "exited 0 but wrote no results file", Json::object());
  return make_row(p, "ok", "", flatten_result(results));
}

std::string clock_text(double s) {
  const long t = std::lround(s);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, t / 60 % 60) : fmt::format("{}m{:02}s", t / 60, t % 60);
}

class Progress {
 public:
  Progress(std::size_t total, bool enabled)
      : total_(total), enabled_(enabled), tty_(isatty(2)), start_(std::chrono::steady_clock::now()) {}
  void finished(const Json& row, const RunSummary& s, std::size_t running) {
    if (!enabled_) return;
    const double el = seconds();
    const double eta = s.ran ? el / static_cast<double>(s.ran) * static_cast<double>(total_ - s.ran) : 0;
    if (tty_) {
      fmt::print(stderr, "\r\033[K[{}/{}] ok {} failed {} running {}  elapsed {}  ETA {}", s.ran, total_, s.ok,
                 s.failed, running, clock_text(el), clock_text(eta));
      if (s.ran == total_) fmt::print(stderr, "\n");
    } else {
      fmt::print(stderr, "point {} ({}/{}): {} {}{}\n", row["point"].get<std::size_t>(), s.ran, total_,
                 row["status"].get<std::string>(), row["values"].dump(),
                 row["error"].get<std::string>().empty() ? "" : ": " + row["error"].get<std::string>());
    }
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::size_t total_;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point start_;
};

void append_timing(const Store& store, const Json& row, double wall_s, const rusage& ru) {
  std::ofstream f(store.path("timings.csv"), std::ios::app);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  f << fmt::format("{},{},{},{:.3f},{:.3f},{:.1f}\n", row["point"].get<std::size_t>(), row["key"].get<std::string>(),
                   row["status"].get<std::string>(), wall_s, cpu, static_cast<double>(ru.ru_maxrss) / 1024.0);
}

// While points run: SIGINT and SIGTERM stop the sweep (the handler sets g_stop_signal), and
// SIGCHLD is blocked so that it stays pending: the loop sleeps in sigtimedwait until a point
// ends, the next time limit falls due or a stop signal arrives (EINTR), with no polling delay.
// Everything is restored when the scope ends, by return or by exception.
struct SignalScope {
  struct sigaction old_int {}, old_term {};
  sigset_t chld{}, old_mask{};
  SignalScope() {
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old_mask);
  }
  ~SignalScope() {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
};

// Kills the points past their time limit, then sleeps until a child ends (SIGCHLD, blocked by the
// caller), the earliest remaining limit, or a signal; at most a second.
void wait_for_a_point(std::vector<Running>& running, double time_s, const sigset_t& chld) {
  const auto now = std::chrono::steady_clock::now();
  double sleep_s = 1.0;
  for (auto& r : running) {
    if (r.timed_out) continue;
    const double left = time_s - std::chrono::duration<double>(now - r.start).count();
    if (left <= 0) {
      r.timed_out = true;
      kill(-r.pid, SIGKILL);
    } else {
      sleep_s = std::min(sleep_s, left);
    }
  }
  const long ns = std::max(1000000L, static_cast<long>(sleep_s * 1e9));
  const timespec ts{ns / 1000000000L, ns % 1000000000L};
  sigtimedwait(&chld, nullptr, &ts);
}

}  // namespace

pid_t spawn(std::vector<std::string> args, const std::function<void()>& in_child) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Error(fmt::format("cannot start {}: fork failed: {}", args[0], std::strerror(errno)));
  if (pid == 0) {
    sigset_t none;  // the runner blocks SIGCHLD to wait for it; the child starts with nothing blocked
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    in_child();
    execvp(argv[0], argv.data());
    dprintf(2, "tessera: error: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  return pid;
}

double point_memory_gb(const Spec& spec, unsigned jobs) {
  if (spec.limits.memory_gb > 0) return spec.limits.memory_gb;
  const double share = 0.9 * physical_memory_gib() / std::max(1u, jobs);
  // below about a GiB of address space a point cannot even start (libraries, thread stacks):
  // every point then died of a segfault with the sweep's exit status 0
  if (share < kMinPointMemoryGb)
    throw Error(fmt::format("--jobs {}: {:.2f} GiB of this machine's memory per point, under the {:g} GiB a point needs "
                            "to start; run fewer at once or set limits.memory_gb", jobs, share, kMinPointMemoryGb));
  return share;
}

std::string self_executable() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this executable (/proc/self/exe) to run the sweep's points");
  return p.string();
}

std::string build_id(const std::string& executable) {
  std::ifstream f(executable, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw Error(fmt::format("{}: cannot read the executable to identify its build", executable));
  return fnv1a_hex(bytes);
}

RunSummary run_points(const Spec& spec, const std::vector<Point>& points, Store& store, const RunOptions& opt) {
  for (const char* sub : {"configs", "points", "logs"}) fs::create_directories(store.path(sub));
  const double memory_gb = point_memory_gb(spec, opt.jobs);
  // Points sharing a key run once; the others take its row.
  std::map<std::string, std::vector<std::size_t>> same;
  std::vector<std::size_t> queue;
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto& v = same[points[i].key];
    if (v.empty()) queue.push_back(i);
    v.push_back(i);
  }
  SignalScope signals;
  g_stop_signal = 0;
  RunSummary sum;
  Progress progress(points.size(), opt.progress);
  std::vector<Running> running;
  std::size_t next = 0;
  while ((next < queue.size() || !running.empty()) && !g_stop_signal) {
    while (next < queue.size() && running.size() < std::max(1u, opt.jobs)) {
      const std::size_t i = queue[next++];
      running.push_back({i, launch(spec, points[i], store, opt, memory_gb), std::chrono::steady_clock::now(), false});
    }
    int status = 0;
    rusage ru{};
    const pid_t pid = wait4(-1, &status, WNOHANG, &ru);
    if (pid <= 0) {
      wait_for_a_point(running, spec.limits.time_s, signals.chld);
      continue;
    }
    auto it = std::find_if(running.begin(), running.end(), [&](const Running& r) { return r.pid == pid; });
    if (it == running.end()) continue;
    const Running r = *it;
    running.erase(it);
    kill(-r.pid, SIGKILL);  // anything the point left behind in its group
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
    const Json row = finish_row(points[r.point], store, status, r.timed_out, spec.limits.time_s);
    store.append(row);
    append_timing(store, row, wall, ru);
    for (std::size_t k : same[points[r.point].key]) {
      ++sum.ran;
      (row["status"] == "ok" ? sum.ok : sum.failed)++;
      Json shown = row;
      shown["point"] = points[k].index;
      shown["values"] = points[k].values;
      progress.finished(shown, sum, running.size());
    }
  }
  if (g_stop_signal) {
    sum.interrupted = true;
    for (const auto& r : running) kill(-r.pid, SIGKILL);
    for (const auto& r : running) waitpid(r.pid, nullptr, 0);
  }
  return sum;
}

}  // namespace tessera::sweep
