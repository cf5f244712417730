#pragma once
// Fuzz input as a file: the readers under test open paths, so each input is written to an
// in-memory file (memfd, a regular file: CsvReader maps it as it maps a real log) and its
// /proc/self/fd path handed over. One per process, rewritten for every input.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace fw::fuzz {

inline std::string as_file(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("flexwatt_fuzz", 0);
  if (fd < 0) std::abort();
  if (ftruncate(fd, 0) != 0) std::abort();
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace fw::fuzz
