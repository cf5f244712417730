#include "studies/authority.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::studies {
namespace {

// A plant whose one GPU draws 100 + 10·concurrency W (constant), and whose job makes
// concurrency tokens per second; group size changes nothing. Swings are known in closed form.
class LinearPlant : public Plant {
 public:
  LinearPlant() {
    info_.gpus.push_back({"fake", 100, 400, 400, 400});
    JobInfo j;
    j.name = "fake-job";
    j.kind = "grpo";
    j.gpus = {0};
    j.knob_ranges[0] = {true, 1, 5, 1};
    j.knob_ranges[1] = {true, 2, 16, 2};
    info_.jobs.push_back(j);
  }
  const PlantInfo& info() const override { return info_; }
  Status read(double now_s, Snapshot& out) override {
    out.time_s = now_s;
    out.gpus.assign(1, GpuReading{});
    out.gpus[0].power_w = 100 + 10 * conc_;
    out.jobs.assign(1, JobReading{});
    out.jobs[0].tokens_total = conc_ * now_s;
    return Status::Ok();
  }
  Status write(const Command& c) override {
    if (!c.knobs.empty() && !std::isnan(c.knobs[0][0])) conc_ = c.knobs[0][0];
    return Status::Ok();
  }

 private:
  PlantInfo info_;
  double conc_ = 3;
};

PlantFactory linear() {
  return [](uint64_t) { return std::make_unique<LinearPlant>(); };
}

TEST(Authority, KnobSettingsSpanTheRangeOnItsSteps) {
  EXPECT_EQ(knob_settings({true, 2, 16, 1}, 5), (std::vector<double>{2, 6, 9, 13, 16}));
  EXPECT_EQ(knob_settings({true, 1, 5, 1}, 2), (std::vector<double>{1, 5}));
  EXPECT_EQ(knob_settings({true, 1, 3, 1}, 10), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(knob_settings({true, 2, 16, 4}, 3),
            (std::vector<double>{2, 10, 16}));  // max kept off-grid
}

TEST(Authority, SwingsAndRankMatchTheClosedForm) {
  AuthorityOptions o;
  o.duration_s = 60;
  o.points = 5;
  auto r = sweep_authority(linear(), o, false);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->simulated);
  ASSERT_EQ(r->knobs.size(), 2u);
  const KnobAuthority& c = r->knobs[0];
  EXPECT_EQ(c.knob, Knob::kGenConcurrency);
  EXPECT_EQ(c.rank, 1);
  ASSERT_EQ(c.points.size(), 5u);
  EXPECT_DOUBLE_EQ(c.points[0].mean_power_w, 110);
  EXPECT_DOUBLE_EQ(c.points[4].mean_power_w, 150);
  EXPECT_DOUBLE_EQ(c.points[4].peak_window_w, 150);
  EXPECT_DOUBLE_EQ(c.points[4].tokens_per_s, 5);
  EXPECT_DOUBLE_EQ(c.mean_swing, 40.0 / 150);
  EXPECT_DOUBLE_EQ(c.peak_sample_swing, 40.0 / 150);
  EXPECT_DOUBLE_EQ(c.throughput_ratio, 5);
  EXPECT_TRUE(c.has_authority);
  const KnobAuthority& g = r->knobs[1];
  EXPECT_EQ(g.knob, Knob::kGroupSize);
  EXPECT_EQ(g.rank, 2);
  EXPECT_DOUBLE_EQ(g.mean_swing, 0);
  EXPECT_DOUBLE_EQ(g.throughput_ratio, 1);
  EXPECT_FALSE(g.has_authority);
}

TEST(Authority, BadOptionsAreRejected) {
  AuthorityOptions o;
  o.duration_s = 60;
  o.job = 3;
  EXPECT_FALSE(sweep_authority(linear(), o, false).ok());
  o.job = 0;
  o.points = 1;
  EXPECT_FALSE(sweep_authority(linear(), o, false).ok());
  o.points = 3;
  o.warmup_s = 60;
  EXPECT_FALSE(sweep_authority(linear(), o, false).ok());
}

// The simulator, 7B GRPO on one A100, 300 simulated seconds: generation concurrency must
// move mean power, upwards with the knob (the direction, not a tuned magnitude).
TEST(Authority, ConcurrencyMovesSimulated7bPowerUp) {
  auto s =
      sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-7b-a100.yaml", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  AuthorityOptions o;
  o.duration_s = 300;
  o.points = 2;
  o.knobs = {Knob::kGenConcurrency};
  auto r = sweep_authority(*s, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->simulated);
  ASSERT_EQ(r->knobs.size(), 1u);
  const KnobAuthority& k = r->knobs[0];
  ASSERT_EQ(k.points.size(), 2u);
  EXPECT_GT(k.points[1].mean_power_w, k.points[0].mean_power_w);
  EXPECT_GT(k.points[1].tokens_per_s, k.points[0].tokens_per_s);
  EXPECT_GT(k.mean_swing, 0);
  EXPECT_GE(k.points[1].peak_sample_w, k.points[1].peak_window_w);
}

}  // namespace
}  // namespace fw::studies

#include "studies/authority_report.hpp"

namespace fw::studies {
namespace {

TEST(AuthorityReport, SmallScenarioJsonTableAndLookups) {
  auto s =
      sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-7b-a100.yaml", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto job = find_job(*s, "0");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(*job, 0);
  EXPECT_EQ(*find_job(*s, s->jobs[0].name), 0);
  EXPECT_FALSE(find_job(*s, "7").ok());
  auto knob = knob_by_name("group_size");
  ASSERT_TRUE(knob.ok());
  EXPECT_EQ(*knob, Knob::kGroupSize);
  EXPECT_NE(knob_by_name("temperature").status().message().find("unknown knob 'temperature'"),
            std::string::npos);

  AuthorityOptions o;
  o.duration_s = 60;
  o.sample_period_s = s->sample_period_s;
  o.points = 2;
  o.knobs = {Knob::kGenConcurrency};
  auto r = sweep_authority(*s, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const nlohmann::ordered_json j = authority_json(*r, *s);
  EXPECT_EQ(j["simulated"], true);
  ASSERT_EQ(j["knobs"].size(), 1u);
  EXPECT_EQ(j["knobs"][0]["knob"], "gen_concurrency");
  EXPECT_EQ(j["knobs"][0]["settings"].size(), 2u);
  EXPECT_EQ(j.begin().key(), "simulated");  // fixed key order
  const std::string t = format_authority_table(*r, *s);
  EXPECT_NE(t.find("flexwatt authority (simulated)"), std::string::npos);
  EXPECT_NE(t.find("gen_concurrency"), std::string::npos);
}

}  // namespace
}  // namespace fw::studies
