#pragma once
// Running a helper program (the plotting scripts) without a shell: arguments are passed as
// they are, so a path with a quote or a semicolon is a path, not a command.
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>

#include <string>
#include <vector>

extern char** environ;

namespace tessera::cli {

// Runs argv[0] (an absolute path) with argv and waits; true when it exited with status 0.
inline bool run_program(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace tessera::cli
