#include "rl_train/training.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "core/format.hpp"
#include "core/text_file.hpp"
#include "core/version.hpp"
#include "rl/plant_env.hpp"
#include "rl/plant_features.hpp"
#include "rl/ppo_trainer.hpp"
#include "rl_train/training_setup.hpp"
#include "sim/cluster.hpp"
#include "sim/scenario.hpp"

namespace fw::rl {
namespace {

Result<nlohmann::json> read_json(const std::string& path) {
  FW_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(path + ": not JSON: " + e.what());
  }
}

std::string csv_num(double v) {
  if (std::isnan(v)) return "";
  return format_g(v, 6);
}

nlohmann::json num_or_null(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

// Domain randomisation of the workload (assumption: ranges around the 7B preset's
// docs/sources.md §1a completion lengths; other knob start points so every setting is seen).
// A knob the policy does not act on keeps the job's configured value.
std::vector<rl::RandomRange> randomisation_ranges(const sim::Scenario& scenario, unsigned mask) {
  if (scenario.jobs.empty() || scenario.jobs[0].kind != sim::JobKind::kGrpo) return {};
  const sim::JobSpec& j = scenario.jobs[0];
  const double med = j.grpo.completion_median_tokens, sig = j.grpo.completion_sigma;
  std::vector<rl::RandomRange> ranges = {
      {"jobs.0.completion_median_tokens", med * 0.75, med * 1.3, false},
      {"jobs.0.completion_sigma", std::max(0.1, sig - 0.2), sig + 0.2, false}};
  // Knob start points, last knob first (the order of the random draws); generation
  // concurrency starts at most at 32.
  for (int q = kNumKnobs - 1; q >= 0; --q) {
    if (!(mask & (1u << q))) continue;
    const KnobRange r = sim::knob_range(j, q);
    const double hi = q == static_cast<int>(Knob::kGenConcurrency) ? std::min(r.max, 32.0) : r.max;
    ranges.push_back({"jobs.0." + std::string(kKnobNames[q]), r.min, hi, true});
  }
  return ranges;
}

rl::PlantEnvConfig env_config(const TrainRequest& r, const sim::Scenario& scenario, unsigned mask) {
  rl::PlantEnvConfig ec;
  ec.sample_period_s = scenario.sample_period_s;
  ec.decision_period_s = r.decision_period_s;
  ec.episode_s = r.episode_s;
  ec.violation_penalty = r.violation_penalty;
  ec.excess_penalty = r.excess_penalty >= 0 ? r.excess_penalty : 10 * r.violation_penalty;
  ec.penalty_margin = r.margin;
  ec.window_rule = r.window_rule == "sliding" ? rl::PlantEnvConfig::WindowRule::kSliding
                                              : rl::PlantEnvConfig::WindowRule::kTumbling;
  ec.action_mode = r.actions == "level" ? rl::KnobActionMode::kLevel : rl::KnobActionMode::kStep;
  ec.knob_mask = mask;
  ec.decide_on = r.decide_on == "phase" ? rl::DecideOn::kPhase : rl::DecideOn::kPeriod;
  ec.max_decision_period_s = r.max_period_s;
  ec.churn_penalty = r.churn_penalty;
  ec.budget_scale_lo = 1 - r.budget_jitter;
  ec.budget_scale_hi = 1 + r.budget_jitter;
  ec.ranges = randomisation_ranges(scenario, mask);
  return ec;
}

// "LO,HI" with 0 < LO <= HI; InvalidArgument naming the flag otherwise.
Status parse_range(const std::string& flag, const std::string& text, double& lo, double& hi) {
  const size_t comma = text.find(',');
  const auto bad = [&] {
    return Status::InvalidArgument(flag + " " + text + ": expected LO,HI with 0 < LO <= HI");
  };
  if (comma == std::string::npos) return bad();
  try {
    size_t a = 0, b = 0;
    lo = std::stod(text.substr(0, comma), &a);
    hi = std::stod(text.substr(comma + 1), &b);
    if (a != comma || b != text.size() - comma - 1) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (!(lo > 0) || !(hi >= lo) || !std::isfinite(hi)) return bad();
  return Status::Ok();
}

// The family options into the environment's config (rl/plant_env.hpp).
Status apply_family(const TrainRequest& r, rl::PlantEnvConfig& ec) {
  if (!r.len_curves.empty()) {
    auto shapes = rl::parse_len_curve_shapes(r.len_curves);
    if (!shapes.ok()) return shapes.status().with_context("--len-curves");
    ec.len_curves = *shapes;
    FW_RETURN_IF_ERROR(parse_range("--len-range", r.len_range, ec.len_factor_lo, ec.len_factor_hi));
  }
  if (r.budget_steps < 0) return Status::InvalidArgument("--budget-steps must be >= 0");
  ec.max_budget_steps = r.budget_steps;
  if (r.budget_steps > 0) {
    FW_RETURN_IF_ERROR(parse_range("--budget-step-range", r.budget_step_range, ec.budget_step_lo,
                                   ec.budget_step_hi));
  }
  return Status::Ok();
}

bool family_on(const TrainRequest& r) {
  return !r.family.empty() || !r.len_curves.empty() || r.budget_steps > 0;
}

// The family's description, in the recipe and the policy metadata (only when on).
nlohmann::json family_json(const TrainRequest& r, const rl::PlantEnvConfig& ec) {
  nlohmann::json members = nlohmann::json::array({r.scenario_path});
  for (const auto& m : r.family) members.push_back(m);
  nlohmann::json shapes = nlohmann::json::array();
  for (rl::LenCurveShape sh : ec.len_curves) shapes.push_back(rl::kLenCurveShapeNames[int(sh)]);
  nlohmann::json f = {{"members", members}, {"len_curves", shapes}};
  if (!ec.len_curves.empty()) f["len_range"] = {ec.len_factor_lo, ec.len_factor_hi};
  f["budget_steps"] = ec.max_budget_steps;
  if (ec.max_budget_steps > 0) f["budget_step_range"] = {ec.budget_step_lo, ec.budget_step_hi};
  return f;
}

// Episodes re-parse the scenario text with the request's overrides and the draw's.
rl::EpisodeFactory episode_factory(const std::string& path, const std::vector<std::string>& sets) {
  std::string text;
  {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  return [text, name = path, base = sets](
             uint64_t plant_seed, const std::vector<std::string>& ov) -> Result<rl::PlantEpisode> {
    std::vector<std::string> all = base;
    all.insert(all.end(), ov.begin(), ov.end());
    FW_ASSIGN_OR_RETURN(sim::Scenario s, sim::parse_scenario(text, name, all));
    rl::PlantEpisode ep;
    ep.plant = sim::make_plant(s, plant_seed);
    ep.budget = s.budget;
    return ep;
  };
}

nlohmann::json recipe_json_impl(const TrainRequest& r, const rl::PlantEnvConfig& ec,
                                const rl::PpoConfig& pc) {
  nlohmann::json recipe = {{"scenario_path", r.scenario_path},
                           {"overrides", r.sets},
                           {"envs", r.envs},
                           {"decision_period_s", r.decision_period_s},
                           {"episode_s", r.episode_s},
                           {"budget_jitter", r.budget_jitter},
                           {"lr", pc.adam.lr},
                           {"violation_penalty", r.violation_penalty},
                           {"excess_penalty", ec.excess_penalty},
                           {"margin", r.margin},
                           {"actions", r.actions},
                           {"minibatches", pc.num_minibatches},
                           {"ent_coef", pc.loss.ent_coef},
                           {"epochs", pc.update_epochs},
                           {"iterations", r.iterations},
                           {"seed", r.seed}};
  // Added only when not the default, so checkpoints from before these options still resume.
  if (ec.knob_mask != rl::kAllKnobs) recipe["knobs"] = rl::knob_mask_name(ec.knob_mask);
  if (r.window_rule != "tumbling") recipe["window_rule"] = r.window_rule;
  if (r.decide_on != "period") {
    recipe["decide_on"] = r.decide_on;
    recipe["max_decision_period_s"] = r.max_period_s;
  }
  if (r.churn_penalty != 0.02) recipe["churn_penalty"] = r.churn_penalty;
  if (family_on(r)) recipe["family"] = family_json(r, ec);
  return recipe;
}

Status restore_checkpoint(rl::PpoTrainer& trainer, const std::string& path,
                          const nlohmann::json& recipe) {
  FW_ASSIGN_OR_RETURN(nlohmann::json ck, read_json(path));
  if (!ck.contains("trainer") || !ck.contains("recipe")) {
    return Status::InvalidArgument(path +
                                   ": not a flexwatt train checkpoint (fields 'trainer' and "
                                   "'recipe')");
  }
  nlohmann::json old = ck["recipe"];
  old.erase("iterations");
  nlohmann::json now = recipe;
  now.erase("iterations");
  if (old != now) {
    return Status::InvalidArgument(path + ": checkpoint was made with other settings: " +
                                   old.dump() + " (now " + now.dump() + ")");
  }
  return trainer.restore(ck["trainer"]).with_context(path);
}

// The training log CSV: one row per iteration, flushed as written.
class TrainLog {
 public:
  static Result<std::unique_ptr<TrainLog>> open(const std::string& path, bool append) {
    std::FILE* f = std::fopen(path.c_str(), append ? "a" : "w");
    if (f == nullptr) return Status::IoError("cannot write " + path);
    if (!append) {
      std::fprintf(f,
                   "iteration,total_steps,episodes,mean_return,violation_rate_window,"
                   "tokens_per_episode,knob_moves_per_episode,approx_kl,entropy,pg_loss,v_loss,"
                   "clip_frac,explained_variance,lr,epochs,wall_s\n");
    }
    return std::unique_ptr<TrainLog>(new TrainLog(f));
  }
  ~TrainLog() { std::fclose(f_); }
  void row(const rl::IterationStats& st, double viol, double tokens_per_ep, double moves_per_ep,
           double wall_s) {
    std::fprintf(f_, "%d,%ld,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%.2f\n", st.iteration + 1,
                 st.total_steps, st.episodes, csv_num(st.mean_return).c_str(),
                 csv_num(viol).c_str(), csv_num(tokens_per_ep).c_str(),
                 csv_num(moves_per_ep).c_str(), csv_num(st.approx_kl).c_str(),
                 csv_num(st.entropy).c_str(), csv_num(st.pg_loss).c_str(),
                 csv_num(st.v_loss).c_str(), csv_num(st.clip_frac).c_str(),
                 csv_num(st.explained_variance).c_str(), csv_num(st.lr).c_str(), st.epochs, wall_s);
    std::fflush(f_);
  }

 private:
  explicit TrainLog(std::FILE* f) : f_(f) {}
  std::FILE* f_;
};

// The environments' finished episodes since the last call, pooled: violation rate over
// closed windows, tokens and knob moves per episode (NaN when none).
struct Pooled {
  double violation_rate = kUnset, tokens_per_episode = kUnset, moves_per_episode = kUnset;
};
Pooled take_finished(const std::vector<rl::PlantEnv*>& envs) {
  rl::PlantEpisodeStats tot;
  int eps = 0;
  for (rl::PlantEnv* pe : envs) {
    int n = 0;
    const rl::PlantEpisodeStats s = pe->take_finished(n);
    eps += n;
    tot.tokens += s.tokens;
    tot.windows += s.windows;
    tot.violations += s.violations;
    tot.knob_moves += s.knob_moves;
  }
  Pooled p;
  if (tot.windows > 0) p.violation_rate = static_cast<double>(tot.violations) / tot.windows;
  if (eps) {
    p.tokens_per_episode = tot.tokens / eps;
    p.moves_per_episode = static_cast<double>(tot.knob_moves) / eps;
  }
  return p;
}

nlohmann::json policy_metadata_impl(const TrainRequest& r, const sim::Scenario& scenario,
                                    const rl::PlantEnvConfig& ec, const nlohmann::json& recipe,
                                    double nominal_budget_w) {
  nlohmann::json meta = {{"scenario_family", scenario.name},
                         {"scenario_path", r.scenario_path},
                         {"overrides", r.sets},
                         {"simulated", true},
                         {"decision_period_s", r.decision_period_s},
                         {"decide_on", r.decide_on},
                         {"max_decision_period_s", r.max_period_s},
                         {"knobs", rl::knob_mask_name(ec.knob_mask)},
                         {"sample_period_s", ec.sample_period_s},
                         {"gpu_models", nlohmann::json::array()},
                         {"nominal_budget_w", nominal_budget_w},
                         {"randomization",
                          {{"budget_scale", {ec.budget_scale_lo, ec.budget_scale_hi}},
                           {"plant_seed_base", ec.plant_seed_base},
                           {"ranges", nlohmann::json::array()}}},
                         {"reward",
                          {{"token_scale", ec.token_scale},
                           {"violation_penalty", ec.violation_penalty},
                           {"excess_penalty", ec.excess_penalty},
                           {"penalty_margin", ec.penalty_margin},
                           {"churn_penalty", ec.churn_penalty},
                           {"window_rule", r.window_rule}}},
                         {"recipe", recipe},
                         {"command", r.command_line}};
  if (family_on(r)) meta["family"] = family_json(r, ec);
  for (const auto& g : scenario.gpus) meta["gpu_models"].push_back(g.model);
  for (const auto& rr : ec.ranges) {
    meta["randomization"]["ranges"].push_back({{"key", rr.key}, {"lo", rr.lo}, {"hi", rr.hi}});
  }
  return meta;
}

// A trainer over req.envs fresh environments; plant_envs gets views of them.
Result<std::unique_ptr<rl::PpoTrainer>> make_trainer(const TrainRequest& r,
                                                     const rl::PlantEnvConfig& ec,
                                                     const std::vector<rl::EpisodeFactory>& family,
                                                     rl::PpoConfig& pc,
                                                     std::vector<rl::PlantEnv*>& plant_envs) {
  std::vector<std::unique_ptr<rl::Env>> envs;
  for (int e = 0; e < r.envs; ++e) {
    auto env = rl::PlantEnv::create(family, ec);
    if (!env.ok()) return env.status().with_context(r.scenario_path);
    plant_envs.push_back(env->get());
    envs.push_back(std::move(env).value());
  }
  // One rollout = one episode per environment (decide_on period), so checkpoints fall on
  // episode boundaries and a resumed run continues exactly (docs/rl.md, "Determinism and
  // seeds"); with decide_on phase episodes cross rollouts (PlantEnv::rollout_steps()).
  pc.num_steps = rl::PlantEnv::rollout_steps(ec);
  while (pc.num_minibatches > 1 && (pc.num_steps * r.envs) % pc.num_minibatches != 0) {
    --pc.num_minibatches;
  }
  pc.anneal_iterations = r.iterations;
  return rl::PpoTrainer::create(std::move(envs), pc);
}

}  // namespace

nlohmann::json train_policy_metadata(const TrainRequest& r, const TrainSetup& setup,
                                     const nlohmann::json& recipe, double nominal_budget_w) {
  return policy_metadata_impl(r, setup.scenario, setup.ec, recipe, nominal_budget_w);
}

nlohmann::json train_family_json(const TrainRequest& r, const TrainSetup& setup) {
  return family_on(r) ? family_json(r, setup.ec) : nlohmann::json(nullptr);
}

rl::PpoConfig default_train_ppo_config() {
  rl::PpoConfig pc;
  pc.hidden = {64, 64};
  pc.num_minibatches = 4;
  pc.update_epochs = 10;
  pc.adam.lr = 1e-3;
  pc.loss.ent_coef = 0.01;
  pc.gamma = 0.99;
  return pc;
}

std::string shell_quote(const std::string& a) {
  const bool plain = !a.empty() && a.find_first_not_of(
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789_./=:,+-") == std::string::npos;
  if (plain) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

nlohmann::json TrainSummary::to_json() const {
  return {{"policy", policy},
          {"log", log},
          {"checkpoint", checkpoint},
          {"iterations", iterations},
          {"total_steps", total_steps},
          {"last_mean_return", num_or_null(last_mean_return)},
          {"last_violation_rate", num_or_null(last_violation_rate)},
          {"wall_s", wall_s},
          {"family_draws", family_draws},
          {"simulated", true}};
}

Result<TrainSetup> prepare_train_setup(const TrainRequest& r) {
  const auto parsed_mask = rl::parse_knob_mask(r.knobs);
  if (!parsed_mask.ok()) return parsed_mask.status().with_context("--knobs");
  const unsigned mask = *parsed_mask;
  if (r.decide_on == "phase" && r.max_period_s < r.decision_period_s) {
    return Status::InvalidArgument("--max-period-s must be >= --period-s");
  }
  {  // --out is written after training: check it can be, before training.
    std::error_code ec;
    const std::filesystem::path op(r.out);
    const std::filesystem::path parent = op.has_parent_path() ? op.parent_path() : ".";
    if (std::filesystem::is_directory(op, ec)) {
      return Status::InvalidArgument("--out " + r.out +
                                     ": is a directory (give a file name for the policy)");
    }
    if (!std::filesystem::is_directory(parent, ec)) {
      return Status::InvalidArgument("--out " + r.out + ": directory " + parent.string() +
                                     " does not exist");
    }
  }
  FW_ASSIGN_OR_RETURN(const sim::Scenario scenario, sim::load_scenario(r.scenario_path, r.sets));
  // Every family member loads, and shares the first member's job layout (one policy drives
  // job 0 of each); a drawn length curve needs a GRPO job 0 everywhere.
  std::vector<sim::Scenario> members = {scenario};
  for (const auto& m : r.family) {
    FW_ASSIGN_OR_RETURN(sim::Scenario s, sim::load_scenario(m, r.sets));
    if (s.jobs.size() != scenario.jobs.size() ||
        (!s.jobs.empty() && s.jobs[0].kind != scenario.jobs[0].kind)) {
      return Status::InvalidArgument("scenario " + m + ": a family member must have the jobs of " +
                                     r.scenario_path + " (same count, job 0 of the same kind)");
    }
    members.push_back(std::move(s));
  }
  if (!r.len_curves.empty()) {
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].jobs.empty() || members[i].jobs[0].kind != sim::JobKind::kGrpo) {
        return Status::InvalidArgument("--len-curves: " + (i ? r.family[i - 1] : r.scenario_path) +
                                       ": job 0 is not a GRPO job (no completion lengths)");
      }
    }
  }
  TrainSetup out;
  out.mask = mask;
  out.ec = env_config(r, scenario, mask);
  FW_RETURN_IF_ERROR(apply_family(r, out.ec));
  out.family = {episode_factory(r.scenario_path, r.sets)};
  for (const auto& m : r.family) out.family.push_back(episode_factory(m, r.sets));
  out.scenario = scenario;
  return out;
}

Result<TrainSummary> run_training(const TrainRequest& r,
                                  const std::function<void(const TrainProgress&)>& progress) {
  FW_ASSIGN_OR_RETURN(TrainSetup setup, prepare_train_setup(r));
  const sim::Scenario& scenario = setup.scenario;
  const rl::PlantEnvConfig& ec = setup.ec;
  rl::PpoConfig pc = r.ppo;
  pc.seed = static_cast<uint64_t>(r.seed);
  std::vector<rl::PlantEnv*> plant_envs;
  FW_ASSIGN_OR_RETURN(std::unique_ptr<rl::PpoTrainer> trainer,
                      make_trainer(r, ec, setup.family, pc, plant_envs));
  TrainSummary out;
  out.scenario_name = scenario.name;
  out.policy = r.out;
  const std::string stem = r.out.size() > 5 && r.out.substr(r.out.size() - 5) == ".json"
                               ? r.out.substr(0, r.out.size() - 5)
                               : r.out;
  out.checkpoint = stem + ".ckpt.json";
  out.log = r.log_path.empty() ? stem + ".train.csv" : r.log_path;
  const nlohmann::json recipe = recipe_json_impl(r, ec, pc);
  if (!r.resume.empty()) {
    FW_RETURN_IF_ERROR(restore_checkpoint(*trainer, r.resume, recipe));
    if (trainer->iteration() >= r.iterations) {
      return Status::InvalidArgument("--iterations " + std::to_string(r.iterations) + ": " +
                                     r.resume + " is already at iteration " +
                                     std::to_string(trainer->iteration()) +
                                     " (give more iterations to continue)");
    }
  }
  FW_ASSIGN_OR_RETURN(std::unique_ptr<TrainLog> log, TrainLog::open(out.log, !r.resume.empty()));

  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  out.last_mean_return = out.last_violation_rate = kUnset;
  while (trainer->iteration() < r.iterations) {
    FW_ASSIGN_OR_RETURN(const rl::IterationStats st, trainer->iterate());
    const Pooled p = take_finished(plant_envs);
    const double wall = elapsed();
    out.last_mean_return = st.mean_return;
    out.last_violation_rate = p.violation_rate;
    log->row(st, p.violation_rate, p.tokens_per_episode, p.moves_per_episode, wall);
    if (progress) {
      progress({st.iteration + 1, r.iterations, st.mean_return, p.violation_rate, st.approx_kl,
                st.entropy, wall});
    }
    if ((st.iteration + 1) % r.checkpoint_every == 0 || trainer->iteration() == r.iterations) {
      const nlohmann::json ck = {{"format", "flexwatt-train-checkpoint"},
                                 {"flexwatt_version", kVersion},
                                 {"recipe", recipe},
                                 {"trainer", trainer->checkpoint()}};
      FW_RETURN_IF_ERROR(write_text_file(out.checkpoint, ck.dump()));
    }
  }
  log.reset();
  out.wall_s = elapsed();
  const nlohmann::json meta =
      policy_metadata_impl(r, scenario, ec, recipe, plant_envs.front()->nominal_budget_w());
  FW_RETURN_IF_ERROR(trainer->policy(meta).save(r.out));
  out.iterations = trainer->iteration();
  out.total_steps = trainer->total_steps();
  out.family_draws.assign(1 + r.family.size(), 0);
  for (const rl::PlantEnv* pe : plant_envs) {
    for (size_t m = 0; m < out.family_draws.size(); ++m) {
      out.family_draws[m] += pe->member_episodes()[m];
    }
  }
  return out;
}

}  // namespace fw::rl
