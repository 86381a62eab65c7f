#pragma once
#include <string>

#include "sim/common/json_reader.h"

namespace tessera::sim {

// The human summary printed after a run; every figure in it is in the results document too.
std::string format_summary(const Json& results);

}  // namespace tessera::sim
