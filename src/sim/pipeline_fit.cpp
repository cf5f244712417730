#include "sim/pipeline_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/csv.hpp"
#include "core/csv_quoted.hpp"
#include "sim/nelder_mead.hpp"

namespace fw::sim {

Result<std::vector<ZeusRun>> read_zeus_csv(const std::string& path) {
  auto reader = CsvReader::open(path);
  if (!reader.ok()) return reader.status();
  CsvReader& r = **reader;
  if (!r.next()) return Status::InvalidArgument(path + ": empty file");
  std::map<std::string, int> col;
  for (size_t i = 0; i < r.fields().size(); ++i) col[std::string(r.fields()[i])] = int(i);
  for (const char* need :
       {"model_name", "partition_method", "dp", "tp", "pp", "num_microbatches", "time", "energy"}) {
    if (!col.count(need)) {
      return Status::InvalidArgument(r.where() + ": " + need + ": column missing");
    }
  }
  std::vector<ZeusRun> out;
  while (r.next()) {
    const std::vector<std::string_view> f = split_quoted_csv_line(r.line());
    auto get = [&](const std::string& name) -> std::string_view {
      auto it = col.find(name);
      return it != col.end() && static_cast<size_t>(it->second) < f.size() ? f[it->second]
                                                                           : std::string_view();
    };
    auto num = [&](const std::string& name, double& v) -> Status {
      if (!parse_double(get(name), v) || !std::isfinite(v)) {
        return Status::InvalidArgument(r.where() + ": " + name + ": not a number: '" +
                                       std::string(get(name)) + "'");
      }
      return Status::Ok();
    };
    ZeusRun z;
    z.model = std::string(get("model_name"));
    z.partition = std::string(get("partition_method"));
    z.line = r.line_number();
    double v = 0;
    int* ints[] = {&z.dp, &z.tp, &z.pp, &z.microbatches};
    const char* names[] = {"dp", "tp", "pp", "num_microbatches"};
    for (int i = 0; i < 4; ++i) {
      Status st = num(names[i], v);
      if (!st.ok()) return st;
      if (v < 1) return Status::InvalidArgument(r.where() + ": " + names[i] + ": must be >= 1");
      *ints[i] = static_cast<int>(v);
    }
    for (int s = 0; s < z.pp; ++s) {
      Status st = num("power_limit_" + std::to_string(s), v);
      if (!st.ok()) return st;
      z.caps_w.push_back(v);
    }
    Status st = num("time", z.time_s);
    if (st.ok()) st = num("energy", z.energy_j);
    if (!st.ok()) return st;
    out.push_back(std::move(z));
  }
  if (!r.status().ok()) return r.status();
  return out;
}

Result<std::vector<double>> partition_units(const std::string& partition, int pp) {
  if (partition == "uniform_transformer") return std::vector<double>(static_cast<size_t>(pp), 1.0);
  const std::string pre = "custom:";
  if (partition.rfind(pre, 0) != 0) {
    return Status::InvalidArgument("partition '" + partition + "': not custom:... or uniform");
  }
  std::vector<double> b;
  Status st = parse_double_list(partition.substr(pre.size()), "partition", b);
  if (!st.ok()) return st;
  if (b.size() != static_cast<size_t>(pp) + 1) {
    return Status::InvalidArgument("partition '" + partition + "': want " + std::to_string(pp + 1) +
                                   " boundaries");
  }
  std::vector<double> u;
  for (int s = 0; s < pp; ++s) {
    if (!(b[s + 1] > b[s])) return Status::InvalidArgument("partition '" + partition + "'");
    u.push_back(b[s + 1] - b[s]);
  }
  return u;
}

Result<PipelineJobSpec> pipeline_spec_for(const ZeusRun& r, const PipelineFit& fit,
                                          const GpuPreset& gpu, double blocking_w) {
  PipelineJobSpec s;
  s.gpu = &gpu;
  s.microbatches = r.microbatches;
  s.dp = r.dp;
  s.tp = r.tp;
  s.load = fit.load;
  s.blocking_w = blocking_w;
  s.cap_response = fit.response;
  if (!fit.stage_work.empty()) {
    if (fit.stage_work.size() != static_cast<size_t>(r.pp)) {
      return Status::InvalidArgument("line " + std::to_string(r.line) + ": " +
                                     std::to_string(r.pp) + " stages, the stage work has " +
                                     std::to_string(fit.stage_work.size()));
    }
    for (const auto& w : fit.stage_work) {
      s.stages.push_back({fit.t_unit_s * w.forward_s, fit.t_unit_s * w.backward_s});
    }
    return s;
  }
  auto units = partition_units(r.partition, r.pp);
  if (!units.ok()) return units.status();
  if (r.partition == "uniform_transformer" && fit.total_units > 0) {
    for (double& u : *units) u = fit.total_units / r.pp;
  }
  double mean = 0;
  for (double u : *units) mean += u / r.pp;
  for (double& u : *units) u = mean + fit.imbalance * (u - mean);
  units->back() += fit.head * mean;
  for (double u : *units) s.stages.push_back({fit.t_unit_s * u, 2 * fit.t_unit_s * u});
  return s;
}

namespace {

Result<PipelinePrediction> predict(const ZeusRun& r, const PipelineFit& fit, const GpuPreset& gpu,
                                   double blocking_w) {
  auto spec = pipeline_spec_for(r, fit, gpu, blocking_w);
  if (!spec.ok()) return spec.status();
  std::vector<double> caps;
  for (int p = 0; p < r.dp; ++p) caps.insert(caps.end(), r.caps_w.begin(), r.caps_w.end());
  auto it = pipeline_iteration(*spec, caps);
  if (!it.ok()) return it.status();
  PipelinePrediction out;
  out.run = r;
  out.time_s = it->time_s;
  out.energy_j = it->energy_j;
  return out;
}

// The fits' objective: the sum over runs of squared relative time and energy errors of `fit`'s
// predictions; 1e9 when a run cannot be predicted (outside the model's range).
double squared_run_error(const std::vector<ZeusRun>& runs, const PipelineFit& fit,
                         const GpuPreset& gpu, double blocking_w) {
  double c = 0;
  for (const auto& r : runs) {
    auto p = predict(r, fit, gpu, blocking_w);
    if (!p.ok()) return 1e9;
    c += p->time_err() * p->time_err() + p->energy_err() * p->energy_err();
  }
  return c;
}

// fit.max_err = the largest relative time or energy error of fit's predictions over runs.
Status set_max_err(const std::vector<ZeusRun>& runs, const GpuPreset& gpu, double blocking_w,
                   PipelineFit& fit) {
  for (const auto& r : runs) {
    auto p = predict(r, fit, gpu, blocking_w);
    if (!p.ok()) return p.status();
    fit.max_err = std::max({fit.max_err, std::abs(p->time_err()), std::abs(p->energy_err())});
  }
  return Status::Ok();
}

}  // namespace

Result<PipelineFit> fit_pipeline_runs(const std::vector<ZeusRun>& runs, const GpuPreset& gpu,
                                      double blocking_w) {
  if (runs.empty()) return Status::InvalidArgument("no runs to fit");
  const ZeusRun& r0 = runs.front();
  auto units = partition_units(r0.partition, r0.pp);
  if (!units.ok()) return units.status();
  double sum = 0, mx = 0;
  for (double u : *units) {
    sum += u;
    mx = std::max(mx, u);
  }
  const ZeusRun* fastest = &r0;
  for (const auto& r : runs) {
    if (r.time_s < fastest->time_s) fastest = &r;
  }
  PipelineFit fit;
  fit.model = r0.model;
  fit.partition = r0.partition;
  fit.total_units = sum;
  const double t0 = fastest->time_s / (3 * (sum + (r0.microbatches - 1) * mx));
  // x = (log(t_unit / t0), u, m, c, imbalance)
  auto make = [&](const std::array<double, 5>& x) {
    PipelineFit f = fit;
    f.t_unit_s = t0 * std::exp(x[0]);
    f.load = {x[1], x[2], x[3]};
    f.imbalance = x[4];
    return f;
  };
  auto cost = [&](const std::array<double, 5>& x) {
    return squared_run_error(runs, make(x), gpu, blocking_w);
  };
  int evals = 0;  // starts: two compute-bound shares
  const auto best = nelder_mead_starts<5>(cost, {{0, 1.0, 0.3, 0.4, 0.5}, {0, 1.0, 0.3, 0.9, 0.5}},
                                          {0.2, 0.3, 0.2, 0.1, 0.3}, {-2, 0.05, 0, 0.05, 0},
                                          {2, 3, 3, 1, 1}, 1500, &evals);
  PipelineFit out = make(best);
  out.evals = fit.evals + evals;
  FW_RETURN_IF_ERROR(set_max_err(runs, gpu, blocking_w, out));
  return out;
}

namespace {

// The measured cap response of uniform-limit runs (uncapped_w left 0) and the run at the top
// cap; fit_cap_response_runs' errors.
Result<std::pair<CapResponse, const ZeusRun*>> cap_response_from_runs(
    const std::vector<ZeusRun>& runs) {
  if (runs.empty()) return Status::InvalidArgument("no runs to fit");
  std::vector<const ZeusRun*> by_cap;
  for (const auto& r : runs) {
    for (double c : r.caps_w) {
      if (c != r.caps_w.front()) {
        return Status::InvalidArgument("line " + std::to_string(r.line) +
                                       ": per-stage limits in a uniform-limit fit");
      }
    }
    by_cap.push_back(&r);
  }
  std::sort(by_cap.begin(), by_cap.end(),
            [](const ZeusRun* a, const ZeusRun* b) { return a->caps_w[0] < b->caps_w[0]; });
  CapResponse resp;
  const double t_top = by_cap.back()->time_s;
  for (const ZeusRun* r : by_cap) {
    if (!resp.cap_w.empty() && r->caps_w[0] <= resp.cap_w.back()) {
      return Status::InvalidArgument("line " + std::to_string(r->line) + ": a second run at " +
                                     std::to_string(r->caps_w[0]) + " W");
    }
    resp.cap_w.push_back(r->caps_w[0]);
    resp.speed.push_back(std::min(1.0, t_top / r->time_s));
  }
  if (resp.cap_w.size() < 2) return Status::InvalidArgument("fewer than two caps to fit");
  // A run slower at a higher cap than at a lower one (noise) cannot be a speed: keep the
  // speed non-decreasing in the cap (from the top down).
  for (size_t i = resp.speed.size() - 1; i-- > 0;) {
    resp.speed[i] = std::min(resp.speed[i], resp.speed[i + 1]);
  }
  return std::make_pair(resp, by_cap.back());
}

}  // namespace

Result<PipelineFit> fit_cap_response_runs(const std::vector<ZeusRun>& runs, const GpuPreset& gpu,
                                          double blocking_w) {
  FW_ASSIGN_OR_RETURN(auto measured, cap_response_from_runs(runs));
  const CapResponse& resp = measured.first;
  const ZeusRun& r0 = *measured.second;
  auto units = partition_units(r0.partition, r0.pp);
  if (!units.ok()) return units.status();
  double sum = 0, mx = 0;
  for (double u : *units) {
    sum += u;
    mx = std::max(mx, u);
  }
  PipelineFit fit;
  fit.model = r0.model;
  fit.partition = r0.partition;
  fit.total_units = sum;
  fit.response = resp;
  fit.min_cap_w = resp.cap_w.front();
  fit.max_cap_w = resp.cap_w.back();
  const double t0 = r0.time_s / (3 * (sum + (r0.microbatches - 1) * mx));
  const double top_cap = resp.cap_w.back();
  // x = (log(t_unit / t0), imbalance, head, uncapped_w / top cap)
  auto make = [&](const std::array<double, 4>& x) {
    PipelineFit f = fit;
    f.t_unit_s = t0 * std::exp(x[0]);
    f.imbalance = x[1];
    f.head = x[2];
    f.response.uncapped_w = x[3] * top_cap;
    return f;
  };
  auto cost = [&](const std::array<double, 4>& x) {
    return squared_run_error(runs, make(x), gpu, blocking_w);
  };
  const double lo_w = blocking_w / top_cap;
  int evals = 0;  // starts: nearly balanced, and the layer counts
  const auto best =
      nelder_mead_starts<4>(cost, {{0, 0.2, 0.1, 0.95}, {0, 0.8, 0.1, 0.95}}, {0.1, 0.2, 0.1, 0.05},
                            {-2, 0, 0, lo_w}, {2, 1.5, 1, 1.2}, 1200, &evals);
  PipelineFit out = make(best);
  out.evals = fit.evals + evals;
  FW_RETURN_IF_ERROR(set_max_err(runs, gpu, blocking_w, out));
  return out;
}

Result<PipelineFit> fit_profiled_runs(const std::vector<ZeusRun>& runs,
                                      const std::vector<PipelineStageWork>& split,
                                      const GpuPreset& gpu, double blocking_w) {
  FW_ASSIGN_OR_RETURN(auto measured, cap_response_from_runs(runs));
  const ZeusRun& r0 = *measured.second;
  if (split.size() != static_cast<size_t>(r0.pp)) {
    return Status::InvalidArgument(r0.model + ": " + std::to_string(r0.pp) +
                                   " stages, the stage work has " + std::to_string(split.size()));
  }
  PipelineFit fit;
  fit.model = r0.model;
  fit.partition = r0.partition;
  fit.response = measured.first;
  fit.stage_work = split;
  fit.min_cap_w = fit.response.cap_w.front();
  fit.max_cap_w = fit.response.cap_w.back();
  fit.imbalance = 0;
  const double top_cap = fit.max_cap_w;
  // x = (log scale, uncapped_w / top cap); scale 1: the profile's seconds as measured.
  auto make = [&](const std::array<double, 2>& x) {
    PipelineFit f = fit;
    f.t_unit_s = std::exp(x[0]);
    f.response.uncapped_w = x[1] * top_cap;
    return f;
  };
  auto cost = [&](const std::array<double, 2>& x) {
    return squared_run_error(runs, make(x), gpu, blocking_w);
  };
  // Start from the scale that gives the top uniform run its measured time (its time does not
  // depend on the power while computing).
  auto top = predict(r0, make({0, 1}), gpu, blocking_w);
  if (!top.ok()) return top.status().with_context(r0.model);
  const double log0 = std::clamp(std::log(r0.time_s / top->time_s), -2.0, 2.0);
  int evals = 0;  // starts: the cap binds at the top cap, or hardly
  const auto best =
      nelder_mead_starts<2>(cost, {{log0, 0.8}, {log0, 0.95}}, {0.05, 0.05},
                            {log0 - 1, blocking_w / top_cap}, {log0 + 1, 1.2}, 600, &evals);
  PipelineFit out = make(best);
  out.evals = fit.evals + evals;
  FW_RETURN_IF_ERROR(set_max_err(runs, gpu, blocking_w, out));
  return out;
}

const char* profiled_row_name(ProfiledRow p) {
  switch (p) {
    case ProfiledRow::kNotProfiled:
      return "not_profiled";
    case ProfiledRow::kOutsideRange:
      return "outside_calibrated_range";
    case ProfiledRow::kPredicted:
      return "predicted";
  }
  return "?";
}

namespace {

// The work-split diagnostic: per-stage work (relative) fitted by coordinate descent to `fit`'s
// own per-stage-limit rows and uniform rows, from S starts (stage j heaviest), the rest of the
// physics unchanged. Returns the work per stage relative to the heaviest, and fills the rows.
std::vector<double> fit_work_split(const PipelineFit& fit, const std::vector<ZeusRun>& uniform,
                                   std::vector<PipelinePrediction*>& rows, const GpuPreset& gpu,
                                   double blocking_w) {
  const int S = uniform.front().pp;
  const ZeusRun* top = &uniform.front();
  for (const auto& r : uniform) {
    if (r.caps_w[0] > top->caps_w[0]) top = &r;
  }
  auto spec_for = [&](const ZeusRun& r, const std::vector<double>& w) {
    PipelineJobSpec s;
    s.gpu = &gpu;
    s.microbatches = r.microbatches;
    s.dp = r.dp;
    s.tp = r.tp;
    s.blocking_w = blocking_w;
    s.cap_response = fit.response;
    for (double x : w) s.stages.push_back({x, 2 * x});
    return s;
  };
  auto run = [&](const ZeusRun& r, const std::vector<double>& w) -> std::pair<double, double> {
    const PipelineJobSpec s = spec_for(r, w);
    std::vector<double> caps;
    for (int p = 0; p < r.dp; ++p) caps.insert(caps.end(), r.caps_w.begin(), r.caps_w.end());
    auto it = pipeline_iteration(s, caps);
    if (!it.ok()) return {NAN, NAN};
    return {it->time_s, it->energy_j};
  };
  // Scale the work so the top uniform run keeps its time.
  auto scaled = [&](std::vector<double> w) {
    const double t = run(*top, w).first;
    for (double& x : w) x *= top->time_s / t;
    return w;
  };
  auto cost = [&](const std::vector<double>& w0) {
    const std::vector<double> w = scaled(w0);
    double c = 0;
    auto add = [&](const ZeusRun& r) {
      const auto [t, e] = run(r, w);
      c += std::pow(t / r.time_s - 1, 2) + std::pow(e / r.energy_j - 1, 2);
    };
    for (const auto& r : uniform) add(r);
    for (const auto* p : rows) add(p->run);
    return std::isfinite(c) ? c : 1e9;
  };
  std::vector<double> best;
  double best_c = 1e300;
  for (int j = 0; j < S; ++j) {
    std::vector<double> w(static_cast<size_t>(S), 0.85);
    w[j] = 1;
    double c = cost(w);
    for (double step = 0.1; step > 0.004;) {
      bool better = false;
      for (int s = 0; s < S; ++s) {
        for (double d : {step, -step}) {
          std::vector<double> w2 = w;
          w2[s] = std::clamp(w2[s] + d, 0.2, 1.5);
          const double c2 = cost(w2);
          if (c2 < c) {
            c = c2;
            w = w2;
            better = true;
          }
        }
      }
      if (!better) step /= 2;
    }
    if (c < best_c) {
      best_c = c;
      best = w;
    }
  }
  const std::vector<double> w = scaled(best);
  const double mx = *std::max_element(w.begin(), w.end());
  std::vector<double> rel;
  for (double x : w) rel.push_back(x / mx);
  for (auto* p : rows) {
    const auto [t, e] = run(p->run, w);
    p->split_time_s = t;
    p->split_energy_j = e;
    p->split_work = rel;
  }
  return rel;
}

}  // namespace

Result<PipelineValidation> validate_pipeline_runs(const std::vector<ZeusRun>& global,
                                                  const std::vector<ZeusRun>& local,
                                                  const GpuPreset& gpu, double blocking_w,
                                                  PipelineModel model, bool work_split_diagnostic,
                                                  const std::vector<StageWorkEntry>& profiled) {
  PipelineValidation v;
  std::map<std::pair<std::string, std::string>, std::vector<ZeusRun>> groups;
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& r : global) {
    auto key = std::make_pair(r.model, r.partition);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(r);
  }
  for (const auto& key : order) {
    auto f = model == PipelineModel::kCapResponse
                 ? fit_cap_response_runs(groups[key], gpu, blocking_w)
                 : fit_pipeline_runs(groups[key], gpu, blocking_w);
    if (!f.ok()) return f.status().with_context(key.first);
    v.fits.push_back(*f);
    if (model != PipelineModel::kCapResponse) continue;
    const StageWorkEntry* e = nullptr;
    for (const auto& x : profiled) {
      if (x.model == key.first && x.partition == key.second) e = &x;
    }
    if (!e || e->stages.size() != static_cast<size_t>(groups[key].front().pp)) continue;
    auto pf = fit_profiled_runs(groups[key], e->stages, gpu, blocking_w);
    if (!pf.ok()) return pf.status().with_context(key.first);
    v.profiled_fits.push_back(*pf);
  }
  for (const auto& r : local) {
    const PipelineFit* fit = nullptr;
    for (const auto& f : v.fits) {
      if (f.model == r.model) {
        fit = &f;
        break;
      }
    }
    if (!fit) continue;
    auto p = predict(r, *fit, gpu, blocking_w);
    if (!p.ok()) return p.status().with_context(r.model);
    p->split_time_s = p->split_energy_j = NAN;
    p->profiled_time_s = p->profiled_energy_j = NAN;
    const PipelineFit* pf = nullptr;
    for (const auto& f : v.profiled_fits) {
      if (f.model == r.model && f.partition == r.partition) pf = &f;
    }
    if (pf) {
      bool inside = true;
      for (double c : r.caps_w) inside = inside && c >= pf->min_cap_w && c <= pf->max_cap_w;
      p->profiled = inside ? ProfiledRow::kPredicted : ProfiledRow::kOutsideRange;
      if (inside) {
        auto q = predict(r, *pf, gpu, blocking_w);
        if (!q.ok()) return q.status().with_context(r.model);
        p->profiled_time_s = q->time_s;
        p->profiled_energy_j = q->energy_j;
      }
    }
    v.rows.push_back(*p);
  }
  if (model == PipelineModel::kCapResponse && work_split_diagnostic) {
    for (const auto& f : v.fits) {
      std::vector<PipelinePrediction*> rows;
      for (auto& p : v.rows) {
        if (p.run.model == f.model && p.run.partition == f.partition) rows.push_back(&p);
      }
      if (!rows.empty()) fit_work_split(f, groups[{f.model, f.partition}], rows, gpu, blocking_w);
    }
  }
  return v;
}

}  // namespace fw::sim
