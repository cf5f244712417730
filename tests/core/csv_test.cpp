#include "core/csv.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace fw {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("fw_csv_" + name)).string();
}

TEST(Csv, ParsesNumbers) {
  double d;
  int64_t i;
  EXPECT_TRUE(parse_double(" 557.67 ", d));
  EXPECT_DOUBLE_EQ(d, 557.67);
  EXPECT_TRUE(parse_double("-1e3", d));
  EXPECT_DOUBLE_EQ(d, -1000);
  EXPECT_FALSE(parse_double("557.67 W", d));
  EXPECT_FALSE(parse_double("", d));
  EXPECT_FALSE(parse_double("abc", d));
  EXPECT_TRUE(parse_int64("12", i));
  EXPECT_EQ(i, 12);
  EXPECT_FALSE(parse_int64("1.5", i));
}

TEST(Csv, RoundTripsRowsAndLineNumbers) {
  const std::string p = temp_path("rt.csv");
  {
    auto w = CsvWriter::create(p);
    ASSERT_TRUE(w.ok());
    (*w)->header("a,b,c");
    (*w)->field(0.1).field(int64_t{7}).field("x").end_row();
    (*w)->field(1.0 / 3.0).field(2.5, 2).field("y").end_row();
    ASSERT_TRUE((*w)->close().ok());
  }
  {  // a blank line and a row without trailing newline
    std::ofstream f(p, std::ios::app);
    f << "\n 4 , \"q\" ,z";
  }
  auto r = CsvReader::open(p);
  ASSERT_TRUE(r.ok());
  CsvReader& rd = **r;
  ASSERT_TRUE(rd.next());
  EXPECT_EQ(rd.fields().size(), 3u);
  EXPECT_EQ(rd.fields()[2], "c");
  ASSERT_TRUE(rd.next());
  double d;
  ASSERT_TRUE(parse_double(rd.fields()[0], d));
  EXPECT_EQ(d, 0.1);
  ASSERT_TRUE(rd.next());
  ASSERT_TRUE(parse_double(rd.fields()[0], d));
  EXPECT_EQ(d, 1.0 / 3.0);  // shortest form reads back exactly
  EXPECT_EQ(rd.fields()[1], "2.50");
  ASSERT_TRUE(rd.next());
  EXPECT_EQ(rd.line_number(), 5);
  EXPECT_EQ(rd.fields()[0], "4");
  EXPECT_EQ(rd.fields()[1], "q");
  EXPECT_EQ(rd.fields()[2], "z");
  EXPECT_FALSE(rd.next());
  EXPECT_TRUE(rd.status().ok());
}

TEST(Csv, LongFileCrossesBlockBoundaries) {
  const std::string p = temp_path("long.csv");
  const int n = 300000;
  {
    auto w = CsvWriter::create(p);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < n; ++i) (*w)->field(int64_t{i}).field(i * 0.5).end_row();
    ASSERT_TRUE((*w)->close().ok());
  }
  auto r = CsvReader::open(p);
  ASSERT_TRUE(r.ok());
  int count = 0;
  while ((*r)->next()) {
    int64_t i;
    ASSERT_TRUE(parse_int64((*r)->fields()[0], i));
    ASSERT_EQ(i, count);
    ++count;
  }
  EXPECT_EQ(count, n);
}

TEST(Csv, MissingFileIsNotFound) {
  auto r = CsvReader::open("/nonexistent/x.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(CsvReader, AnEndlessLineFromADeviceIsAnErrorNotUnboundedMemory) {
  auto r = CsvReader::open("/dev/zero");  // a stream of NUL bytes without a newline
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)->next());
  EXPECT_EQ((*r)->status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE((*r)->status().message().find("/dev/zero:1: a line longer than 16 MiB"),
            std::string::npos)
      << (*r)->status().message();
}

TEST(CsvReader, SkipsBomAndFlagsAnUnterminatedLastLine) {
  const std::string path = (std::filesystem::temp_directory_path() / "fw_csv_bom.csv").string();
  std::ofstream(path) << "\xEF\xBB\xBF"
                         "a,b\r\n1,2\r\n3,4";
  auto r = CsvReader::open(path);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->next());
  EXPECT_EQ((*r)->fields()[0], "a");
  EXPECT_EQ((*r)->fields()[1], "b");
  EXPECT_FALSE((*r)->unterminated());
  ASSERT_TRUE((*r)->next());
  EXPECT_EQ((*r)->fields()[1], "2");
  EXPECT_FALSE((*r)->unterminated());
  ASSERT_TRUE((*r)->next());
  EXPECT_EQ((*r)->fields()[1], "4");
  EXPECT_TRUE((*r)->unterminated());
  EXPECT_FALSE((*r)->next());
}

}  // namespace
}  // namespace fw
