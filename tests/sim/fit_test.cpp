// `flexwatt fit` library (sim/fit.hpp): sweep fit on the public A100 rows, trace fit on logs
// made by the simulator with two different duty cycles, input errors.

#include "sim/fit.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "sim/fit_gpu.hpp"
#include "sim/scenario.hpp"
#include "sim_test_util.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::sim {
namespace {

// Done-when of the sweep fit: every row of data/a100_power_cap_sweep.csv (measured, Emerald
// demo) reproduced within ±0.03 in P/P_max and T/T_max at every cap, PFI within ±5 %, and
// simulated power at or below the cap at every cap ≥ the device minimum.
TEST(Fit, SweepFitReproducesAllThreePublicA100Jobs) {
  auto sweeps = read_sweep_csv(testing::source_path("data/a100_power_cap_sweep.csv"));
  ASSERT_TRUE(sweeps.ok()) << sweeps.status().message();
  ASSERT_EQ(sweeps->size(), 3u);
  const GpuPreset& gpu = *find_gpu_preset("a100-sxm4-80gb");
  for (const auto& m : *sweeps) {
    auto f = fit_sweep(m, gpu, "", SimParams{});
    ASSERT_TRUE(f.ok()) << f.status().message();
    std::printf("[fit] %s: |dP| %.3f |dT| %.3f PFI %.2f vs %.2f Pmax %.1f vs %.1f W\n",
                m.job.c_str(), f->max_dp, f->max_dt, f->pfi_meas, f->pfi_sim, f->pmax_meas_w,
                f->pmax_sim_w);
    EXPECT_LE(f->max_dp, 0.03) << m.job;
    EXPECT_LE(f->max_dt, 0.03) << m.job;
    EXPECT_NEAR(f->pfi_sim, f->pfi_meas, 0.05 * f->pfi_meas) << m.job;
    EXPECT_TRUE(f->power_at_or_below_cap) << m.job;
    EXPECT_NEAR(f->pmax_sim_w, f->pmax_meas_w, 0.03 * f->pmax_meas_w) << m.job;
    // The YAML it writes loads as a scenario.
    auto s = parse_scenario(sweep_fit_yaml(*f, gpu, 8), "fit", {});
    EXPECT_TRUE(s.ok()) << s.status().message();
  }
}

// The written scenario at the sweep's own job size (total / per-GPU power: 48, 16, 64 GPUs)
// reproduces the measured curve (--check on a sweep), within ±0.03 at every cap. With the
// simulator's default per-GPU spread and noise (what the scenario used to carry while the fit
// ran one identical GPU) the capped throughput falls short: printed for comparison.
TEST(Fit, SweepScenarioAtTheJobSizeReproducesTheSweep) {
  auto sweeps = read_sweep_csv(testing::source_path("data/a100_power_cap_sweep.csv"));
  ASSERT_TRUE(sweeps.ok()) << sweeps.status().message();
  const GpuPreset& gpu = *find_gpu_preset("a100-sxm4-80gb");
  const int sizes[3] = {48, 16, 64};
  for (size_t i = 0; i < sweeps->size(); ++i) {
    const MeasuredSweep& m = (*sweeps)[i];
    EXPECT_EQ(m.gpus, sizes[i]) << m.job;
    auto f = fit_sweep(m, gpu, "", SimParams{});
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_LE(f->mix.sm, 1.0);
    EXPECT_LE(f->mix.mem, 1.0);
    const std::string yaml = sweep_fit_yaml(*f, gpu, f->gpus);
    auto c = check_sweep_fit(*f, yaml, 1);
    ASSERT_TRUE(c.ok()) << c.status().message();
    std::string old = yaml;
    old.erase(old.find("    hetero: {offset_sd: 0, noise_sd: 0}\n"));
    auto o = check_sweep_fit(*f, old, 1);
    ASSERT_TRUE(o.ok()) << o.status().message();
    std::printf(
        "[fit] %s at %d GPUs: T/Tmax at %.0f W meas %.3f, sim %.3f (default spread and "
        "noise: %.3f); worst |dP| %.3f |dT| %.3f\n",
        m.job.c_str(), c->gpus, c->rows[0].cap_w, c->rows[0].t_meas, c->rows[0].t_sim,
        o->rows[0].t_sim, c->max_dp, c->max_dt);
    EXPECT_LE(c->max_dp, 0.03) << m.job;
    EXPECT_LE(c->max_dt, 0.03) << m.job;
  }
}

std::string write_tmp(const std::string& name, const std::string& text) {
  const std::string path = std::string(FLEXWATT_BINARY_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Fit, SweepCsvPlainFormatAndErrors) {
  auto ok = read_sweep_csv(write_tmp("fit_plain.csv",
                                     "job,cap_w,power_w,throughput\n"
                                     "a,300,280,0.9\na,200,190,0.7\na,400,350,1.0\n"));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].points.front().cap_w, 200);  // sorted by cap
  auto bad = read_sweep_csv(write_tmp("fit_bad.csv", "job,cap_w,power_w,throughput\na,300,x,1\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":2: power"), std::string::npos) << bad.status().message();
  auto hdr = read_sweep_csv(write_tmp("fit_hdr.csv", "a,b\n1,2\n"));
  ASSERT_FALSE(hdr.ok());
  EXPECT_NE(hdr.status().message().find(":1: header"), std::string::npos);
  auto one = read_sweep_csv(write_tmp("fit_one.csv", "job,cap_w,power_w,throughput\na,3,2,1\n"));
  EXPECT_FALSE(one.ok());
  // Magnitudes no GPU has (a node total, a unit mistake) are refused, naming line and column.
  auto node = read_sweep_csv(
      write_tmp("fit_node.csv", "job,cap_w,power_w,throughput\na,300,280,1\na,400,9600,1.2\n"));
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.status().message().find(":3: power: '9600' W is beyond any GPU"),
            std::string::npos)
      << node.status().message();
  auto huge = read_sweep_csv(
      write_tmp("fit_huge.csv", "job,cap_w,power_w,throughput\na,1e308,280,1\na,400,350,1e300\n"));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find(":2: cap"), std::string::npos) << huge.status().message();
  auto tput = read_sweep_csv(
      write_tmp("fit_tput.csv", "job,cap_w,power_w,throughput\na,300,280,1\na,400,350,1e300\n"));
  ASSERT_FALSE(tput.ok());
  EXPECT_NE(tput.status().message().find(":3: throughput"), std::string::npos);
}

// GPU class of a sweep from its caps, of a device name by NVML name or family; a sweep whose
// caps fit several GPUs (H100 and H200 share a range) asks for --gpu; a `gpus` column sets the
// job size.
TEST(Fit, GpuClassOfSweepsAndDeviceNames) {
  EXPECT_EQ(gpu_from_device_name("NVIDIA H100 80GB HBM3"), find_gpu_preset("h100-sxm5"));
  EXPECT_EQ(gpu_from_device_name(" NVIDIA A100-SXM4-40GB "), find_gpu_preset("a100-sxm4-80gb"));
  EXPECT_EQ(gpu_from_device_name("NVIDIA H200"), find_gpu_preset("h200-sxm"));
  EXPECT_EQ(gpu_from_device_name("Tesla V100-SXM2-32GB"), nullptr);
  auto a100 = read_sweep_csv(testing::source_path("data/a100_power_cap_sweep.csv"));
  ASSERT_TRUE(a100.ok());
  auto c = gpu_for_sweep((*a100)[0], "");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->gpu, find_gpu_preset("a100-sxm4-80gb"));
  EXPECT_FALSE(gpu_for_sweep((*a100)[0], "h100-sxm5").ok());  // 100 W is below its range
  auto h = read_sweep_csv(write_tmp("fit_h.csv",
                                    "job,cap_w,power_w,throughput,gpus\n"
                                    "a,300,290,0.8,32\na,500,480,0.95,32\na,700,560,1,32\n"));
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ((*h)[0].gpus, 32);
  auto amb = gpu_for_sweep((*h)[0], "");
  ASSERT_FALSE(amb.ok());
  EXPECT_NE(amb.status().message().find("give --gpu"), std::string::npos) << amb.status().message();
  EXPECT_TRUE(gpu_for_sweep((*h)[0], "h200-sxm").ok());
}

// A "measured" log made by the simulator: 8 H100 GPUs of dense pretraining with a duty cycle.
PowerLog make_log(const std::string& duty, uint64_t seed) {
  const std::string yaml =
      "name: src\nduration_s: 1800\nsample_period_s: 0.5\ngpus: [{model: h100-sxm5, count: 8}]\n"
      "budget: {watts: 4000}\njobs: [{kind: pretrain, workload: dense-pt, gpus: 8, duty: " +
      duty + ", hetero: {offset_sd: 0.01, noise_sd: 0.02}}]\n";
  auto s = parse_scenario(yaml, "src", {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  PowerLog log;
  log.dt_s = 0.5;
  log.gpu_w.resize(8);
  auto plant = make_cluster(*s, seed);
  Snapshot snap;
  for (int k = 1; k <= 3600; ++k) {
    EXPECT_TRUE(plant->read(k * 0.5, snap).ok());
    for (int g = 0; g < 8; ++g) log.gpu_w[g].push_back(snap.gpus[g].power_w);
  }
  return log;
}

// Done-when of the trace fit: the fitted scenario reproduces its source log's mean power within
// ±3 % and the share of 30 s windows above a level within ±0.05, on logs with two duty cycles.
TEST(Fit, TraceFitReproducesMeanAndWindowShareOnTwoDutyCycles) {
  const GpuPreset& gpu = *find_gpu_preset("h100-sxm5");
  const std::vector<std::string> duties = {
      "{every_s: 40, length_s: 17, sm: 0.0, mem: 0.08}",  // the public H100 log's shape
      "{every_s: 110, length_s: 8, sm: 0.1, mem: 0.2}"};  // rarer, shorter, higher
  for (const auto& duty : duties) {
    const PowerLog log = make_log(duty, 7);
    auto f = fit_trace(log, gpu, "dense-pt", SimParams{});
    ASSERT_TRUE(f.ok()) << f.status().message();
    auto c = check_trace_fit(log, *f, trace_fit_yaml(*f, gpu, "fitted"), 0, 1);
    ASSERT_TRUE(c.ok()) << c.status().message();
    const LogStats &a = c->measured, &b = c->simulated;
    std::printf(
        "[fit] duty %s: found %d low phases, every %.1f s, %.1f s long; mean %.0f vs "
        "%.0f W, share>level %.3f vs %.3f, peak30 %.0f vs %.0f W\n",
        duty.c_str(), f->low_phases, f->every_s, f->length_s, a.mean_w, b.mean_w, a.share_above,
        b.share_above, a.peak30_w, b.peak30_w);
    EXPECT_GT(f->low_phases, 3);
    // The YAML's header states the count as found (it was printed with %d from a double).
    const std::string yaml = trace_fit_yaml(*f, gpu, "fitted");
    EXPECT_NE(yaml.find(", " + std::to_string(f->low_phases) + " regular pauses at "),
              std::string::npos)
        << yaml.substr(0, 300);
    EXPECT_NEAR(b.mean_w, a.mean_w, 0.03 * a.mean_w);
    EXPECT_NEAR(b.share_above, a.share_above, 0.05 + 1e-9);
    EXPECT_NEAR(f->offset_sd_frac, 0.01, 0.008);
  }
}

}  // namespace
}  // namespace fw::sim
