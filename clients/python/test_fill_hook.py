"""Unit tests of the job's fill hook (issue #48: register_job(fill=...)) and of the coordinator's
pause and start gate as the job reads them (Job.paused, Job.wait_start(); issues #45, #48),
against a stub agent on 127.0.0.1 that
answers each progress report with the fill targets queued for it.
Run: python3 clients/python/test_fill_hook.py
(tests/cli/agent_stabilize_fill.sh runs it)."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flexwatt_client as fc  # noqa: E402
from stub_agent import StubAgentCase, StubHandler  # noqa: E402


class _StubAgent(StubHandler):
    """Registration and progress as the agent answers them; a progress answer carries the next
    of server.fill_answers (a {"0": W, ...} object) while any are left, else the last one."""

    def do_POST(self):
        body = self.body()
        if self.path == "/v1/jobs":
            return self.answer(201, {"id": body.get("id", "job-1"), "knobs": {},
                                      "knob_version": 0, "fill": body.get("fill", False)})
        answers = self.server.fill_answers
        fill = answers.pop(0) if len(answers) > 1 else answers[0]
        return self.answer(200, {"id": "pt", "knobs": {}, "knob_version": 1, "changed": True,
                                  "fill_w": fill, "paused": self.server.paused,
                                  "start_at_unix_s": self.server.start_at,
                                  "stop_at_unix_s": self.server.stop_at})

    def do_DELETE(self):
        self.server.seen.append((self.path, None))
        self.answer(204, {})


class _StubCase(StubAgentCase):
    handler = _StubAgent

    def setUp(self):
        super().setUp()
        self.server.fill_answers = [{}]
        self.server.paused = False
        self.server.start_at = 0
        self.server.stop_at = 0


class FillHookTest(_StubCase):
    def test_the_registration_declares_the_hook(self):
        calls = []
        fc.FlexwattClient(url=self.url).register_job(id="pt", fill=calls.append)
        fc.FlexwattClient(url=self.url).register_job(id="plain")
        bodies = [b for p, b in self.server.seen if p == "/v1/jobs"]
        self.assertEqual(bodies, [{"id": "pt", "fill": True}, {"id": "plain"}])
        with self.assertRaises(TypeError):
            fc.FlexwattClient(url=self.url).register_job(id="x", fill=600)

    def test_the_hook_gets_each_change_of_targets_once(self):
        calls = []
        self.server.fill_answers = [{"0": 600.0, "1": 600.0}, {"0": 600.0, "1": 600.0},
                                    {"1": 0.0}, {}]
        job = fc.FlexwattClient(url=self.url).register_job(id="pt", fill=calls.append)
        for step in range(4):
            job.progress(step, step, phase="idle", starts_in_s=10)
        self.assertEqual(calls, [{0: 600.0, 1: 600.0}, {0: 600.0, 1: 0.0}])
        self.assertEqual(job.fill_w, {0: 600.0, 1: 0.0})

    def test_the_fill_stops_when_the_agent_goes_away_and_when_the_job_closes(self):
        for ending in ("away", "close"):
            calls = []
            self.server.fill_answers = [{"0": 500.0}]
            client = fc.FlexwattClient(url=self.url, retry_min_s=0.01, retry_max_s=0.02)
            job = client.register_job(id="pt", fill=calls.append)
            job.progress(1, 1, phase="idle", starts_in_s=5)
            self.assertEqual(calls, [{0: 500.0}])
            if ending == "away":
                # The agent's address now answers nothing (port 1: no listener).
                job._client = fc.FlexwattClient(url="http://127.0.0.1:1", retry_min_s=0.01)
                job.progress(2, 2, phase="idle")
            else:
                job.close()
            self.assertEqual(calls, [{0: 500.0}, {0: 0.0}], ending)


class PauseTest(_StubCase):
    """The coordinator's pause, as the agent relays it with the knobs (issue #45)."""

    def test_the_pause_is_read_from_each_answer(self):
        job = fc.FlexwattClient(url=self.url).register_job(id="pt")
        self.assertFalse(job.paused)
        self.server.paused = True
        job.progress(1, 1)
        self.assertTrue(job.paused)
        self.server.paused = False
        job.progress(2, 2)
        self.assertFalse(job.paused)


class StartGateTest(_StubCase):
    """The coordinator's start gate (issue #48): wait_start() announces the start and waits for
    the gate the agent relays."""

    def test_wait_start_waits_for_the_gate_and_announces_it(self):
        job = fc.FlexwattClient(url=self.url).register_job(id="pt")
        self.assertLess(job.wait_start(), 0.2)  # no gate: at once
        self.server.start_at = time.time() + 0.5
        waited = job.wait_start(poll_s=0.1)
        self.assertGreaterEqual(waited, 0.4)
        self.assertLess(waited, 2.0)
        bodies = [b for p, b in self.server.seen if p.endswith("/progress")]
        self.assertTrue(all(b["phase"] == "idle" and "starts_in_s" in b for b in bodies))
        self.assertTrue(any(b["starts_in_s"] > 0.2 for b in bodies))  # the gate's time
        self.assertGreater(job.start_at_unix_s, 0)


class StopGateTest(_StubCase):
    """The coordinator's stop gate (issue #48): the job announces its end and may stop once the
    gate the agent relays has passed; wait_stop() announces and waits."""

    def test_may_stop_and_wait_stop_follow_the_gate(self):
        job = fc.FlexwattClient(url=self.url).register_job(id="pt")
        self.assertTrue(job.may_stop())  # no gate
        self.assertLess(job.wait_stop(), 0.2)
        self.server.stop_at = time.time() + 0.5
        job.progress(1, 1, ends_in_s=0)
        self.assertFalse(job.may_stop())  # the gate is ahead: train on
        waited = job.wait_stop(1, 1, poll_s=0.1)
        self.assertGreaterEqual(waited, 0.3)
        self.assertLess(waited, 2.0)
        self.assertTrue(job.may_stop())
        bodies = [b for p, b in self.server.seen if p.endswith("/progress")]
        self.assertTrue(any(b.get("ends_in_s", 0) > 0.2 for b in bodies))  # the gate's time
        self.assertGreater(job.stop_at_unix_s, 0)


if __name__ == "__main__":
    unittest.main()
