// Runs the stdlib-only Python client (clients/python) and the GRPO example loop
// (examples/grpo_loop.py) against an in-process agent server on 127.0.0.1, with a
// stand-in for the control path that sets knobs in answer to each progress report.

#include <atomic>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../require_tool.hpp"  // FW_REQUIRE_TOOL
#include "server_fixture.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR
#include "test_state.hpp"

namespace fw::agent {
namespace {

using nlohmann::json;

class PythonClient : public testing::ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    FW_REQUIRE_TOOL(testing_tools::on_path("python3"), "python3");
  }
  // Runs a shell command with a time limit; returns its exit status and stdout.
  int run(const std::string& cmd, std::string& out) {
    FILE* p = ::popen(("timeout 60 env " + cmd).c_str(), "r");
    out.clear();
    if (!p) return -1;
    char buf[1024];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    return ::pclose(p);
  }
  std::string env() const {
    return "FLEXWATT_URL=http://127.0.0.1:" + std::to_string(server_->tcp_port()) +
           " FLEXWATT_TOKEN=" + testing::kControl + " ";
  }
};

TEST_F(PythonClient, GrpoExampleObeysKnobsBetweenBatches) {
  start();
  std::atomic<bool> done{false};
  // The control path's stand-in: after the report of step s, gen_concurrency = 8 (s + 1).
  std::thread control([&] {
    double handled = 0;
    while (!done) {
      for (const auto& j : jobs_.snapshot()) {
        if (j.steps_total > handled) {
          handled = j.steps_total;
          jobs_.set_knobs(j.id, {8 * (handled + 1), kUnset});
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::string out;
  int rc = run(env() + "python3 " FLEXWATT_SOURCE_DIR
                       "/examples/grpo_loop.py --steps 4 --job-id grpo-test --knob-wait-s 5",
               out);
  done = true;
  control.join();
  ASSERT_EQ(rc, 0) << out;
  std::vector<json> steps;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) steps.push_back(json::parse(l));
  ASSERT_EQ(steps.size(), 4u) << out;
  EXPECT_EQ(steps[0]["gen_concurrency"], 64);  // the declared default
  for (int s = 1; s < 4; ++s) EXPECT_EQ(steps[s]["gen_concurrency"], 8 * (s + 1)) << out;
  EXPECT_EQ(steps[3]["group_size"], 8);
  EXPECT_EQ(steps[3]["tokens_total"], 4 * 8 * 8 * 512);
  EXPECT_TRUE(jobs_.snapshot().empty());  // the example removes its job on exit
}

TEST_F(PythonClient, ClientCoversTheApi) {
  hub_.publish(testing::sample_state());
  start();
  const std::string script = R"PY(
import sys
sys.path.insert(0, "CLIENT_DIR")
from flexwatt_client import FlexwattClient, FlexwattError
fw = FlexwattClient()
assert fw.discover()["hostname"] == "node-7"
assert fw.status()["gpus"][1]["power_w"] == 310
assert "flexwatt_gpu_power_watts" in fw.metrics()
assert fw.set_budget(600, window_s=10, schedule=[{"after_s": 60, "watts": 500}])["config_version"] == 1
try:
    fw.set_budget(-1)
    raise SystemExit("expected 422")
except FlexwattError as e:
    assert e.status == 422, e
try:
    fw.set_controller("static")
    raise SystemExit("expected 403")
except FlexwattError as e:
    assert e.status == 403, e
events = list(fw.stream(max_events=1))
assert len(events) == 1 and events[0]["version"] == 1, events
job = fw.register_job(id="j1", knobs={"group_size": {"min": 2, "max": 16, "default": 8}})
assert job.progress(100, 1, phase="score") == {"group_size": 8}
job.progress(101, 2, phase="update", ends_in_s=3600, checkpoint_in_iters=2, checkpoint_s=30)
announced = fw.jobs()[0]["announced"]
assert announced["starts_in_s"] is None and 3590 < announced["ends_in_s"] <= 3600, announced
assert announced["checkpoint_in_iters"] == 2 and announced["checkpoint_s"] == 30, announced
try:
    job.progress(102, 3, checkpoint_in_iters=0)
    raise SystemExit("expected 422")
except FlexwattError as e:
    assert e.status == 422 and e.message.startswith("checkpoint_in_iters:"), e
knobs, changed = job.wait_knobs(0.1)
assert not changed
assert [j["id"] for j in fw.jobs()] == ["j1"]
assert job.set_pfi(1.43, source="sweep")["pfi_source"] == "sweep"
assert fw.register_job(id="j2", pfi=2.1).id == "j2"
assert [j["pfi"] for j in fw.jobs()] == [1.43, 2.1]
from flexwatt_client import visible_gpu_uuids
assert visible_gpu_uuids({"CUDA_VISIBLE_DEVICES": "GPU-a, GPU-b"}) == ["GPU-a", "GPU-b"]
assert visible_gpu_uuids({"CUDA_VISIBLE_DEVICES": "0,1", "NVIDIA_VISIBLE_DEVICES": "GPU-a"}) is None
assert visible_gpu_uuids({"NVIDIA_VISIBLE_DEVICES": "GPU-c,MIG-d"}) == ["GPU-c", "MIG-d"]
assert visible_gpu_uuids({}) is None
job.close()
print("ok")
)PY";
  std::string py = script;
  py.replace(py.find("CLIENT_DIR"), 10, FLEXWATT_SOURCE_DIR "/clients/python");
  auto path = dir_ / "client_check.py";
  std::ofstream(path) << py;
  std::string out;
  int rc = run(env() + "python3 " + path.string() + " 2>&1", out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "ok\n");
  EXPECT_EQ(commands_.pending(), 1u);  // only the valid budget reached the loop
}

TEST_F(PythonClient, ClientTalksOverTheUnixSocket) {
  start();
  std::string out;
  int rc = run("FLEXWATT_SOCK=" + cfg_.unix_socket_path + " FLEXWATT_TOKEN=" + testing::kRead +
                   " python3 -c 'import sys; sys.path.insert(0, \"" FLEXWATT_SOURCE_DIR
                   "/clients/python\"); from flexwatt_client import FlexwattClient; "
                   "print(FlexwattClient().status()[\"version\"])' 2>&1",
               out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "0\n");
}

}  // namespace
}  // namespace fw::agent
