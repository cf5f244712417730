// Determinism, clone equivalence, command semantics and sensor semantics of sim::Cluster.

#include "sim/cluster.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "sim_test_util.hpp"

namespace fw::sim {
namespace {
using testing::load_or_die;

bool same(const Snapshot& a, const Snapshot& b) {
  if (a.gpus.size() != b.gpus.size() || a.jobs.size() != b.jobs.size()) return false;
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const auto& x = a.gpus[i];
    const auto& y = b.gpus[i];
    if (std::memcmp(&x, &y, sizeof(x)) != 0) return false;
  }
  for (size_t j = 0; j < a.jobs.size(); ++j) {
    const auto& x = a.jobs[j];
    const auto& y = b.jobs[j];
    if (x.phase != y.phase || x.tokens_total != y.tokens_total || x.steps_total != y.steps_total)
      return false;
  }
  return true;
}

TEST(Cluster, SameSeedSameRunBitForBit) {
  const Scenario s = load_or_die("scenarios/fleet-16xa100.yaml");
  auto a = make_cluster(s, 42), b = make_cluster(s, 42), c = make_cluster(s, 43);
  Snapshot sa, sb, sc;
  bool differs_with_seed = false;
  for (int k = 1; k <= 2000; ++k) {
    ASSERT_TRUE(a->read(k * 0.5, sa).ok());
    ASSERT_TRUE(b->read(k * 0.5, sb).ok());
    ASSERT_TRUE(c->read(k * 0.5, sc).ok());
    ASSERT_TRUE(same(sa, sb)) << "diverged at " << k * 0.5;
    differs_with_seed = differs_with_seed || !same(sa, sc);
  }
  EXPECT_TRUE(differs_with_seed);
}

TEST(Cluster, CloneContinuesExactlyLikeTheOriginal) {
  const Scenario s = load_or_die("scenarios/fleet-16xa100.yaml");
  auto a = make_cluster(s, 5);
  Snapshot sa, sb;
  ASSERT_TRUE(a->read(333.5, sa).ok());
  auto b = a->clone();
  ASSERT_NE(b, nullptr);
  Command cmd;
  cmd.power_cap_w.assign(16, 250.0);
  cmd.knobs.assign(8, KnobValues{4, 4});
  ASSERT_TRUE(a->write(cmd).ok());
  ASSERT_TRUE(b->write(cmd).ok());
  for (int k = 1; k <= 1000; ++k) {
    ASSERT_TRUE(a->read(333.5 + k * 0.5, sa).ok());
    ASSERT_TRUE(b->read(333.5 + k * 0.5, sb).ok());
    ASSERT_TRUE(same(sa, sb)) << "diverged at step " << k;
  }
  // The clone is independent: changing it leaves the original alone.
  cmd.power_cap_w.assign(16, 100.0);
  ASSERT_TRUE(b->write(cmd).ok());
  ASSERT_TRUE(a->read(900, sa).ok());
  ASSERT_TRUE(b->read(900, sb).ok());
  EXPECT_EQ(sa.gpus[0].cap_w, 250.0);
  EXPECT_EQ(sb.gpus[0].cap_w, 100.0);
}

TEST(Cluster, CapsAreClampedAndLowerPowerWithClockLag) {
  const Scenario s = load_or_die("scenarios/pretrain-dense-h100x8.yaml",
                                 {"sim.noise_w=0", "jobs.0.duty={every_s: 0}"});
  auto p = make_cluster(s, 1);
  Snapshot snap;
  ASSERT_TRUE(p->read(60, snap).ok());
  const double before = snap.gpus[0].power_instant_w;
  Command cmd;
  cmd.power_cap_w.assign(8, 50.0);  // below the device minimum: clamped to 200 W
  ASSERT_TRUE(p->write(cmd).ok());
  ASSERT_TRUE(p->read(60.1, snap).ok());
  EXPECT_EQ(snap.gpus[0].cap_w, 200.0);
  EXPECT_GT(snap.gpus[0].sm_clock_mhz, 1000);  // the clock lags (assumed tau 0.2 s)
  ASSERT_TRUE(p->read(65, snap).ok());
  EXPECT_LT(snap.gpus[0].sm_clock_mhz, 1000);
  EXPECT_LT(snap.gpus[0].power_w, 230);
  EXPECT_GT(before, 450);
}

// Power smoothing and fill (kGpuSettingTable) are the site simulator's; a node cluster has
// neither: a command that sets them is refused whole, nothing applied, not silently dropped.
TEST(Cluster, RefusesPowerSmoothingAndFillSettings) {
  const Scenario s = load_or_die("scenarios/pretrain-dense-h100x8.yaml", {"sim.noise_w=0"});
  auto p = make_cluster(s, 1);
  Snapshot snap;
  ASSERT_TRUE(p->read(10, snap).ok());
  Command cmd;
  cmd.power_cap_w.assign(8, 300.0);
  cmd.gpu_settings.assign(8, kNoGpuSettings);
  cmd.gpu_settings[0][static_cast<int>(GpuSetting::kSmoothingFloor)] = 50;
  const Status st = p->write(cmd);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.message();
  ASSERT_TRUE(p->read(11, snap).ok());
  EXPECT_GT(snap.gpus[0].cap_w, 300.0);  // the caps of the refused command were not applied
}

TEST(Cluster, KnobsReportedAndApplied) {
  const Scenario s = load_or_die("scenarios/grpo-7b-a100.yaml");
  auto p = make_cluster(s, 1);
  const auto& ji = p->info().jobs[0];
  EXPECT_TRUE(ji.knob_ranges[0].available);
  EXPECT_EQ(ji.default_knobs[1], 8);
  Snapshot snap;
  ASSERT_TRUE(p->read(1, snap).ok());
  EXPECT_EQ(snap.jobs[0].knobs[0], 16);
  Command cmd;
  cmd.knobs = {KnobValues{1000, 2}};  // concurrency clamped to its range
  ASSERT_TRUE(p->write(cmd).ok());
  ASSERT_TRUE(p->read(2, snap).ok());
  EXPECT_EQ(snap.jobs[0].knobs[0], 64);
  EXPECT_EQ(snap.jobs[0].knobs[1], 2);
  // Group size applies from the next step: the current step keeps its 16 sequences.
  EXPECT_EQ(p->job_state(0).seqs_total, 16);
  ASSERT_TRUE(p->read(200, snap).ok());
  EXPECT_EQ(p->job_state(0).seqs_total, 4);
  Command bad;
  bad.knobs.resize(3);
  EXPECT_FALSE(p->write(bad).ok());
}

TEST(Cluster, PretrainHasNoKnobsAndCountsTokens) {
  const Scenario s = load_or_die("scenarios/pretrain-moe-h200x8.yaml");
  auto p = make_cluster(s, 1);
  Snapshot snap;
  ASSERT_TRUE(p->read(100, snap).ok());
  EXPECT_TRUE(std::isnan(snap.jobs[0].knobs[0]));
  EXPECT_FALSE(p->info().jobs[0].knob_ranges[0].available);
  EXPECT_GT(snap.jobs[0].steps_total, 10);
  EXPECT_DOUBLE_EQ(snap.jobs[0].tokens_total, snap.jobs[0].steps_total * 1048576);
}

TEST(Cluster, EnergyCounterStepsEvery100msAndTracksPower) {
  const Scenario s = load_or_die("scenarios/grpo-7b-a100.yaml", {"sim.dt_s=0.05", "sim.noise_w=0"});
  auto p = make_cluster(s, 1);
  Snapshot a, b;
  ASSERT_TRUE(p->read(10.0, a).ok());
  ASSERT_TRUE(p->read(10.05, b).ok());
  EXPECT_EQ(a.gpus[0].energy_j, b.gpus[0].energy_j);  // no update within 100 ms
  ASSERT_TRUE(p->read(10.1, b).ok());
  EXPECT_GT(b.gpus[0].energy_j, a.gpus[0].energy_j);
  // Energy over a long span equals the integral of instantaneous power (A100: power_w).
  double integral = 0;
  Snapshot s0;
  ASSERT_TRUE(p->read(20, s0).ok());
  Snapshot cur;
  for (int k = 1; k <= 2000; ++k) {
    ASSERT_TRUE(p->read(20 + k * 0.05, cur).ok());
    integral += cur.gpus[0].power_w * 0.05;
  }
  EXPECT_NEAR(cur.gpus[0].energy_j - s0.gpus[0].energy_j, integral, 1e-6 * integral + 1e-6);
}

}  // namespace
}  // namespace fw::sim
