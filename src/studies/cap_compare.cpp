#include "studies/cap_compare.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "controllers/cap_arms.hpp"
#include "controllers/capnet_online_controller.hpp"
#include "controllers/frontier_controller.hpp"
#include "controllers/pid_controller.hpp"
#include "controllers/zeus_controller.hpp"
#include "core/format.hpp"
#include "core/text_table.hpp"
#include "eval/cap_episode.hpp"
#include "registry/frontier_setup.hpp"
#include "rl/capnet_controller.hpp"

namespace fw::studies {
namespace {

struct Arm {
  std::string name, family;
  std::function<std::unique_ptr<Controller>()> make;  // null: uncapped
  std::string cost = "-";                             // CapArmResult::cost
};

std::string num(double v, int prec = 0) { return format_fixed(v, prec); }

Result<std::vector<Arm>> build_arms(const CapCompareRequest& req) {
  std::vector<Arm> arms;
  arms.push_back({"uncapped", "uncapped", nullptr});
  const sim::Scenario& sc = req.scenario;
  if (sc.gpus.empty()) return Status::InvalidArgument("scenario has no GPU");
  double max_cap = 0, min_cap = 1e18;
  {
    auto plant = sim::make_plant(sc, 1);
    for (const GpuInfo& g : plant->info().gpus) {
      max_cap = std::max(max_cap, g.max_cap_w);
      min_cap = std::min(min_cap, g.min_cap_w);
    }
  }
  const double step = req.sweep_step_frac * max_cap * (req.quick ? 4 : 1);
  for (double w = max_cap - step; w >= std::max(min_cap, 0.5 * max_cap) - 1e-9; w -= step) {
    const double cap = std::round(w);
    arms.push_back({"uniform:" + num(cap) + "W", "uniform",
                    [cap] { return std::make_unique<FixedCapController>(cap); }});
  }
  const int n_uniform = static_cast<int>(arms.size()) - 1;
  for (size_t i = 1; i < arms.size(); ++i) {
    arms[i].cost = "pick: sweep " + std::to_string(n_uniform * req.seeds) + " ep";
  }
  const int nr = req.quick ? 3 : 16;
  for (int k = 0; k < nr; ++k) {
    const double r = 1.0 - (req.quick ? 0.1 : 0.03) * (k + 1);
    arms.push_back({"per-gpu:r=" + num(r, 2), "per-gpu",
                    [r] { return std::make_unique<PerGpuStaticController>(r); },
                    "60 s uncapped/run; pick: sweep " + std::to_string(nr * req.seeds) + " ep"});
  }
  // A pipeline job: the frontier reference on its offline profile (the first pipeline job).
  for (size_t j = 0; j < sc.jobs.size(); ++j) {
    if (sc.jobs[j].kind != sim::JobKind::kPipeline) continue;
    FW_ASSIGN_OR_RETURN(FrontierConfig fc,
                        registry::frontier_config_for_job(sc.jobs[j], static_cast<int>(j)));
    FW_ASSIGN_OR_RETURN(FrontierController proto, FrontierController::create(fc));
    arms.push_back(
        {"frontier", "frontier", [proto] { return std::make_unique<FrontierController>(proto); },
         "offline profile " + std::to_string(registry::frontier_profile_points(fc)) + " points"});
    // The planner's schedule mode: a cap per stage per 1F1B phase, keyed to step boundaries.
    FrontierConfig sc_cfg = fc;
    sc_cfg.schedule = true;
    FW_ASSIGN_OR_RETURN(FrontierController sched, FrontierController::create(sc_cfg));
    arms.push_back(
        {"frontier:schedule", "frontier",
         [sched] { return std::make_unique<FrontierController>(sched); },
         "offline profile " + std::to_string(registry::frontier_profile_points(fc)) + " points"});
    // The same plan held to capnet online's loss rule (capnet_online_controller.hpp): planned
    // slowdown 1.2 % less one planned uncapped iteration over 3600 s, so that its completed-step
    // loss, like capnet online's, stays within 1.2 % (`frontier` plans the whole 1.2 % of time
    // and loses up to one iteration more in completed steps). The equal-guarantee reference.
    FrontierConfig rc = fc;
    rc.slowdown_max = std::max(0.0, 0.012 - proto.base_plan().baseline_time_s / 3600);
    FW_ASSIGN_OR_RETURN(FrontierController rule, FrontierController::create(rc));
    arms.push_back(
        {"frontier:loss-rule", "frontier-rule",
         [rule] { return std::make_unique<FrontierController>(rule); },
         "offline profile " + std::to_string(registry::frontier_profile_points(rc)) + " points"});
    // EnvPipe-like: the same offline profile, slack only (no planned time increase).
    FrontierConfig ec = fc;
    ec.slowdown_max = 0;
    FW_ASSIGN_OR_RETURN(FrontierController env, FrontierController::create(ec));
    arms.push_back(
        {"envpipe-like", "envpipe", [env] { return std::make_unique<FrontierController>(env); },
         "offline profile " + std::to_string(registry::frontier_profile_points(ec)) + " points"});
    // capnet online: no profile, no training (capnet_online_controller.hpp).
    CapNetOnlineConfig oc;
    oc.job = static_cast<int>(j);
    oc.stages = static_cast<int>(sc.jobs[j].pipeline.stages.size());
    FW_ASSIGN_OR_RETURN(CapNetOnlineController online, CapNetOnlineController::create(oc));
    arms.push_back({"capnet:online", "capnet",
                    [online] { return std::make_unique<CapNetOnlineController>(online); },
                    "none (online; 30 s uncapped/run)"});
    break;
  }
  arms.push_back({"zeus:eta=0.5", "zeus",
                  [] { return std::make_unique<ZeusController>(ZeusConfig{}); },
                  "profiling in run"});
  for (double target : {0.75, 0.65, 0.55}) {
    PidConfig c;
    c.target = target;
    c.signal = PidConfig::Signal::kMean;
    c.period_s = 10;
    arms.push_back({"pid:target=" + num(target, 2), "pid",
                    [c] { return std::make_unique<PidController>(c); }});
  }
  for (const std::string& path : req.policies) {
    auto p = rl::Policy::load(path);
    if (!p.ok()) return Status::InvalidArgument("capnet: " + p.status().message());
    FW_RETURN_IF_ERROR(rl::CapNetController::create(*p).status().with_context("capnet:" + path));
    const double alpha = p->metadata().value("alpha", std::nan(""));
    rl::Policy shared = std::move(p).value();
    const std::string name =
        "capnet:alpha=" + (std::isnan(alpha) ? std::string("?") : num(alpha, 2));
    const nlohmann::json& md = shared.metadata();
    std::string cost = "-";
    if (md.contains("episodes") && md.contains("recipe") && md["recipe"].contains("episode_s")) {
      cost = "training " + num(md["episodes"].get<double>()) + " ep x " +
             num(md["recipe"]["episode_s"].get<double>()) + " s";
    }
    arms.push_back({name, "capnet",
                    [shared]() -> std::unique_ptr<Controller> {
                      return std::move(rl::CapNetController::create(shared)).value();
                    },
                    cost});
  }
  return arms;
}

double mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return x.empty() ? 0 : s / static_cast<double>(x.size());
}
double sd(const std::vector<double>& x) {
  if (x.size() < 2) return 0;
  const double m = mean(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return std::sqrt(s / static_cast<double>(x.size() - 1));
}

void mark_frontier(std::vector<CapArmResult>& arms, const std::string& family,
                   bool CapArmResult::*flag) {
  for (auto& a : arms) {
    if (a.family != family) continue;
    bool dominated = false;
    for (const auto& b : arms) {
      if (b.family != family || &a == &b) continue;
      if (b.throughput_lost <= a.throughput_lost && b.energy_saved > a.energy_saved)
        dominated = true;
    }
    a.*flag = !dominated;
  }
}

}  // namespace

double frontier_at(const std::vector<CapArmResult>& arms, const std::string& family, double lost) {
  std::vector<std::pair<double, double>> pts = {{0.0, 0.0}};  // uncapped
  for (const auto& a : arms)
    if (a.family == family) pts.push_back({a.throughput_lost, a.energy_saved});
  std::sort(pts.begin(), pts.end());
  double best = 0;
  for (const auto& [l, s] : pts)
    if (l <= lost) best = std::max(best, s);
  // The upper concave envelope: any two points around `lost` mixed over time.
  for (const auto& [l1, s1] : pts) {
    if (l1 > lost) continue;
    for (const auto& [l2, s2] : pts) {
      if (l2 <= lost) continue;
      best = std::max(best, s1 + (lost - l1) / (l2 - l1) * (s2 - s1));
    }
  }
  return best;
}

size_t best_within_loss(const std::vector<CapArmResult>& arms, double max_lost) {
  size_t best = 0;
  for (size_t i = 0; i < arms.size(); ++i) {
    if (arms[i].throughput_lost > max_lost) continue;
    if (arms[best].throughput_lost > max_lost || arms[i].energy_saved > arms[best].energy_saved)
      best = i;
  }
  return best;
}

Result<CapCompareResult> run_cap_compare(const CapCompareRequest& req) {
  FW_ASSIGN_OR_RETURN(std::vector<Arm> arms, build_arms(req));
  const size_t ns = static_cast<size_t>(req.seeds);
  std::vector<std::vector<eval::CapEpisode>> ep(arms.size(), std::vector<eval::CapEpisode>(ns));
  std::mutex mu;
  Status first = Status::Ok();
  size_t next = 0, done = 0;
  const size_t total = arms.size() * ns;
  size_t i_zeus = arms.size();
  for (size_t a = 0; a < arms.size(); ++a) {
    if (arms[a].family == "zeus") i_zeus = a;
  }
  std::vector<double> zeus_cap(ns, std::nan(""));  // job 0's chosen cap per seed
  auto worker = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> l(mu);
        if (next >= total || !first.ok()) return;
        i = next++;
      }
      const size_t a = i / ns, s = i % ns;
      std::unique_ptr<Controller> c = arms[a].make ? arms[a].make() : nullptr;
      auto r = eval::run_cap_episode(req.scenario, req.seed_base + s, c.get());
      std::lock_guard<std::mutex> l(mu);
      if (req.progress) req.progress(++done, total);
      if (!r.ok()) {
        if (first.ok()) first = r.status().with_context(arms[a].name);
        continue;
      }
      ep[a][s] = *r;
      if (a == i_zeus) {
        const std::vector<double> caps = static_cast<const ZeusController&>(*c).chosen_caps_w();
        zeus_cap[s] = caps.empty() ? std::nan("") : caps.front();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < req.threads; ++k) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  FW_RETURN_IF_ERROR(first);
  // Zeus without its profiling: the cap it chose on each seed, held from t = 0 (a seed where it
  // never finished profiling keeps the uncapped run).
  if (i_zeus < arms.size()) {
    std::vector<eval::CapEpisode> held(ns);
    for (size_t s = 0; s < ns; ++s) {
      if (std::isnan(zeus_cap[s])) {
        held[s] = ep[0][s];
        continue;
      }
      FixedCapController c(zeus_cap[s]);
      FW_ASSIGN_OR_RETURN(held[s], eval::run_cap_episode(req.scenario, req.seed_base + s, &c));
    }
    arms.insert(arms.begin() + static_cast<long>(i_zeus) + 1,
                Arm{"zeus:held", "zeus", nullptr, "profiling not counted"});
    ep.insert(ep.begin() + static_cast<long>(i_zeus) + 1, held);
  }

  CapCompareResult out;
  out.scenario = req.scenario.name;
  for (size_t s = 0; s < ns; ++s) out.seeds.push_back(req.seed_base + s);
  for (size_t a = 0; a < arms.size(); ++a) {
    std::vector<double> sv, lo, edp, st;
    for (size_t s = 0; s < ns; ++s) {
      const eval::CapScore sc = eval::score_against(ep[a][s], ep[0][s]);
      sv.push_back(sc.energy_saved);
      lo.push_back(sc.throughput_lost);
      edp.push_back(sc.edp_change);
      st.push_back(1 - ep[a][s].energy_j / ep[0][s].energy_j);
    }
    CapArmResult r;
    r.name = arms[a].name;
    r.family = arms[a].family;
    r.energy_saved = mean(sv);
    r.throughput_lost = mean(lo);
    r.edp_change = mean(edp);
    r.energy_saved_same_time = mean(st);
    r.saved_sd = sd(sv);
    r.lost_sd = sd(lo);
    r.cost = arms[a].cost;
    out.arms.push_back(r);
  }
  mark_frontier(out.arms, "uniform", &CapArmResult::on_uniform_frontier);
  mark_frontier(out.arms, "per-gpu", &CapArmResult::on_per_gpu_frontier);
  for (auto& a : out.arms) {
    a.uniform_frontier_at_loss = frontier_at(out.arms, "uniform", a.throughput_lost);
    a.per_gpu_frontier_at_loss = frontier_at(out.arms, "per-gpu", a.throughput_lost);
  }
  out.best_low_loss = best_within_loss(out.arms, kTargetLossMax);
  return out;
}

nlohmann::json CapCompareResult::to_json() const {
  nlohmann::json j = {{"simulated", true}, {"scenario", scenario}, {"seeds", seeds}};
  if (best_low_loss < arms.size()) {
    const CapArmResult& b = arms[best_low_loss];
    j["best_at_low_loss"] = {{"max_throughput_lost", kTargetLossMax},
                             {"arm", b.name},
                             {"energy_saved", b.energy_saved},
                             {"throughput_lost", b.throughput_lost},
                             {"uniform_frontier", frontier_at(arms, "uniform", kTargetLossMax)},
                             {"per_gpu_frontier", frontier_at(arms, "per-gpu", kTargetLossMax)}};
  }
  j["arms"] = nlohmann::json::array();
  for (const auto& a : arms) {
    j["arms"].push_back({{"name", a.name},
                         {"family", a.family},
                         {"energy_saved", a.energy_saved},
                         {"energy_saved_sd", a.saved_sd},
                         {"throughput_lost", a.throughput_lost},
                         {"throughput_lost_sd", a.lost_sd},
                         {"edp_change", a.edp_change},
                         {"energy_saved_same_time", a.energy_saved_same_time},
                         {"on_uniform_frontier", a.on_uniform_frontier},
                         {"on_per_gpu_frontier", a.on_per_gpu_frontier},
                         {"uniform_frontier_at_loss", a.uniform_frontier_at_loss},
                         {"margin_vs_uniform", a.energy_saved - a.uniform_frontier_at_loss},
                         {"per_gpu_frontier_at_loss", a.per_gpu_frontier_at_loss},
                         {"margin_vs_per_gpu", a.energy_saved - a.per_gpu_frontier_at_loss},
                         {"cost", a.cost}});
  }
  return j;
}

std::string CapCompareResult::table() const {
  std::ostringstream o;
  o << "flexwatt caps — SIMULATED: " << scenario << ", seeds " << seeds.front() << ".."
    << seeds.back() << "; vs the uncapped run of each seed\n"
    << wrap_text(
           "saved = 1 - (E/tokens)/(E0/tokens0); lost = 1 - tokens/tokens0; EDP of a fixed "
           "amount of work; same-time = 1 - E/E0; vs uniform = saved minus the uniform frontier "
           "at the same loss; vs per-GPU = the same against the per-GPU static frontier; * = on "
           "its family's frontier; cost = what the arm runs to be chosen or deployed (ep = "
           "episodes of this scenario; a \"pick: sweep\" is on these seeds, so hindsight)",
           TextStyle{}.width)
    << "\n";
  char b[512];
  int w = 16;  // the arm column: as wide as the longest name
  for (const auto& a : arms) w = std::max(w, static_cast<int>(a.name.size()));
  std::snprintf(b, sizeof b, "%-*s %9s %9s %8s %10s %10s %10s  %s\n", w, "arm", "saved %", "lost %",
                "EDP %", "same-time%", "vs unif pt", "vs pgpu pt", "cost");
  o << b;
  for (const auto& a : arms) {
    const bool star = a.on_uniform_frontier || a.on_per_gpu_frontier;
    std::snprintf(b, sizeof b, "%-*s %8.2f%s %9.2f %8.2f %10.2f %+10.2f %+10.2f  %s\n", w,
                  a.name.c_str(), 100 * a.energy_saved, star ? "*" : " ", 100 * a.throughput_lost,
                  100 * a.edp_change, 100 * a.energy_saved_same_time,
                  100 * (a.energy_saved - a.uniform_frontier_at_loss),
                  100 * (a.energy_saved - a.per_gpu_frontier_at_loss), a.cost.c_str());
    o << b;
  }
  if (best_low_loss < arms.size()) {
    const CapArmResult& a = arms[best_low_loss];
    std::snprintf(b, sizeof b,
                  "best at <= %.1f %% lost: %s, %.2f %% saved at %.2f %% lost; frontiers at %.1f "
                  "%% lost: uniform %.2f %%, per-GPU %.2f %%\n",
                  100 * kTargetLossMax, a.name.c_str(), 100 * a.energy_saved,
                  100 * a.throughput_lost, 100 * kTargetLossMax,
                  100 * frontier_at(arms, "uniform", kTargetLossMax),
                  100 * frontier_at(arms, "per-gpu", kTargetLossMax));
    o << wrap_text(b, TextStyle{}.width, "  ");
  }
  return o.str();
}

std::string CapCompareResult::svg() const {
  const double W = 720, H = 480, L = 70, R = 180, T = 40, B = 60;
  double xmax = 0.02, ymax = 0.02, ymin = 0;
  for (const auto& a : arms) {
    xmax = std::max(xmax, a.throughput_lost);
    ymax = std::max(ymax, a.energy_saved);
    ymin = std::min(ymin, a.energy_saved);
  }
  xmax *= 1.08;
  ymax *= 1.1;
  auto X = [&](double v) { return L + (W - L - R) * std::max(0.0, v) / xmax; };
  auto Y = [&](double v) { return H - B - (H - T - B) * (v - ymin) / (ymax - ymin); };
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
       "fill='white'/>\n"
    << "<text x='" << L << "' y='22' font-size='14'>" << scenario
    << " (SIMULATED): energy saved vs throughput lost, seeds " << seeds.front() << ".."
    << seeds.back() << "</text>\n";
  o << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B
    << "' stroke='black'/><line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B
    << "' stroke='black'/>\n";
  for (int k = 0; k <= 5; ++k) {
    const double xv = xmax * k / 5, yv = ymin + (ymax - ymin) * k / 5;
    o << "<text x='" << X(xv) << "' y='" << H - B + 16 << "' text-anchor='middle'>"
      << num(100 * xv, 1) << "</text><text x='" << L - 6 << "' y='" << Y(yv) + 4
      << "' text-anchor='end'>" << num(100 * yv, 1) << "</text>\n";
  }
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - 18
    << "' text-anchor='middle'>throughput lost %</text><text transform='translate(18,"
    << (T + H - B) / 2 << ") rotate(-90)' text-anchor='middle'>energy saved per token %</text>\n";
  const std::pair<const char*, const char*> fam[] = {
      {"uniform", "#1f77b4"}, {"per-gpu", "#2ca02c"}, {"zeus", "#9467bd"},
      {"pid", "#8c564b"},     {"capnet", "#d62728"},  {"frontier", "#ff7f0e"},
      {"envpipe", "#17becf"}, {"uncapped", "black"}};
  int row = 0;
  for (const auto& [f, col] : fam) {
    if ((std::string(f) == "frontier" || std::string(f) == "envpipe") &&
        std::none_of(arms.begin(), arms.end(), [&f](const auto& a) { return a.family == f; }))
      continue;  // pipeline scenarios only
    std::vector<std::pair<double, double>> line;
    for (const auto& a : arms) {
      if (a.family != f) continue;
      if (a.on_uniform_frontier || a.on_per_gpu_frontier)
        line.push_back({a.throughput_lost, a.energy_saved});
      o << "<circle cx='" << X(a.throughput_lost) << "' cy='" << Y(a.energy_saved) << "' r='"
        << (std::string(f) == "capnet" ? 6 : 4) << "' fill='" << col << "'><title>" << a.name
        << "</title></circle>\n";
      if (std::string(f) == "capnet" || std::string(f) == "zeus" || std::string(f) == "frontier" ||
          std::string(f) == "envpipe")
        o << "<text x='" << X(a.throughput_lost) + 8 << "' y='" << Y(a.energy_saved) - 6
          << "' fill='" << col << "'>" << a.name << "</text>\n";
    }
    std::sort(line.begin(), line.end());
    if (line.size() > 1) {
      o << "<polyline fill='none' stroke='" << col << "' points='" << X(0) << "," << Y(0);
      for (const auto& [x, y] : line) o << " " << X(x) << "," << Y(y);
      o << "'/>\n";
    }
    o << "<circle cx='" << W - R + 20 << "' cy='" << T + 20 * row << "' r='5' fill='" << col
      << "'/><text x='" << W - R + 32 << "' y='" << T + 20 * row + 4 << "'>" << f
      << (std::string(f) == "uniform" || std::string(f) == "per-gpu" ? " static (frontier)" : "")
      << "</text>\n";
    ++row;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace fw::studies
