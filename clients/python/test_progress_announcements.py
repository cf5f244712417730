"""Unit tests of Job.progress()'s announcements (issue #48: starts_in_s, ends_in_s,
checkpoint_in_iters, checkpoint_s), against a stub agent on 127.0.0.1 that records each body.
Run: python3 clients/python/test_progress_announcements.py
(tests/cli/agent_stabilize_announcements.sh runs it)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flexwatt_client as fc  # noqa: E402
from stub_agent import StubAgentCase, StubHandler  # noqa: E402


class _StubAgent(StubHandler):
    """Answers registration and progress as the agent does; records every (path, body). A
    progress body with checkpoint_in_iters 0 is answered 422 naming the field."""

    def do_POST(self):
        body = self.body()
        if self.path == "/v1/jobs":
            return self.answer(201, {"id": body.get("id", "job-1"), "knobs": {},
                                      "knob_version": 0})
        if body.get("checkpoint_in_iters") == 0:
            return self.answer(422, {"error": "checkpoint_in_iters: 0 is out of range [1, 1e+15]"})
        return self.answer(200, {"id": "pt", "knobs": {}, "knob_version": 0, "changed": False})


class ProgressAnnouncementsTest(StubAgentCase):
    handler = _StubAgent

    def progress_bodies(self):
        return [b for p, b in self.server.seen if p.endswith("/progress")]

    def test_announcements_are_sent_with_units_in_their_names(self):
        for resilient in (True, False):
            self.server.seen.clear()
            job = fc.FlexwattClient(url=self.url, resilient=resilient).register_job(id="pt")
            job.progress(4096, 3, phase="forward", starts_in_s=0, ends_in_s=3600.5,
                         checkpoint_in_iters=1, checkpoint_s=12)
            self.assertEqual(self.progress_bodies(), [{
                "tokens_total": 4096, "steps_total": 3, "phase": "forward", "starts_in_s": 0,
                "ends_in_s": 3600.5, "checkpoint_in_iters": 1, "checkpoint_s": 12}], resilient)

    def test_the_step_age_and_pipeline_stages_are_sent(self):
        job = fc.FlexwattClient(url=self.url).register_job(id="pp", gpus=[0, 1],
                                                           pipeline_stages=[3, 3])
        job.progress(8, 2, step_age_s=0.004)
        regs = [b for p, b in self.server.seen if p == "/v1/jobs"]
        self.assertEqual(regs[-1]["pipeline_stages"], [3, 3])
        self.assertEqual(self.progress_bodies()[-1],
                         {"tokens_total": 8, "steps_total": 2, "step_age_s": 0.004})

    def test_only_the_announcements_given_are_sent(self):
        job = fc.FlexwattClient(url=self.url).register_job(id="pt")
        job.progress(1, 1)
        job.progress(2, 2, checkpoint_in_iters=5)
        job.progress(3, 3, ends_in_s=30, checkpoint_s=None)
        self.assertEqual(self.progress_bodies(), [
            {"tokens_total": 1, "steps_total": 1},
            {"tokens_total": 2, "steps_total": 2, "checkpoint_in_iters": 5},
            {"tokens_total": 3, "steps_total": 3, "ends_in_s": 30}])

    def test_a_refused_announcement_raises_naming_the_field(self):
        job = fc.FlexwattClient(url=self.url).register_job(id="pt")
        with self.assertRaises(fc.FlexwattError) as e:
            job.progress(1, 1, checkpoint_in_iters=0)
        self.assertEqual(e.exception.status, 422)
        self.assertIn("checkpoint_in_iters", e.exception.message)

    def test_the_announcements_are_keyword_only(self):
        job = fc.FlexwattClient(url=self.url).register_job(id="pt")
        with self.assertRaises(TypeError):
            job.progress(1, 1, "forward", 10)  # pylint: disable=too-many-function-args


if __name__ == "__main__":
    unittest.main()
