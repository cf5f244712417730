// The plan file reader (pipeline/plan_file.hpp): what `pipeline plan --json` writes reads back
// with the same per-stage caps; every malformed field is refused naming the source and the
// field.

#include "pipeline/plan_file.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/one_f_one_b.hpp"
#include "pipeline/plan_report.hpp"
#include "pipeline/planner.hpp"
#include "pipeline/stage_profile.hpp"

namespace fw::pipeline {
namespace {

using nlohmann::json;

// Three stages, the middle one heavier; power falls with the clock (a measured stage's shape).
StageProfile three_stages() {
  std::vector<ProfileRow> rows;
  const double work[] = {1.0, 1.3, 0.8};
  const double clocks[][3] = {{1400, 1, 1}, {1200, 1.12, 0.86}, {1000, 1.3, 0.8}};
  for (int s = 0; s < 3; ++s) {
    for (const auto& c : clocks) {
      rows.push_back({s, Instr::kForward, c[0], 0.1 * work[s] * c[1], 30 * work[s] * c[2]});
      rows.push_back({s, Instr::kBackward, c[0], 0.2 * work[s] * c[1], 60 * work[s] * c[2]});
    }
  }
  auto p = make_stage_profile(rows, "synthetic");
  EXPECT_TRUE(p.ok());
  return *p;
}

json planned_json(double slowdown = 0.05, double min_segment_s = 2.2) {
  PlanOptions o;
  o.min_segment_s = min_segment_s;
  o.microbatches = 8;
  o.global_batch = 8;
  o.tp = 1;
  o.slowdown_max = slowdown;
  o.blocking_w = 60;
  o.min_cap_w = 100;
  o.max_cap_w = 400;
  auto plan = plan_pipeline(three_stages(), o);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  const OneFOneB dag(3, o.microbatches);
  return plan_json(*plan, {"synthetic.csv", "a100-sxm4-80gb", 400, &dag});
}

TEST(PlanFile, ReadsWhatPipelinePlanWrites) {
  const json j = planned_json();
  auto p = parse_plan_json(j.dump(2), "plan.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->source, "plan.json");
  EXPECT_EQ(p->stages, 3);
  EXPECT_EQ(p->microbatches, 8);
  EXPECT_EQ(p->gpu, "a100-sxm4-80gb");
  EXPECT_EQ(p->best_mode, j["mode"].get<std::string>());
  EXPECT_DOUBLE_EQ(p->cap_min_w, 100);
  EXPECT_DOUBLE_EQ(p->cap_max_w, 400);
  ASSERT_EQ(p->constant.size(), 3u);
  int capped = 0;
  for (int s = 0; s < 3; ++s) {
    const json& st = j["constant"]["stages"][s];
    EXPECT_EQ(p->constant[s].uncapped, st["cap_w"].is_null()) << s;
    if (!st["cap_w"].is_null()) {
      EXPECT_DOUBLE_EQ(p->constant[s].cap_w, st["cap_w"].get<double>()) << s;
      ++capped;
    }
    EXPECT_DOUBLE_EQ(p->constant[s].forward_mhz, st["forward_mhz"].get<double>());
  }
  // At 5 % slowdown the plan lowers a clock somewhere (else this test checks nothing).
  EXPECT_GE(capped, 1);
  EXPECT_DOUBLE_EQ(p->constant_energy_saved, j["constant"]["energy_saved"].get<double>());
}

TEST(PlanFile, NullCapIsUncapped) {
  json j = planned_json();
  j["constant"]["stages"][1]["cap_w"] = nullptr;
  j["constant"]["stages"][0]["cap_w"] = 250.5;
  auto p = parse_plan_json(j.dump(), "p.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->constant[1].uncapped);
  EXPECT_FALSE(p->constant[0].uncapped);
  EXPECT_DOUBLE_EQ(p->constant[0].cap_w, 250.5);
}

TEST(PlanFile, ScheduleSwitchesWhenAStageHasSegments) {
  json j = planned_json();
  j["schedule"]["segments"] = json::array({json::array({{{"cap_w", 200}}}),
                                           json::array({{{"cap_w", 200}}, {{"cap_w", 300}}}),
                                           json::array({{{"cap_w", 200}}})});
  auto p = parse_plan_json(j.dump(), "p.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->schedule_switches);
  j["schedule"]["segments"][1].erase(1);
  p = parse_plan_json(j.dump(), "p.json");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->schedule_switches);
}

// The step-keyed schedule: each segment's start on the planned 1F1B timeline (planner.hpp
// PlanSegment::start_s). One segment for the iteration (constant) starts with the stage's fill:
// stage 0 at 0, each later stage after the forwards before it. A plan's schedule reads back in
// start order, its caps as written; a file without starts (before them) has no schedule.
TEST(PlanFile, ReadsTheStepKeyedSchedule) {
  const json j = planned_json(0.05, 0);
  const json& con = j["constant"]["segments"];
  ASSERT_EQ(con.size(), 3u);
  EXPECT_EQ(con[0][0]["start_s"].get<double>(), 0);
  EXPECT_GT(con[1][0]["start_s"].get<double>(), 0);
  EXPECT_GT(con[2][0]["start_s"].get<double>(), con[1][0]["start_s"].get<double>());
  auto p = parse_plan_json(j.dump(), "p.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const double T = j["schedule"]["pipeline_time_s"].get<double>();
  EXPECT_DOUBLE_EQ(p->schedule_time_s, T);
  ASSERT_EQ(p->schedule.size(), 3u);
  size_t segments = 0;
  for (size_t s = 0; s < 3; ++s) {
    ASSERT_EQ(p->schedule[s].size(), j["schedule"]["segments"][s].size());
    for (size_t k = 0; k < p->schedule[s].size(); ++k) {
      EXPECT_GE(p->schedule[s][k].start_s, k ? p->schedule[s][k - 1].start_s : 0.0);
      EXPECT_LE(p->schedule[s][k].start_s, T);
      ++segments;
    }
  }
  EXPECT_GT(segments, 3u);  // min_segment_s 0: some stage is cut (else this checks little)
  json old = j;
  for (json& st : old["schedule"]["segments"])
    for (json& g : st) g.erase("start_s");
  auto q = parse_plan_json(old.dump(), "old.json");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_TRUE(q->schedule.empty());
}

// Each malformation, and the field its error must name.
struct Bad {
  const char* what;
  void (*edit)(json&);
  const char* field;
};

TEST(PlanFile, RefusesEachBadFieldNamingIt) {
  const Bad cases[] = {
      {"stages missing", [](json& j) { j.erase("stages"); }, "stages: missing"},
      {"stages zero", [](json& j) { j["stages"] = 0; }, "stages: out of range"},
      {"stages a string", [](json& j) { j["stages"] = "3"; }, "stages: expected an integer"},
      {"microbatches missing", [](json& j) { j.erase("microbatches"); }, "microbatches: missing"},
      {"mode unknown", [](json& j) { j["mode"] = "zigzag"; }, "mode: expected"},
      {"straggler plan", [](json& j) { j["straggler_factor"] = 1.2; }, "straggler_factor:"},
      {"constant missing", [](json& j) { j.erase("constant"); }, "constant: missing"},
      {"constant.stages too short", [](json& j) { j["constant"]["stages"].erase(2); },
       "constant.stages: 2 entries for 3 stages"},
      {"cap a string", [](json& j) { j["constant"]["stages"][2]["cap_w"] = "200"; },
       "constant.stages[2].cap_w: expected a cap"},
      {"cap negative", [](json& j) { j["constant"]["stages"][1]["cap_w"] = -5; },
       "constant.stages[1].cap_w: expected a cap"},
      {"cap zero", [](json& j) { j["constant"]["stages"][0]["cap_w"] = 0; },
       "constant.stages[0].cap_w"},
      {"cap missing", [](json& j) { j["constant"]["stages"][0].erase("cap_w"); },
       "constant.stages[0].cap_w: missing"},
      {"stages out of order", [](json& j) { j["constant"]["stages"][1]["stage"] = 2; },
       "constant.stages[1].stage: expected 1"},
      {"clock missing", [](json& j) { j["constant"]["stages"][1].erase("backward_mhz"); },
       "constant.stages[1].backward_mhz: missing"},
      {"cap range reversed",
       [](json& j) {
         j["cap_range_w"] = {400, 100};
       },
       "cap_range_w:"},
      {"gpu a number", [](json& j) { j["gpu"] = 7; }, "gpu: expected a string"},
      {"segments short", [](json& j) { j["schedule"]["segments"].erase(0); }, "schedule.segments:"},
      {"segment start negative", [](json& j) { j["schedule"]["segments"][1][0]["start_s"] = -1; },
       "schedule.segments[1][0].start_s: out of range"},
      {"segment start past the iteration",
       [](json& j) { j["schedule"]["segments"][0][0]["start_s"] = 1e6; },
       "schedule.segments[0][0].start_s: out of range"},
      {"segment cap a string", [](json& j) { j["schedule"]["segments"][2][0]["cap_w"] = "x"; },
       "schedule.segments[2][0].cap_w: expected a cap"},
      {"schedule time missing", [](json& j) { j["schedule"].erase("pipeline_time_s"); },
       "schedule.pipeline_time_s: missing"},
      {"not an object",
       [](json& j) {
         j = json::array({1, 2});
       },
       "(document)"},
  };
  for (const Bad& b : cases) {
    json j = planned_json();
    b.edit(j);
    auto p = parse_plan_json(j.dump(), "dir/plan.json");
    ASSERT_FALSE(p.ok()) << b.what;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << b.what;
    EXPECT_EQ(p.status().message().rfind("dir/plan.json: ", 0), 0u)
        << b.what << ": " << p.status().message();
    EXPECT_NE(p.status().message().find(b.field), std::string::npos)
        << b.what << ": " << p.status().message();
  }
}

TEST(PlanFile, NotJsonNamesTheByte) {
  auto p = parse_plan_json("{\"stages\": 3,, }", "x.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("x.json: not JSON (parse error at byte"), std::string::npos)
      << p.status().message();
}

TEST(PlanFile, MissingFileNamesThePath) {
  auto p = read_plan_file("/nonexistent/plan.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("/nonexistent/plan.json"), std::string::npos);
}

}  // namespace
}  // namespace fw::pipeline
