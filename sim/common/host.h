#pragma once
// What the host machine has, for limits a process sets on itself or its children.
#include <unistd.h>

namespace tessera {

// Physical memory in GiB (0 when the system does not say).
inline double physical_memory_gib() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page) / (1024.0 * 1024 * 1024);
}

}  // namespace tessera
