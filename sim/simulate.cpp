#include "sim/simulate.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sim/common/error.h"
#include "sim/results/trace.h"
#include "sim/system/system.h"

namespace tessera::sim {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

namespace {

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace

Json run_isolated(const std::function<Json()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) throw Error(fmt::format("cannot create pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw Error(fmt::format("cannot fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    Json out;
    try {
      out["ok"] = fn();
    } catch (const SimulationError& e) {
      out = {{"error", e.what()}, {"type", "simulation"}};
    } catch (const ProgramError& e) {
      out = {{"error", e.what()}, {"type", "program"}};
    } catch (const std::bad_alloc&) {
      out = {{"error", "the simulation ran out of host memory (its buffers, and in functional mode every value "
                       "it carries); try a smaller batch or config, or run without --functional"},
             {"type", "simulation"}};
    } catch (const std::exception& e) {
      out = {{"error", e.what()}, {"type", "error"}};
    }
    write_all(fds[1], out.dump());
    ::close(fds[1]);
    std::fflush(nullptr);
    _exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status))
    throw SimulationError(fmt::format("the simulation process died with signal {} ({})",
                                      WTERMSIG(status), strsignal(WTERMSIG(status))));
  Json out = Json::parse(text, nullptr, false);
  if (out.is_discarded() || !out.is_object())
    throw SimulationError("the simulation process ended without a result");
  if (out.contains("ok")) return out["ok"];
  const std::string msg = out["error"].get<std::string>(), type = out["type"].get<std::string>();
  if (type == "simulation") throw SimulationError(msg);
  if (type == "program") throw ProgramError(msg);
  throw Error(msg);
}

SimOutcome simulate(const Config& cfg, const Program& prog, const SimOptions& options) {
  auto body = [&]() -> Json {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    std::unique_ptr<TraceRecorder> trace;
    if (!options.trace_path.empty()) trace = std::make_unique<TraceRecorder>();
    // Never destroyed: SystemC 2.3 unregisters a module, port or process by scanning a list of
    // all of them, so tearing down n cores costs O(n^2) (27% of an idle run of vipu-4's 5,888
    // cores, 0.13 of its 0.49 s). A simulation is the last thing its process does (a forked
    // child, or a command that runs one), so the operating system takes the memory back; the
    // pointer stays reachable so that leak checkers do not flag it.
    static System* kept = nullptr;
    kept = new System("tessera", cfg, prog, trace.get(), options.collective_engine, options.relayouts_by_items,
                      options.fast_forward);
    const System& system = *kept;
    const double t0 = process_cpu_seconds();
    sc_core::sc_start();
    const double cpu = process_cpu_seconds() - t0;
    Json results = system.results();
    if (trace) trace->write(options.trace_path, cfg.clock_ghz);
    return {{"results", std::move(results)}, {"host_cpu_seconds", cpu}};
  };
  Json out = options.in_process ? body() : run_isolated(body);
  return {std::move(out["results"]), out["host_cpu_seconds"].get<double>()};
}

}  // namespace tessera::sim

// libsystemc.so ships a main() that calls sc_main(), and the linker wants the symbol even though
// tessera's executables bring their own main() and drive the kernel through simulate().
int sc_main(int, char*[]) { return 1; }
