// Simulator presets: hardware facts come from the GPU catalogue, fit constants from sim/.

#include <gtest/gtest.h>

#include <string>

#include "hw/gpu_catalog.hpp"
#include "sim/gpu_model.hpp"

namespace fw::sim {
namespace {

TEST(GpuPreset, EveryCatalogueGpuHasAPresetWithItsFacts) {
  for (const hw::GpuCatalogEntry& g : hw::gpu_catalog()) {
    SCOPED_TRACE(std::string(g.name));
    const GpuPreset* p = find_gpu_preset(g.name);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->name, g.name);
    EXPECT_EQ(p->tdp_w, g.tdp_w);
    EXPECT_EQ(p->min_cap_w, g.min_cap_w);
    EXPECT_EQ(p->max_cap_w, g.max_cap_w);
    EXPECT_EQ(p->idle_ctx_w, g.idle_ctx_w);
    EXPECT_EQ(p->sm_clock_max_mhz, g.sm_clock_max_mhz);
    EXPECT_EQ(p->hbm_gb, g.hbm_gb);
    EXPECT_EQ(find_gpu_preset(g.name), p);  // stable address (cluster GPUs keep the pointer)
  }
  EXPECT_EQ(find_gpu_preset("b200"), nullptr);
  EXPECT_EQ(std::string(gpu_preset_names()), std::string(hw::gpu_names()));
}

TEST(GpuPreset, FitConstants) {
  const GpuPreset* h100 = find_gpu_preset("h100-sxm5");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->sm_power_w, 470);
  EXPECT_EQ(h100->mem_power_w, 150);
  EXPECT_EQ(h100->idle_sm_w, 10);
  EXPECT_EQ(h100->v0, 0.5);
  const GpuPreset* a100 = find_gpu_preset("a100-sxm4-80gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->v0, 0.45);
}

}  // namespace
}  // namespace fw::sim
