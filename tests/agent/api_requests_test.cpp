#include "agent/api_requests.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace fw::agent {
namespace {

TEST(BudgetRequest, AcceptsWattsWindowAndSchedule) {
  BudgetRequest r;
  auto err = parse_budget_request(
      R"({"watts": 600, "window_s": 10, "schedule": [{"after_s": 60, "watts": 400}],
          "expected_version": 3})",
      r);
  ASSERT_FALSE(err) << err->message;
  ASSERT_EQ(r.budget.schedule.size(), 2u);
  EXPECT_EQ(r.budget.schedule[0].after_s, 0);
  EXPECT_EQ(r.budget.schedule[0].watts, 600);
  EXPECT_EQ(r.budget.schedule[1].watts, 400);
  EXPECT_EQ(r.budget.schedule[1].window_s, 10);  // inherits the top-level window
  EXPECT_EQ(r.budget.watts, 600);
  EXPECT_EQ(r.budget.scope, "node");
  EXPECT_EQ(r.budget.source, "api");
  EXPECT_EQ(r.expected_version, 3u);
}

TEST(BudgetRequest, MalformedIs400AndInvalidIs422) {
  BudgetRequest r;
  EXPECT_EQ(parse_budget_request("{nope", r)->status, 400);
  EXPECT_EQ(parse_budget_request("[1]", r)->status, 400);
  EXPECT_EQ(parse_budget_request(R"({"watts": "600"})", r)->status, 400);
  EXPECT_EQ(parse_budget_request(R"({"watts": -1})", r)->status, 422);
  EXPECT_EQ(parse_budget_request(R"({"watts": 0})", r)->status, 422);
  EXPECT_EQ(parse_budget_request(R"({})", r)->status, 422);
  EXPECT_EQ(parse_budget_request(R"({"watts": 500, "window_s": 0})", r)->status, 422);
  EXPECT_EQ(parse_budget_request(R"({"watts": 500, "scope": "galaxy"})", r)->status, 422);
  auto unknown = parse_budget_request(R"({"watts": 500, "wats": 1})", r);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 422);
  EXPECT_NE(unknown->message.find("wats: unknown field"), std::string::npos);
  auto order = parse_budget_request(
      R"({"watts": 500, "schedule": [{"after_s": 60, "watts": 1}, {"after_s": 30, "watts": 2}]})",
      r);
  ASSERT_TRUE(order);
  EXPECT_EQ(order->status, 422);
  EXPECT_NE(order->message.find("schedule[1].after_s"), std::string::npos) << order->message;
  EXPECT_EQ(parse_budget_request(R"({"watts": 500, "expected_version": -2})", r)->status, 400);
}

TEST(ControllerRequest, ChecksSyntax) {
  ControllerRequest r;
  ASSERT_FALSE(parse_controller_request(R"({"controller": "pid:kp=0.5,ki=0.1"})", r));
  EXPECT_EQ(r.spec, "pid:kp=0.5,ki=0.1");
  EXPECT_EQ(parse_controller_request(R"({})", r)->status, 422);
  EXPECT_EQ(parse_controller_request(R"({"controller": 3})", r)->status, 400);
  EXPECT_EQ(parse_controller_request(R"({"controller": ""})", r)->status, 422);
  std::string long_spec(300, 'a');
  EXPECT_EQ(parse_controller_request(R"({"controller": ")" + long_spec + "\"}", r)->status, 422);
}

// A pipeline job's stage per GPU (the `plan` controller's per-node share): one per listed GPU,
// by index or by UUID; anything else refused naming the field.
TEST(JobRequest, PipelineStagesOnePerGpu) {
  JobRequest r;
  auto err = parse_job_request(R"({"gpus": [4, 5, 6], "pipeline_stages": [2, 2, 3]})", r);
  ASSERT_FALSE(err) << err->message;
  EXPECT_EQ(r.info.pipeline_stages, (std::vector<int>{2, 2, 3}));
  JobRequest u;
  ASSERT_FALSE(parse_job_request(R"({"gpus": ["GPU-a", "GPU-b"], "pipeline_stages": [0, 1]})", u));
  EXPECT_EQ(u.info.pipeline_stages, (std::vector<int>{0, 1}));
  for (const auto& [body, status] : {std::pair{R"({"gpus": [0, 1], "pipeline_stages": [0]})", 422},
                                     std::pair{R"({"pipeline_stages": [0]})", 422},
                                     std::pair{R"({"gpus": [0], "pipeline_stages": [-1]})", 422},
                                     std::pair{R"({"gpus": [0], "pipeline_stages": [5000]})", 422},
                                     std::pair{R"({"gpus": [0], "pipeline_stages": ["0"]})", 400},
                                     std::pair{R"({"gpus": [0], "pipeline_stages": 0})", 400}}) {
    JobRequest b;
    auto e = parse_job_request(body, b);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, status) << body << ": " << e->message;
    EXPECT_EQ(e->message.rfind("pipeline_stages:", 0), 0u) << e->message;
  }
}

TEST(JobRequest, ReadsKnobRanges) {
  JobRequest r;
  auto err = parse_job_request(
      R"({"id": "grpo-1", "kind": "grpo", "gpus": [0, 1],
          "knobs": {"gen_concurrency": {"min": 8, "max": 64, "step": 8, "default": 32}}})",
      r);
  ASSERT_FALSE(err) << err->message;
  EXPECT_EQ(r.id, "grpo-1");
  EXPECT_EQ(r.info.gpus, (std::vector<int>{0, 1}));
  EXPECT_TRUE(r.info.knob_ranges[0].available);
  EXPECT_FALSE(r.info.knob_ranges[1].available);
  EXPECT_EQ(r.info.default_knobs[0], 32);
  EXPECT_EQ(parse_job_request(R"({"id": "a/b"})", r)->status, 422);
  EXPECT_EQ(parse_job_request(R"({"knobs": {"batch": {"min": 1, "max": 2}}})", r)->status, 422);
  EXPECT_EQ(parse_job_request(R"({"knobs": {"group_size": {"min": 8, "max": 4}}})", r)->status,
            422);
  EXPECT_EQ(parse_job_request(R"({"gpus": [-1]})", r)->status, 422);
  // GPUs by UUID: kept for the server to resolve; all UUIDs or all indices.
  JobRequest u;
  ASSERT_FALSE(parse_job_request(R"({"gpus": ["GPU-fa4e-1", "MIG-2"]})", u));
  EXPECT_EQ(u.gpu_uuids, (std::vector<std::string>{"GPU-fa4e-1", "MIG-2"}));
  EXPECT_TRUE(u.info.gpus.empty());
  EXPECT_EQ(parse_job_request(R"({"gpus": ["GPU-1", 0]})", r)->status, 400);
  EXPECT_EQ(parse_job_request(R"({"gpus": ["GPU-1", "GPU-1"]})", r)->status, 422);
  EXPECT_EQ(parse_job_request(R"({"gpus": ["GPU 1; rm"]})", r)->status, 422);
  EXPECT_EQ(parse_job_request(R"({"gpus": "0"})", r)->status, 400);
  // A GPU listed twice, and an index that would narrow to GPU 0 as a 32-bit int.
  auto twice = parse_job_request(R"({"gpus": [0, 1, 0]})", r);
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->status, 422);
  EXPECT_NE(twice->message.find("gpus: index 0 is listed twice"), std::string::npos);
  EXPECT_EQ(parse_job_request(R"({"gpus": [4294967296]})", r)->status, 422);
  EXPECT_EQ(parse_job_request(R"({"gpus": [18446744073709551615]})", r)->status, 422);
}

// Issue 44 N5: a key given twice was accepted (nlohmann::json keeps the last one silently, so
// {"watts": 600, "watts": 1} set 1 W while an audit reader or proxy may read 600). Every
// body parser refuses it with 400 naming the key and where it is.
TEST(Requests, DuplicateKeysAreRefusedNamingTheKey) {
  BudgetRequest b;
  auto top = parse_budget_request(R"({"watts": 600, "watts": 1})", b);
  ASSERT_TRUE(top);
  EXPECT_EQ(top->status, 400);
  EXPECT_NE(top->message.find("watts: duplicate key"), std::string::npos) << top->message;
  auto nested = parse_budget_request(
      R"({"watts": 600, "schedule": [{"after_s": 5, "watts": 500}, {"after_s": 9, "watts": 400,
          "after_s": 1}]})",
      b);
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->status, 400);
  EXPECT_NE(nested->message.find("schedule[1].after_s: duplicate key"), std::string::npos)
      << nested->message;
  JobRequest j;
  auto knob = parse_job_request(
      R"({"id": "a", "knobs": {"gen_concurrency": {"min": 8, "max": 64, "min": 16}}})", j);
  ASSERT_TRUE(knob);
  EXPECT_EQ(knob->status, 400);
  EXPECT_NE(knob->message.find("knobs.gen_concurrency.min: duplicate key"), std::string::npos)
      << knob->message;
  auto twice = parse_job_request(
      R"({"knobs": {"group_size": {"min": 1, "max": 4}, "group_size": {"min": 2, "max": 8}}})", j);
  ASSERT_TRUE(twice);
  EXPECT_NE(twice->message.find("knobs.group_size: duplicate key"), std::string::npos)
      << twice->message;
  ControllerRequest c;
  EXPECT_EQ(parse_controller_request(R"({"controller": "pid", "controller": "static"})", c)->status,
            400);
  JobProgress p;
  EXPECT_EQ(parse_progress_request(R"({"tokens_total": 1, "steps_total": 1, "steps_total": 2})", p)
                ->status,
            400);
  PfiRequest f;
  EXPECT_EQ(parse_pfi_request(R"({"pfi": 1, "pfi": 2})", f)->status, 400);
  // The same key in different objects is no duplicate; neither are equal values in an array.
  ASSERT_FALSE(parse_budget_request(
      R"({"watts": 600, "schedule": [{"after_s": 5, "watts": 500}, {"after_s": 9, "watts": 400}]})",
      b));
  ASSERT_FALSE(parse_job_request(
      R"({"knobs": {"gen_concurrency": {"min": 8, "max": 64}, "group_size": {"min": 8, "max": 64}}})",
      j));
}

// Issue 44 N5: the 422 for a budget below range said "[0, 10000000]" while the rule (and
// docs/agent-api.md) is at least 1 W: the message names the bound that is enforced.
TEST(BudgetRequest, RangeMessageNamesTheOneWattFloor) {
  BudgetRequest r;
  for (const char* body : {R"({"watts": -1})", R"({"watts": 0})", R"({"watts": 0.5})",
                           R"({"watts": 600, "schedule": [{"after_s": 5, "watts": -3}]})"}) {
    auto err = parse_budget_request(body, r);
    ASSERT_TRUE(err) << body;
    EXPECT_EQ(err->status, 422) << body;
    EXPECT_NE(err->message.find("out of range [1, 10000000]"), std::string::npos)
        << body << ": " << err->message;
  }
  ASSERT_FALSE(parse_budget_request(R"({"watts": 1})", r));
}

// Issue 44 N5: knobs are counts, answered as JSON integers on the job's ladder; a ladder of
// fractions ({"min": 8.5, "max": 9.9, "step": 0.7}) was accepted and the job got 8.5 back. min,
// max, step and default must be whole numbers (8.0 is one): 422 naming the field otherwise.
TEST(JobRequest, KnobLadderIsWholeNumbers) {
  JobRequest r;
  auto frac = parse_job_request(
      R"({"knobs": {"gen_concurrency": {"min": 8.5, "max": 9.9, "step": 0.7}}})", r);
  ASSERT_TRUE(frac);
  EXPECT_EQ(frac->status, 422);
  EXPECT_NE(frac->message.find("knobs.gen_concurrency.min: 8.5 is not a whole number"),
            std::string::npos)
      << frac->message;
  struct Case {
    const char* knob;
    const char* field;
  };
  for (const Case& c : {Case{R"({"min": 8, "max": 9.9})", "max"},
                        Case{R"({"min": 8, "max": 64, "step": 0.5})", "step"},
                        Case{R"({"min": 8, "max": 64, "step": 8, "default": 12.5})", "default"}}) {
    auto err = parse_job_request(std::string(R"({"knobs": {"group_size": )") + c.knob + "}}", r);
    ASSERT_TRUE(err) << c.knob;
    EXPECT_EQ(err->status, 422) << c.knob;
    EXPECT_NE(err->message.find(std::string("knobs.group_size.") + c.field + ": "),
              std::string::npos)
        << c.knob << ": " << err->message;
    EXPECT_NE(err->message.find("whole number"), std::string::npos) << err->message;
  }
  auto whole = parse_job_request(
      R"({"knobs": {"gen_concurrency": {"min": 8.0, "max": 64, "step": 8, "default": 32.0}}})", r);
  ASSERT_FALSE(whole) << whole->message;
  EXPECT_EQ(r.info.knob_ranges[0].min, 8);
  EXPECT_EQ(r.info.default_knobs[0], 32);
}

TEST(ProgressRequest, NeedsTotalsAndAKnownPhase) {
  JobProgress p;
  ASSERT_FALSE(parse_progress_request(
      R"({"tokens_total": 1000, "steps_total": 2, "phase": "generate"})", p));
  EXPECT_EQ(p.tokens_total, 1000);
  ASSERT_TRUE(p.phase.has_value());
  EXPECT_EQ(*p.phase, Phase::kGenerate);
  EXPECT_EQ(parse_progress_request(R"({"tokens_total": 1})", p)->status, 422);
  EXPECT_EQ(
      parse_progress_request(R"({"tokens_total": 1, "steps_total": 1, "phase": "x"})", p)->status,
      422);
  EXPECT_EQ(parse_progress_request(R"({"tokens_total": -5, "steps_total": 1})", p)->status, 422);
}

// The job's announcements (issue #48: what `stabilize` acts on ahead of the meter): optional,
// units in the names; a bad value is refused naming the field; unknown keys still are.
TEST(ProgressRequest, AnnouncementsAreOptionalNamedAndChecked) {
  JobProgress p;
  auto ok = parse_progress_request(
      R"({"tokens_total": 10, "steps_total": 2, "phase": "forward", "starts_in_s": 0,
          "ends_in_s": 3600.5, "checkpoint_in_iters": 1, "checkpoint_s": 10})",
      p);
  ASSERT_FALSE(ok) << ok->message;
  EXPECT_EQ(p.announced.starts_in_s, 0);
  EXPECT_EQ(p.announced.ends_in_s, 3600.5);
  EXPECT_EQ(p.announced.checkpoint_in_iters, 1);
  EXPECT_EQ(p.announced.checkpoint_s, 10);
  // Absent: unknown (NaN), each on its own; a whole number may be written 3.0.
  JobProgress q;
  ASSERT_FALSE(parse_progress_request(
      R"({"tokens_total": 10, "steps_total": 2, "checkpoint_in_iters": 3.0})", q));
  EXPECT_EQ(q.announced.checkpoint_in_iters, 3);
  EXPECT_TRUE(std::isnan(q.announced.starts_in_s));
  EXPECT_TRUE(std::isnan(q.announced.ends_in_s));
  EXPECT_TRUE(std::isnan(q.announced.checkpoint_s));
  // The step's age (the step-keyed plan schedule's anchor, plan_controller.hpp).
  JobProgress aged;
  ASSERT_FALSE(parse_progress_request(
      R"({"tokens_total": 10, "steps_total": 2, "step_age_s": 0.004})", aged));
  EXPECT_EQ(aged.announced.step_age_s, 0.004);
  JobProgress none;
  ASSERT_FALSE(parse_progress_request(R"({"tokens_total": 10, "steps_total": 2})", none));
  EXPECT_TRUE(std::isnan(none.announced.step_age_s));
  EXPECT_TRUE(std::isnan(none.announced.starts_in_s));
  EXPECT_TRUE(std::isnan(none.announced.checkpoint_in_iters));

  struct Bad {
    const char* field;
    const char* value;
    int status;
  };
  for (const Bad& b : {Bad{"starts_in_s", "-1", 422}, Bad{"ends_in_s", "-0.5", 422},
                       Bad{"ends_in_s", "1e300", 422}, Bad{"checkpoint_s", "-3", 422},
                       Bad{"checkpoint_in_iters", "0", 422}, Bad{"checkpoint_in_iters", "1.5", 422},
                       Bad{"checkpoint_in_iters", "-2", 422}, Bad{"starts_in_s", "\"soon\"", 400},
                       Bad{"checkpoint_s", "null", 400}, Bad{"ends_in_s", "[1]", 400},
                       Bad{"step_age_s", "-0.1", 422}, Bad{"step_age_s", "\"now\"", 400}}) {
    JobProgress r;
    const std::string body = std::string(R"({"tokens_total": 1, "steps_total": 1, ")") + b.field +
                             "\": " + b.value + "}";
    auto err = parse_progress_request(body, r);
    ASSERT_TRUE(err) << body;
    EXPECT_EQ(err->status, b.status) << body << ": " << err->message;
    EXPECT_EQ(err->message.rfind(std::string(b.field) + ":", 0), 0u)
        << body << ": " << err->message;
  }
  // Unknown keys are still refused, the list naming the new fields; a misspelt unit too.
  auto unknown =
      parse_progress_request(R"({"tokens_total": 1, "steps_total": 1, "checkpoint_in_ms": 5})", p);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 422);
  EXPECT_NE(unknown->message.find("checkpoint_in_ms: unknown field"), std::string::npos)
      << unknown->message;
  EXPECT_NE(unknown->message.find("checkpoint_in_iters"), std::string::npos) << unknown->message;
  EXPECT_EQ(
      parse_progress_request(R"({"tokens_total": 1, "steps_total": 1, "starts_in": 5})", p)->status,
      422);
}

TEST(JobId, Charset) {
  EXPECT_TRUE(valid_job_id("grpo_7b-run.3"));
  EXPECT_FALSE(valid_job_id(""));
  EXPECT_FALSE(valid_job_id("a b"));
  EXPECT_FALSE(valid_job_id(std::string(65, 'x')));
}

TEST(PfiRequest, RangeSourceAndRegistration) {
  PfiRequest r;
  ASSERT_FALSE(parse_pfi_request(R"({"pfi": 1.43})", r));
  EXPECT_DOUBLE_EQ(r.pfi, 1.43);
  EXPECT_EQ(r.source, "sweep");
  ASSERT_FALSE(parse_pfi_request(R"({"pfi": 2.1, "source": "operator"})", r));
  EXPECT_EQ(r.source, "operator");
  EXPECT_EQ(parse_pfi_request(R"({})", r)->status, 422);
  EXPECT_EQ(parse_pfi_request(R"({"pfi": 0})", r)->status, 422);
  EXPECT_EQ(parse_pfi_request(R"({"pfi": "1"})", r)->status, 400);
  EXPECT_EQ(parse_pfi_request(R"({"pfi": 1, "source": "guess"})", r)->status, 422);
  JobRequest j;
  ASSERT_FALSE(parse_job_request(R"({"id": "moe", "pfi": 1.5})", j));
  EXPECT_DOUBLE_EQ(j.pfi, 1.5);
  JobRequest none;
  ASSERT_FALSE(parse_job_request(R"({"id": "dense"})", none));
  EXPECT_TRUE(std::isnan(none.pfi));
  EXPECT_EQ(parse_job_request(R"({"pfi": -1})", j)->status, 422);
}

}  // namespace
}  // namespace fw::agent
