// sim::read_sweep_csv, the per-job cap sweep reader of `fit`, `sweep`, `allocate` and
// `dr replay` (issue 45 item 6): a cap given twice for one job is bad input naming the file,
// the line, the field and the earlier line with that cap; the same cap in two jobs is not. With
// one job asked for, only its rows must make a sweep.

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "sim/fit.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::sim {
namespace {

std::string write_csv(const std::string& name, const std::string& text) {
  const std::string path = std::string(FLEXWATT_BINARY_DIR) + "/sweep_csv_" + name;
  std::ofstream(path) << text;
  return path;
}

bool has(const Status& s, const std::string& part) {
  return s.message().find(part) != std::string::npos;
}

TEST(SweepCsv, DuplicateCapOfOneJobIsRefusedNamingBothLines) {
  const std::string p = write_csv("dup.csv",
                                  "job,cap_w,power_w,throughput\n"
                                  "ft,100,99,0.3\nft,200,190,0.8\nft,200,195,0.82\nft,300,280,1\n");
  auto r = read_sweep_csv(p);
  ASSERT_FALSE(r.ok()) << "a duplicated cap row was accepted";
  EXPECT_EQ(r.status().exit_code(), 2);
  EXPECT_TRUE(has(r.status(), p + ":4: cap: ")) << r.status().message();
  EXPECT_TRUE(has(r.status(), "line 3")) << r.status().message();
  EXPECT_TRUE(has(r.status(), "ft")) << r.status().message();
}

TEST(SweepCsv, DuplicateCapInTheA100ColumnsIsRefusedToo) {
  // The public sweep's column names; the same value written differently is the same cap.
  const std::string p = write_csv(
      "dup_a100.csv",
      "Workload,GPU power cap,throughput,total GPU power,normalized throughput,power per GPU\n"
      "pt,100,0.2,800,0.2,100\npt,400,1,3200,1,400\npt,100.0,0.21,810,0.21,101\n");
  auto r = read_sweep_csv(p);
  ASSERT_FALSE(r.ok()) << "a duplicated cap row was accepted";
  EXPECT_TRUE(has(r.status(), p + ":4: cap: ")) << r.status().message();
  EXPECT_TRUE(has(r.status(), "line 2")) << r.status().message();
}

TEST(SweepCsv, SameCapInTwoJobsIsFine) {
  auto r = read_sweep_csv(write_csv("two_jobs.csv",
                                    "job,cap_w,power_w,throughput\n"
                                    "a,200,190,0.8\nb,200,180,0.7\na,300,280,1\nb,300,270,1\n"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].points.size(), 2u);
  EXPECT_EQ((*r)[1].points.size(), 2u);
}

// One job asked for (`dr replay`'s sweep_job, `sweep --csv-job`, `fit --job`): a file without
// rows for it gives no sweep (the caller names the job and the file), another job's single row
// is no error, every row is still checked.
TEST(SweepCsv, OnlyTheJobAskedFor) {
  const std::string one = write_csv("one.csv", "job,cap_w,power_w,throughput\nother,300,280,1\n");
  EXPECT_FALSE(read_sweep_csv(one).ok());  // every job: a sweep needs two caps
  auto none = read_sweep_csv(one, "ft");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_TRUE(none->empty());
  auto mixed = read_sweep_csv(write_csv("mixed.csv",
                                        "job,cap_w,power_w,throughput\nother,300,280,1\n"
                                        "ft,300,280,1\nft,100,99,0.3\n"),
                              "ft");
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  ASSERT_EQ(mixed->size(), 1u);
  EXPECT_EQ((*mixed)[0].job, "ft");
  EXPECT_EQ((*mixed)[0].points.front().cap_w, 100);
  auto single = read_sweep_csv(one, "other");
  ASSERT_FALSE(single.ok());
  EXPECT_TRUE(has(single.status(), "job other: a sweep needs at least two caps"));
  // Another job's bad rows are still the file's errors.
  auto dup = read_sweep_csv(write_csv("dup_other.csv",
                                      "job,cap_w,power_w,throughput\nft,100,99,0.3\n"
                                      "ft,300,280,1\nother,200,190,1\nother,200,190,1\n"),
                            "ft");
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(has(dup.status(), ":5: cap: ")) << dup.status().message();
  EXPECT_TRUE(has(dup.status(), "line 4")) << dup.status().message();
}

}  // namespace
}  // namespace fw::sim
