// The floor under `analyze`'s line parser, measured on the generated bench trace: how much of a
// row's time goes to splitting the line into fields and how much to converting its numbers.
//
// Usage: parse_floor GPUS_CSV   (the gpus.csv bench/analyze_bench generates; `make bench` runs
// it after bench/analyze_vs_pandas.py). The header must start time_s,gpu,power_w,energy_j.
//
// One thread, the file memory-mapped (page cache warm), best of 3 passes each, every pass
// writing the same four columns (time, GPU, power, energy) for every data line:
//   split    fields found with the reader's separator masks (trace_internal::separators64),
//            the tick's time converted once per tick, the GPU index read; power and energy
//            not converted (their field lengths are stored instead);
//   scalar   split + power and energy converted by the reader's number parser
//            (trace_internal::plain_decimal, one digit at a time);
//   swar     split + power and energy converted eight digits per step (the '.' found with one
//            more byte mask), the same exact integer-over-power-of-ten rule.
// None of them checks what the reader checks (ranges, GPU set, fallbacks, line numbers) or
// does any analysis: these are floors, not a parser. scalar and swar must give the same columns
// bit for bit (exit 1 otherwise). Prints ns per row and seconds per pass.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "telemetry/trace_reader_parse.hpp"

namespace {

using fw::trace_internal::kPow10;
using fw::trace_internal::plain_decimal;
using fw::trace_internal::separators64;

enum class Convert { kNone, kScalar, kSwar };

struct Columns {
  std::vector<double> time_s, power_w, energy_j;
  std::vector<int32_t> gpu;
  size_t n = 0;
};

// n (0..8) decimal digits ending at e (the 8 bytes before e readable): their value; ok cleared
// when one of them is not a digit.
inline uint64_t eight_digits(const char* e, int n, bool& ok) {
  uint64_t x;
  std::memcpy(&x, e - 8, 8);
  const uint64_t keep = n == 0 ? 0 : ~uint64_t{0} << (8 * (8 - n));
  const uint64_t hi = 0xF0F0F0F0F0F0F0F0ull, zeros = 0x3030303030303030ull;
  const uint64_t not_digit = ((x & hi) ^ zeros) | (((x + 0x0606060606060606ull) & hi) ^ zeros);
  ok &= (not_digit & keep) == 0;
  uint64_t v = x & 0x0F0F0F0F0F0F0F0Full & keep;
  v = (v * 2561) >> 8;                                // pairs of digits
  v = ((v & 0x00FF00FF00FF00FFull) * 6553601) >> 16;  // groups of four
  return ((v & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32;
}

// Non-negative plain decimal [s, e) with its '.' at dot (e when none), at most 15 digits and 8
// after the point: true and out set to the value plain_decimal gives.
inline bool swar_decimal(const char* s, const char* e, const char* dot, double& out) {
  const int whole = static_cast<int>(dot - s);
  const int frac = dot < e ? static_cast<int>(e - dot - 1) : 0;
  if (whole + frac == 0 || whole + frac > 15 || frac > 8) return false;
  bool ok = true;
  uint64_t m = whole <= 8
                   ? eight_digits(dot, whole, ok)
                   : eight_digits(dot - 8, whole - 8, ok) * 100000000ull + eight_digits(dot, 8, ok);
  if (frac > 0) m = m * static_cast<uint64_t>(kPow10[frac]) + eight_digits(e, frac, ok);
  if (!ok) return false;
  double v = static_cast<double>(m);
  if (frac > 0) v /= kPow10[frac];
  out = v;
  return true;
}

// The '.' mask of the 64 bytes at line (the caller guarantees 64 readable bytes).
inline uint64_t dots64(const char* p) {
  uint64_t m = 0;
#if defined(__SSE2__)
  const __m128i dot = _mm_set1_epi8('.');
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    m |= static_cast<uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, dot))))
         << (16 * i);
  }
#else
  for (int i = 0; i < 64; ++i) m |= static_cast<uint64_t>(p[i] == '.') << i;
#endif
  return m;
}

// One pass over the data lines [begin, end) into c; returns the lines it could not take (a line
// of fewer than 4 fields in its first 64 bytes, or a number the conversion refuses).
template <Convert kConvert>
int64_t pass(const char* begin, const char* end, Columns& c) {
  c.n = 0;
  int64_t refused = 0;
  char time_text[16] = {};
  size_t time_len = 0;
  double time_value = 0;
  const char* line = begin;
  while (line < end) {
    uint64_t nl = 0;
    uint64_t mask = separators64(line, end, nl);
    const char* f[5];
    f[0] = line;
    int found = 0;
    while (found < 4 && mask != 0) {
      f[++found] = line + __builtin_ctzll(mask) + 1;
      mask &= mask - 1;
    }
    const char* next;
    if (nl != 0) {
      next = line + __builtin_ctzll(nl) + 1;
    } else {  // a line longer than 64 bytes, or the unterminated last line
      const void* at = std::memchr(line, '\n', static_cast<size_t>(end - line));
      next = at != nullptr ? static_cast<const char*>(at) + 1 : end;
      found = 0;
    }
    if (found < 4 || f[4] > next) {  // fewer than 4 fields
      ++refused;
      line = next;
      continue;
    }
    const size_t n = static_cast<size_t>(f[1] - 1 - f[0]);
    double t;
    if (n == time_len && std::memcmp(f[0], time_text, n) == 0) {
      t = time_value;
    } else if (n <= sizeof time_text && plain_decimal(f[0], f[1] - 1, t)) {
      std::memcpy(time_text, f[0], n);
      time_len = n;
      time_value = t;
    } else {
      ++refused;
      line = next;
      continue;
    }
    int32_t g = 0;
    for (const char* d = f[1]; d < f[2] - 1; ++d) g = g * 10 + (*d - '0');
    double p = 0, e = 0;
    bool ok = true;
    if constexpr (kConvert == Convert::kNone) {
      p = static_cast<double>(f[3] - f[2]);
      e = static_cast<double>(f[4] - f[3]);
    } else if constexpr (kConvert == Convert::kScalar) {
      ok = plain_decimal(f[2], f[3] - 1, p) && plain_decimal(f[3], f[4] - 1, e);
    } else {
      if (end - line < 64) {
        ok = plain_decimal(f[2], f[3] - 1, p) && plain_decimal(f[3], f[4] - 1, e);
      } else {
        const uint64_t dots = dots64(line);
        auto dot_in = [&](const char* s, const char* fe) {
          const uint64_t d = dots >> (s - line);
          const char* at = d != 0 ? s + __builtin_ctzll(d) : fe;
          return at < fe ? at : fe;
        };
        ok = swar_decimal(f[2], f[3] - 1, dot_in(f[2], f[3] - 1), p) &&
             swar_decimal(f[3], f[4] - 1, dot_in(f[3], f[4] - 1), e);
      }
    }
    if (!ok) {
      ++refused;
      line = next;
      continue;
    }
    c.time_s[c.n] = t;
    c.gpu[c.n] = g;
    c.power_w[c.n] = p;
    c.energy_j[c.n] = e;
    ++c.n;
    line = next;
  }
  return refused;
}

template <Convert kConvert>
double best_of_3(const char* begin, const char* end, Columns& c, int64_t& refused) {
  double best = 1e300;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    refused = pass<kConvert>(begin, end, c);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = s < best ? s : best;
  }
  return best;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b, size_t n) {
  return std::memcmp(a.data(), b.data(), n * sizeof(double)) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string_view(argv[1]) == "--help") {
    std::fprintf(argc == 2 ? stdout : stderr, "usage: parse_floor GPUS_CSV\n");
    return argc == 2 ? 0 : 2;
  }
  const char* path = argv[1];
  const int fd = open(path, O_RDONLY);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 64) {
    std::fprintf(stderr, "%s: cannot read (or shorter than 64 bytes)\n", path);
    return 2;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    std::fprintf(stderr, "%s: cannot map\n", path);
    return 2;
  }
  const char* const base = static_cast<const char*>(map);
  const std::string_view all(base, size);
  constexpr std::string_view kLayout = "time_s,gpu,power_w,energy_j";
  const size_t header_end = all.find('\n');
  if (all.substr(0, kLayout.size()) != kLayout || header_end == std::string_view::npos) {
    std::fprintf(stderr, "%s:1: header: expected it to start %s (the generated bench trace)\n",
                 path, std::string(kLayout).c_str());
    return 2;
  }
  const char* const begin = base + header_end + 1;  // >= 8 bytes after base: eight_digits reads
  const char* const end = base + size;              // back from a field's end
  const size_t max_rows = size / 8 + 1;
  Columns split, scalar, swar;
  for (Columns* c : {&split, &scalar, &swar}) {
    c->time_s.resize(max_rows);
    c->power_w.resize(max_rows);
    c->energy_j.resize(max_rows);
    c->gpu.resize(max_rows);
  }
  int64_t r_split = 0, r_scalar = 0, r_swar = 0;
  const double s_split = best_of_3<Convert::kNone>(begin, end, split, r_split);
  const double s_scalar = best_of_3<Convert::kScalar>(begin, end, scalar, r_scalar);
  const double s_swar = best_of_3<Convert::kSwar>(begin, end, swar, r_swar);
  munmap(map, size);
  const size_t n = scalar.n;
  const bool same =
      swar.n == n && r_swar == r_scalar && same_bits(swar.power_w, scalar.power_w, n) &&
      same_bits(swar.energy_j, scalar.energy_j, n) && same_bits(swar.time_s, scalar.time_s, n);
  const double rows = static_cast<double>(n > 0 ? n : 1);
  std::printf("parse floor, one thread, %zu rows (%lld lines not taken), best of 3:\n", n,
              static_cast<long long>(r_scalar));
  std::printf("  split only (no power/energy conversion): %.3f s  %5.1f ns/row\n", s_split,
              s_split / rows * 1e9);
  std::printf("  split + scalar conversion (the reader's): %.3f s  %5.1f ns/row\n", s_scalar,
              s_scalar / rows * 1e9);
  std::printf("  split + 8-digit SWAR conversion:          %.3f s  %5.1f ns/row\n", s_swar,
              s_swar / rows * 1e9);
  std::printf("  scalar and SWAR columns identical: %s\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}
