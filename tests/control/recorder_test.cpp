#include "control/recorder.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fw {
namespace {

std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("fw_recorder_test_" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

// The file's bytes as they are on disk now (what a reader sees after a kill -9 of the writer).
std::string on_disk(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

Snapshot tick(double time_s) {
  Snapshot s;
  s.time_s = time_s;
  for (int g = 0; g < 2; ++g) {
    GpuReading r;
    r.gpu = g;
    r.power_w = 250 + g;
    r.cap_w = 300;
    s.gpus.push_back(r);
  }
  JobReading j;
  j.job = 0;
  j.phase = Phase::kGenerate;
  j.tokens_total = 100 * time_s;
  s.jobs.push_back(j);
  return s;
}

// The agent (a real-time recorder) is killed (-9) with the recorder open: what it recorded up to
// one second of trace time before its last tick must already be in gpus.csv and jobs.csv, whole
// rows only.
TEST(Recorder, RowsReachTheFileWithinOneSecondOfTraceTimeWithoutClose) {
  const std::string dir = temp_dir("flush");
  auto rec = Recorder::create(dir, TraceWriterOptions::real_time());
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  const double period_s = 0.1;
  const int ticks = 31;  // 0 .. 3.0 s
  for (int i = 0; i < ticks; ++i) (*rec)->record(tick(i * period_s));
  const double last_s = (ticks - 1) * period_s;

  for (const char* file : {"/gpus.csv", "/jobs.csv"}) {
    SCOPED_TRACE(file);
    const std::string text = on_disk(dir + file);
    ASSERT_FALSE(text.empty()) << "nothing on disk: rows still buffered";
    EXPECT_EQ(text.back(), '\n') << "a partial row on disk";
    const std::vector<std::string> l = lines(text);
    ASSERT_GE(l.size(), 2u);
    EXPECT_EQ(l[0].rfind("time_s,", 0), 0u);
    const double newest_s = std::stod(l.back().substr(0, l.back().find(',')));
    EXPECT_GE(newest_s, last_s - 1.0 - 1e-9) << l.back();
  }
  // close() writes the rest: every tick once, in order.
  ASSERT_TRUE((*rec)->close({{"producer", "test"}}).ok());
  const std::vector<std::string> g = lines(on_disk(dir + "/gpus.csv"));
  ASSERT_EQ(g.size(), 1u + 2u * ticks);
  EXPECT_EQ(g[1], "0.000,0,250.00,,300.0,,,,");
  EXPECT_EQ(g.back(), "3.000,1,251.00,,300.0,,,,");
  EXPECT_EQ(lines(on_disk(dir + "/jobs.csv")).size(), 1u + ticks);
}

// A new episode in the same trace starts its clock again at 0: flushing goes on (a clock that
// went back counts as a second passed), it does not wait until the old time comes round again.
TEST(Recorder, KeepsFlushingWhenTraceTimeStartsAgain) {
  const std::string dir = temp_dir("restart");
  auto rec = Recorder::create(dir, TraceWriterOptions::real_time());
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  for (int i = 0; i <= 50; ++i) (*rec)->record(tick(i * 0.1));  // 0 .. 5 s
  for (int i = 0; i <= 20; ++i) (*rec)->record(tick(i * 0.1));  // 0 .. 2 s again
  const std::vector<std::string> l = lines(on_disk(dir + "/gpus.csv"));
  // 51 ticks of the first episode and at least the second one's ticks up to 1.0 s.
  ASSERT_GE(l.size(), 1u + 2u * (51 + 11));
  const double newest_s = std::stod(l.back().substr(0, l.back().find(',')));
  EXPECT_GE(newest_s, 1.0 - 1e-9) << l.back();
  EXPECT_LE(newest_s, 2.0 + 1e-9) << l.back();
}

// A simulated run (the default options) is written at close() only: no write(2) per simulated
// second; flush() still hands everything over on demand.
TEST(Recorder, DefaultBuffersUntilCloseOrFlush) {
  const std::string dir = temp_dir("default");
  auto rec = Recorder::create(dir);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  for (int i = 0; i <= 30; ++i) (*rec)->record(tick(i * 0.1));
  EXPECT_EQ(on_disk(dir + "/gpus.csv"), "");
  (*rec)->flush();
  EXPECT_EQ(lines(on_disk(dir + "/gpus.csv")).size(), 1u + 2u * 31);
  EXPECT_EQ(lines(on_disk(dir + "/jobs.csv")).size(), 1u + 31);
  ASSERT_TRUE((*rec)->close({}).ok());
  EXPECT_EQ(lines(on_disk(dir + "/gpus.csv")).size(), 1u + 2u * 31);
}

}  // namespace
}  // namespace fw
