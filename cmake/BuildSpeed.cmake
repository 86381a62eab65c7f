# Build time. On the 2-core CI machines a file's own code is the small part of its compile time:
# <systemc>, nlohmann/json, Boost.Graph, CLI11 and Catch2 take 4.8-16.6 s each to parse there
# (measured with -fsyntax-only on 2026-11-27), and most files reach two or three of them through
# our own headers. Each target parses them once instead (sim/system/system.cpp: 44 s -> 31 s).
# Every file still includes what it uses, so TESSERA_PCH=OFF builds the same.
option(TESSERA_PCH "precompile the heavy third-party headers once per target" ON)

set(TESSERA_PCH_COMMON
    <algorithm> <array> <cmath> <cstdint> <cstdlib> <cstring> <fstream> <functional> <limits> <map>
    <memory> <optional> <set> <sstream> <string> <unordered_map> <utility> <vector>
    <fmt/format.h> <nlohmann/json.hpp> <systemc> <absl/container/flat_hash_map.h>)

# tessera_precompile(target [header...]): the common set plus the target's own heavy headers.
function(tessera_precompile target)
  if(TESSERA_PCH)
    target_precompile_headers(${target} PRIVATE ${TESSERA_PCH_COMMON} ${ARGN})
  endif()
endfunction()
