#include "registry/controller_registry.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "sim/scenario.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::registry {
namespace {

ControllerEnv env_for_7b() {
  auto s =
      sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-7b-a100.yaml", {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  ControllerEnv env;
  env.info = sim::make_plant(*s, 1)->info();
  env.budget = s->budget;
  return env;
}

Result<PreparedController> prepare(const std::string& text) {
  auto spec = parse_controller_spec(text);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return prepare_controller(*spec, env_for_7b());
}

std::string error_of(const std::string& text) {
  auto p = prepare(text);
  EXPECT_FALSE(p.ok()) << text;
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << p.status().message();
  return p.status().message();
}

TEST(ControllerRegistry, BuiltinsAreRegisteredOnceEach) {
  std::set<std::string> names;
  for (const auto& e : controller_registry()) EXPECT_TRUE(names.insert(e.name).second) << e.name;
  for (const char* n :
       {"uncontrolled", "static", "fleet", "threshold", "pid", "zeus", "oracle", "ppo"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
}

TEST(ControllerRegistry, EveryDefaultIsInsideItsOwnDeclaration) {
  for (const auto& e : controller_registry()) {
    for (const auto& o : e.options) {
      if (o.default_text.empty()) continue;
      ControllerSpec spec{e.name, "", {{o.name, o.default_text}}, e.name};
      const DeclaredOptions d(spec, e.options);
      EXPECT_TRUE(d.validate(true).ok()) << e.name << ":" << o.name << "=" << o.default_text;
    }
  }
}

// static's pins and the knob= help lists come from the actuator table's rows.
TEST(ControllerRegistry, StaticPinsAndActuatorListsComeFromTheTable) {
  const ControllerEntry* st = nullptr;
  for (const auto& e : controller_registry()) {
    if (e.name == "static") st = &e;
  }
  ASSERT_NE(st, nullptr);
  std::vector<std::string> pins;
  bool after_schedule = false;
  for (const auto& o : st->options) {
    if (o.name == "knob") {
      for (const ActuatorDef& a : kActuatorTable) {
        EXPECT_NE(o.help.find(std::string(a.flag_name)), std::string::npos) << a.flag_name;
      }
    }
    const int q = find_actuator(o.name);
    if (q < 0 || q >= kNumKnobs) {
      after_schedule = o.name == "schedule";
      continue;
    }
    EXPECT_TRUE(kActuatorTable[q].static_pin) << o.name;
    EXPECT_EQ(o.min, kActuatorTable[q].keys.lo) << o.name;
    EXPECT_EQ(o.max, kActuatorTable[q].keys.hi) << o.name;
    EXPECT_TRUE(after_schedule || !pins.empty()) << o.name << " follows schedule";
    pins.push_back(o.name);
  }
  EXPECT_EQ(pins, (std::vector<std::string>{"gen_concurrency", "group_size"}));
}

TEST(ControllerRegistry, PreparesWithDefaults) {
  for (const char* t :
       {"uncontrolled", "threshold", "pid", "zeus", "oracle", "fleet", "static:value=8"}) {
    auto p = prepare(t);
    ASSERT_TRUE(p.ok()) << t << ": " << p.status().message();
    EXPECT_NE(p->make(1), nullptr) << t;
  }
}

// The cap study's arms are registered controllers like any other: eval and the agent can run
// them by name, and the study builds nothing the registry does not know.
TEST(ControllerRegistry, CapStudyArmsAreRegisteredControllers) {
  auto p = prepare("uniform:cap_w=210");
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto c = p->make(1);
  ASSERT_NE(c, nullptr);
  auto s =
      sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-7b-a100.yaml", {});
  ASSERT_TRUE(s.ok());
  auto plant = sim::make_plant(*s, 1);
  c->reset(plant->info());
  Observation obs;
  const Command cmd = c->update(obs);
  ASSERT_EQ(cmd.power_cap_w.size(), plant->info().gpus.size());
  for (double w : cmd.power_cap_w) EXPECT_EQ(w, 210);
  EXPECT_EQ(c->claims(), only_actuator(kCapActuator));
  EXPECT_NE(error_of("uniform").find("cap_w is required"), std::string::npos);
  auto g = prepare("per-gpu-static:ratio=0.7,calib_s=30");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->make(1)->name(), "per-gpu-static");
  EXPECT_FALSE(prepare("per-gpu-static:ratio=1.5").ok());
}

TEST(ControllerRegistry, LookaheadWorkBeyondItsBoundIsRefusedWithTheNumbers) {
  // 256^3 settings per decision (days of work): refused before any episode runs.
  EXPECT_NE(error_of("lookahead:candidates=256").find("16777216 settings (256 candidates ^ 3"),
            std::string::npos);
  EXPECT_NE(error_of("lookahead:horizon_s=100000").find("imagined samples per decision"),
            std::string::npos);
  EXPECT_NE(error_of("lookahead:fixed_candidates=64").find("262144 whole episodes"),
            std::string::npos);
  // One knob: 256 settings are within the bound.
  EXPECT_TRUE(prepare("lookahead:knob=group_size,candidates=256").ok());
}

TEST(ControllerRegistry, LookaheadIsRefusedOnRealGpusWhereItWouldNeverAct) {
  ControllerEnv env = env_for_7b();
  env.real_plant = true;  // the agent on NVML: no plant to clone
  for (const char* name : {"lookahead", "oracle"}) {
    auto spec = parse_controller_spec(name);
    ASSERT_TRUE(spec.ok());
    auto p = prepare_controller(*spec, env);
    ASSERT_FALSE(p.ok()) << name;
    EXPECT_NE(p.status().message().find("reference for the simulator only"), std::string::npos)
        << p.status().message();
  }
  auto pid = parse_controller_spec("pid");
  EXPECT_TRUE(prepare_controller(*pid, env).ok());  // deployable controllers are unaffected
}

// stabilize commands power smoothing (and, with pre_fill=on, the fill): where the plant says it
// cannot apply them (the agent's NvmlPlant on an H100, the sim backend), the spec is refused
// with the plant's reason and the way out; elsewhere (the site simulator) the env says nothing.
TEST(ControllerRegistry, StabilizeIsRefusedWhereThePlantCannotApplyIt) {
  ControllerEnv env = env_for_7b();
  auto plain = parse_controller_spec("stabilize");
  auto no_fill = parse_controller_spec("stabilize:pre_fill=off");
  ASSERT_TRUE(plain.ok() && no_fill.ok());
  EXPECT_TRUE(prepare_controller(*plain, env).ok());
  env.fill = Status::NotSupported("fill: no fill workload here");
  auto p = prepare_controller(*plain, env);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("no fill workload here; give pre_fill=off"),
            std::string::npos)
      << p.status().message();
  EXPECT_TRUE(prepare_controller(*no_fill, env).ok());
  env.smoothing = Status::NotSupported("power smoothing is not supported on GPU 1 (NVIDIA H100)");
  p = prepare_controller(*no_fill, env);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("GPU 1 (NVIDIA H100)"), std::string::npos)
      << p.status().message();
  auto pid = parse_controller_spec("pid");
  EXPECT_TRUE(prepare_controller(*pid, env).ok());  // a cap controller is unaffected
}

TEST(ControllerRegistry, RecordsEveryOptionAsUsed) {
  auto p = prepare("pid:kp=0.5,signal=mean");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->options["kp"], 0.5);
  EXPECT_EQ(p->options["ki"], 0.005);  // the declared default
  EXPECT_EQ(p->options["signal"], "mean");
  EXPECT_EQ(p->options["knob"], "auto");
  EXPECT_EQ(p->options.size(), 8u);
  auto s = prepare("static:value=8");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->options["group_size"].is_null());  // no default, not given
  EXPECT_EQ(s->options["candidates"], 12);
}

TEST(ControllerRegistry, UnknownControllerListsTheValidOnes) {
  const std::string m = error_of("bogus");
  EXPECT_NE(m.find("unknown controller 'bogus'"), std::string::npos) << m;
  EXPECT_NE(m.find("ppo:PATH"), std::string::npos) << m;
  EXPECT_NE(m.find("zeus"), std::string::npos) << m;
}

TEST(ControllerRegistry, UnknownOptionListsTheDeclaredOnes) {
  const std::string m = error_of("pid:kx=1");
  EXPECT_NE(m.find("unknown option 'kx'"), std::string::npos) << m;
  EXPECT_NE(m.find("kp"), std::string::npos) << m;
}

TEST(ControllerRegistry, OutOfRangeNamesTheOptionAndTheRange) {
  const std::string m = error_of("zeus:eta=2");
  EXPECT_NE(m.find("eta=2"), std::string::npos) << m;
  EXPECT_NE(m.find("out of range [0.000000, 1.000000]"), std::string::npos) << m;
  EXPECT_NE(error_of("oracle:candidates=1").find("candidates=1"), std::string::npos);
  EXPECT_NE(error_of("pid:kp=abc").find("kp=abc: not a number"), std::string::npos);
}

TEST(ControllerRegistry, ChoiceErrorListsTheChoices) {
  EXPECT_NE(
      error_of("oracle:windows=hopping").find("windows=hopping: expected tumbling or sliding"),
      std::string::npos);
  EXPECT_NE(error_of("fleet:weight=x").find("weight=x: expected nameplate or demand"),
            std::string::npos);
}

TEST(ControllerRegistry, PlantDependentChecksStayInTheFactory) {
  EXPECT_NE(error_of("threshold:knob=nope").find("knob=nope"), std::string::npos);
  EXPECT_NE(error_of("threshold:upper=0.5,lower=0.6").find("lower must be below upper"),
            std::string::npos);
  EXPECT_NE(error_of("static:knob=group_size,group_size=4").find("pins the actuator itself"),
            std::string::npos);
  EXPECT_NE(error_of("ppo").find("needs an argument"), std::string::npos);
  EXPECT_NE(error_of("pid:x.json").find("takes no argument"), std::string::npos);
}

// A file that is not JSON is named by path and byte offset; none of its bytes is quoted (the
// agent answers PUT /v1/controller with this message: it must not read files out).
TEST(ControllerRegistry, PolicyParseErrorNamesTheByteNotTheBytes) {
  const std::string path = ::testing::TempDir() + "fw_not_a_policy.json";
  std::ofstream(path) << "\"ZQXJ-private-line\n";
  for (const char* name : {"ppo:", "capnet:"}) {
    const std::string m = error_of(std::string(name) + path);
    EXPECT_EQ(m.find("ZQXJ"), std::string::npos) << m;
    EXPECT_NE(m.find(path + ": not a flexwatt policy (JSON parse error at byte"), std::string::npos)
        << m;
  }
  std::remove(path.c_str());
}

// With policy_dirs set (the agent), a policy is read only from inside them; unset (the CLI
// verbs), any path is read as before.
TEST(ControllerRegistry, PolicyDirsConfineThePolicyFile) {
  const std::filesystem::path dir = ::testing::TempDir() + "fw_policy_dirs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "policies");
  const std::string shipped =
      std::string(FLEXWATT_SOURCE_DIR) + "/policies/capnet-a100-alpha0.3.json";
  std::filesystem::copy_file(shipped, dir / "policies/p.json");
  std::filesystem::copy_file(shipped, dir / "outside.json");
  ControllerEnv env = env_for_7b();
  env.policy_dirs = std::vector<std::string>{(dir / "policies").string()};
  auto run = [&](const std::string& text) {
    return prepare_controller(parse_controller_spec(text).value(), env);
  };
  auto inside = run("capnet:" + (dir / "policies/p.json").string());
  EXPECT_TRUE(inside.ok()) << inside.status().message();
  const std::string out = (dir / "policies/../outside.json").string();
  auto refused = run("capnet:" + out);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("capnet: " + out + ": outside policy_dirs"),
            std::string::npos)
      << refused.status().message();
  env.policy_dirs = std::vector<std::string>{};  // none: no file at all
  EXPECT_FALSE(run("capnet:" + (dir / "policies/p.json").string()).ok());
  env.policy_dirs.reset();  // the CLI: a user's own file, wherever it is
  auto cli = run("capnet:" + out);
  EXPECT_TRUE(cli.ok()) << cli.status().message();
  std::filesystem::remove_all(dir);
}

TEST(DeclaredOptions, AccessorsGiveTheValueOrTheDeclaredDefault) {
  const std::vector<OptionDecl> decls = {
      OptionDecl::number("a", "0.25", 0, 1, "a"), OptionDecl::integer("n", "3", 1, 9, "n"),
      OptionDecl::choice("c", "x", {"x", "y"}, "c"), OptionDecl::number("u", "", 0, 10, "unset")};
  ControllerSpec spec{"t", "", {{"n", "7"}, {"c", "y"}}, "t:n=7,c=y"};
  const DeclaredOptions o(spec, decls);
  ASSERT_TRUE(o.validate(false).ok());
  EXPECT_EQ(o.number("a"), 0.25);
  EXPECT_EQ(o.integer("n"), 7);
  EXPECT_EQ(o.text("c"), "y");
  EXPECT_FALSE(o.has("u"));
  EXPECT_EQ(o.number("u"), 0);
  ControllerSpec bad{"t", "", {{"n", "10"}}, "t:n=10"};
  EXPECT_FALSE(DeclaredOptions(bad, decls).validate(false).ok());
}

TEST(ControllerList, TextAndJsonComeFromTheDeclarations) {
  const std::string text = controller_list_text();
  EXPECT_NE(text.find("kp=0.3  proportional gain (actuator fraction per unit error); range [0, "
                      "1000]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("windows=tumbling"), std::string::npos);
  EXPECT_NE(text.find("one of tumbling|sliding"), std::string::npos);
  const nlohmann::json j = controller_list_json();
  ASSERT_EQ(j.size(), controller_registry().size());
  bool seen = false;
  for (const auto& e : j) {
    if (e["name"] != "zeus") continue;
    for (const auto& o : e["options"]) {
      if (o["name"] != "eta") continue;
      seen = true;
      EXPECT_EQ(o["type"], "number");
      EXPECT_EQ(o["min"], 0.0);
      EXPECT_EQ(o["max"], 1.0);
      EXPECT_EQ(o["default"], "0.5");
    }
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace fw::registry
