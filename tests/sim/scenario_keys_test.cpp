// Declared scenario keys: one declaration drives defaults, range errors, the known-key list
// and to_json().

#include <gtest/gtest.h>

#include "sim/scenario.hpp"

namespace fw::sim {
namespace {

const char* kYaml =
    "name: t\n"
    "gpus: [{model: a100-sxm4-80gb, count: 1}]\n"
    "budget: {watts: 300}\n"
    "jobs:\n"
    "  - {kind: grpo, gpus: 1}\n"
    "  - {kind: pretrain, gpus: 0, first_gpu: 0}\n";

const ScenarioKey* find_key(const std::vector<ScenarioKey>& keys, const std::string& section,
                            const std::string& name) {
  for (const ScenarioKey& k : keys) {
    if (k.section == section && k.name == name) return &k;
  }
  return nullptr;
}

TEST(ScenarioKeys, DeclarationsDriveDefaultsAndJson) {
  const std::vector<ScenarioKey> keys = scenario_keys();
  const ScenarioKey* dt = find_key(keys, "sim", "dt_s");
  ASSERT_NE(dt, nullptr);
  EXPECT_EQ(dt->def, 0.1);
  EXPECT_EQ(dt->lo, 0.02);
  EXPECT_EQ(dt->hi, 0.5);
  EXPECT_FALSE(dt->help.empty());
  ASSERT_NE(find_key(keys, "jobs[] (grpo)", "micro_batch_seqs"), nullptr);
  ASSERT_NE(find_key(keys, "", "duration_s"), nullptr);

  const std::string one_job =
      "name: t\ngpus: [{model: a100-sxm4-80gb}]\nbudget: {watts: 300}\njobs: [{gpus: 1}]\n"
      "sim: {ambient_c: 25}\n";
  auto s = parse_scenario(one_job, "t.yaml", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  for (const ScenarioKey& k : keys) {  // every declared key took its default (or the --set)
    const nlohmann::json j = s->to_json();
    if (k.section == "sim") {
      ASSERT_TRUE(j["sim"].contains(k.name)) << k.name;
      EXPECT_EQ(j["sim"][k.name].get<double>(), k.name == "ambient_c" ? 25 : k.def) << k.name;
    } else if (k.section == "jobs[] (grpo)") {
      ASSERT_TRUE(j["jobs"][0].contains(k.name)) << k.name;
      EXPECT_EQ(j["jobs"][0][k.name].get<double>(), k.def) << k.name;
    } else if (k.section.empty()) {
      EXPECT_EQ(j[k.name].get<double>(), k.def) << k.name;
    }
  }
}

TEST(ScenarioKeys, RangeAndUnknownKeyErrorsNameFileLineField) {
  auto bad = parse_scenario(std::string(kYaml) + "sim: {noise_w: 500}\n", "t.yaml", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.yaml:7"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("sim.noise_w"), std::string::npos)
      << bad.status().message();

  auto unknown = parse_scenario(std::string(kYaml) + "sim: {dt: 0.1}\n", "t.yaml", {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown key 'dt'"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("dt_s, noise_w"), std::string::npos)
      << unknown.status().message();

  auto job = parse_scenario(kYaml, "t.yaml", {"jobs.0.micro_batch_seqs=0"});
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("jobs.0.micro_batch_seqs"), std::string::npos)
      << job.status().message();
}

}  // namespace
}  // namespace fw::sim
