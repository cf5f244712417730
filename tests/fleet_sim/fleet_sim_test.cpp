// fleet-sim's argument checks (no etcd needed: they fail before any connection).

#include "fleet/sim/fleet_sim.hpp"

#include <gtest/gtest.h>

namespace fw::fleet {
namespace {

TEST(FleetSim, OnePositivePfiPerSimulatedJob) {
  FleetSimOptions o;
  o.etcd = {"http://127.0.0.1:1"};
  o.nodes = 16;
  o.out_dir = "/nonexistent";
  EXPECT_EQ(fleet_sim_jobs(o), 18);  // 16 + 16 / 8 joining later
  o.nodes = 4;
  EXPECT_EQ(fleet_sim_jobs(o), 5);  // at least one joins later
  o.job_pfi = {1, 2, 3};
  auto r = run_fleet_sim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("one PFI per simulated job (5)"), std::string::npos);
  o.job_pfi = {1, 2, 3, 0, 1};
  r = run_fleet_sim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be > 0"), std::string::npos);
}

}  // namespace
}  // namespace fw::fleet
