#pragma once
// Counts heap allocations while g_count_allocs is true, by interposing malloc (operator new
// and Eigen end in malloc too); glibc's own entry point stays available as __libc_malloc.
// For tests that a decision path allocates nothing. Defines malloc: include it in exactly one
// source file of a test binary.

#include <cstddef>

extern "C" void* __libc_malloc(size_t size);
namespace {
bool g_count_allocs = false;
long g_allocs = 0;
}  // namespace
extern "C" void* malloc(size_t size) noexcept {
  if (g_count_allocs) ++g_allocs;
  return __libc_malloc(size);
}
