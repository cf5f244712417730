#!/usr/bin/env python3
"""A GRPO-style training loop that obeys the flexwatt agent's knobs between rollout batches.

The "work" is simulated (no GPU, no model): each step generates a rollout batch with
`gen_concurrency` sequences in flight and `group_size` completions per prompt, then scores
and updates. Between batches the loop reports its progress to the agent and takes the
knobs the agent hands back, exactly where a real trainer would change its vLLM
concurrency or its group size.

    python3 examples/grpo_loop.py --url http://127.0.0.1:9471 --steps 20
    FLEXWATT_TOKEN=... python3 examples/grpo_loop.py --socket /run/flexwatt/agent.sock

One JSON line per step on stdout: step, the knobs used, tokens so far.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from flexwatt_client import FlexwattClient, FlexwattError  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--socket", help="agent Unix socket (default $FLEXWATT_SOCK or /run/flexwatt/agent.sock)")
    p.add_argument("--url", help="agent TCP URL, e.g. http://127.0.0.1:9471")
    p.add_argument("--steps", type=int, default=10, help="training steps to run")
    p.add_argument("--job-id", default=None, help="job id to register (default: assigned)")
    p.add_argument("--tokens-per-seq", type=int, default=512, help="generated tokens per completion")
    p.add_argument("--prompts", type=int, default=8, help="prompts per rollout batch")
    p.add_argument("--seconds-per-batch", type=float, default=0.0, help="simulated time per batch")
    p.add_argument("--knob-wait-s", type=float, default=0.0,
                   help="after each report, wait up to this long for the agent to change the knobs")
    return p.parse_args()


def main():
    a = parse_args()
    fw = FlexwattClient(socket_path=a.socket, url=a.url)
    job = fw.register_job(
        id=a.job_id, name="grpo-example", kind="grpo",
        knobs={"gen_concurrency": {"min": 8, "max": 256, "step": 8, "default": 64},
               "group_size": {"min": 2, "max": 16, "step": 2, "default": 8}})
    tokens = 0
    try:
        for step in range(a.steps):
            conc = int(job.knobs.get("gen_concurrency", 64))
            group = int(job.knobs.get("group_size", 8))
            # Rollout batch: prompts x group completions, conc of them in flight at a time.
            completions = a.prompts * group
            if a.seconds_per_batch > 0:
                time.sleep(a.seconds_per_batch)
            tokens += completions * a.tokens_per_seq
            print(json.dumps({"step": step, "gen_concurrency": conc, "group_size": group,
                              "waves": -(-completions // conc), "tokens_total": tokens,
                              "knob_version": job.knob_version}), flush=True)
            # Between batches: report progress, take the knobs the agent hands back.
            job.progress(tokens, step + 1, phase="update")
            if a.knob_wait_s > 0:
                job.wait_knobs(a.knob_wait_s)
    except FlexwattError as e:
        print(f"grpo_loop: agent refused: {e}", file=sys.stderr)
        return 1
    finally:
        try:
            job.close()
        except (FlexwattError, OSError):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
