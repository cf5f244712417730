#include "core/format.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace fw {

std::string format_g(double v, int significant) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", significant, v);
  return b;
}

std::string format_fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string format_percent(double frac, int decimals, bool signed_, const char* non_finite) {
  if (!std::isfinite(frac)) return non_finite;
  char b[64];
  std::snprintf(b, sizeof b, signed_ ? "%+.*f %%" : "%.*f %%", decimals, 100 * frac);
  return b;
}

double unix_now_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string rfc3339_utc(double unix_s) {
  auto secs = static_cast<std::time_t>(std::floor(unix_s));
  int ms = static_cast<int>((unix_s - std::floor(unix_s)) * 1000.0);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, ms);
  return out;
}

}  // namespace fw
