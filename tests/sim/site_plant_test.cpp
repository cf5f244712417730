// sim::SitePlant (sim/site_plant.hpp): the per-GPU settings of kGpuSettingTable (power
// smoothing, fill) written through Command reach the site simulator, are clamped to the
// smoothing model's range, are refused on a site without smoothing; the job row's
// announcements (start, end, the coming checkpoint).

#include "sim/site_plant.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fw::sim {
namespace {

// 256 H100s (32 ranks of 8, 8 representatives), training 5-40 s, a checkpoint every 10
// iterations lasting 3 s.
SiteSpec site(bool smoothing = true) {
  SiteSpec s;
  s.gpu_model = "h100-sxm5";
  s.gpu = find_gpu_preset(s.gpu_model);
  if (smoothing) {
    s.smoothing_model = "gb200";
    s.smoothing = find_smoothing_capability("gb200");
  }
  s.gpus = 256;
  s.representatives = 8;
  s.duration_s = 45;
  s.job.model = *find_pretrain_model("dense-pt");
  s.job.start_s = 5;
  s.job.end_s = 40;
  s.job.checkpoint_every_iters = 10;
  s.job.checkpoint_s = 3;
  return s;
}

Command settings(size_t rows, double floor_pct, double up, double down, double hyst,
                 double fill_w) {
  Command c;
  GpuSettingValues v = kNoGpuSettings;
  v[static_cast<int>(GpuSetting::kSmoothingFloor)] = floor_pct;
  v[static_cast<int>(GpuSetting::kSmoothingRampUp)] = up;
  v[static_cast<int>(GpuSetting::kSmoothingRampDown)] = down;
  v[static_cast<int>(GpuSetting::kSmoothingHysteresis)] = hyst;
  v[static_cast<int>(GpuSetting::kFill)] = fill_w;
  c.gpu_settings.assign(rows, v);
  return c;
}

TEST(SitePlant, GpuSettingsReachTheSimulator) {
  SitePlant p(site(), SiteMitigations{}, 1);
  const size_t rows = p.info().gpus.size();
  ASSERT_EQ(rows, 8u);
  EXPECT_FALSE(p.simulator().smoothing(3).enabled);
  // Floor 95 % is above gb200's 90 %: clamped. Rate 0.5 W/s: taken as 1.
  ASSERT_TRUE(p.write(settings(rows, 95, 0.5, 40, 250, 350)).ok());
  for (int i = 0; i < static_cast<int>(rows); ++i) {
    const SmoothingSettings& s = p.simulator().smoothing(i);
    EXPECT_TRUE(s.enabled);
    EXPECT_DOUBLE_EQ(s.floor_frac, 0.90);
    EXPECT_DOUBLE_EQ(s.ramp_up_w_per_s, 1.0);
    EXPECT_DOUBLE_EQ(s.ramp_down_w_per_s, 40);
    EXPECT_DOUBLE_EQ(s.ramp_down_hysteresis_ms, 250);
    EXPECT_TRUE(p.simulator().fill(i).enabled);
    EXPECT_DOUBLE_EQ(p.simulator().fill(i).target_frac, 350.0 / 700.0);
    EXPECT_TRUE(p.simulator().fill(i).before_start);
  }
  // NaN leaves a row as it is; one GPU's row only; floor 10 % is below the range: clamped
  // up; floor 0 is no floor; fill 0 is off; an infinite rate is no limit.
  Command c = settings(rows, kUnset, std::numeric_limits<double>::infinity(), kUnset, kUnset, 0);
  c.gpu_settings[2][static_cast<int>(GpuSetting::kSmoothingFloor)] = 10;
  c.gpu_settings[5][static_cast<int>(GpuSetting::kSmoothingFloor)] = 0;
  ASSERT_TRUE(p.write(c).ok());
  EXPECT_DOUBLE_EQ(p.simulator().smoothing(2).floor_frac, 0.20);
  EXPECT_DOUBLE_EQ(p.simulator().smoothing(5).floor_frac, 0.0);
  EXPECT_DOUBLE_EQ(p.simulator().smoothing(3).floor_frac, 0.90);
  EXPECT_TRUE(std::isinf(p.simulator().smoothing(3).ramp_up_w_per_s));
  EXPECT_DOUBLE_EQ(p.simulator().smoothing(3).ramp_down_w_per_s, 40);
  EXPECT_FALSE(p.simulator().fill(3).enabled);
  // Too many rows, a negative value: refused.
  EXPECT_FALSE(p.write(settings(rows + 1, 50, 10, 10, 0, 0)).ok());
  EXPECT_FALSE(p.write(settings(rows, -5, 10, 10, 0, 0)).ok());
}

TEST(SitePlant, AWrittenFloorHoldsTheSitesPower) {
  // The same seed with and without a 90 % floor written at t = 0: from the start on, no
  // representative draws below 90 % of its cap once the envelope has risen.
  SitePlant with(site(), SiteMitigations{}, 7), without(site(), SiteMitigations{}, 7);
  Snapshot s;
  ASSERT_TRUE(with.read(0, s).ok());
  ASSERT_TRUE(with.write(settings(s.gpus.size(), 90, 1e9, 1e9, 0, kUnset)).ok());
  ASSERT_TRUE(with.read(30, s).ok());
  for (const GpuReading& g : s.gpus) EXPECT_GE(g.power_instant_w, 0.9 * g.cap_w - 1e-6);
  const SiteRun a = with.finish(), b = without.finish();
  EXPECT_GT(a.smoothing_burn_j, 0);
  EXPECT_EQ(b.smoothing_burn_j, 0);
  EXPECT_GT(a.energy_j, b.energy_j);
}

TEST(SitePlant, AWrittenFillRunsBeforeTheStartAFixedOneDoesNot) {
  // Before the start (5 s) the GPUs are idle: a fill written through the plant runs on them
  // (the agent's pre-start fill), the fixed fill arm's only once the job trains.
  SiteMitigations fixed;
  fixed.fill = {true, 0.5};
  SitePlant a(site(), fixed, 2), b(site(), SiteMitigations{}, 2);
  Snapshot s;
  ASSERT_TRUE(b.read(0, s).ok());
  ASSERT_TRUE(b.write(settings(s.gpus.size(), kUnset, kUnset, kUnset, kUnset, 350)).ok());
  ASSERT_TRUE(a.read(3, s).ok());
  const double idle_w = s.gpus[0].power_instant_w;
  EXPECT_LT(idle_w, 100);
  ASSERT_TRUE(b.read(3, s).ok());
  EXPECT_NEAR(s.gpus[0].power_instant_w, 350, 1e-6);
  const SiteRun ra = a.finish(), rb = b.finish();
  EXPECT_GT(rb.fill_j, ra.fill_j);
}

TEST(SitePlant, SmoothingIsRefusedOnASiteWithoutIt) {
  SitePlant p(site(false), SiteMitigations{}, 1);
  const size_t rows = p.info().gpus.size();
  const Status st = p.write(settings(rows, 50, 10, 10, 0, 300));
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.message();
  EXPECT_NE(st.message().find("smoothing_floor"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("no power smoothing"), std::string::npos) << st.message();
  // Nothing was applied, not even the fill of the same command.
  EXPECT_FALSE(p.simulator().smoothing(0).enabled);
  EXPECT_FALSE(p.simulator().fill(0).enabled);
  // The fill alone needs no smoothing model.
  EXPECT_TRUE(p.write(settings(rows, kUnset, kUnset, kUnset, kUnset, 300)).ok());
  EXPECT_TRUE(p.simulator().fill(0).enabled);
}

TEST(SitePlant, TheJobAnnouncesItsStartEndAndCheckpoints) {
  SitePlant p(site(), SiteMitigations{}, 3);
  Snapshot s;
  ASSERT_TRUE(p.read(2, s).ok());
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_DOUBLE_EQ(s.jobs[0].starts_in_s, 3);
  EXPECT_DOUBLE_EQ(s.jobs[0].ends_in_s, 38);
  EXPECT_DOUBLE_EQ(s.jobs[0].checkpoint_in_iters, 10);
  EXPECT_DOUBLE_EQ(s.jobs[0].checkpoint_s, 3);
  // Every tick until the checkpoint: iterations done + iterations announced = 10; the
  // checkpoint phase comes right after the announcement reached 1.
  bool saw_one = false, saw_ckpt = false;
  for (double t = 5; t < 25 && !saw_ckpt; t += 0.05) {
    ASSERT_TRUE(p.read(t, s).ok());
    const JobReading& j = s.jobs[0];
    EXPECT_TRUE(std::isnan(j.starts_in_s));
    if (j.phase == Phase::kCheckpoint) {
      saw_ckpt = true;
      EXPECT_TRUE(saw_one);
      break;
    }
    // (an iteration counts from its all-reduce's start: during the tenth, 10 done and 1 to go)
    EXPECT_TRUE(j.steps_total + j.checkpoint_in_iters == 10 ||
                (j.steps_total == 10 && j.checkpoint_in_iters == 1))
        << "t=" << t << " steps " << j.steps_total << " announced " << j.checkpoint_in_iters;
    saw_one = saw_one || j.checkpoint_in_iters == 1;
  }
  EXPECT_TRUE(saw_ckpt);
  ASSERT_TRUE(p.read(41, s).ok());
  EXPECT_TRUE(std::isnan(s.jobs[0].ends_in_s));
  EXPECT_TRUE(std::isnan(s.jobs[0].checkpoint_in_iters));
}

}  // namespace
}  // namespace fw::sim
