#include "sim/pipeline_profile.hpp"

#include <algorithm>
#include <cmath>

namespace fw::sim {

Result<StageWorkFit> stage_work_from_profile(const pipeline::StageProfile& profile,
                                             const GpuPreset& gpu) {
  StageWorkFit out;
  const double fmax = gpu.sm_clock_max_mhz;
  for (int s = 0; s < profile.num_stages(); ++s) {
    // c from time ratios against each instruction's top point.
    double sab = 0, sbb = 0;
    for (int k = 0; k < 2; ++k) {
      const auto& pts = profile.at(s, static_cast<pipeline::Instr>(k)).points;
      const double x_top = std::min(1.0, pts.front().freq_mhz / fmax);
      for (const auto& pt : pts) {
        const double x = std::min(1.0, pt.freq_mhz / fmax);
        // t/t_top = (c/x + 1 − c) / (c/x_top + 1 − c); linearised at the top point.
        const double a = pt.time_s / pts.front().time_s - 1;
        const double b = 1 / x - 1 / x_top;
        sab += a * b;
        sbb += b * b;
      }
    }
    const double c = sbb > 0 ? std::clamp(sab / sbb, 0.0, 1.0) : 1.0;
    PipelineStageWork w;
    double t1[2];
    for (int k = 0; k < 2; ++k) {
      const auto& top = profile.at(s, static_cast<pipeline::Instr>(k)).points.front();
      const double x_top = std::min(1.0, top.freq_mhz / fmax);
      t1[k] = top.time_s / (c / x_top + 1 - c);
    }
    w.forward_s = t1[0];
    w.backward_s = t1[1];
    // (u, m) by least squares on P − P_ctx + P_idle_sm (1 − x) = K_sm φ u + K_mem s m.
    double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
    for (int k = 0; k < 2; ++k) {
      for (const auto& pt : profile.at(s, static_cast<pipeline::Instr>(k)).points) {
        const double x = std::min(1.0, pt.freq_mhz / fmax);
        const double y = pt.power_w() - gpu.idle_ctx_w + gpu.idle_sm_w * (1 - x);
        const double f1 = gpu.sm_power_w * clock_phi(x, gpu.v0);
        const double f2 = gpu.mem_power_w * clock_speed(c, x);
        a11 += f1 * f1;
        a12 += f1 * f2;
        a22 += f2 * f2;
        b1 += f1 * y;
        b2 += f2 * y;
      }
    }
    Load load{0, 0, c};
    const double det = a11 * a22 - a12 * a12;
    if (std::abs(det) > 1e-12 * a11 * a22) {
      load.u = (a22 * b1 - a12 * b2) / det;
      load.m = (a11 * b2 - a12 * b1) / det;
    }
    if (load.m < 0 || load.u < 0) {  // one of them at its bound: refit the other alone
      load.m = std::max(0.0, load.m);
      if (load.u < 0 || load.m == 0) {
        load.m = 0;
        load.u = std::max(0.0, b1 / a11);
      }
      if (load.u == 0) load.m = std::max(0.0, b2 / a22);
    }
    for (int k = 0; k < 2; ++k) {
      for (const auto& pt : profile.at(s, static_cast<pipeline::Instr>(k)).points) {
        const double x = std::min(1.0, pt.freq_mhz / fmax);
        const double t = t1[k] / clock_speed(c, x);
        out.max_time_err = std::max(out.max_time_err, std::abs(t / pt.time_s - 1));
        out.max_power_err =
            std::max(out.max_power_err, std::abs(gpu_power_w(gpu, load, x) / pt.power_w() - 1));
      }
    }
    out.stages.push_back(w);
    out.loads.push_back(load);
  }
  return out;
}

Result<pipeline::StageProfile> profile_from_spec(const PipelineJobSpec& spec, double step_mhz) {
  if (!spec.gpu || spec.stages.empty() || !(step_mhz > 0)) {
    return Status::InvalidArgument("profile_from_spec: needs a GPU, stages and a clock step");
  }
  std::vector<pipeline::ProfileRow> rows;
  const double fmax = spec.gpu->sm_clock_max_mhz, fmin = spec.gpu->sm_clock_min_mhz;
  for (size_t s = 0; s < spec.stages.size(); ++s) {
    const Load& load = spec.stage_loads.empty() ? spec.load : spec.stage_loads[s];
    for (double f = fmax; f >= fmin - 1e-9; f -= step_mhz) {
      const double x = f / fmax;
      const double p = gpu_power_w(*spec.gpu, load, x);
      const double slow = 1 / clock_speed(load.c, x);
      const double t[2] = {spec.stages[s].forward_s * slow, spec.stages[s].backward_s * slow};
      for (int k = 0; k < 2; ++k) {
        rows.push_back({static_cast<int>(s), static_cast<pipeline::Instr>(k), f, t[k], p * t[k]});
      }
    }
  }
  return pipeline::make_stage_profile(rows, "simulated offline profile");
}

}  // namespace fw::sim
