#include "core/format.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
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

namespace {

// The prefix of |v| after rounding to `significant` digits, its scale and the decimals left.
struct SiUnit {
  double scale = 1;
  const char* prefix = "";
  int decimals = 0;
};

SiUnit si_unit(double v, int significant) {
  static const struct {
    double scale;
    const char* prefix;
  } kUnits[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
  const double a = std::fabs(v);
  for (const auto& u : kUnits) {
    // The smallest value that prints as 1.00 of this prefix once rounded.
    const double from = u.scale * (1 - 0.5 * std::pow(10.0, 1 - significant));
    if (a >= from || u.scale == 1) {
      const double x = a / u.scale;
      int digits = x >= 1 ? static_cast<int>(std::floor(std::log10(x))) + 1 : 1;
      if (std::pow(10.0, digits) - x <= 0.5 * std::pow(10.0, digits - significant)) ++digits;
      const int decimals =
          u.scale == 1 && std::floor(v) == v ? 0 : std::max(0, significant - digits);
      return {u.scale, u.prefix, decimals};
    }
  }
  return {};
}

}  // namespace

std::string format_si(double v, int significant) {
  if (!std::isfinite(v)) return "-";
  const SiUnit u = si_unit(v, significant);
  char b[64];
  std::snprintf(b, sizeof b, "%.*f%s", u.decimals, v / u.scale, u.prefix);
  return b;
}

std::string format_si_pm(double mean, double ci, int significant) {
  if (!std::isfinite(mean)) return "-";
  if (!std::isfinite(ci)) return format_si(mean, significant);
  const SiUnit u = si_unit(mean, significant);
  char b[96];
  std::snprintf(b, sizeof b, "%.*f%s \u00b1%.*f%s", u.decimals, mean / u.scale, u.prefix,
                u.decimals, ci / u.scale, u.prefix);
  return b;
}

std::string strprintf(const char* f, ...) {
  va_list ap, again;
  va_start(ap, f);
  va_copy(again, ap);
  const int n = std::vsnprintf(nullptr, 0, f, ap);
  va_end(ap);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, f, again);
  va_end(again);
  return out;
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
