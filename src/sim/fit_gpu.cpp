// The GPU class of a `flexwatt fit` input (sim/fit_gpu.hpp).

#include "sim/fit_gpu.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/csv.hpp"
#include "hw/gpu_catalog.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw::sim {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::vector<const GpuPreset*> catalog_presets() {
  std::vector<const GpuPreset*> out;
  for (const auto& g : hw::gpu_catalog())
    if (const GpuPreset* p = find_gpu_preset(g.name)) out.push_back(p);
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::string w(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f W", x);
  return b;
}

// G3: a GPU fits the log's levels when its cap range holds the p99 of the per-GPU samples
// (5 % over for sensor noise and excursions above the cap) and its bare idle is not above the
// p1 (20 % under).
bool fits_levels(const GpuPreset& g, double p1, double p99) {
  return p99 <= 1.05 * g.max_cap_w && p1 >= 0.8 * g.idle_bare_w;
}

std::string names_of(const std::vector<const GpuPreset*>& v) {
  std::string s;
  for (const auto* g : v) s += (s.empty() ? "" : ", ") + std::string(g->name);
  return s;
}

}  // namespace

const GpuPreset* gpu_from_device_name(const std::string& device_name) {
  const std::string n = trim(device_name);
  if (const hw::GpuCatalogEntry* s = hw::find_gpu_by_device_name(n))
    return find_gpu_preset(s->name);
  if (const GpuPreset* p = find_gpu_preset(ascii_lower(n))) return p;
  const hw::GpuCatalogEntry* f = hw::find_gpu_family(ascii_lower(n));
  return f != nullptr ? find_gpu_preset(f->name) : nullptr;
}

Result<const GpuPreset*> gpu_named_in_log(const std::string& path, std::string* named) {
  named->clear();
  TraceReaderOptions opt;
  opt.fields = 0;
  FW_ASSIGN_OR_RETURN(auto r, TraceReader::open(path, opt));
  if (r->format() == TraceFormat::kFlexwattDir) {
    const auto& m = r->meta();
    if (!m.contains("gpu_models") || !m["gpu_models"].is_array() || m["gpu_models"].empty()) {
      return static_cast<const GpuPreset*>(nullptr);
    }
    std::string first;
    for (const auto& e : m["gpu_models"]) {
      if (!e.is_string()) return static_cast<const GpuPreset*>(nullptr);
      if (first.empty()) first = e.get<std::string>();
      if (e.get<std::string>() != first) {
        return Status::InvalidArgument(path +
                                       ": meta.json gpu_models mixes GPU models; fit "
                                       "models one job on one GPU model");
      }
    }
    *named = first;
    return find_gpu_preset(first);
  }
  if (r->format() != TraceFormat::kNvidiaSmi) return static_cast<const GpuPreset*>(nullptr);
  FW_ASSIGN_OR_RETURN(auto c, CsvReader::open(r->rows_path()));
  if (!c->next()) return static_cast<const GpuPreset*>(nullptr);
  int col = -1;
  for (size_t i = 0; i < c->fields().size(); ++i) {
    if (ascii_lower(trim(c->fields()[i])) == "name") col = static_cast<int>(i);
  }
  if (col < 0 || !c->next() || static_cast<int>(c->fields().size()) <= col) {
    return static_cast<const GpuPreset*>(nullptr);
  }
  *named = trim(c->fields()[col]);
  return gpu_from_device_name(*named);
}

// Reason for length: rules G1–G4 in order, each with its message.
Result<GpuClass> gpu_for_log(const std::string& path, const PowerLog& log,
                             const std::string& given) {
  std::vector<double> all;
  for (const auto& g : log.gpu_w) all.insert(all.end(), g.begin(), g.end());
  const double p1 = quantile(all, 0.01), p99 = quantile(all, 0.99);
  std::string named;
  FW_ASSIGN_OR_RETURN(const GpuPreset* by_name, gpu_named_in_log(path, &named));
  const GpuPreset* want = nullptr;
  if (!given.empty()) {
    want = find_gpu_preset(given);
    if (!want) {
      return Status::InvalidArgument("--gpu: unknown '" + given +
                                     "' (known: " + gpu_preset_names() + ")");
    }
  }
  // G1: the log's own name decides; a contradicting --gpu is refused.
  if (!named.empty()) {
    if (!by_name) {
      return Status::InvalidArgument(
          path + ": the log names GPU '" + named +
          "', which the catalogue does not have (known: " + gpu_preset_names() + ")");
    }
    if (want && want != by_name) {
      return Status::InvalidArgument(path + ": the log's name column says '" + named + "' (" +
                                     std::string(by_name->name) + "), not --gpu " + given);
    }
    if (!fits_levels(*by_name, p1, p99)) {
      return Status::InvalidArgument(path + ": the log names " + std::string(by_name->name) +
                                     " but its levels (p1 " + w(p1) + ", p99 " + w(p99) +
                                     " per GPU) are outside that GPU's range");
    }
    return GpuClass{by_name, "name column '" + named + "'"};
  }
  // G2: a given --gpu must hold the log's levels.
  if (want) {
    if (p99 > 1.05 * want->max_cap_w) {
      return Status::InvalidArgument(path + ": the log's per-GPU power reaches " + w(p99) +
                                     " (p99), above " + std::string(want->name) +
                                     "'s highest cap " + w(want->max_cap_w) +
                                     ": the log is not from this GPU (check --gpu)");
    }
    return GpuClass{want, "--gpu"};
  }
  // G3: by the power levels, when one catalogue GPU fits them; G4: else ask for --gpu.
  std::vector<const GpuPreset*> cand;
  for (const auto* g : catalog_presets())
    if (fits_levels(*g, p1, p99)) cand.push_back(g);
  if (cand.size() == 1) {
    return GpuClass{cand[0], "power levels (p1 " + w(p1) + ", p99 " + w(p99) +
                                 " per GPU fit only " + std::string(cand[0]->name) + ")"};
  }
  if (cand.empty()) {
    return Status::InvalidArgument(path + ": no catalogue GPU holds the log's levels (p1 " + w(p1) +
                                   ", p99 " + w(p99) + " per GPU); give --gpu");
  }
  return Status::InvalidArgument(
      path + ": the log has no GPU-name column and its power levels (p1 " + w(p1) + ", p99 " +
      w(p99) + " per GPU) fit " + names_of(cand) + ": give --gpu");
}

Result<GpuClass> gpu_for_sweep(const MeasuredSweep& m, const std::string& given) {
  auto holds = [&](const GpuPreset& g) {
    for (const auto& p : m.points) {
      if (p.cap_w < g.min_cap_w - 1 || p.cap_w > g.max_cap_w + 1) return false;
      if (p.power_w > 1.05 * g.max_cap_w) return false;
    }
    return true;
  };
  if (!given.empty()) {
    const GpuPreset* g = find_gpu_preset(given);
    if (!g) {
      return Status::InvalidArgument("--gpu: unknown '" + given +
                                     "' (known: " + gpu_preset_names() + ")");
    }
    if (!holds(*g)) {
      return Status::InvalidArgument("job " + m.job + ": its caps " + w(m.points.front().cap_w) +
                                     " .. " + w(m.points.back().cap_w) + " are outside " +
                                     std::string(g->name) + "'s settable range " + w(g->min_cap_w) +
                                     " .. " + w(g->max_cap_w) + " (check --gpu)");
    }
    return GpuClass{g, "--gpu"};
  }
  std::vector<const GpuPreset*> cand;
  for (const auto* g : catalog_presets())
    if (holds(*g)) cand.push_back(g);
  if (cand.size() == 1) {
    return GpuClass{cand[0], "caps (" + w(m.points.front().cap_w) + " .. " +
                                 w(m.points.back().cap_w) + " settable only on " +
                                 std::string(cand[0]->name) + ")"};
  }
  return Status::InvalidArgument(
      "job " + m.job + ": its caps " + w(m.points.front().cap_w) + " .. " +
      w(m.points.back().cap_w) +
      (cand.empty() ? " fit no catalogue GPU" : " fit " + names_of(cand)) + ": give --gpu");
}

}  // namespace fw::sim
