#include "studies/dr_series.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/csv.hpp"

namespace fw::studies {
namespace {

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe);
}

// HH:MM[:SS[.f]] at s[pos..]; returns seconds of the day or -1.
double parse_clock(const std::string& s, size_t pos, size_t& end) {
  int h = 0, m = 0;
  int n = 0;
  if (std::sscanf(s.c_str() + pos, "%2d:%2d%n", &h, &m, &n) != 2) return -1;
  if (h < 0 || h > 23 || m < 0 || m > 59) return -1;
  size_t p = pos + static_cast<size_t>(n);
  double sec = 0;
  if (p < s.size() && s[p] == ':') {
    ++p;
    size_t q = p;
    while (q < s.size() && (std::isdigit(static_cast<unsigned char>(s[q])) || s[q] == '.')) ++q;
    if (q == p) return -1;
    double v = 0;
    if (!parse_double(std::string_view(s).substr(p, q - p), v) || v < 0 || v >= 61) return -1;
    sec = v;
    p = q;
  }
  end = p;
  return h * 3600.0 + m * 60.0 + sec;
}

}  // namespace

bool parse_dr_timestamp(const std::string& raw, double& out_s) {
  std::string s = raw;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  s = s.substr(b);
  size_t end = 0;
  int y = 0, mo = 0, d = 0, n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10) {
    if (mo < 1 || mo > 12 || d < 1 || d > 31) return false;
    if (s.size() < 11 || (s[10] != ' ' && s[10] != 'T')) return false;
    const double c = parse_clock(s, 11, end);
    if (c < 0) return false;
    // Optional offset (+HH:MM / -HH:MM / Z) is accepted and ignored.
    const std::string rest = s.substr(end);
    if (!rest.empty() && rest != "Z") {
      int oh = 0, om = 0;
      if ((rest[0] != '+' && rest[0] != '-') ||
          std::sscanf(rest.c_str() + 1, "%2d:%2d", &oh, &om) != 2 || rest.size() != 6) {
        return false;
      }
    }
    out_s = static_cast<double>(
                days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) *
                86400.0 +
            c;
    return true;
  }
  const double c = parse_clock(s, 0, end);
  if (c < 0 || end != s.size()) return false;
  out_s = c;
  return true;
}

Result<DrSeries> read_dr_series(const std::string& path) { return read_dr_series(path, ""); }

Result<DrSeries> read_dr_series(const std::string& path, const std::string& column_prefix) {
  FW_ASSIGN_OR_RETURN(auto r, CsvReader::open(path));
  if (!r->next()) {
    FW_RETURN_IF_ERROR(r->status());
    return Status::InvalidArgument(path + ": empty file");
  }
  const auto& h = r->fields();
  int col = -1;
  if (!column_prefix.empty()) {
    for (int i = 1; i < static_cast<int>(h.size()) && col < 0; ++i) {
      if (std::string(h[i]).rfind(column_prefix, 0) == 0) col = i;
    }
    if (col < 0) {
      return Status::InvalidArgument(path + ":1: header: no column named " + column_prefix + "...");
    }
  }
  for (int i = 1; i < static_cast<int>(h.size()) && column_prefix.empty(); ++i) {
    if (ascii_lower(h[i]).rfind("total", 0) == 0) col = i;
  }
  if (col < 0 && h.size() == 2) col = 1;
  if (col < 0) {
    return Status::InvalidArgument(path +
                                   ":1: header: expected a timestamp and one value column, or a "
                                   "column named total...");
  }
  DrSeries s;
  s.path = path;
  s.column = std::string(h[col]);
  const std::string time_col(h[0]);  // the header's fields are gone after next()
  double t0 = 0, prev = -1e300;
  while (r->next()) {
    const auto& f = r->fields();
    if (static_cast<int>(f.size()) <= col) {
      return Status::InvalidArgument(r->where() + ": too few fields");
    }
    double ts = 0, v = 0;
    if (!parse_dr_timestamp(std::string(f[0]), ts)) {
      return Status::InvalidArgument(r->where() + ": " + time_col +
                                     ": expected a timestamp (YYYY-MM-DD HH:MM[:SS] or HH:MM), "
                                     "got '" +
                                     std::string(f[0]) + "'");
    }
    if (!parse_double(f[col], v) || !std::isfinite(v) || v < 0 || v > 1e12) {
      return Status::InvalidArgument(r->where() + ": " + s.column +
                                     ": expected watts (a number >= 0), got '" +
                                     std::string(f[col]) + "'");
    }
    if (s.time_s.empty()) t0 = ts;
    if (ts - t0 < prev) {
      return Status::InvalidArgument(r->where() + ": " + time_col +
                                     ": timestamps must not go back");
    }
    prev = ts - t0;
    s.time_s.push_back(ts - t0);
    s.value_w.push_back(v);
  }
  FW_RETURN_IF_ERROR(r->status());
  if (s.time_s.empty()) return Status::InvalidArgument(path + ": no data rows");
  return s;
}

double dr_series_hold_at(const DrSeries& s, double t) {
  auto it = std::upper_bound(s.time_s.begin(), s.time_s.end(), t);
  if (it == s.time_s.begin()) return s.value_w.front();
  return s.value_w[static_cast<size_t>(it - s.time_s.begin()) - 1];
}

}  // namespace fw::studies
