// The sweep CSVs of a `dr replay` event (issue 45 item 6): a job's cap given twice is bad input
// naming the file, line, field and the earlier line; a file that holds no rows for the job the
// event asks for is an error naming that job and the file, not one about another job's rows.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "studies/dr_event.hpp"

namespace fw::studies {
namespace {

namespace fs = std::filesystem;

class DrSweepCsv : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fw_dr_csv_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  // An event whose one job reads `csv`, asking for sweep_job `job`.
  Result<DrEvent> load(const std::string& csv, const std::string& job) {
    const std::string yaml =
        "sample_period_s: 0.5\nduration_s: 600\nbaseline_w: measured\njobs:\n"
        "  - {name: a, gpus: 8, sweep_csv: " +
        csv + ", sweep_job: " + job +
        ", tier_min: 0.5}\n"
        "event: {steps: [{start_s: 120, depth: 0.1}], end_s: 300}\n";
    return parse_dr_event(yaml, "e.yaml", dir_.string());
  }
  fs::path dir_;
};

TEST_F(DrSweepCsv, DuplicateCapIsRefusedNamingFileLineFieldAndEarlierLine) {
  write("dup.csv",
        "job,cap_w,power_w,throughput\nft,100,99,0.3\nft,200,190,0.8\nft,200,195,0.82\n"
        "ft,300,280,1\n");
  auto ev = load("dup.csv", "ft");
  ASSERT_FALSE(ev.ok()) << "a duplicated cap row was accepted";
  const std::string& m = ev.status().message();
  EXPECT_EQ(ev.status().exit_code(), 2);
  EXPECT_NE(m.find("dup.csv:4: cap: "), std::string::npos) << m;
  EXPECT_NE(m.find("line 3"), std::string::npos) << m;
}

TEST_F(DrSweepCsv, FileWithoutRowsForTheJobNamesTheJobAndTheFile) {
  write("one.csv", "job,cap_w,power_w,throughput\nother,300,280,1\n");
  auto ev = load("one.csv", "ft");
  ASSERT_FALSE(ev.ok());
  const std::string& m = ev.status().message();
  EXPECT_EQ(ev.status().exit_code(), 2);
  EXPECT_NE(m.find("e.yaml:5: jobs.0.sweep_job: no job 'ft' in "), std::string::npos) << m;
  EXPECT_NE(m.find("one.csv"), std::string::npos) << m;
  EXPECT_EQ(m.find("job other"), std::string::npos) << "reported under the other job: " << m;
}

TEST_F(DrSweepCsv, AnotherJobsSingleRowDoesNotStopTheJobAskedFor) {
  // The rule "a sweep needs at least two caps" is about the sweep used.
  write("mixed.csv",
        "job,cap_w,power_w,throughput\nother,300,280,1\nft,100,99,0.3\nft,200,190,0.8\n"
        "ft,300,280,1\n");
  auto ev = load("mixed.csv", "ft");
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  ASSERT_EQ(ev->jobs.size(), 1u);
  EXPECT_EQ(ev->jobs[0].curve.size(), 3u);
  // The job asked for still needs two caps, and the message names it.
  write("single.csv", "job,cap_w,power_w,throughput\nft,300,280,1\nother,100,99,0.3\n");
  auto one = load("single.csv", "ft");
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("job ft: a sweep needs at least two caps"),
            std::string::npos)
      << one.status().message();
}

}  // namespace
}  // namespace fw::studies
