#include "studies/population.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/format.hpp"
#include "eval/stats.hpp"
#include "report/sweep_plot.hpp"
#include "sim/gpu_model.hpp"
#include "studies/sweep.hpp"

namespace fw::studies {
namespace {

using allocation::Allocation;
using allocation::Method;

// Class shares ("production" mix: 60 % pretraining; dense and MoE equally likely) and per-GPU
// tokens/s at full power (assumptions: order of magnitude of published H200 runs).
struct ClassSpec {
  const char* name;
  double weight;
  double tokens_per_gpu_s;
};
constexpr ClassSpec kClasses[] = {
    {"dense-pt", 0.3, 1500}, {"moe-pt", 0.3, 3500}, {"dense-ft", 0.2, 2000}, {"moe-ft", 0.2, 4500}};

double lognormal(std::mt19937_64& rng, double sigma) {
  return std::exp(sigma * std::normal_distribution<double>(0, 1)(rng));
}

}  // namespace

Result<std::vector<double>> draw_shape_pfis(uint64_t seed, int n, const std::string& gpu) {
  std::mt19937_64 rng(seed);
  std::vector<double> pfi;
  for (int i = 0; i < n; ++i) {
    FW_ASSIGN_OR_RETURN(SimulatedJob job, draw_shape(rng, gpu));
    pfi.push_back(job.pfi);
  }
  return pfi;
}

Result<SimulatedJob> draw_shape(std::mt19937_64& rng, const std::string& gpu_name) {
  const sim::GpuPreset* gpu = sim::find_gpu_preset(gpu_name);
  if (!gpu) return Status::InvalidArgument("unknown gpu '" + gpu_name + "'");
  std::uniform_real_distribution<double> u(0, 1);
  double r = u(rng);
  const ClassSpec* cls = &kClasses[0];
  for (const auto& c : kClasses) {
    cls = &c;
    if ((r -= c.weight) < 0) break;
  }
  const sim::PretrainModel* base = sim::find_pretrain_model(cls->name);
  if (!base) return Status::Internal(std::string("no preset ") + cls->name);
  SimulatedJob s;
  s.cls = cls->name;
  const sim::Load& fwd = base->load[0];
  s.mix.sm = std::clamp(fwd.u * lognormal(rng, 0.06), 0.3, 1.0);
  s.mix.mem = std::clamp(fwd.m * lognormal(rng, 0.25), 0.05, 1.0);
  s.mix.compute_bound =
      std::clamp(fwd.c + 0.08 * std::normal_distribution<double>(0, 1)(rng), 0.3, 1.0);
  s.mix.comm_share =
      std::clamp((1 - base->share[0] - base->share[1]) * lognormal(rng, 0.3), 0.02, 0.5);
  std::vector<double> caps;
  for (int i = 0; i <= 10; ++i)
    caps.push_back(gpu->min_cap_w + (gpu->max_cap_w - gpu->min_cap_w) * i / 10);
  sim::SimParams sp;
  sp.noise_w = 0;
  const auto pts = sim::simulate_sweep(*gpu, sim::apply_mix(*base, s.mix), caps, sp);
  std::vector<SweepRow> rows;
  for (const auto& p : pts) rows.push_back({p.cap_w, p.power_w, p.throughput});
  auto res = sweep_result(s.cls, rows);
  if (!res.ok()) return res.status();
  s.pfi = res->pfi;
  s.job = to_alloc_job(*res, 1.0);
  s.job.pfi = 0;  // recomputed from the scaled curve (same value: PFI is scale-free)
  return s;
}

allocation::Job scale_job(const SimulatedJob& shape, std::mt19937_64& rng,
                          const PopulationOptions& opt) {
  std::uniform_real_distribution<double> u(0, 1);
  const double r = u(rng);
  const int gpus = opt.fixed_gpus > 0 ? opt.fixed_gpus
                   : r < 0.4          ? 8
                   : r < 0.7          ? 16
                   : r < 0.9          ? 32
                                      : 64;
  double rate = 2000;
  for (const auto& c : kClasses) {
    if (shape.cls == c.name) rate = c.tokens_per_gpu_s;
  }
  rate *= lognormal(rng, opt.rate_sigma);
  allocation::Job j = shape.job;
  const double t_top = j.curve.back().throughput;
  for (auto& p : j.curve) {
    p.power_w *= gpus;
    p.throughput *= rate * gpus / t_top;
  }
  j.pfi = shape.pfi;
  j.max_slowdown = 1.0;
  if (opt.sla_tiers) {
    const double tiers[] = {0.0, 0.10, 0.25, 0.50};
    const double w[] = {0.1, 0.2, 0.3, 0.4};
    double x = u(rng);
    for (int k = 0; k < 4; ++k) {
      j.max_slowdown = tiers[k];
      if ((x -= w[k]) < 0) break;
    }
  }
  return j;
}

// Reason for length: the study's loop (pool, populations, cuts, methods) and its statistics.
Result<PopulationReport> run_population(const PopulationOptions& opt) {
  if (opt.populations < 2 || opt.jobs < 1 || opt.pool < 1) {
    return Status::InvalidArgument("population: need ≥ 2 populations, ≥ 1 job, ≥ 1 pool job");
  }
  std::mt19937_64 rng(opt.seed);
  std::vector<SimulatedJob> pool;
  double pfi_sum = 0;
  for (int i = 0; i < opt.pool; ++i) {
    auto s = draw_shape(rng, opt.gpu);
    if (!s.ok()) return s.status();
    pfi_sum += s->pfi;
    pool.push_back(std::move(*s));
  }
  PopulationReport rep;
  rep.options = opt;
  rep.mean_pfi = pfi_sum / opt.pool;
  const auto& methods = allocation::all_methods();
  const size_t nc = opt.cuts.size(), nm = methods.size();
  std::vector<std::vector<std::vector<double>>> gap(nc, std::vector<std::vector<double>>(nm));
  std::vector<std::vector<double>> gain(nc, std::vector<double>(nm, 0)),
      loss(nc, std::vector<double>(nm, 0));
  std::vector<int> counted(nc, 0);
  std::uniform_int_distribution<int> pick(0, opt.pool - 1);
  for (int p = 0; p < opt.populations; ++p) {
    std::vector<allocation::Job> jobs;
    double pmax = 0, tmax = 0;
    for (int k = 0; k < opt.jobs; ++k) {
      jobs.push_back(scale_job(pool[pick(rng)], rng, opt));
      pmax += jobs.back().curve.back().power_w;
      tmax += jobs.back().curve.back().throughput;
    }
    for (size_t c = 0; c < nc; ++c) {
      std::vector<Allocation> res;
      for (Method m : methods)
        res.push_back(allocation::allocate(jobs, pmax * (1 - opt.cuts[c]), m));
      const Allocation& eq = res[0];
      const Allocation& best = res[nm - 1];
      if (!best.feasible) continue;
      ++counted[c];
      for (size_t m = 0; m < nm; ++m) {
        const double g = allocation::gap_closed(res[m], eq, best);
        if (!std::isnan(g)) gap[c][m].push_back(g);
        gain[c][m] += (res[m].total_throughput - eq.total_throughput) / opt.jobs;
        loss[c][m] += 1 - res[m].total_throughput / tmax;
      }
    }
  }
  for (size_t c = 0; c < nc; ++c) {
    PopulationCut pc;
    pc.cut = opt.cuts[c];
    for (size_t m = 0; m < nm; ++m) {
      MethodAtCut mc;
      mc.method = allocation::method_name(methods[m]);
      const eval::Stat s = eval::stat_of(gap[c][m]);
      mc.populations = static_cast<int>(gap[c][m].size());
      mc.gap_mean = gap[c][m].empty() ? std::nan("") : s.mean;
      mc.gap_ci95 = s.ci95;
      mc.gain_per_job_mean = counted[c] ? gain[c][m] / counted[c] : 0;
      mc.loss_mean = counted[c] ? loss[c][m] / counted[c] : 0;
      pc.methods.push_back(mc);
    }
    rep.cuts.push_back(pc);
  }
  return rep;
}

namespace {
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
}  // namespace

nlohmann::json population_json(const PopulationReport& r) {
  nlohmann::json cuts = nlohmann::json::array();
  for (const auto& c : r.cuts) {
    nlohmann::json ms = nlohmann::json::object();
    for (const auto& m : c.methods) {
      ms[m.method] = {{"gap_closed", num(m.gap_mean)},
                      {"gap_closed_ci95", num(m.gap_ci95)},
                      {"gain_over_equal_per_job", m.gain_per_job_mean},
                      {"throughput_loss", m.loss_mean},
                      {"populations", m.populations}};
    }
    cuts.push_back({{"cut", c.cut}, {"methods", ms}});
  }
  const auto& o = r.options;
  return {{"simulated", true},
          {"populations", o.populations},
          {"jobs", o.jobs},
          {"pool", o.pool},
          {"gpu", o.gpu},
          {"sla_tiers", o.sla_tiers},
          {"fixed_gpus", o.fixed_gpus},
          {"rate_sigma", o.rate_sigma},
          {"seed", o.seed},
          {"mean_pfi", r.mean_pfi},
          {"throughput_unit", "tokens/s (simulated)"},
          {"cuts", cuts}};
}

std::string population_table(const PopulationReport& r, const TextStyle& style) {
  std::string out;
  char b[200];
  std::snprintf(b, sizeof b,
                "%d populations x %d jobs (%s, pool %d, mean PFI %.2f%s), simulated\n"
                "share of the equal->optimal gap closed (mean ±95 %% CI); [gain over equal, "
                "tokens/s per job]\n",
                r.options.populations, r.options.jobs, r.options.gpu.c_str(), r.options.pool,
                r.mean_pfi, r.options.sla_tiers ? ", SLA tiers" : "");
  out += b;
  if (r.cuts.empty()) return out;
  // One column per method; to fit the width, left out first (named under the table): equal
  // (0 % of the gap by definition), then optimal (100 %) and proportional.
  TextTable t;
  t.label_header = "cut";
  for (const auto& m : r.cuts.front().methods) {
    const int rank = m.method == "equal"                                   ? 3
                     : m.method == "optimal" || m.method == "proportional" ? 2
                                                                           : 1;
    t.columns.push_back({m.method, rank});
  }
  for (const auto& c : r.cuts) {
    std::vector<std::string> row = {format_fixed(100 * c.cut, 0) + "%"};
    for (const auto& m : c.methods) {
      if (std::isnan(m.gap_mean)) {
        row.push_back("-");
      } else {
        row.push_back(format_fixed(100 * m.gap_mean, 1) + "% ±" +
                      format_fixed(std::isfinite(m.gap_ci95) ? 100 * m.gap_ci95 : 0.0, 1) + " [" +
                      format_si(m.gain_per_job_mean) + "]");
      }
    }
    t.rows.push_back(std::move(row));
  }
  std::vector<std::string> left_out;
  out += render_table(t, style, &left_out);
  if (!left_out.empty()) {
    out += "not shown (--wide shows them):";
    for (size_t i = 0; i < left_out.size(); ++i) out += (i ? ", " : " ") + left_out[i];
    out += "\n";
  }
  return out;
}

std::string population_svg(const PopulationReport& r) {
  report::XyPlot plot;
  plot.title = "Share of the equal->optimal gap closed (simulated populations, 95 % CI)";
  plot.x_label = "power cut (share of summed Pmax)";
  plot.y_label = "gap closed";
  plot.x0 = 0;
  plot.x1 = r.cuts.empty() ? 0.4 : std::max(0.05, r.cuts.back().cut);
  plot.y0 = -0.2;
  plot.y1 = 1.1;
  plot.series.push_back({"published pfi, 30 %: 0.63", {0.3, 0.3}, {0, 0.63}, true, {}, {}});
  for (size_t m = 0; !r.cuts.empty() && m < r.cuts.front().methods.size(); ++m) {
    report::XySeries s;
    s.label = r.cuts.front().methods[m].method;
    for (const auto& c : r.cuts) {
      const auto& mc = c.methods[m];
      if (std::isnan(mc.gap_mean)) continue;
      const double ci = std::isfinite(mc.gap_ci95) ? mc.gap_ci95 : 0;
      s.x.push_back(c.cut);
      s.y.push_back(mc.gap_mean);
      s.y_lo.push_back(mc.gap_mean - ci);
      s.y_hi.push_back(mc.gap_mean + ci);
    }
    plot.series.push_back(s);
  }
  return report::render_xy_svg(plot);
}

}  // namespace fw::studies
