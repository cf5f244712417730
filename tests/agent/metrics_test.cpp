#include "agent/metrics.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../require_tool.hpp"  // FW_REQUIRE_TOOL
#include "test_state.hpp"

namespace fw::agent {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(Metrics, GpuSeriesCarryDcgmLabels) {
  auto text = render_metrics(testing::sample_state(), "0.1.0", 1.8e9 + 2);
  EXPECT_TRUE(
      has_line(text,
               "flexwatt_gpu_power_watts{gpu=\"1\",UUID=\"GPU-00000001\",modelName=\"NVIDIA "
               "H100 80GB HBM3\",hostname=\"node-7\"} 310"))
      << text;
  EXPECT_TRUE(has_line(text, "# TYPE flexwatt_gpu_energy_joules_total counter"));
  EXPECT_NE(text.find("flexwatt_gpu_sm_clock_hertz{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 1755000000\n"), std::string::npos);
}

TEST(Metrics, FlexwattSeries) {
  auto s = testing::sample_state();
  s.version = 5;
  auto text = render_metrics(s, "0.1.0", 1.8e9 + 2);
  EXPECT_TRUE(has_line(text, "flexwatt_node_budget_watts{scope=\"node\",hostname=\"node-7\"} 650"));
  EXPECT_TRUE(
      has_line(text, "flexwatt_budget_violations_total{window=\"30s\",hostname=\"node-7\"} 2"));
  EXPECT_TRUE(
      has_line(text, "flexwatt_budget_window_mean_watts{window=\"300s\",hostname=\"node-7\"} 590"));
  EXPECT_TRUE(
      has_line(text, "flexwatt_limiter_actions_total{action=\"clamped\",hostname=\"node-7\"} 4"));
  EXPECT_TRUE(
      has_line(text, "flexwatt_fallbacks_total{reason=\"stale_telemetry\",hostname=\"node-7\"} 1"));
  EXPECT_TRUE(has_line(text, "flexwatt_loop_late_ticks_total{hostname=\"node-7\"} 3"));
  EXPECT_TRUE(has_line(text, "flexwatt_state_age_seconds{hostname=\"node-7\"} 2"));
  EXPECT_TRUE(has_line(text,
                       "flexwatt_job_knob_value{job_id=\"grpo-1\",knob=\"gen_concurrency\","
                       "hostname=\"node-7\"} 32"));
  EXPECT_EQ(text.find("knob=\"group_size\""), std::string::npos);  // NaN knob left out
  EXPECT_TRUE(
      has_line(text, "flexwatt_job_tokens_total{job_id=\"grpo-1\",hostname=\"node-7\"} 123456"));
  EXPECT_EQ(text.find("job=\""), std::string::npos);  // never the reserved `job` label
  // What the coordinator and stabilize hand a job: pause, start gate, fill targets.
  EXPECT_TRUE(has_line(text, "flexwatt_job_paused{job_id=\"grpo-1\",hostname=\"node-7\"} 0"));
  EXPECT_EQ(text.find("flexwatt_job_start_gate_unix_seconds{"), std::string::npos);  // none
  EXPECT_EQ(text.find("flexwatt_job_stop_gate_unix_seconds{"), std::string::npos);
  s.jobs[0].paused = true;
  s.jobs[0].start_at_unix_s = 1.9e9;
  s.jobs[0].stop_at_unix_s = 1.95e9;
  s.jobs[0].fill_w = {{3, 600}};
  text = render_metrics(s, "0.1.0", 1.8e9 + 2);
  EXPECT_TRUE(has_line(text, "flexwatt_job_paused{job_id=\"grpo-1\",hostname=\"node-7\"} 1"));
  EXPECT_TRUE(has_line(
      text,
      "flexwatt_job_start_gate_unix_seconds{job_id=\"grpo-1\",hostname=\"node-7\"} 1900000000"));
  EXPECT_TRUE(has_line(
      text,
      "flexwatt_job_stop_gate_unix_seconds{job_id=\"grpo-1\",hostname=\"node-7\"} 1950000000"));
  EXPECT_TRUE(has_line(
      text, "flexwatt_job_fill_watts{job_id=\"grpo-1\",gpu=\"3\",hostname=\"node-7\"} 600"));
}

// Issue 47 item 3: the agent served DCGM_FI_DEV_ENFORCED_POWER_LIMIT and
// DCGM_FI_DEV_CLOCKS_EVENT_REASONS always, so where dcgm-exporter runs too two sources answered
// the same series. They are now opt-in (server.metrics_dcgm_names); the flexwatt_* series carry
// the same values.
TEST(Metrics, DcgmNamesOnlyWhenAskedFor) {
  auto s = testing::sample_state();
  s.gpus[0].clock_event_reasons = 0x4;
  const std::string text = render_metrics(s, "0.1.0", 1.8e9 + 2);
  EXPECT_EQ(text.find("DCGM_FI_"), std::string::npos) << text;
  EXPECT_NE(text.find("flexwatt_gpu_power_cap_watts{"), std::string::npos);
  EXPECT_NE(render_metrics(s, "0.1.0", 1.8e9 + 2, true).find("DCGM_FI_DEV_ENFORCED_POWER_LIMIT{"),
            std::string::npos);
}

// The enforced limit and the throttle reasons under dcgm-exporter's names and labels (when
// asked for), and the reasons split into one 0/1 series per NVML bit.
TEST(Metrics, EnforcedLimitAndThrottleReasons) {
  auto s = testing::sample_state();
  s.gpus[0].clock_event_reasons = 0x4 | 0x40;  // SW power cap + HW thermal slowdown
  s.gpus[1].clock_event_reasons = 0;
  auto text = render_metrics(s, "0.1.0", 1.8e9 + 2, true);
  const std::string gpu0 = "gpu=\"0\",UUID=\"GPU-00000000\",modelName=\"NVIDIA H100 80GB HBM3\"";
  EXPECT_TRUE(has_line(text, "# TYPE DCGM_FI_DEV_ENFORCED_POWER_LIMIT gauge")) << text;
  EXPECT_TRUE(
      has_line(text, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT{" + gpu0 + ",hostname=\"node-7\"} 500"));
  EXPECT_TRUE(
      has_line(text, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{" + gpu0 + ",hostname=\"node-7\"} 68"));
  EXPECT_NE(text.find("DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"1\""), std::string::npos);
  const auto reason = [&](const char* r) {
    return "flexwatt_gpu_clocks_event_reason_active{" + gpu0 + ",reason=\"" + r +
           "\",hostname=\"node-7\"} ";
  };
  EXPECT_TRUE(has_line(text, reason("sw_power_cap") + "1"));
  EXPECT_TRUE(has_line(text, reason("hw_thermal_slowdown") + "1"));
  EXPECT_TRUE(has_line(text, reason("hw_slowdown") + "0"));
  EXPECT_TRUE(has_line(text, reason("gpu_idle") + "0"));
  s.gpus[0].clock_event_reasons = kUnset;  // not read: no series at all
  s.gpus[1].clock_event_reasons = kUnset;
  text = render_metrics(s, "0.1.0", 1.8e9 + 2, true);
  EXPECT_EQ(text.find("DCGM_FI_DEV_CLOCKS_EVENT_REASONS{"), std::string::npos);
  EXPECT_EQ(text.find("flexwatt_gpu_clocks_event_reason_active{"), std::string::npos);
}

// Issue 44: failed cap writes per GPU (a counter, 0 included) and the persistence mode found at
// start (0/1; left out when the driver does not say).
TEST(Metrics, CapWriteFailuresAndPersistenceMode) {
  auto s = testing::sample_state();
  s.gpus[0].cap_write_failures_total = 7;
  s.gpus[0].persistence_mode = 0;
  auto text = render_metrics(s, "0.1.0", 1.8e9 + 2);
  const std::string gpu0 = "gpu=\"0\",UUID=\"GPU-00000000\",modelName=\"NVIDIA H100 80GB HBM3\"";
  const std::string gpu1 = "gpu=\"1\",UUID=\"GPU-00000001\",modelName=\"NVIDIA H100 80GB HBM3\"";
  EXPECT_TRUE(has_line(text, "# TYPE flexwatt_gpu_cap_write_failures_total counter")) << text;
  EXPECT_TRUE(
      has_line(text, "flexwatt_gpu_cap_write_failures_total{" + gpu0 + ",hostname=\"node-7\"} 7"));
  EXPECT_TRUE(
      has_line(text, "flexwatt_gpu_cap_write_failures_total{" + gpu1 + ",hostname=\"node-7\"} 0"));
  EXPECT_TRUE(
      has_line(text, "flexwatt_gpu_persistence_mode_enabled{" + gpu0 + ",hostname=\"node-7\"} 0"));
  EXPECT_EQ(text.find("flexwatt_gpu_persistence_mode_enabled{gpu=\"1\""), std::string::npos);
}

TEST(Metrics, UnmeasuredValuesAreLeftOut) {
  AgentState s;
  s.hostname = "h";
  s.gpus.resize(1);
  auto text = render_metrics(s, "0.1.0", 0);
  EXPECT_TRUE(has_line(text, "# TYPE flexwatt_gpu_power_watts gauge"));
  EXPECT_EQ(text.find("flexwatt_gpu_power_watts{"), std::string::npos);
  EXPECT_EQ(text.find("flexwatt_state_age_seconds{"), std::string::npos);  // nothing published
}

TEST(Metrics, EscapesLabelValues) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

// Runs promtool (Debian package `prometheus`) on `text`; returns its exit status and output.
int promtool_check(const std::string& text, std::string& out) {
  auto path = std::filesystem::temp_directory_path() /
              ("fw_metrics_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(path) << text;
  std::string cmd = "promtool check metrics < " + path.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  out.clear();
  if (!p) return -1;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  int rc = ::pclose(p);
  std::filesystem::remove(path);
  return rc;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t i = 0; (i = s.find(from, i)) != std::string::npos; i += to.size()) {
    s.replace(i, from.size(), to);
  }
  return s;
}

// promtool parses the scrape and lints it. Its only complaint may be the camelCase label
// names `UUID` and `modelName`, which are dcgm-exporter's own (kept so series join): with
// those two renamed, the lint must be clean.
TEST(Metrics, PromtoolCheckMetricsPasses) {
  FW_REQUIRE_TOOL(testing_tools::on_path("promtool"), "promtool (Debian package prometheus)");
  auto s = testing::sample_state();
  s.version = 5;
  s.jobs[0].id = "odd \"id\"\\x";        // escaping must keep the text parseable
  s.gpus[0].clock_event_reasons = 0x44;  // the throttle-reason families with samples
  s.gpus[1].clock_event_reasons = 0;
  s.gpus[0].persistence_mode = 1;  // the persistence family with a sample
  s.gpus[0].cap_write_failures_total = 3;
  std::string text = render_metrics(s, "0.1.0", 1.8e9 + 2);
  std::string out;
  int rc = promtool_check(text, out);
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    EXPECT_NE(l.find("label names should be written in 'snake_case' not 'camelCase'"),
              std::string::npos)
        << l;
  }
  EXPECT_TRUE(rc == 0 || !out.empty()) << "promtool failed without a message";
  std::string renamed =
      replace_all(replace_all(text, "UUID=", "uuid="), "modelName=", "model_name=");
  rc = promtool_check(renamed, out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "");
  // A broken exposition is caught: the check can fail.
  EXPECT_NE(promtool_check("flexwatt_x{a=\"1\" 2\n", out), 0);
}

}  // namespace
}  // namespace fw::agent
