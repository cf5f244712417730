// A job's announcements (issue #48: starts_in_s, ends_in_s, checkpoint_in_iters, checkpoint_s,
// sent with its progress reports) on their way to `stabilize` in the agent: aged by the
// registry to the time left now and dropped once stale, carried by the job channel into the
// plant's JobReading, and acted on by the controller on the fake NVML's Blackwell GPUs (fake
// clock: no sleeping; nothing here touches a real GPU).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "agent/job_registry.hpp"
#include "agent/node_agent.hpp"
#include "agent/registry_channel.hpp"
#include "step_clock.hpp"

namespace fw::agent {
namespace {

namespace fs = std::filesystem;

JobAnnouncements announced(double starts_in_s, double ends_in_s, double checkpoint_in_iters,
                           double checkpoint_s) {
  JobAnnouncements a;
  a.starts_in_s = starts_in_s;
  a.ends_in_s = ends_in_s;
  a.checkpoint_in_iters = checkpoint_in_iters;
  a.checkpoint_s = checkpoint_s;
  return a;
}

JobProgress progress(double steps, std::optional<Phase> phase, JobAnnouncements a = {}) {
  JobProgress p;
  p.tokens_total = 100 * steps;
  p.steps_total = steps;
  p.phase = phase;
  p.announced = a;
  return p;
}

TEST(AgeAnnouncements, TimesLeftFallAndClampIterationsAndLengthsStayStaleIsUnset) {
  const JobAnnouncements r = announced(10, 20, 3, 12);
  JobAnnouncements a = age_announcements(r, 0, 60);
  EXPECT_DOUBLE_EQ(a.starts_in_s, 10);
  EXPECT_DOUBLE_EQ(a.ends_in_s, 20);
  a = age_announcements(r, 5, 60);
  EXPECT_DOUBLE_EQ(a.starts_in_s, 5);
  EXPECT_DOUBLE_EQ(a.ends_in_s, 15);
  EXPECT_DOUBLE_EQ(a.checkpoint_in_iters, 3);  // iterations: as reported
  EXPECT_DOUBLE_EQ(a.checkpoint_s, 12);        // a length: as reported
  a = age_announcements(r, 14, 60);
  EXPECT_DOUBLE_EQ(a.starts_in_s, 0);  // due: clamped, not negative
  EXPECT_DOUBLE_EQ(a.ends_in_s, 6);
  a = age_announcements(r, 60, 60);  // at the bound: still held
  EXPECT_DOUBLE_EQ(a.ends_in_s, 0);
  EXPECT_DOUBLE_EQ(a.checkpoint_in_iters, 3);
  a = age_announcements(r, 60.5, 60);  // older: nothing
  EXPECT_TRUE(std::isnan(a.starts_in_s));
  EXPECT_TRUE(std::isnan(a.ends_in_s));
  EXPECT_TRUE(std::isnan(a.checkpoint_in_iters));
  EXPECT_TRUE(std::isnan(a.checkpoint_s));
  a = age_announcements(r, 1e6, 0);  // no bound: never stale
  EXPECT_DOUBLE_EQ(a.starts_in_s, 0);
  EXPECT_DOUBLE_EQ(a.checkpoint_s, 12);
  // Not announced stays not announced.
  a = age_announcements(JobAnnouncements{}, 5, 60);
  EXPECT_TRUE(std::isnan(a.starts_in_s));
  EXPECT_TRUE(std::isnan(a.checkpoint_in_iters));
}

// A report at t = 100; the reading at t + 5 s shows starts_in_s 5 less; a report without
// announcements clears them; past the staleness bound they are unset.
TEST(JobRegistry, AnnouncementsAgeWithTheReportAndGoStale) {
  double now = 100;
  JobRegistry jobs(4, [&] { return now; });
  jobs.set_announcement_stale_after_s(30);
  ASSERT_EQ(jobs.add("pt", JobInfo{}), JobRegistry::Outcome::kOk);
  EXPECT_TRUE(std::isnan(jobs.snapshot()[0].announced.starts_in_s));  // none before a report
  ASSERT_EQ(jobs.report("pt", progress(1, Phase::kIdle, announced(8, 600, 4, 10))),
            JobRegistry::Outcome::kOk);
  now = 105;
  RegisteredJob s = jobs.snapshot()[0];
  EXPECT_DOUBLE_EQ(s.announced.starts_in_s, 3);
  EXPECT_DOUBLE_EQ(s.announced.ends_in_s, 595);
  EXPECT_DOUBLE_EQ(s.announced.checkpoint_in_iters, 4);
  EXPECT_DOUBLE_EQ(s.announced.checkpoint_s, 10);
  EXPECT_DOUBLE_EQ(jobs.get("pt")->announced.starts_in_s, 3);  // the job's own view: the same
  now = 110;
  EXPECT_DOUBLE_EQ(jobs.snapshot()[0].announced.starts_in_s, 0);
  // The next report replaces them whole: what it leaves out is unknown.
  ASSERT_EQ(jobs.report("pt", progress(2, Phase::kForward, announced(kUnset, 590, kUnset, 10))),
            JobRegistry::Outcome::kOk);
  now = 111;
  s = jobs.snapshot()[0];
  EXPECT_TRUE(std::isnan(s.announced.starts_in_s));
  EXPECT_DOUBLE_EQ(s.announced.ends_in_s, 589);
  EXPECT_TRUE(std::isnan(s.announced.checkpoint_in_iters));
  // A regressed report changes nothing, its announcements included.
  EXPECT_EQ(jobs.report("pt", progress(1, std::nullopt, announced(1, 1, 1, 1))),
            JobRegistry::Outcome::kRegressed);
  EXPECT_DOUBLE_EQ(jobs.snapshot()[0].announced.ends_in_s, 589);
  now = 140;  // 30 s after the report: at the bound
  EXPECT_DOUBLE_EQ(jobs.snapshot()[0].announced.ends_in_s, 560);
  now = 140.5;  // older than the bound
  s = jobs.snapshot()[0];
  EXPECT_TRUE(std::isnan(s.announced.ends_in_s));
  EXPECT_TRUE(std::isnan(s.announced.checkpoint_s));
  EXPECT_DOUBLE_EQ(s.last_report_age_s, 30.5);
}

// The step's age grows with the report's: the iteration under way began that much earlier
// (a pipeline plan's schedule anchors there, plan_controller.hpp); stale like the others.
TEST(AgeAnnouncements, TheStepsAgeGrowsSinceTheReport) {
  JobAnnouncements a;
  a.step_age_s = 0.25;
  EXPECT_DOUBLE_EQ(age_announcements(a, 1.5, 30).step_age_s, 1.75);
  EXPECT_DOUBLE_EQ(age_announcements(a, 0, 30).step_age_s, 0.25);
  EXPECT_TRUE(std::isnan(age_announcements(a, 31, 30).step_age_s));
  EXPECT_TRUE(std::isnan(age_announcements(JobAnnouncements{}, 1, 30).step_age_s));
}

// The job channel (what the NVML plant copies into its snapshot, and the sim plant lays over
// the simulated job) carries the aged announcements into the JobReading.
TEST(RegistryChannel, CarriesTheAgedAnnouncementsIntoTheReading) {
  double now = 50;
  JobRegistry jobs(4, [&] { return now; });
  RegistryChannel channel(jobs);
  ASSERT_EQ(jobs.add("pt", JobInfo{}), JobRegistry::Outcome::kOk);
  ASSERT_EQ(jobs.add("other", JobInfo{}), JobRegistry::Outcome::kOk);
  ASSERT_EQ(jobs.report("pt", progress(7, Phase::kForward, announced(kUnset, 30, 1, 12.5))),
            JobRegistry::Outcome::kOk);
  now = 55;
  auto js = channel.jobs();
  ASSERT_EQ(js.size(), 2u);
  const JobReading& r = js[0].reading;
  EXPECT_EQ(r.phase, Phase::kForward);
  EXPECT_DOUBLE_EQ(r.steps_total, 7);
  EXPECT_TRUE(std::isnan(r.starts_in_s));
  EXPECT_DOUBLE_EQ(r.ends_in_s, 25);
  EXPECT_DOUBLE_EQ(r.checkpoint_in_iters, 1);
  EXPECT_DOUBLE_EQ(r.checkpoint_s, 12.5);
  EXPECT_TRUE(std::isnan(js[1].reading.ends_in_s));  // a job that announced nothing
  EXPECT_TRUE(std::isnan(js[1].reading.checkpoint_in_iters));
  now = 50 + kDefaultAnnouncementStaleS + 1;  // the registry's default bound
  EXPECT_TRUE(std::isnan(channel.jobs()[0].reading.checkpoint_in_iters));
  // The step's age, as of the read.
  JobAnnouncements step;
  step.step_age_s = 0.5;
  ASSERT_EQ(jobs.report("pt", progress(8, Phase::kForward, step)), JobRegistry::Outcome::kOk);
  now += 1.25;
  EXPECT_DOUBLE_EQ(channel.jobs()[0].reading.step_age_s, 1.75);
  EXPECT_TRUE(std::isnan(channel.jobs()[1].reading.step_age_s));
}

// The fill hook: the channel says which job declared it; the plant's targets reach only such a
// job, merged per GPU, each change bumping knob_version (a long poll wakes on it).
TEST(RegistryChannel, CarriesTheFillHookAndItsTargets) {
  JobRegistry jobs(4, [] { return 0.0; });
  RegistryChannel channel(jobs);
  ASSERT_EQ(jobs.add("hooked", JobInfo{}, true), JobRegistry::Outcome::kOk);
  ASSERT_EQ(jobs.add("plain", JobInfo{}), JobRegistry::Outcome::kOk);
  auto js = channel.jobs();
  ASSERT_EQ(js.size(), 2u);
  EXPECT_TRUE(js[0].fill);
  EXPECT_FALSE(js[1].fill);
  const uint64_t v0 = jobs.get("hooked")->knob_version;
  channel.set_fill("hooked", {{0, 600}, {1, 600}});
  channel.set_fill("plain", {{2, 600}});
  EXPECT_EQ(jobs.get("hooked")->fill_w, (std::map<int, double>{{0, 600}, {1, 600}}));
  EXPECT_EQ(jobs.get("hooked")->knob_version, v0 + 1);
  EXPECT_TRUE(jobs.get("plain")->fill_w.empty());
  EXPECT_FALSE(jobs.set_fill("plain", {{2, 600}}));
  EXPECT_TRUE(jobs.set_fill("hooked", {{1, 600}}));  // unchanged: no new version
  EXPECT_EQ(jobs.get("hooked")->knob_version, v0 + 1);
  EXPECT_TRUE(jobs.set_fill("hooked", {{1, 0}}));
  EXPECT_EQ(jobs.get("hooked")->fill_w, (std::map<int, double>{{0, 600}, {1, 0}}));
  EXPECT_EQ(jobs.get("hooked")->knob_version, v0 + 2);
}

// GET /v1/jobs and /v1/status show what the controllers read: the announcements as of now.
TEST(RegisteredJobJson, ShowsTheAnnouncementsAsOfNow) {
  RegisteredJob j;
  j.id = "pt";
  j.announced = announced(kUnset, 25, 1, 12.5);
  const nlohmann::json out = to_json(j);
  ASSERT_TRUE(out.contains("announced")) << out.dump();
  EXPECT_TRUE(out["announced"]["starts_in_s"].is_null()) << out.dump();
  EXPECT_EQ(out["announced"]["ends_in_s"], 25) << out.dump();
  EXPECT_EQ(out["announced"]["checkpoint_in_iters"], 1) << out.dump();
  EXPECT_EQ(out["announced"]["checkpoint_s"], 12.5) << out.dump();
}

std::string read_lines(const std::string& path) {
  std::ifstream in(path);
  std::string out, line;
  while (std::getline(in, line)) out += line + "|";
  return out;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The agent on two fake B200s running stabilize:pre_fill=off: a training job that announces
// its checkpoint after the iteration under way (checkpoint_in_iters 1, checkpoint_s 10) moves
// the GPUs' smoothing from steady (floor 50 %, no ramp limit) to the hold level before the
// checkpoint (floor 85 %, ramp-down 50 W/s); its next report without the announcement puts
// steady back. Before, the job channel dropped the announcement and the GPUs stayed steady.
TEST(AgentAnnouncements, ACheckpointAnnouncedMovesTheSmoothingToTheHoldLevel) {
  char tmpl[] = "/tmp/fw_announce_agent_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ::setenv("FAKE_NVML_STATE", (dir + "/state.txt").c_str(), 1);
  std::ofstream(dir + "/script.txt") << "gpus 2\nprofile * b200\npower * 900\n";
  ::setenv("FAKE_NVML_SCRIPT", (dir + "/script.txt").c_str(), 1);
  AgentConfig cfg;
  cfg.plant.backend = "fake-nvml";
  cfg.plant.nvml_library = FAKE_NVML_LIBRARY;
  cfg.period_s = 0.1;
  cfg.duration_s = 1.8;
  cfg.budget_w = 2000;
  cfg.controller = "stabilize:pre_fill=off";
  cfg.restore_file = dir + "/saved.json";
  cfg.lock_file = dir + "/agent.lock";
  cfg.server.unix_socket_path = dir + "/agent.sock";
  cfg.server.tcp_port = -1;
  const std::string steady = "|0 smoothing_profile 0 50 100000 100000 0|";
  const std::string hold = "|0 smoothing_profile 0 85 100000 50 0|";
  const std::string hold1 = "|1 smoothing_profile 0 85 100000 50 0|";
  std::string before_announcement, announced_ckpt, after;
  {
    NodeAgent a(cfg);
    Status s = a.start();
    ASSERT_TRUE(s.ok()) << s.message();
    JobInfo info;
    info.kind = "pretrain";
    info.gpus = {0, 1};
    ASSERT_EQ(a.jobs().add("pt", info), JobRegistry::Outcome::kOk);
    testing::StepClock clock;
    int stage = 0;
    clock.on_sleep = [&] {
      const double t = clock.now_s();
      if (stage == 0 && t >= 0.2) {
        (void)a.jobs().report("pt", progress(1, Phase::kForward));
        stage = 1;
      } else if (stage == 1 && t >= 0.7) {
        before_announcement = read_lines(dir + "/state.txt");
        (void)a.jobs().report("pt", progress(2, Phase::kForward, announced(kUnset, kUnset, 1, 10)));
        stage = 2;
      } else if (stage == 2 && t >= 1.2) {
        announced_ckpt = read_lines(dir + "/state.txt");
        (void)a.jobs().report("pt", progress(3, Phase::kForward));
        stage = 3;
      }
    };
    AgentRunSummary sum = a.run(clock, {});
    after = read_lines(dir + "/state.txt");
    EXPECT_EQ(sum.fallbacks, 0);
    EXPECT_EQ(sum.write_failures, 0);
    EXPECT_TRUE(a.shutdown().ok());
  }
  EXPECT_TRUE(contains(before_announcement, steady)) << before_announcement;
  EXPECT_TRUE(contains(announced_ckpt, hold)) << announced_ckpt;
  EXPECT_TRUE(contains(announced_ckpt, hold1)) << announced_ckpt;
  EXPECT_TRUE(contains(after, steady)) << after;
  ::unsetenv("FAKE_NVML_SCRIPT");
  ::unsetenv("FAKE_NVML_STATE");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fw::agent
