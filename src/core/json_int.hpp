#pragma once
// Reading a JSON integer into a bounded range without narrowing: 4294967296 read as a 32-bit
// int is GPU 0; read here it is out of range.

#include <cstdint>
#include <nlohmann/json.hpp>

namespace fw {

// True and out = v when v is a JSON integer in [lo, hi] (compared as 64 bits, unsigned values
// above INT64_MAX included); false otherwise (out unchanged).
inline bool json_int_in(const nlohmann::json& v, int64_t lo, int64_t hi, int64_t& out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) return false;
  out = x;
  return true;
}

}  // namespace fw
