#include "rl_train/cap_training.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/format.hpp"
#include "core/rng.hpp"
#include "core/text_file.hpp"
#include "core/version.hpp"
#include "eval/cap_episode.hpp"
#include "rl/adam.hpp"
#include "rl/capnet_controller.hpp"
#include "rl/mlp.hpp"

namespace fw::rl {
namespace {

using Sets = std::vector<std::string>;

std::string fmt_d(double v) { return format_g(v, 4); }

Sets variant_sets(int n, const std::string& workload, double imbalance, double every_s,
                  double length_s, double episode_s) {
  return {"gpus.0.count=" + std::to_string(n),
          "jobs.0.gpus=" + std::to_string(n),
          "budget.watts=" + std::to_string(1000 * n),
          "jobs.0.workload=" + workload,
          "jobs.0.duty={every_s: " + fmt_d(every_s) + ", length_s: " + fmt_d(length_s) + "}",
          "jobs.0.hetero={imbalance: " + fmt_d(imbalance) + "}",
          "duration_s=" + fmt_d(episode_s)};
}

// A training scenario drawn from rng (docs/caps.md, "Training").
Sets draw_variant(Rng& rng, int max_gpus, double episode_s) {
  static const int kCounts[] = {1, 2, 4, 8, 8, 16, 32, 64};
  int n = kCounts[rng.below(8)];
  while (n > max_gpus) n /= 2;
  const double w = rng.uniform();
  const std::string workload = w < 0.5 ? "mpt-13b-pt" : (w < 0.75 ? "moe-pt" : "dense-pt");
  const double imb = (n == 1 || rng.uniform() < 0.35) ? 0.0 : rng.uniform(0.05, 0.45);
  return variant_sets(n, workload, imb, rng.uniform(25, 120), rng.uniform(5, 25), episode_s);
}

struct Problem {
  std::string text, name;
  Sets base_sets;
};

Result<sim::Scenario> build(const Problem& p, const Sets& extra) {
  Sets all = p.base_sets;
  all.insert(all.end(), extra.begin(), extra.end());
  return sim::parse_scenario(p.text, p.name, all);
}

struct Task {
  const sim::Scenario* scenario;
  uint64_t seed;
  int member;  // index into thetas
  int slot;    // where the score goes
};

rl::Policy make_policy(const rl::Mlp& mlp, const Eigen::VectorXd& theta,
                       const nlohmann::json& meta) {
  Eigen::VectorXd full(theta.size() + 1);
  full.head(theta.size()) = theta;
  full[theta.size()] = 0.0;  // log-std (unused by the deterministic act())
  return rl::Policy(rl::cap_obs_spec(), rl::cap_action_spec(), mlp, full,
                    rl::ObsNormalizer(rl::kCapObsDim), meta, kVersion);
}

// Runs every task (in parallel over `threads`), writing reward(α) into scores[slot].
Status run_tasks(const std::vector<Task>& tasks, const std::vector<Eigen::VectorXd>& thetas,
                 const std::vector<eval::CapEpisode>& bases, const std::vector<int>& base_of,
                 const rl::Mlp& mlp, const nlohmann::json& meta, double alpha, int threads,
                 std::vector<double>& scores) {
  std::mutex mu;
  Status first = Status::Ok();
  size_t next = 0;
  auto worker = [&]() {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> l(mu);
        if (next >= tasks.size()) return;
        i = next++;
      }
      const Task& t = tasks[i];
      auto c = rl::CapNetController::create(make_policy(mlp, thetas[t.member], meta));
      Result<eval::CapEpisode> e = c.ok() ? eval::run_cap_episode(*t.scenario, t.seed, c->get())
                                          : Result<eval::CapEpisode>(c.status());
      std::lock_guard<std::mutex> l(mu);
      if (!e.ok()) {
        if (first.ok()) first = e.status();
        continue;
      }
      scores[t.slot] = eval::score_against(*e, bases[base_of[i]]).reward(alpha);
    }
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < threads; ++k) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  return first;
}

nlohmann::json train_metadata(const CapTrainRequest& req, const std::string& family) {
  return {{"task", "caps"},
          {"scenario_family", family},
          {"alpha", req.alpha},
          {"decision_period_s", req.period_s},
          {"cap_step_frac", req.step_frac},
          {"training_seed", req.seed},
          {"method", "openai-es"},
          {"recipe",
           {{"iterations", req.iterations},
            {"pairs", req.pairs},
            {"variants", req.variants},
            {"sigma", req.sigma},
            {"lr", req.lr},
            {"weight_decay", req.weight_decay},
            {"episode_s", req.episode_s},
            {"max_gpus", req.max_gpus},
            {"hidden", req.hidden}}},
          {"command", req.command_line}};
}

// One ES iteration: draws req.variants scenarios, scores every perturbed member on all of them
// against their uncapped runs, and takes one Adam step on theta. Returns the members' mean
// rewards (member 2p is theta + σ·ε_p, 2p + 1 is theta − σ·ε_p).
Result<std::vector<double>> es_iteration(const Problem& prob, const CapTrainRequest& req,
                                         const rl::Mlp& mlp, const nlohmann::json& meta, Rng& noise,
                                         Rng& scen, rl::Adam& adam, Eigen::VectorXd& theta,
                                         int64_t& episodes) {
  const int np = mlp.num_params();
  const int members = 2 * req.pairs;
  std::vector<sim::Scenario> sc;
  std::vector<uint64_t> seeds;
  for (int v = 0; v < req.variants; ++v) {
    FW_ASSIGN_OR_RETURN(sim::Scenario s,
                        build(prob, draw_variant(scen, req.max_gpus, req.episode_s)));
    sc.push_back(std::move(s));
    seeds.push_back((uint64_t{1} << 41) + (scen.next_u64() >> 23));
  }
  std::vector<eval::CapEpisode> bases;
  for (int v = 0; v < req.variants; ++v) {
    FW_ASSIGN_OR_RETURN(eval::CapEpisode b, eval::run_cap_episode(sc[v], seeds[v], nullptr));
    bases.push_back(b);
  }
  std::vector<Eigen::VectorXd> eps(req.pairs, Eigen::VectorXd(np)), thetas;
  for (auto& e : eps)
    for (int k = 0; k < np; ++k) e[k] = noise.normal();
  for (int p = 0; p < req.pairs; ++p) {
    thetas.push_back(theta + req.sigma * eps[p]);
    thetas.push_back(theta - req.sigma * eps[p]);
  }
  std::vector<Task> tasks;
  std::vector<int> base_of;
  for (int m = 0; m < members; ++m) {
    for (int v = 0; v < req.variants; ++v) {
      tasks.push_back({&sc[v], seeds[v], m, static_cast<int>(tasks.size())});
      base_of.push_back(v);
    }
  }
  std::vector<double> raw(tasks.size(), 0.0);
  FW_RETURN_IF_ERROR(
      run_tasks(tasks, thetas, bases, base_of, mlp, meta, req.alpha, req.threads, raw));
  episodes += static_cast<int64_t>(tasks.size()) + req.variants;
  std::vector<double> fit(members, 0.0);
  for (int m = 0; m < members; ++m)
    for (int v = 0; v < req.variants; ++v) fit[m] += raw[m * req.variants + v] / req.variants;
  // Centred ranks in [−0.5, 0.5].
  std::vector<int> order(members);
  for (int m = 0; m < members; ++m) order[m] = m;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return fit[a] < fit[b]; });
  std::vector<double> rank(members);
  for (int r = 0; r < members; ++r)
    rank[order[r]] = members > 1 ? double(r) / (members - 1) - 0.5 : 0;
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(np);
  for (int p = 0; p < req.pairs; ++p) grad += (rank[2 * p] - rank[2 * p + 1]) * eps[p];
  grad /= (req.pairs * req.sigma);
  // Adam minimises: descend on −(grad) + weight decay.
  Eigen::VectorXd g = -grad + req.weight_decay * theta;
  adam.step(theta, g);
  return fit;
}

}  // namespace

std::vector<std::pair<std::string, Sets>> cap_validation_variants(double episode_s) {
  return {{"a100x1", variant_sets(1, "mpt-13b-pt", 0, 40, 17, episode_s)},
          {"a100x8-pipeline-0.3", variant_sets(8, "mpt-13b-pt", 0.3, 40, 17, episode_s)},
          {"a100x8-moe-0.4", variant_sets(8, "moe-pt", 0.4, 40, 17, episode_s)},
          {"a100x64-pipeline-0.3", variant_sets(64, "mpt-13b-pt", 0.3, 40, 17, episode_s)}};
}

nlohmann::json CapTrainSummary::to_json() const {
  return {{"simulated", true},
          {"policy", policy},
          {"log", log},
          {"iterations", iterations},
          {"best_iteration", best_iteration},
          {"best_validation", best_validation},
          {"episodes", episodes},
          {"wall_s", wall_s}};
}

namespace {

// The validation set: fixed variants on seeds 500000+, with their uncapped runs (run once).
struct ValidationSet {
  std::vector<sim::Scenario> scenarios;
  std::vector<eval::CapEpisode> bases;
  std::vector<Task> tasks;
  std::vector<int> base_of;
};

Result<ValidationSet> make_validation(const Problem& prob, const CapTrainRequest& req) {
  ValidationSet v;
  for (const auto& [name, sets] : cap_validation_variants(req.episode_s)) {
    FW_ASSIGN_OR_RETURN(sim::Scenario s, build(prob, sets));
    v.scenarios.push_back(std::move(s));
  }
  for (size_t i = 0; i < v.scenarios.size(); ++i) {
    for (int k = 0; k < req.validation_seeds; ++k) {
      const uint64_t seed = 500000 + static_cast<uint64_t>(k);
      FW_ASSIGN_OR_RETURN(eval::CapEpisode b, eval::run_cap_episode(v.scenarios[i], seed, nullptr));
      v.base_of.push_back(static_cast<int>(v.bases.size()));
      v.bases.push_back(b);
      v.tasks.push_back({&v.scenarios[i], seed, 0, static_cast<int>(v.tasks.size())});
    }
  }
  return v;
}

}  // namespace

namespace {

// Step 1: the base scenario's text; it must parse with the request's --set overrides.
Result<Problem> load_problem(const CapTrainRequest& req) {
  FW_ASSIGN_OR_RETURN(std::string text, read_text_file(req.scenario_path));
  Problem prob{std::move(text), req.scenario_path, req.sets};
  FW_RETURN_IF_ERROR(build(prob, {}).status());
  return prob;
}

// Step 2: the shared MLP (kCapObsDim inputs, req.hidden, one output) and its initial parameters
// (orthogonal, stream caps.init).
rl::Mlp make_mlp(const CapTrainRequest& req) {
  std::vector<int> sizes = {rl::kCapObsDim};
  sizes.insert(sizes.end(), req.hidden.begin(), req.hidden.end());
  sizes.push_back(1);
  return rl::Mlp(sizes);
}

Eigen::VectorXd initial_theta(const rl::Mlp& mlp, uint64_t seed) {
  Rng init = Rng::stream(seed, "caps.init");
  Eigen::VectorXd theta(mlp.num_params());
  mlp.init_orthogonal(theta.data(), init, std::sqrt(2.0), 0.01);
  return theta;
}

// Where the per-iteration log goes: req.log_path, else OUT without ".json" + ".train.csv".
std::string training_log_path(const CapTrainRequest& req) {
  if (!req.log_path.empty()) return req.log_path;
  const bool json = req.out.size() > 5 && req.out.ends_with(".json");
  return (json ? req.out.substr(0, req.out.size() - 5) : req.out) + ".train.csv";
}

// What the loop shares: the network, the policy metadata, the validation set and the counters.
struct TrainContext {
  const CapTrainRequest& req;
  const Problem& prob;
  const rl::Mlp& mlp;
  const nlohmann::json& meta;
  const ValidationSet& val;
  int64_t episodes = 0;
};

// Step 3: the reward of the mean policy `theta` on the validation set (mean over its tasks).
Result<double> validate(TrainContext& ctx, const Eigen::VectorXd& theta) {
  std::vector<double> sc(ctx.val.tasks.size(), 0.0);
  FW_RETURN_IF_ERROR(run_tasks(ctx.val.tasks, {theta}, ctx.val.bases, ctx.val.base_of, ctx.mlp,
                               ctx.meta, ctx.req.alpha, ctx.req.threads, sc));
  ctx.episodes += static_cast<int64_t>(sc.size());
  double m = 0;
  for (double x : sc) m += x;
  return m / static_cast<double>(sc.size());
}

// The best mean policy seen on the validation set (iteration 0: the initial one).
struct Selection {
  Eigen::VectorXd theta;
  double validation = 0;
  int iteration = 0;
};

// Step 4: req.iterations ES iterations from `theta` (Adam from a fresh state); the mean policy
// is validated every validate_every iterations and after the last, and kept in `best` when it
// beats it. One log row and one callback per iteration.
Status es_loop(TrainContext& ctx, Eigen::VectorXd theta, Selection& best, std::ostream& log,
               const std::function<double()>& wall,
               const std::function<void(const CapTrainProgress&)>& cb) {
  const CapTrainRequest& req = ctx.req;
  rl::Adam adam(ctx.mlp.num_params(), rl::AdamConfig{req.lr, 0.9, 0.999, 1e-8});
  Rng noise = Rng::stream(req.seed, "caps.noise");
  Rng scen = Rng::stream(req.seed, "caps.scenarios");
  const double members = 2.0 * req.pairs;
  for (int it = 1; it <= req.iterations; ++it) {
    FW_ASSIGN_OR_RETURN(
        std::vector<double> fit,
        es_iteration(ctx.prob, req, ctx.mlp, ctx.meta, noise, scen, adam, theta, ctx.episodes));
    double mean = 0;
    for (double f : fit) mean += f / members;
    double val = std::nan("");
    if (it % req.validate_every == 0 || it == req.iterations) {
      FW_ASSIGN_OR_RETURN(val, validate(ctx, theta));
      if (val > best.validation) best = {theta, val, it};
    }
    log << it << ',' << mean << ',' << *std::max_element(fit.begin(), fit.end()) << ','
        << (std::isnan(val) ? std::string() : std::to_string(val)) << ',' << wall() << '\n';
    log.flush();
    if (cb) cb({it, req.iterations, mean, val, wall()});
  }
  return Status::Ok();
}

// Step 5: the selection's record in the policy metadata.
void record_selection(const CapTrainRequest& req, const Selection& best, int64_t episodes,
                      nlohmann::json& meta) {
  meta["iterations"] = req.iterations;
  meta["best_iteration"] = best.iteration;
  meta["validation_reward"] = best.validation;
  meta["validation"] = {{"seeds", "500000.." + std::to_string(500000 + req.validation_seeds - 1)},
                        {"variants", nlohmann::json::array()}};
  for (const auto& [name, sets] : cap_validation_variants(req.episode_s))
    meta["validation"]["variants"].push_back(name);
  meta["episodes"] = episodes;
}

}  // namespace

Result<CapTrainSummary> run_cap_training(const CapTrainRequest& req,
                                         const std::function<void(const CapTrainProgress&)>& cb) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::function<double()> wall = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  FW_ASSIGN_OR_RETURN(const Problem prob, load_problem(req));
  const rl::Mlp mlp = make_mlp(req);
  const Eigen::VectorXd theta = initial_theta(mlp, req.seed);
  nlohmann::json meta = train_metadata(req, prob.name);
  FW_ASSIGN_OR_RETURN(const ValidationSet val, make_validation(prob, req));
  TrainContext ctx{req, prob, mlp, meta, val, static_cast<int64_t>(val.bases.size())};

  const std::string log_path = training_log_path(req);
  std::ofstream log(log_path);
  if (!log) return Status::Internal(log_path + ": cannot write");
  log << "iteration,mean_reward,best_member_reward,validation,wall_s\n";

  Selection best{theta, 0, 0};
  FW_ASSIGN_OR_RETURN(best.validation, validate(ctx, theta));
  FW_RETURN_IF_ERROR(es_loop(ctx, theta, best, log, wall, cb));
  record_selection(req, best, ctx.episodes, meta);
  FW_RETURN_IF_ERROR(make_policy(mlp, best.theta, meta).save(req.out));
  CapTrainSummary s;
  s.policy = req.out;
  s.log = log_path;
  s.iterations = req.iterations;
  s.best_iteration = best.iteration;
  s.best_validation = best.validation;
  s.wall_s = wall();
  s.episodes = ctx.episodes;
  return s;
}

}  // namespace fw::rl
