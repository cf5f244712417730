// The SSE stream and the training-framework channel (jobs, progress, knob long-poll).

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "server_fixture.hpp"
#include "test_state.hpp"

namespace fw::agent {
namespace {

using nlohmann::json;
using testing::kControl;
using testing::kRead;

class Channel : public testing::ServerFixture {};

// Splits an SSE body into its events (blocks separated by a blank line).
std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t end; (end = body.find("\n\n", pos)) != std::string::npos; pos = end + 2) {
    out.push_back(body.substr(pos, end - pos));
  }
  EXPECT_EQ(pos, body.size()) << "trailing bytes after the last event";
  return out;
}

TEST_F(Channel, StreamSendsOneEventPerTick) {
  hub_.publish(testing::sample_state());
  start();
  std::atomic<bool> done{false};
  std::thread publisher([&] {
    // Publishes until the client has its events (each tick wakes the stream).
    while (!done) {
      hub_.publish(testing::sample_state());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  auto r = tcp(kRead).Get("/v1/stream?max_events=3");
  done = true;
  publisher.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  auto ev = events(r->body);
  ASSERT_EQ(ev.size(), 3u) << r->body;
  uint64_t last = 0;
  for (const auto& e : ev) {
    ASSERT_EQ(e.rfind("id: ", 0), 0u) << e;
    auto data = e.find("\nevent: state\ndata: ");
    ASSERT_NE(data, std::string::npos) << e;
    auto j = json::parse(e.substr(data + 20));
    EXPECT_EQ(std::stoull(e.substr(4)), j["version"].get<uint64_t>());
    EXPECT_GT(j["version"].get<uint64_t>(), last);  // strictly newer each event
    last = j["version"];
    EXPECT_EQ(e.find('\n', data + 20), std::string::npos);  // one line of JSON per event
  }
}

// Browsers and `curl --compressed` ask for gzip; events must still arrive one by one.
TEST_F(Channel, StreamIsNotCompressed) {
  hub_.publish(testing::sample_state());
  start();
  auto c = tcp(kRead);
  auto r = c.Get("/v1/stream?max_events=1", {{"Accept-Encoding", "gzip, deflate, br"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(r->body.rfind("id: 1\n", 0), 0u) << r->body.substr(0, 40);
}

TEST_F(Channel, StreamSendsKeepAlivesWhenIdle) {
  cfg_.keepalive_s = 0.05;
  start();
  std::string body;
  int chunks = 0;
  auto c = tcp(kRead);
  auto r = c.Get("/v1/stream", [&](const char* data, size_t n) {
    body.append(data, n);
    return ++chunks < 2;  // stop after two keep-alives
  });
  EXPECT_EQ(body.substr(0, 28), ": keep-alive\n\n: keep-alive\n\n");
}

TEST_F(Channel, StreamNeedsAToken) {
  start();
  auto r = tcp().Get("/v1/stream?max_events=1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  auto bad = tcp(kRead).Get("/v1/stream?max_events=abc");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
}

// Issue 44 item 2: a job registers its GPUs by UUID (what CUDA_VISIBLE_DEVICES and the device
// plugin name), resolved against the node's GPUs, in any NVML index order: a pod given host
// GPUs 6 and 4 gets exactly those, never "0 and 1" of another tenant. An unknown UUID is 422
// naming it; a mixed list is 400.
TEST_F(Channel, JobRegistersGpusByUuid) {
  jobs_.set_gpu_indices({4, 5, 6, 7});
  jobs_.set_gpu_ids({{"GPU-aaaa", 4}, {"GPU-bbbb", 5}, {"GPU-cccc", 6}, {"GPU-dddd", 7}});
  start();
  auto c = tcp(kControl);
  auto reg = c.Post("/v1/jobs", R"({"id": "pod-1", "gpus": ["GPU-cccc", "GPU-aaaa"]})",
                    "application/json");
  ASSERT_TRUE(reg);
  ASSERT_EQ(reg->status, 201) << reg->body;
  const auto infos = jobs_.infos();
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].second.gpus, (std::vector<int>{6, 4}));
  auto unknown = c.Post("/v1/jobs", R"({"id": "pod-2", "gpus": ["GPU-eeee"]})", "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 422);
  EXPECT_NE(unknown->body.find("GPU-eeee is not a GPU this agent manages"), std::string::npos)
      << unknown->body;
  auto mixed =
      c.Post("/v1/jobs", R"({"id": "pod-3", "gpus": ["GPU-aaaa", 5]})", "application/json");
  ASSERT_TRUE(mixed);
  EXPECT_EQ(mixed->status, 400) << mixed->body;
  EXPECT_EQ(jobs_.infos().size(), 1u);
}

TEST_F(Channel, JobRegistersReportsAndReadsKnobs) {
  start();
  auto c = tcp(kControl);
  auto reg = c.Post("/v1/jobs",
                    R"({"id": "grpo-1", "kind": "grpo",
                        "knobs": {"gen_concurrency": {"min": 8, "max": 64, "default": 32}}})",
                    "application/json");
  ASSERT_TRUE(reg);
  EXPECT_EQ(reg->status, 201) << reg->body;
  EXPECT_EQ(reg->get_header_value("Location"), "/v1/jobs/grpo-1");
  EXPECT_EQ(json::parse(reg->body)["knobs"]["gen_concurrency"], 32);
  auto again = c.Post("/v1/jobs", R"({"id": "grpo-1"})", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 409);
  auto anon = c.Post("/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(anon);
  EXPECT_EQ(json::parse(anon->body)["id"], "job-1");
  c.Post("/v1/jobs", R"({"id": "job-2"})", "application/json");
  auto next = c.Post("/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(json::parse(next->body)["id"], "job-3");  // skips the id taken by hand

  auto prog = c.Post("/v1/jobs/grpo-1/progress",
                     R"({"tokens_total": 5000, "steps_total": 1, "phase": "generate"})",
                     "application/json");
  ASSERT_TRUE(prog);
  EXPECT_EQ(prog->status, 200) << prog->body;
  EXPECT_EQ(json::parse(prog->body)["knobs"]["gen_concurrency"], 32);
  auto back = c.Post("/v1/jobs/grpo-1/progress", R"({"tokens_total": 10, "steps_total": 1})",
                     "application/json");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->status, 422);
  auto unknown = c.Post("/v1/jobs/nope/progress", R"({"tokens_total": 1, "steps_total": 1})",
                        "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  auto read_only =
      tcp(kRead).Post("/v1/jobs/grpo-1/progress", R"({"tokens_total": 6000, "steps_total": 2})",
                      "application/json");
  ASSERT_TRUE(read_only);
  EXPECT_EQ(read_only->status, 403);

  EXPECT_EQ(jobs_.snapshot()[0].tokens_total, 5000);
  EXPECT_EQ(jobs_.snapshot()[0].phase, "generate");
  auto list = tcp(kRead).Get("/v1/jobs");
  ASSERT_TRUE(list);
  EXPECT_EQ(json::parse(list->body)["jobs"].size(), 4u);
  auto del = c.Delete("/v1/jobs/job-1");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  EXPECT_EQ(jobs_.snapshot().size(), 3u);
}

TEST_F(Channel, KnobLongPollTimesOutUnchanged) {
  start();
  tcp(kControl).Post("/v1/jobs", R"({"id": "j", "knobs": {"group_size": {"min": 2, "max": 16}}})",
                     "application/json");
  auto now = tcp(kRead).Get("/v1/jobs/j/knobs");
  ASSERT_TRUE(now);
  auto j = json::parse(now->body);
  EXPECT_EQ(j["knob_version"], 0);
  EXPECT_EQ(j["knobs"]["group_size"], 16);
  auto polled = tcp(kRead).Get("/v1/jobs/j/knobs?since=0&wait_s=0.2");
  ASSERT_TRUE(polled);
  EXPECT_EQ(polled->status, 200);
  EXPECT_EQ(json::parse(polled->body)["changed"], false);
  auto too_long = tcp(kRead).Get("/v1/jobs/j/knobs?since=0&wait_s=600");
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->status, 422);
  auto missing = tcp(kRead).Get("/v1/jobs/zz/knobs?since=0&wait_s=1");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(Channel, KnobLongPollWakesOnChange) {
  start();
  tcp(kControl).Post("/v1/jobs", R"({"id": "j", "knobs": {"group_size": {"min": 2, "max": 16}}})",
                     "application/json");
  std::atomic<bool> got{false};
  std::thread loop([&] {
    // The control path sets knobs until the poller has them (no timing assumption).
    for (int i = 0; i < 400 && !got; ++i) {
      jobs_.set_knobs("j", {kUnset, 4});
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  auto r = tcp(kRead).Get("/v1/jobs/j/knobs?since=0&wait_s=5");
  got = true;
  loop.join();
  ASSERT_TRUE(r);
  auto j = json::parse(r->body);
  EXPECT_EQ(j["changed"], true);
  EXPECT_EQ(j["knob_version"], 1);
  EXPECT_EQ(j["knobs"]["group_size"], 4);
}

// stop() wakes an open SSE stream (no end of its own: keep-alive every 15 s) and a knob
// long-poll (wait_s 5, nothing changes): it returns, and both calls come back, within 2 s, well
// before either would end by itself. A poll answered before the connection closes says
// "changed": false (it was woken by the stop, not by a knob change).
TEST_F(Channel, StopEndsOpenStreamsAndPolls) {
  using Clock = std::chrono::steady_clock;
  hub_.publish(testing::sample_state());  // the stream's first event shows it is open
  start();
  auto reg = tcp(kControl).Post("/v1/jobs", R"({"id": "j"})", "application/json");
  ASSERT_TRUE(reg);
  ASSERT_EQ(reg->status, 201) << reg->body;
  std::atomic<bool> streaming{false}, stream_done{false}, poll_done{false};
  Clock::time_point stream_end, poll_end;  // read after the joins
  httplib::Result polled{nullptr, httplib::Error::Unknown};
  std::thread stream([&] {
    tcp(kRead).Get("/v1/stream", [&](const char*, size_t) {
      streaming = true;
      return true;
    });
    stream_end = Clock::now();
    stream_done = true;
  });
  std::thread poll([&] {
    polled = tcp(kRead).Get("/v1/jobs/j/knobs?since=0&wait_s=5");
    poll_end = Clock::now();
    poll_done = true;
  });
  for (int i = 0; i < 1000 && !streaming; ++i) {  // at most 5 s
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the poll is waiting by now
  const bool was_streaming = streaming, stream_was_open = !stream_done, poll_was_open = !poll_done;
  const auto t0 = Clock::now();
  server_->stop();
  const double stop_s = std::chrono::duration<double>(Clock::now() - t0).count();
  stream.join();
  poll.join();
  ASSERT_TRUE(was_streaming) << "the stream never sent its first event";
  EXPECT_TRUE(stream_was_open) << "the stream ended before stop()";
  EXPECT_TRUE(poll_was_open) << "the long-poll came back before stop(): "
                             << (polled ? polled->body : httplib::to_string(polled.error()));
  EXPECT_LT(stop_s, 2.0) << "stop() waited for the open stream or poll";
  const double stream_s = std::chrono::duration<double>(stream_end - t0).count();
  const double poll_s = std::chrono::duration<double>(poll_end - t0).count();
  EXPECT_LT(stream_s, 2.0) << "the stream outlived stop()";
  EXPECT_LT(poll_s, 2.0) << "the long-poll ran to its 5 s wait_s";
  if (polled) {
    EXPECT_EQ(polled->status, 200) << polled->body;
    EXPECT_EQ(json::parse(polled->body)["changed"], false) << polled->body;
  }
}

TEST_F(Channel, WaiterSlotsAreBounded) {
  cfg_.max_waiters = 1;
  cfg_.keepalive_s = 0.05;
  start();
  std::atomic<bool> stop{false};
  std::atomic<bool> streaming{false};
  std::thread holder([&] {
    tcp(kRead).Get("/v1/stream", [&](const char*, size_t) {
      streaming = true;
      return !stop.load();
    });
  });
  for (int i = 0; i < 1000 && !streaming; ++i) {  // at most 5 s
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!streaming) {
    stop = true;
    holder.join();
    FAIL() << "the first stream never started";
  }
  auto r = tcp(kRead).Get("/v1/stream?max_events=1");
  stop = true;
  holder.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
}

}  // namespace
}  // namespace fw::agent
