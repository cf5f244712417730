#!/usr/bin/env python3
"""A small GRPO trainer in PyTorch (CPU) that obeys the flexwatt agent's knobs between batches.

Real training, tiny scale: a causal transformer policy (2 layers, d_model 32 by default) learns
a toy task by GRPO. Each step samples `group_size` completions for each of `--prompts` prompts,
generating at most `gen_concurrency` sequences in flight (the rollout engine's concurrency
limit: completions are generated in waves of that many), scores them, turns the rewards into
group-relative advantages ((r - group mean) / (group std + eps)) and takes one policy-gradient
step. The task: a completion earns the fraction of its tokens that equal the prompt's first
token, so the reward climbs from chance (1/vocab) as the policy learns.

The knob channel (clients/python): the job registers `gen_concurrency` and `group_size`,
reports its cumulative generated tokens, steps and phase (`generate` before a rollout,
`update` before the gradient step), and takes the knobs the agent hands back. They apply from
the next batch, never inside one: the same hook points as a real trainer's (docs/integrations.md).

    python3 examples/torch_grpo.py --url http://127.0.0.1:9471 --steps 20
    FLEXWATT_TOKEN=... python3 examples/torch_grpo.py --socket /run/flexwatt/agent.sock
    python3 examples/torch_grpo.py --offline --gen-concurrency 16 --group-size 8   # no agent

One JSON line per step on stdout: the knobs used and their version, the work done
(completions, waves, largest batch in flight, generated tokens), the measured times and
generation throughput (per wall-clock second and per CPU second of this process: the second
holds still when other processes share the cores), and the mean reward. Seeded (--seed): the same knobs give the same
completions and rewards.
"""

import argparse
import json
import math
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from flexwatt_client import FlexwattClient, FlexwattError  # noqa: E402

# Debian's PyTorch (python3-torch) is importable by Debian's interpreter only. When `python3` on
# PATH is another one (a pyenv shim, a virtualenv without system site packages, a conda
# python), the script runs itself again under the interpreter that has torch:
# $FLEXWATT_TORCH_PYTHON, else Debian's /usr/bin/python3, same arguments, same process (exec).
DEBIAN_PYTHON = "/usr/bin/python3"
REEXEC_ENV = "FLEXWATT_TORCH_REEXEC"  # set on the re-executed process: never a second exec


def torch_python():
    """The interpreter to run under when this one lacks torch (None: none has it)."""
    cand = os.environ.get("FLEXWATT_TORCH_PYTHON") or DEBIAN_PYTHON
    if os.environ.get(REEXEC_ENV) or not os.access(cand, os.X_OK):
        return None
    import subprocess
    try:
        ok = subprocess.run([cand, "-c", "import torch"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return cand if ok.returncode == 0 else None


try:
    import torch
    import torch.nn as nn
except ImportError:
    here = f"{sys.executable or 'python'} (Python {sys.version.split()[0]})"
    other = torch_python()
    if other:
        print(f"torch_grpo: PyTorch is not importable by {here}; running under {other}, "
              "which has it", file=sys.stderr)
        sys.stderr.flush()
        os.environ[REEXEC_ENV] = "1"
        os.execv(other, [other, os.path.abspath(__file__)] + sys.argv[1:])
    print(f"torch_grpo: PyTorch is not importable by {here}, nor by "
          f"{os.environ.get('FLEXWATT_TORCH_PYTHON') or DEBIAN_PYTHON}. Debian: "
          f"apt-get install python3-torch (or `make deps`), then run {DEBIAN_PYTHON} "
          "examples/torch_grpo.py ...; another Python needs its own torch (pip install torch)",
          file=sys.stderr)
    sys.exit(3)

# The knob ranges the job registers (the agent clamps to them; so does the trainer).
KNOBS = {"gen_concurrency": {"min": 1, "max": 64, "step": 1, "default": 16},
         "group_size": {"min": 2, "max": 16, "step": 2, "default": 8}}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--socket", help="agent Unix socket (default $FLEXWATT_SOCK or /run/flexwatt/agent.sock)")
    p.add_argument("--url", help="agent TCP URL, e.g. http://127.0.0.1:9471")
    p.add_argument("--offline", action="store_true", help="no agent: fixed knobs from the flags below")
    p.add_argument("--gen-concurrency", type=int, default=KNOBS["gen_concurrency"]["default"],
                   help="--offline: sequences in flight")
    p.add_argument("--group-size", type=int, default=KNOBS["group_size"]["default"],
                   help="--offline: completions per prompt")
    p.add_argument("--steps", type=int, default=10, help="training steps (one rollout batch each)")
    p.add_argument("--job-id", default=None, help="job id to register (default: assigned)")
    p.add_argument("--prompts", type=int, default=8, help="prompts per rollout batch")
    p.add_argument("--prompt-len", type=int, default=4, help="tokens per prompt")
    p.add_argument("--gen-len", type=int, default=16, help="generated tokens per completion")
    p.add_argument("--vocab", type=int, default=16, help="vocabulary size")
    p.add_argument("--d-model", type=int, default=32, help="transformer width")
    p.add_argument("--layers", type=int, default=2, help="transformer layers")
    p.add_argument("--heads", type=int, default=2, help="attention heads")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights, prompts and sampling")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--first-knobs-wait-s", type=float, default=0.0,
                   help="after registering, wait up to this long for the agent's first knobs")
    p.add_argument("--knob-wait-s", type=float, default=0.0,
                   help="after each step, wait up to this long for the agent to change the knobs")
    a = p.parse_args()
    for name in ("steps", "prompts", "prompt_len", "gen_len", "d_model", "layers", "heads", "threads"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if a.vocab < 2:
        p.error("--vocab must be at least 2")
    if a.d_model % a.heads:
        p.error("--d-model must be a multiple of --heads")
    return a


class Policy(nn.Module):
    """A causal transformer language model: token + position embeddings, pre-norm encoder
    layers under a causal mask, a linear head to next-token logits."""

    def __init__(self, vocab, d_model, layers, heads, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        mask = torch.triu(torch.full((max_len, max_len), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):  # x: [batch, len] token ids -> [batch, len, vocab] logits
        n = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(n, device=x.device))
        h = self.body(h, mask=self.mask[:n, :n])
        return self.head(self.norm(h))


def clamp_knob(name, value):
    k = KNOBS[name]
    v = int(round(float(value)))
    return max(k["min"], min(k["max"], v))


def generate(policy, prompts, gen_len, concurrency, gen):
    """Samples one completion per row of `prompts`, at most `concurrency` sequences in flight:
    waves of that many, each decoded token by token. Returns (sequences, waves, max batch)."""
    out, waves, widest = [], 0, 0
    with torch.no_grad():
        for start in range(0, prompts.shape[0], concurrency):
            x = prompts[start:start + concurrency]
            waves += 1
            widest = max(widest, x.shape[0])
            for _ in range(gen_len):
                probs = torch.softmax(policy(x)[:, -1, :], dim=-1)
                nxt = torch.multinomial(probs, 1, generator=gen)
                x = torch.cat([x, nxt], dim=1)
            out.append(x)
    return torch.cat(out, dim=0), waves, widest


def rewards_of(seqs, prompt_len):
    """Fraction of each completion's tokens equal to its prompt's first token."""
    return (seqs[:, prompt_len:] == seqs[:, :1]).float().mean(dim=1)


def group_advantages(rewards, group):
    """GRPO's group-relative advantages: each completion against the other completions of
    its own prompt (rows are prompt-major: group consecutive rows share a prompt)."""
    r = rewards.view(-1, group)
    adv = (r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-4)
    return adv.reshape(-1)


def policy_gradient_step(policy, opt, seqs, adv, prompt_len):
    """One on-policy GRPO update: maximise advantage-weighted log-probabilities of the
    sampled tokens (a single update per batch, so the PPO ratio is 1 and needs no clip)."""
    logits = policy(seqs[:, :-1])
    logp = torch.log_softmax(logits, dim=-1).gather(2, seqs[:, 1:].unsqueeze(2)).squeeze(2)
    logp = logp[:, prompt_len - 1:]  # the generated tokens only
    loss = -(adv.unsqueeze(1) * logp).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss)


class OfflineJob:
    """Stands in for the agent's Job with --offline: fixed knobs, nothing reported."""

    id = "offline"
    knob_version = 0

    def __init__(self, knobs):
        self.knobs = knobs

    def progress(self, tokens_total, steps_total, phase=None):
        return self.knobs

    def wait_knobs(self, wait_s):
        return self.knobs, False

    def close(self):
        pass


def main():
    a = parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(a.seed + 1)
    policy = Policy(a.vocab, a.d_model, a.layers, a.heads, a.prompt_len + a.gen_len)
    opt = torch.optim.Adam(policy.parameters(), lr=a.lr)
    # SIGTERM ends the run like Ctrl-C: the job is deregistered on the way out.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    if a.offline:
        job = OfflineJob({"gen_concurrency": a.gen_concurrency, "group_size": a.group_size})
    else:
        try:
            fw = FlexwattClient(socket_path=a.socket, url=a.url)
            job = fw.register_job(id=a.job_id, name="torch-grpo", kind="grpo", knobs=KNOBS)
        except (FlexwattError, OSError) as e:
            print(f"torch_grpo: cannot register with the agent: {e}", file=sys.stderr)
            return 1
    tokens = 0
    try:
        if a.first_knobs_wait_s > 0:  # the controller's setting before the first batch
            job.wait_knobs(a.first_knobs_wait_s)
        for step in range(a.steps):
            # Between batches: the knobs in force now hold for this whole batch.
            conc = clamp_knob("gen_concurrency", job.knobs.get("gen_concurrency", a.gen_concurrency))
            group = clamp_knob("group_size", job.knobs.get("group_size", a.group_size))
            version = job.knob_version
            t0 = time.perf_counter()
            job.progress(tokens, step, phase="generate")
            prompts = torch.randint(1, a.vocab, (a.prompts, a.prompt_len), generator=gen)
            prompts = prompts.repeat_interleave(group, dim=0)  # prompt-major groups
            tg, cg = time.perf_counter(), time.process_time()
            seqs, waves, widest = generate(policy, prompts, a.gen_len, conc, gen)
            gen_s, gen_cpu_s = time.perf_counter() - tg, time.process_time() - cg
            gen_tokens = seqs.shape[0] * a.gen_len
            tokens += gen_tokens
            rewards = rewards_of(seqs, a.prompt_len)
            adv = group_advantages(rewards, group)
            job.progress(tokens, step, phase="update")
            tu = time.perf_counter()
            loss = policy_gradient_step(policy, opt, seqs, adv, a.prompt_len)
            update_s = time.perf_counter() - tu
            # The step is done: report it; the answer carries the knobs for the next batch.
            job.progress(tokens, step + 1, phase="update")
            if a.knob_wait_s > 0:
                job.wait_knobs(a.knob_wait_s)
            step_s = time.perf_counter() - t0
            print(json.dumps({
                "step": step, "gen_concurrency": conc, "group_size": group, "knob_version": version,
                "completions": seqs.shape[0], "waves": waves, "max_in_flight": widest,
                "gen_tokens": gen_tokens, "tokens_total": tokens,
                "gen_s": round(gen_s, 6), "gen_tokens_per_s": round(gen_tokens / gen_s, 1),
                "gen_cpu_s": round(gen_cpu_s, 6),
                "gen_tokens_per_cpu_s": round(gen_tokens / max(gen_cpu_s, 1e-9), 1),
                "update_s": round(update_s, 6), "step_s": round(step_s, 6),
                "reward_mean": round(float(rewards.mean()), 4), "loss": round(loss, 6)}), flush=True)
            if not math.isfinite(loss):
                print("torch_grpo: the loss is not finite", file=sys.stderr)
                return 1
    except FlexwattError as e:
        print(f"torch_grpo: agent refused: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("torch_grpo: interrupted", file=sys.stderr)
        return 130
    finally:
        try:
            job.close()
        except (FlexwattError, OSError):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
