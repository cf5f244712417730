#include "analysis/stability.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>

#include "analysis/power_series.hpp"
#include "analysis/spectrum.hpp"
#include "analysis/stability_limits.hpp"
#include "analysis/stability_report.hpp"

namespace fw {
namespace {

namespace fs = std::filesystem;
constexpr double kPi = std::numbers::pi;

// A series sampled every dt_s over [0, total_s) from f(t).
template <class F>
PowerSeries stab_series(double dt_s, double total_s, F f) {
  PowerSeries s;
  s.path = "test";
  s.series = "site";
  const int n = static_cast<int>(std::lround(total_s / dt_s));
  for (int i = 0; i < n; ++i) {
    const double t = i * dt_s;
    s.time_s.push_back(t);
    s.power_w.push_back(f(t));
  }
  return s;
}

PowerSeries stab_sine(double dt_s, double total_s, double amp_w, double freq_hz) {
  return stab_series(dt_s, total_s,
                     [&](double t) { return 1000 + amp_w * std::sin(2 * kPi * freq_hz * t); });
}

UniformSeries stab_grid(const PowerSeries& s) {
  Result<UniformSeries> u = resample_uniform(s);
  EXPECT_TRUE(u.ok()) << u.status().message();
  return *u;
}

// The mean-difference ramp of A·sin(2πft) over window W (stability.hpp).
double sine_ramp(double amp_w, double freq_hz, double window_s) {
  const double x = kPi * freq_hz * window_s;
  return 2 * amp_w * std::sin(x) * std::sin(x) / (kPi * freq_hz * window_s * window_s);
}

fs::path stab_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("fw_stability_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

TEST(Spectrum, FftMatchesNaiveDft) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  const size_t n = 32;
  std::vector<double> re(n), im(n);
  for (size_t i = 0; i < n; ++i) {
    re[i] = u(rng);
    im[i] = u(rng);
  }
  const std::vector<double> re0 = re, im0 = im;
  fft_radix2(re, im);
  for (size_t k = 0; k < n; ++k) {
    double sr = 0, si = 0;
    for (size_t j = 0; j < n; ++j) {
      const double a = -2 * kPi * static_cast<double>(j * k) / n;
      sr += re0[j] * std::cos(a) - im0[j] * std::sin(a);
      si += re0[j] * std::sin(a) + im0[j] * std::cos(a);
    }
    EXPECT_NEAR(re[k], sr, 1e-9) << k;
    EXPECT_NEAR(im[k], si, 1e-9) << k;
  }
}

TEST(Spectrum, SineInsideAndOutsideTheBand) {
  const PowerSeries s = stab_sine(0.01, 200, 100, 1.0);  // 1 Hz, 100 Hz sampling
  const UniformSeries u = stab_grid(s);
  Result<BandEnergy> in = band_energy(u.power_w, u.period_s, 0.1, 5);
  ASSERT_TRUE(in.ok());
  EXPECT_GT(in->fraction, 0.999);
  EXPECT_FALSE(in->clipped);
  Result<BandEnergy> above = band_energy(u.power_w, u.period_s, 2, 5);
  ASSERT_TRUE(above.ok());
  EXPECT_LT(above->fraction, 1e-3);
  Result<BandEnergy> below = band_energy(u.power_w, u.period_s, 0.1, 0.5);
  ASSERT_TRUE(below.ok());
  EXPECT_LT(below->fraction, 1e-3);
  // Two sines of equal amplitude, one in the band: half the energy.
  const PowerSeries two = stab_series(0.01, 200, [](double t) {
    return 1000 + 50 * std::sin(2 * kPi * 1.0 * t) + 50 * std::sin(2 * kPi * 0.02 * t);
  });
  const UniformSeries u2 = stab_grid(two);
  Result<BandEnergy> half = band_energy(u2.power_w, u2.period_s, 0.1, 5);
  ASSERT_TRUE(half.ok());
  EXPECT_NEAR(half->fraction, 0.5, 0.02);
}

TEST(Spectrum, HannWindowAndDetrendKeepOutOfBandEnergyOut) {
  // 0.0437 Hz does not fit a whole number of cycles in 200 s: without a window its leakage
  // would put about 1 % of the energy into 0.1-5 Hz.
  const UniformSeries slow = stab_grid(stab_sine(0.01, 200, 100, 0.0437));
  Result<BandEnergy> b = band_energy(slow.power_w, slow.period_s, 0.1, 5);
  ASSERT_TRUE(b.ok());
  EXPECT_LT(b->fraction, 1e-3);
  // A strong drift under a 1 Hz sine: detrending removes the drift, the sine is all that is
  // left.
  const UniformSeries drift = stab_grid(stab_series(
      0.01, 200, [](double t) { return 1000 + 20 * t + 10 * std::sin(2 * kPi * 1.0 * t); }));
  Result<BandEnergy> d = band_energy(drift.power_w, drift.period_s, 0.1, 5);
  ASSERT_TRUE(d.ok());
  EXPECT_GT(d->fraction, 0.99);
}

TEST(Spectrum, WelchSegmentsAgree) {
  const PowerSeries s = stab_sine(0.01, 200, 100, 1.0);
  const UniformSeries u = stab_grid(s);
  Result<BandEnergy> b = band_energy(u.power_w, u.period_s, 0.1, 5, 4096);
  ASSERT_TRUE(b.ok());
  EXPECT_GT(b->segments, 1);
  EXPECT_GT(b->fraction, 0.999);
  EXPECT_NEAR(b->resolution_hz, 1 / (4096 * 0.01), 1e-12);
}

TEST(Spectrum, NyquistClipsOrHidesTheBand) {
  const PowerSeries s = stab_sine(0.5, 600, 100, 0.2);  // a 2 Hz log: Nyquist 1 Hz
  const UniformSeries u = stab_grid(s);
  Result<BandEnergy> b = band_energy(u.power_w, u.period_s, 0.1, 5);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->clipped);
  EXPECT_TRUE(b->visible);
  EXPECT_DOUBLE_EQ(b->nyquist_hz, 1.0);
  EXPECT_DOUBLE_EQ(b->hi_effective_hz, 1.0);
  EXPECT_GT(b->fraction, 0.99);
  Result<BandEnergy> hidden = band_energy(u.power_w, u.period_s, 2, 5);
  ASSERT_TRUE(hidden.ok());
  EXPECT_FALSE(hidden->visible);
  EXPECT_TRUE(std::isnan(hidden->fraction));
  EXPECT_FALSE(band_energy(u.power_w, u.period_s, 5, 2).ok());
}

TEST(Stability, SineSwingAndRamps) {
  const double amp = 100, f = 0.5;
  const PowerSeries s = stab_sine(0.001, 20, amp, f);  // 1 kHz
  const UniformSeries u = stab_grid(s);
  const double peak = s.peak_w();
  // Swing over 2 s (one period) and 10 s: 2A.
  for (double w : {2.0, 10.0}) {
    const SwingStats sw = swing_stats(u, w, peak);
    ASSERT_TRUE(sw.skipped.empty()) << sw.skipped;
    EXPECT_NEAR(sw.max_w, 2 * amp, 0.01) << w;
    EXPECT_NEAR(sw.p95_w, 2 * amp, 0.01) << w;
    EXPECT_NEAR(sw.max_frac, 2 * amp / peak, 1e-4);
  }
  // Over 0.1 s the swing is at most the largest change in 0.1 s: 2A·sin(πf·0.1).
  const SwingStats short_sw = swing_stats(u, 0.1, peak);
  EXPECT_NEAR(short_sw.max_w, 2 * amp * std::sin(kPi * f * 0.1), 0.05);
  // Ramp over 0.1 s ≈ 2πfA (the derivative's peak), exactly the mean-difference formula.
  const RampStats r = ramp_stats(u, 0.1, peak);
  ASSERT_TRUE(r.skipped.empty()) << r.skipped;
  EXPECT_NEAR(r.max_up_w_per_s, 2 * kPi * f * amp, 0.01 * 2 * kPi * f * amp);
  EXPECT_NEAR(r.max_up_w_per_s, sine_ramp(amp, f, 0.1), 0.05);
  EXPECT_NEAR(r.max_down_w_per_s, sine_ramp(amp, f, 0.1), 0.05);
  EXPECT_NEAR(r.max_up_frac_per_s, r.max_up_w_per_s / peak, 1e-12);
  // Over 1 s (half a period) the formula gives 2A·1/(π·0.5) = 4A/π ≈ 127 W/s.
  const RampStats r1 = ramp_stats(u, 1, peak);
  EXPECT_NEAR(r1.max_up_w_per_s, sine_ramp(amp, f, 1), 0.05);
  // Over one whole period both windows average to the mean: no ramp.
  const RampStats r2 = ramp_stats(u, 2, peak);
  EXPECT_NEAR(r2.max_up_w_per_s, 0, 0.01);
}

TEST(Stability, LongWindowRampOfASlowSine) {
  const double amp = 200, f = 0.02;
  const PowerSeries s = stab_sine(0.1, 600, amp, f);
  const UniformSeries u = stab_grid(s);
  const RampStats r = ramp_stats(u, 10, s.peak_w());
  ASSERT_TRUE(r.skipped.empty());
  EXPECT_NEAR(r.max_up_w_per_s, sine_ramp(amp, f, 10), 0.02);
  EXPECT_NEAR(r.max_down_w_per_s, sine_ramp(amp, f, 10), 0.02);
  const RampStats r60 = ramp_stats(u, 60, s.peak_w());
  EXPECT_NEAR(r60.max_up_w_per_s, sine_ramp(amp, f, 60), 0.02);
}

TEST(Stability, LinearRampGivesItsSlope) {
  const double slope = 7.5;
  const PowerSeries s = stab_series(0.05, 300, [&](double t) { return 500 + slope * t; });
  const UniformSeries u = stab_grid(s);
  for (double w : {0.1, 1.0, 10.0, 60.0}) {
    const RampStats r = ramp_stats(u, w, s.peak_w());
    ASSERT_TRUE(r.skipped.empty()) << w;
    EXPECT_NEAR(r.max_up_w_per_s, slope, 1e-6) << w;
    EXPECT_NEAR(r.max_down_w_per_s, 0, 1e-6) << w;
    EXPECT_TRUE(std::isnan(r.max_down_at_s)) << w;  // no ramp down: nowhere
  }
  // Its swing over W is slope × W (the window holds both ends).
  for (double w : {0.05, 1.0, 10.0}) {
    const SwingStats sw = swing_stats(u, w, s.peak_w());
    EXPECT_NEAR(sw.max_w, slope * w, 1e-6) << w;
    EXPECT_NEAR(sw.p95_w, slope * w, 1e-6) << w;
  }
  // Falling: the same slope, down.
  const PowerSeries d = stab_series(0.05, 300, [&](double t) { return 5000 - slope * t; });
  const RampStats rd = ramp_stats(stab_grid(d), 1, d.peak_w());
  EXPECT_NEAR(rd.max_down_w_per_s, slope, 1e-6);
  EXPECT_NEAR(rd.max_up_w_per_s, 0, 1e-6);
  EXPECT_NEAR(swing_stats(stab_grid(d), 1, d.peak_w()).max_w, slope, 1e-6);
}

TEST(Stability, StepIsSeenAtItsTime) {
  const double step_t = 37.3, height = 800;
  const PowerSeries s =
      stab_series(0.1, 120, [&](double t) { return t < step_t - 1e-9 ? 1000 : 1000 + height; });
  const UniformSeries u = stab_grid(s);
  for (double w : {1.0, 10.0}) {
    const RampStats r = ramp_stats(u, w, s.peak_w());
    EXPECT_NEAR(r.max_up_w_per_s, height / w, 1e-6) << w;
    EXPECT_NEAR(r.max_up_at_s, step_t, 1e-6) << w;
    EXPECT_NEAR(r.max_down_w_per_s, 0, 1e-6);
  }
  const SwingStats sw = swing_stats(u, 1, s.peak_w());
  EXPECT_NEAR(sw.max_w, height, 1e-6);
  EXPECT_GE(sw.max_at_s, step_t - 1 - 1e-9);
  EXPECT_LE(sw.max_at_s, step_t);
  EXPECT_NEAR(sw.p95_w, 0, 1e-6);  // the step shows in 10 of 1190 windows
}

TEST(Stability, WindowsShorterThanThePeriodAreSkipped) {
  const PowerSeries s = stab_sine(0.5, 600, 100, 0.05);
  Result<StabilityReport> r = analyze_stability(s, StabilityOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->ramps.size(), 4u);
  EXPECT_FALSE(r->ramps[0].skipped.empty());  // 0.1 s on a 0.5 s grid
  EXPECT_TRUE(std::isnan(r->ramps[0].max_up_w_per_s));
  EXPECT_TRUE(r->ramps[1].skipped.empty());
  EXPECT_TRUE(r->band.clipped);
  bool nyquist_note = false;
  for (const std::string& n : r->notes) nyquist_note |= n.find("Nyquist") != std::string::npos;
  EXPECT_TRUE(nyquist_note);
  // JSON: null for the skipped window, the effective band.
  const auto j = stability_json(*r, std::nullopt, {});
  EXPECT_TRUE(j["ramps"][0]["max_up_w_per_s"].is_null());
  EXPECT_DOUBLE_EQ(j["band"]["effective_hi_hz"].get<double>(), 1.0);
}

TEST(Stability, UnevenSamplingIsResampled) {
  // A linear ramp sampled with jitter and one gap: the grid is the median step.
  PowerSeries s;
  s.path = "uneven";
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> jitter(-0.02, 0.02);
  double t = 0;
  for (int i = 0; i < 2000; ++i) {
    s.time_s.push_back(t);
    s.power_w.push_back(100 + 3 * t);
    t += (i == 1000 ? 5.0 : 0.1) + jitter(rng);
  }
  Result<StabilityReport> r = analyze_stability(s, StabilityOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->uniform_input);
  EXPECT_EQ(r->gaps, 1);
  EXPECT_NEAR(r->period_s, 0.1, 0.01);
  EXPECT_NEAR(r->ramps[2].max_up_w_per_s, 3, 1e-6);  // 10 s window
  EXPECT_GE(r->notes.size(), 2u);
}

TEST(Stability, EnergyOverheadAgainstReference) {
  const PowerSeries ref = stab_sine(0.1, 100, 100, 0.3);
  PowerSeries t = ref;
  for (double& p : t.power_w) p *= 1.05;
  Result<ReferenceComparison> c = compare_with_reference(t, ref);
  ASSERT_TRUE(c.ok());
  EXPECT_NEAR(c->energy_overhead_pct, 5.0, 1e-9);
  EXPECT_TRUE(std::isnan(c->throughput_loss_pct));
  EXPECT_NE(c->throughput_note.find("unknown"), std::string::npos);
}

TEST(Stability, ThroughputLossFromJobsCsv) {
  const fs::path a = stab_dir("ref"), b = stab_dir("slow");
  write_file(a / "gpus.csv", "time_s,gpu,power_w\n0,0,100\n0,1,100\n10,0,100\n10,1,100\n");
  write_file(a / "jobs.csv", "time_s,job,tokens_total\n0,0,0\n10,0,1000\n");
  // 20 s for the same 1000 tokens at 60 % of the power: throughput halved.
  write_file(b / "gpus.csv", "time_s,gpu,power_w\n0,0,60\n0,1,60\n20,0,60\n20,1,60\n");
  write_file(b / "jobs.csv", "time_s,job,tokens_total\n0,0,0\n20,0,1000\n");
  Result<PowerSeries> ra = load_power_series(a.string()), rb = load_power_series(b.string());
  ASSERT_TRUE(ra.ok()) << ra.status().message();
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  EXPECT_EQ(ra->gpus, 2);
  EXPECT_DOUBLE_EQ(ra->power_w[0], 200);
  Result<ReferenceComparison> c = compare_with_reference(*rb, *ra);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_NEAR(c->energy_overhead_pct, 20.0, 1e-9);  // 2400 J vs 2000 J
  EXPECT_NEAR(c->throughput_loss_pct, 50.0, 1e-9);
  EXPECT_NEAR(c->energy_per_token_overhead_pct, 20.0, 1e-9);
  EXPECT_TRUE(c->throughput_note.empty());
}

TEST(PowerSeries, NodeSumsGpusAndSortsRows) {
  const fs::path d = stab_dir("node");
  // Sorted by GPU, not by time: read again and sorted; GPU 1 misses t = 1 (holds).
  write_file(d / "g.csv", "time_s,gpu,power_w\n0,0,100\n1,0,110\n2,0,120\n0,1,200\n2,1,220\n");
  Result<PowerSeries> s = load_power_series((d / "g.csv").string());
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->time_s.size(), 3u);
  EXPECT_DOUBLE_EQ(s->power_w[0], 300);
  EXPECT_DOUBLE_EQ(s->power_w[1], 310);
  EXPECT_DOUBLE_EQ(s->power_w[2], 340);
  EXPECT_GT(s->unsorted_rows, 0);
  EXPECT_EQ(s->incomplete_ticks, 1);
  EXPECT_EQ(s->series, "node");
}

TEST(PowerSeries, SiteCsvAndItsErrors) {
  const fs::path d = stab_dir("site");
  write_file(d / "ok.csv", "time_s,power_w,note\n0,1e6,a\n1,1.1e6,b\n2,1.05e6,c\n");
  Result<PowerSeries> s = load_power_series((d / "ok.csv").string());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->series, "site");
  EXPECT_EQ(s->format, "site-csv");
  EXPECT_DOUBLE_EQ(s->power_w[1], 1.1e6);
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {Case{"time_s,power_w\n0,1\n1,x\n", "bad.csv:3: power_w: not a number"},
                        Case{"time_s,power_w\n0,1\n0,2\n", "bad.csv:3: time_s: not after"},
                        Case{"time_s,power_w\n0,-1\n", "bad.csv:2: power_w: negative"},
                        Case{"time_s,power_w\n0,1\nz,2\n", "bad.csv:3: time_s: not a finite"},
                        Case{"time_s,power_w\n0\n", "bad.csv:2: row: too few fields"},
                        Case{"time_s,power_w\n0,1\n", "fewer than 2 samples"}}) {
    write_file(d / "bad.csv", c.text);
    Result<PowerSeries> r = load_power_series((d / "bad.csv").string());
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().exit_code(), 2);
  }
  EXPECT_EQ(load_power_series((d / "none.csv").string()).status().exit_code(), 2);
}

TEST(StabilityLimits, ViolatedHeldAndUnjudgeable) {
  const double slope = 20;
  const PowerSeries s = stab_series(0.1, 100, [&](double t) { return 1000 + slope * t; });
  Result<StabilityReport> r = analyze_stability(s, StabilityOptions{});
  ASSERT_TRUE(r.ok());
  StabilityLimits l;
  l.max_ramp_w_per_s = 25;
  l.max_ramp_frac_per_s = 0.01;  // 20 / 2980 = 0.0067 per s: held
  Result<std::vector<LimitCheck>> c = check_limits(*r, l);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 2u);
  EXPECT_FALSE((*c)[0].violated);
  EXPECT_NEAR((*c)[0].value, slope, 1e-6);
  EXPECT_FALSE((*c)[1].violated);
  l.max_ramp_w_per_s = 15;
  c = check_limits(*r, l);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)[0].violated);
  // Band limit: a line has no variation left after detrending (fraction 0); a 1 Hz sine has
  // all of it in 0.1-5 Hz.
  StabilityLimits band;
  band.max_band_frac = 0.5;
  c = check_limits(*r, band);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)[0].violated);
  EXPECT_EQ((*c)[0].value, 0);
  Result<StabilityReport> rs = analyze_stability(stab_sine(0.05, 100, 50, 1), StabilityOptions{});
  ASSERT_TRUE(rs.ok());
  c = check_limits(*rs, band);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)[0].violated);
  EXPECT_GT((*c)[0].value, 0.99);
  // A window the report does not hold, or that is skipped, cannot be judged.
  StabilityLimits odd;
  odd.max_ramp_w_per_s = 1;
  odd.window_s = 0.05;
  EXPECT_FALSE(check_limits(*r, odd).ok());
  StabilityOptions o;
  o.ramp_windows_s = {0.05};
  Result<StabilityReport> r2 = analyze_stability(s, o);
  ASSERT_TRUE(r2.ok());
  Result<std::vector<LimitCheck>> c2 = check_limits(*r2, odd);
  ASSERT_FALSE(c2.ok());
  EXPECT_NE(c2.status().message().find("shorter than the sample period"), std::string::npos);
}

TEST(Stability, OptionsAreValidated) {
  StabilityOptions o;
  o.ramp_windows_s = {1, 0};
  EXPECT_FALSE(validate(o).ok());
  o = StabilityOptions{};
  o.band_lo_hz = 5;
  o.band_hi_hz = 1;
  EXPECT_NE(validate(o).message().find("--band"), std::string::npos);
}

}  // namespace
}  // namespace fw
