#pragma once
// Number parsing and field splitting for the trace readers' hot path (internal to telemetry/;
// bench/parse_floor measures them).
//
// fast_parse_double gives exactly the same value as fw::parse_double (correct rounding):
// plain decimals with at most 15 significant digits take Clinger's fast path (an exact
// integer mantissa divided by an exact power of ten, one correctly rounded operation);
// everything else (exponents, long mantissas, nan, inf) falls back to parse_double.
// Input is expected trimmed (CsvReader trims fields).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/csv.hpp"

namespace fw::trace_internal {

inline constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

// Plain decimal [-]d*[.d*] with 1 to 15 digits in all, the whole of [p, e): true and out set
// to exactly strtod's value (Clinger's fast path, see above), else false.
__attribute__((always_inline)) inline bool plain_decimal(const char* p, const char* e,
                                                         double& out) {
  bool neg = false;
  if (p < e && *p == '-') {
    neg = true;
    ++p;
  }
  uint64_t m = 0;
  const char* const start = p;
  while (p < e && static_cast<unsigned>(*p - '0') < 10u)
    m = m * 10 + static_cast<unsigned>(*p++ - '0');
  int digits = static_cast<int>(p - start), frac = 0;
  if (p < e && *p == '.') {
    const char* const f = ++p;
    while (p < e && static_cast<unsigned>(*p - '0') < 10u)
      m = m * 10 + static_cast<unsigned>(*p++ - '0');
    frac = static_cast<int>(p - f);
    digits += frac;
  }
  if (p != e || digits == 0 || digits > 15) return false;
  double v = static_cast<double>(m);
  if (frac > 0) v /= kPow10[frac];
  out = neg ? -v : v;
  return true;
}

inline bool fast_parse_double(std::string_view s, double& out) {
  return plain_decimal(s.data(), s.data() + s.size(), out) || parse_double(s, out);
}

// Non-negative or negative base-10 integer, whole view.
inline bool fast_parse_int(std::string_view s, int64_t& out) {
  const char* p = s.data();
  const char* const e = p + s.size();
  bool neg = false;
  if (p < e && *p == '-') {
    neg = true;
    ++p;
  }
  if (p == e || e - p > 18) return parse_int64(s, out);
  int64_t v = 0;
  for (; p < e; ++p) {
    const unsigned d = static_cast<unsigned>(*p - '0');
    if (d >= 10u) return false;
    v = v * 10 + d;
  }
  out = neg ? -v : v;
  return true;
}

// Separators (',' and '\n') of the 64 bytes at p as bits, bit i for p[i], and the '\n' among
// them in nl; bytes at or past e are not read (nor reported).
__attribute__((always_inline)) inline uint64_t separators64(const char* p, const char* e,
                                                            uint64_t& nl) {
  uint64_t m = 0, n = 0;
  if (e - p >= 64) {
#if defined(__SSE2__)
    const __m128i comma = _mm_set1_epi8(','), newline = _mm_set1_epi8('\n');
    for (int i = 0; i < 4; ++i) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
      const __m128i is_nl = _mm_cmpeq_epi8(v, newline);
      const int b = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, comma), is_nl));
      m |= static_cast<uint64_t>(static_cast<unsigned>(b)) << (16 * i);
      n |= static_cast<uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(is_nl))) << (16 * i);
    }
    nl = n;
    return m;
#endif
  }
  const int len = static_cast<int>(std::min<ptrdiff_t>(64, e - p));
  for (int i = 0; i < len; ++i) {
    if (p[i] == '\n') n |= uint64_t{1} << i;
    if (p[i] == ',' || p[i] == '\n') m |= uint64_t{1} << i;
  }
  nl = n;
  return m;
}

}  // namespace fw::trace_internal
