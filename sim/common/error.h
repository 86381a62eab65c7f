#pragma once
// Errors are exceptions carrying their context (file, field, core, item); the CLI catches
// them and exits non-zero. Components never call exit().
#include <stdexcept>
#include <string>

namespace tessera {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A config file that is malformed, has unknown keys or out-of-range values.
struct ConfigError : Error {
  using Error::Error;
};
// A program that is malformed or cannot run (unknown buffer, bad peer, unmatched send...).
struct ProgramError : Error {
  using Error::Error;
};
// A failure found while simulating: deadlock, size mismatch between a send and its recv.
struct SimulationError : Error {
  using Error::Error;
};

}  // namespace tessera
