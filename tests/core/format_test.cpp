#include "core/format.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace fw {
namespace {

TEST(Format, GeneralMatchesTheIostreamDefaultItReplaces) {
  for (double v : {0.0, 1.0, 0.1, 123456.0, 1234567.0, 1e-7, -2.5, 3.14159265358979}) {
    std::ostringstream os;
    os << v;
    EXPECT_EQ(format_g(v), os.str()) << v;
  }
  EXPECT_EQ(format_g(3.14159265358979, 4), "3.142");
  EXPECT_EQ(format_g(0.123456789012345, 12), "0.123456789012");
}

// Counts in readable units (tokens, tokens/MWh): three significant digits in k, M, G or T,
// the CI in the mean's unit with the same decimals.
TEST(Format, SiCountsAndTheirIntervals) {
  EXPECT_EQ(format_si(512), "512");
  EXPECT_EQ(format_si(40162), "40.2k");
  EXPECT_EQ(format_si(1108515744), "1.11G");
  EXPECT_EQ(format_si(139e6), "139M");
  EXPECT_EQ(format_si(999.6e6), "1.00G");  // rounding carries into the next prefix
  EXPECT_EQ(format_si(-2.5e6), "-2.50M");
  EXPECT_EQ(format_si(3e15), "3000T");
  EXPECT_EQ(format_si(0), "0");
  EXPECT_EQ(format_si(std::nan("")), "-");
  EXPECT_EQ(format_si_pm(1108515744, 465769514), "1.11G \u00b10.47G");
  EXPECT_EQ(format_si_pm(1321937729, 144800336), "1.32G \u00b10.14G");
  EXPECT_EQ(format_si_pm(139e6, 2.4e6), "139M \u00b12M");
  EXPECT_EQ(format_si_pm(1.2e9, std::nan("")), "1.20G");
}

TEST(Format, FixedAndPercent) {
  EXPECT_EQ(format_fixed(2.345, 1), "2.3");
  EXPECT_EQ(format_fixed(250, 0), "250");
  EXPECT_EQ(format_percent(0.125), "12.5 %");
  EXPECT_EQ(format_percent(0.125, 1, true), "+12.5 %");
  EXPECT_EQ(format_percent(-0.059, 1, true), "-5.9 %");
  EXPECT_EQ(format_percent(std::nan(""), 1, false, "n/a"), "n/a");
  EXPECT_EQ(format_percent(INFINITY), "-");
}

TEST(Format, Rfc3339TruncatesToMilliseconds) {
  EXPECT_EQ(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(rfc3339_utc(1700000000.9876), "2023-11-14T22:13:20.987Z");
  const double now = unix_now_s();
  EXPECT_GT(now, 1.7e9);  // after 2023: the wall clock, not a steady clock's epoch
}

}  // namespace
}  // namespace fw
