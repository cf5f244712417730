"""Unit tests of flexwatt_client.PipelineTimings (the pipeline hook): records, format, buffering.
Run: python3 clients/python/test_pipeline_timings.py (tests/cli/pipeline_profile.sh runs it)."""

import json
import os
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flexwatt_client as fc  # noqa: E402


class FakeClock:
    def __init__(self, t0=5_000_000_000):
        self.t = t0

    def __call__(self):
        return self.t

    def advance(self, s):
        self.t += int(round(s * 1e9))


class PipelineTimingsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "rank.jsonl")
        self.clock = FakeClock()

    def lines(self):
        with open(self.path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def test_records_ops_and_steps_after_an_anchor(self):
        tm = fc.PipelineTimings(self.path, stage=1, stages=4, gpu=3, pipeline=2,
                                clock_ns=self.clock, wall_s=lambda: 1000.0)
        tm.step_start()
        with tm.forward(mb=0):
            self.clock.advance(0.25)
        self.clock.advance(0.1)
        tm.op_start("backward", 0)
        self.clock.advance(0.5)
        tm.op_end("backward", 0)
        tm.step_end()
        tm.close()
        recs = self.lines()
        self.assertEqual(recs[0]["type"], "anchor")
        self.assertEqual(recs[0]["format"], "flexwatt-pipeline-timings/1")
        self.assertEqual((recs[0]["stage"], recs[0]["stages"], recs[0]["gpu"],
                          recs[0]["pipeline"]), (1, 4, 3, 2))
        self.assertEqual(recs[0]["unix_s"], 1000.0)
        self.assertEqual(recs[0]["mono_ns"], 5_000_000_000)
        fwd, bwd, step = recs[1], recs[2], recs[3]
        self.assertEqual((fwd["type"], fwd["instr"], fwd["mb"], fwd["step"]),
                         ("op", "forward", 0, 0))
        self.assertEqual(fwd["end_ns"] - fwd["start_ns"], 250_000_000)
        self.assertEqual(bwd["instr"], "backward")
        self.assertEqual(bwd["end_ns"] - bwd["start_ns"], 500_000_000)
        self.assertEqual(step["type"], "step")
        self.assertEqual(step["end_ns"] - step["start_ns"], 850_000_000)

    def test_buffers_until_flush_every(self):
        tm = fc.PipelineTimings(self.path, stage=0, stages=2, gpu=0, flush_every=3,
                                clock_ns=self.clock)
        self.assertFalse(os.path.exists(self.path))  # nothing written at construction
        for mb in range(2):
            with tm.forward(mb):
                self.clock.advance(0.1)
        self.assertFalse(os.path.exists(self.path))
        with tm.backward(0):
            self.clock.advance(0.1)
        self.assertEqual(len(self.lines()), 4)  # anchor + 3 ops, one write
        tm.close()
        self.assertEqual(len(self.lines()), 4)

    def test_a_restarted_rank_appends_a_new_anchor(self):
        for _ in range(2):
            with fc.PipelineTimings(self.path, stage=0, stages=2, gpu=0,
                                    clock_ns=self.clock) as tm:
                with tm.forward(0):
                    self.clock.advance(0.1)
        kinds = [r["type"] for r in self.lines()]
        self.assertEqual(kinds, ["anchor", "op", "anchor", "op"])

    def test_reports_steps_to_a_job(self):
        class Job:
            def __init__(self):
                self.calls = []

            def progress(self, tokens_total, steps_total, phase=None, step_age_s=None):
                self.calls.append((tokens_total, steps_total))

        job = Job()
        tm = fc.PipelineTimings(self.path, stage=0, stages=2, gpu=0, clock_ns=self.clock,
                                job=job, tokens_per_step=4096)
        for _ in range(2):
            tm.step_start()
            tm.step_end()
        tm.close()  # waits for the last report
        # Cumulative reports, in order; one still pending when the next step ended is replaced.
        self.assertEqual(job.calls[-1], (8192, 2))
        self.assertEqual(job.calls, sorted(job.calls))

    def test_a_slow_agent_does_not_stall_the_stage(self):
        # The job's report blocks until released: step_end() returns meanwhile (the report
        # runs on the hook's thread), the later steps replace the pending report, and close()
        # delivers the last one; an exception of a report is raised on the caller's thread.
        release = threading.Event()
        entered = threading.Event()

        class SlowJob:
            def __init__(self):
                self.calls = []

            def progress(self, tokens_total, steps_total, phase=None, step_age_s=None):
                entered.set()
                release.wait(10)
                self.calls.append((tokens_total, steps_total))
                self.ages.append(step_age_s)

        job = SlowJob()
        job.ages = []
        tm = fc.PipelineTimings(self.path, stage=0, stages=2, gpu=0, clock_ns=self.clock,
                                job=job, tokens_per_step=10)
        tm.step_start()
        tm.step_end()
        self.assertTrue(entered.wait(10))  # the first report is under way, and blocked
        for _ in range(3):
            tm.step_start()
            tm.step_end()  # returns although the agent has not answered
        self.assertEqual(job.calls, [])
        self.clock.advance(0.5)  # the fourth step's boundary is 0.5 s old when it is reported
        release.set()
        tm.close()
        self.assertEqual(job.calls, [(10, 1), (40, 4)])
        # The step's age as the report leaves (the anchor of a plan's cap schedule): the first
        # was read before its report blocked, the last 0.5 s after its boundary.
        self.assertEqual(job.ages[0], 0.0)
        self.assertAlmostEqual(job.ages[1], 0.5)

        class FailingJob:
            def progress(self, tokens_total, steps_total, phase=None, step_age_s=None):
                raise fc.FlexwattError(422, "refused")

        tm = fc.PipelineTimings(self.path, stage=0, stages=2, gpu=0, clock_ns=self.clock,
                                job=FailingJob())
        tm.step_start()
        tm.step_end()
        with self.assertRaises(fc.FlexwattError):
            tm.close()

    def test_refuses_wrong_use(self):
        with self.assertRaises(ValueError):
            fc.PipelineTimings(self.path, stage=4, stages=4, gpu=0)
        tm = fc.PipelineTimings(self.path, stage=0, stages=2, gpu=0)
        with self.assertRaises(ValueError):
            tm.op_end("forward", 7)
        with self.assertRaises(ValueError):
            tm.op_start("sideways", 0)


if __name__ == "__main__":
    unittest.main()
