#pragma once
// Numbers and times as text: the one place for the formats flexwatt prints in tables, CSV,
// logs and messages, so two outputs of the same value cannot drift apart.
//
// Contract (all pure, thread-safe, never throw):
//   format_g(v, n)          printf "%.*g" with n significant digits (default 6: what an
//                           iostream prints by default); "nan" / "inf" / "-inf" as printf does.
//   format_fixed(v, d)      printf "%.*f" with d decimals.
//   format_percent(f, d, signed_, non_finite)
//                           100·f with d decimals and " %" ("12.5 %"; "+12.5 %" when signed_);
//                           `non_finite` for NaN or ±Inf.
//   format_si(v, n)         a count in readable units: n significant digits (default 3) with
//                           the prefix k, M, G or T of |v| ("40.2k", "1.11G", "512"; below
//                           1000 no prefix; at or above 1e15 in T); "-" for NaN or ±Inf.
//   format_si_pm(m, ci, n)  m as format_si, then " ±" and ci in m's prefix with m's decimals
//                           ("1.11G ±0.47G"); m alone when ci is not finite.
//   strprintf(f, ...)       printf into a std::string (any length); the compiler checks the
//                           arguments against f (format attribute: -Wformat is an error
//                           under FLEXWATT_WERROR).
//   unix_now_s()            the wall clock (system_clock) in seconds since the Unix epoch.
//   rfc3339_utc(t)          t (Unix seconds) as "YYYY-MM-DDTHH:MM:SS.mmmZ" (milliseconds
//                           truncated).
// Prometheus sample values keep their own rule (agent/metrics.cpp: integers in full,
// otherwise the shortest round-trip form), which the exposition format asks for.

#include <string>

namespace fw {

std::string format_g(double v, int significant = 6);
std::string format_fixed(double v, int decimals);
std::string format_percent(double frac, int decimals = 1, bool signed_ = false,
                           const char* non_finite = "-");

std::string format_si(double v, int significant = 3);
std::string format_si_pm(double mean, double ci, int significant = 3);

[[gnu::format(printf, 1, 2)]] std::string strprintf(const char* f, ...);

double unix_now_s();
std::string rfc3339_utc(double unix_s);

}  // namespace fw
