#include "core/text_table.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace fw {
namespace {

int widest_line(const std::string& s) {
  std::istringstream in(s);
  int w = 0;
  for (std::string line; std::getline(in, line);) w = std::max(w, display_width(line));
  return w;
}

TEST(TextTable, DisplayWidthCountsCodePoints) {
  EXPECT_EQ(display_width("40162 ±12032"), 12);
  EXPECT_EQ(display_width("flexwatt eval — SIMULATED"), 25);
  EXPECT_EQ(display_width(""), 0);
}

TEST(TextTable, WrapKeepsWordsAndIndents) {
  const std::string t = "alpha beta gamma delta epsilon\n  zeta eta theta iota kappa";
  const std::string w = wrap_text(t, 16, "  ");
  EXPECT_EQ(w, "alpha beta gamma\n  delta epsilon\n  zeta eta theta\n    iota kappa");
  EXPECT_EQ(wrap_text("averyveryverylongword x", 8), "averyveryverylongword\nx");
  EXPECT_EQ(wrap_text("a\n\nb", 8), "a\n\nb");
}

TextTable sample() {
  TextTable t;
  t.label_header = "controller";
  t.columns = {
      {"step tokens", 1}, {"viol win %", 1}, {"detail", 0}, {"extra a", 3}, {"extra b", 2}};
  t.rows = {{"uncontrolled", "40162 ±12032", "3.46 ±0.00", "d", std::string(30, 'a'),
             std::string(30, 'b')},
            {"static:knob=caps,group_size=16,gen_concurrency=64", "46525 ±22445", "0.00 ±0.00", "d",
             "a", "b"}};
  return t;
}

TEST(TextTable, WideShowsEveryColumnOnOneLinePerRow) {
  const std::string s = render_table(sample(), {true, 120});
  EXPECT_NE(s.find("detail"), std::string::npos);
  EXPECT_NE(s.find("static:knob=caps,group_size=16,gen_concurrency=64  46525 ±22445"),
            std::string::npos)
      << s;
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 3);
  EXPECT_GT(widest_line(s), 120);
}

TEST(TextTable, DefaultFitsTheWidthDroppingHighRanksFirst) {
  std::vector<std::string> left;
  const std::string s = render_table(sample(), {false, 60}, &left);
  EXPECT_LE(widest_line(s), 60) << s;
  EXPECT_EQ(s.find("detail"), std::string::npos);
  ASSERT_EQ(left.size(), 3u);
  EXPECT_EQ(left[0], "detail");   // rank 0: never by default
  EXPECT_EQ(left[1], "extra a");  // rank 3 before rank 2
  EXPECT_EQ(left[2], "extra b");
  // The long label on its own line, its cells under the header on the next.
  EXPECT_NE(s.find("static:knob=caps,group_size=16,gen_concurrency=64\n"), std::string::npos) << s;
  EXPECT_NE(s.find("uncontrolled  40162 ±12032"), std::string::npos) << s;
}

TEST(TextTable, RankOneColumnsStayEvenWhenTooWide) {
  std::vector<std::string> left;
  const std::string s = render_table(sample(), {false, 20}, &left);
  EXPECT_NE(s.find("step tokens"), std::string::npos);
  EXPECT_NE(s.find("viol win %"), std::string::npos);
}

}  // namespace
}  // namespace fw
