#include "sim/pipeline_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/csv.hpp"
#include "sim/nelder_mead.hpp"

namespace fw::sim {

namespace {

// Splits a CSV line on commas outside double quotes (the partition column is quoted and holds
// commas, which CsvReader does not split around); quotes and surrounding spaces are trimmed.
std::vector<std::string_view> split_quoted(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] == '"') quoted = !quoted;
    if (i == line.size() || (line[i] == ',' && !quoted)) {
      std::string_view f = trim(line.substr(start, i - start));
      if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
      out.push_back(f);
      start = i + 1;
    }
  }
  return out;
}

}  // namespace

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
    const std::vector<std::string_view> f = split_quoted(r.line());
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
  auto units = partition_units(r.partition, r.pp);
  if (!units.ok()) return units.status();
  if (r.partition == "uniform_transformer" && fit.total_units > 0) {
    for (double& u : *units) u = fit.total_units / r.pp;
  }
  double mean = 0;
  for (double u : *units) mean += u / r.pp;
  for (double& u : *units) u = mean + fit.imbalance * (u - mean);
  PipelineJobSpec s;
  s.gpu = &gpu;
  s.microbatches = r.microbatches;
  s.dp = r.dp;
  s.tp = r.tp;
  s.load = fit.load;
  s.blocking_w = blocking_w;
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
  return PipelinePrediction{r, it->time_s, it->energy_j};
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
    const PipelineFit f = make(x);
    double c = 0;
    for (const auto& r : runs) {
      auto p = predict(r, f, gpu, blocking_w);
      if (!p.ok()) return 1e9;
      c += p->time_err() * p->time_err() + p->energy_err() * p->energy_err();
    }
    return c;
  };
  std::array<double, 5> best{};
  double best_c = 1e300;
  for (double c0 : {0.4, 0.9}) {  // starts: two compute-bound shares
    int evals = 0;
    const auto x = nelder_mead<5>(cost, {0, 1.0, 0.3, c0, 0.5}, {0.2, 0.3, 0.2, 0.1, 0.3},
                                  {-2, 0.05, 0, 0.05, 0}, {2, 3, 3, 1, 1}, 1500, &evals);
    fit.evals += evals;
    if (cost(x) < best_c) {
      best_c = cost(x);
      best = x;
    }
  }
  PipelineFit out = make(best);
  out.evals = fit.evals;
  for (const auto& r : runs) {
    auto p = predict(r, out, gpu, blocking_w);
    if (!p.ok()) return p.status();
    out.max_err = std::max({out.max_err, std::abs(p->time_err()), std::abs(p->energy_err())});
  }
  return out;
}

Result<PipelineValidation> validate_pipeline_runs(const std::vector<ZeusRun>& global,
                                                  const std::vector<ZeusRun>& local,
                                                  const GpuPreset& gpu, double blocking_w) {
  PipelineValidation v;
  std::map<std::pair<std::string, std::string>, std::vector<ZeusRun>> groups;
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& r : global) {
    auto key = std::make_pair(r.model, r.partition);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(r);
  }
  for (const auto& key : order) {
    auto f = fit_pipeline_runs(groups[key], gpu, blocking_w);
    if (!f.ok()) return f.status().with_context(key.first);
    v.fits.push_back(*f);
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
    v.rows.push_back(*p);
  }
  return v;
}

}  // namespace fw::sim
