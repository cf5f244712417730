#!/usr/bin/env python3
"""A pipeline-parallel training loop in PyTorch on CPU (torch.distributed, gloo) with the 1F1B
schedule written out, reporting through flexwatt's pipeline hook (PipelineTimings).

Real training, tiny scale: `--stages` processes (one per pipeline stage, launched with
torch.multiprocessing spawn, talking over loopback only) each hold `--layers` Linear+Tanh
layers of width `--hidden`; the last stage adds a Linear head and learns, by MSE, a fixed random
teacher network's output (seeded), so the loss falls. Each step splits its batch into
`--microbatches` micro-batches and runs the non-interleaved 1F1B schedule (Megatron-LM's
PipeDream-Flush): stage s does min(S - 1 - s, M) warm-up forwards, then one forward and one
backward in turn, then the remaining backwards (schedule_1f1b below). Activations go to the next
stage and gradients to the previous one by point-to-point send/recv (non-blocking sends,
blocking receives: the schedule's order alone keeps it from deadlocking). The gradients add up
over the micro-batches; an Adam step ends the iteration.

The hook: with --timings-dir, stage s's rank writes DIR/rank{s}.jsonl through
flexwatt_client.PipelineTimings (docs/pipeline-profile.md): each micro-batch's forward and
backward start and end (after its input arrived, before its output is sent) and the step
boundaries. `--gpus` gives each stage the NVML index it reports (the `gpu` column of the
agent's trace): this program runs on CPU and touches no GPU; on the agent's sim backend the
index names a simulated GPU. With --url or --socket, stage 0 registers the job with the agent
(`--job-id`, kind "pipeline", GPUs `--gpus`) and reports the steps done (micro-batches x
--mb-size samples each, as tokens) through Job.progress() at each step end, by its hook when
there is one; the job is deregistered at exit.

The run is bounded: at most --steps steps; with --stop-file it ends at the first step start
at which that file exists (stage 0 decides and broadcasts it, so every stage ends at the same
step). Output: the last stage prints one JSON line per step ({"step", "loss", "step_s"}) and
a last line {"done": true, "steps", "first_loss", "last_loss"}.

    /usr/bin/python3 examples/torch_pipeline.py --steps 50                      # no agent
    /usr/bin/python3 examples/torch_pipeline.py --timings-dir /tmp/pp-timings \\
        --url http://127.0.0.1:9471 --job-id pp --gpus 0,1,2,3 --stop-file /tmp/stop
"""

import argparse
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from flexwatt_client import FlexwattClient, PipelineTimings  # noqa: E402

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn
except ImportError:
    print(f"torch_pipeline: PyTorch is not importable by {sys.executable or 'python'}; Debian: "
          "apt-get install python3-torch (or `make deps`), then run /usr/bin/python3 "
          "examples/torch_pipeline.py ...", file=sys.stderr)
    sys.exit(3)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stages", type=int, default=4, help="pipeline stages (one process each)")
    p.add_argument("--microbatches", type=int, default=8, help="micro-batches per step")
    p.add_argument("--mb-size", type=int, default=32, help="samples per micro-batch")
    p.add_argument("--hidden", type=int, default=256, help="layer width")
    p.add_argument("--layers", type=int, default=2, help="Linear+Tanh layers per stage")
    p.add_argument("--steps", type=int, default=50, help="most steps to run")
    p.add_argument("--stop-file", help="end at the first step start at which this file exists")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights, data and teacher")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per stage")
    p.add_argument("--port", type=int, default=0,
                   help="loopback TCP port of the rendezvous (0: a free one)")
    p.add_argument("--timings-dir", help="write the pipeline hook's records here (rank{s}.jsonl)")
    p.add_argument("--gpus", help="per stage, the NVML index its hook reports (default 0,1,...)")
    p.add_argument("--url", help="agent TCP URL, e.g. http://127.0.0.1:9471")
    p.add_argument("--socket", help="agent Unix socket")
    p.add_argument("--job-id", default=None, help="job id to register (default: assigned)")
    a = p.parse_args(argv)
    for name in ("stages", "microbatches", "mb_size", "hidden", "layers", "steps", "threads"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if a.stages < 2:
        p.error("--stages must be at least 2 (a pipeline)")
    a.gpu_list = list(range(a.stages))
    if a.gpus:
        try:
            a.gpu_list = [int(g) for g in a.gpus.split(",")]
        except ValueError:
            p.error("--gpus: a comma-separated list of GPU indices")
        if len(a.gpu_list) != a.stages or min(a.gpu_list) < 0:
            p.error(f"--gpus: {a.stages} indices (>= 0), one per stage")
    return a


def schedule_1f1b(stage, stages, microbatches):
    """The non-interleaved 1F1B order of one stage: [("F", mb) | ("B", mb), ...]. Warm-up:
    min(stages - 1 - stage, microbatches) forwards; steady: a forward, then the backward of the
    oldest micro-batch in flight; cool-down: the backwards left."""
    warmup = min(stages - 1 - stage, microbatches)
    ops = [("F", i) for i in range(warmup)]
    for j in range(microbatches - warmup):
        ops += [("F", warmup + j), ("B", j)]
    ops += [("B", i) for i in range(microbatches - warmup, microbatches)]
    return ops


def make_stage(a, stage):
    """Stage `stage`'s layers (weights seeded per stage)."""
    torch.manual_seed(a.seed * 1000 + stage)
    layers = []
    for _ in range(a.layers):
        layers += [nn.Linear(a.hidden, a.hidden), nn.Tanh()]
    if stage == a.stages - 1:
        layers.append(nn.Linear(a.hidden, a.hidden))
    return nn.Sequential(*layers)


def teacher(a):
    """The fixed random map the job learns: tanh(x @ W), W drawn from the seed."""
    t = torch.Generator().manual_seed(a.seed + 17)
    return torch.randn(a.hidden, a.hidden, generator=t) / a.hidden ** 0.5


def batch(a, w, step, mb):
    """Micro-batch mb of step `step`: its input and the teacher's (weights w) target. The first
    and the last stage draw the same ones from the seed."""
    g = torch.Generator().manual_seed(a.seed * 1_000_003 + step * 1009 + mb)
    x = torch.randn(a.mb_size, a.hidden, generator=g)
    return x, torch.tanh(x @ w)


def set_parent_death_signal():
    """Linux: this process gets SIGKILL when the launcher dies (a killed job leaves no stage
    blocked in a receive)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run_stage(stage, a):
    set_parent_death_signal()
    torch.set_num_threads(a.threads)
    S, M = a.stages, a.microbatches
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=stage,
                            world_size=S)
    model = make_stage(a, stage)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    job = None
    if stage == 0 and (a.url or a.socket):
        fw = FlexwattClient(socket_path=a.socket, url=a.url)
        job = fw.register_job(id=a.job_id, name="torch-pipeline", kind="pipeline",
                              gpus=a.gpu_list)
    tm = None
    if a.timings_dir:
        tm = PipelineTimings(os.path.join(a.timings_dir, f"rank{stage}.jsonl"), stage=stage,
                             stages=S, gpu=a.gpu_list[stage], flush_every=128, job=job,
                             tokens_per_step=M * a.mb_size)
    first, last = stage == 0, stage == S - 1
    w_teacher = teacher(a) if first or last else None
    shape = (a.mb_size, a.hidden)
    order = schedule_1f1b(stage, S, M)
    flag = torch.zeros(1)
    first_loss = loss_sum = None
    step = 0
    while True:
        # Stage 0 decides whether this step runs; every stage learns it here.
        if first:
            stop = step >= a.steps or bool(a.stop_file and os.path.exists(a.stop_file))
            flag.fill_(1.0 if stop else 0.0)
        dist.broadcast(flag, src=0)
        if flag.item():
            break
        t0 = time.monotonic()
        if tm:
            tm.step_start()
        opt.zero_grad()
        inputs, outputs, sends = {}, {}, []
        loss_sum = 0.0
        for kind, mb in order:
            if kind == "F":
                if first:
                    x, _ = batch(a, w_teacher, step, mb)
                else:
                    x = torch.empty(shape)
                    dist.recv(x, src=stage - 1)
                    x.requires_grad_()
                if last:
                    _, target = batch(a, w_teacher, step, mb)
                if tm:
                    tm.op_start("forward", mb)
                y = model(x)
                if last:
                    y = nn.functional.mse_loss(y, target) / M
                    loss_sum += y.item()
                if tm:
                    tm.op_end("forward", mb)
                inputs[mb], outputs[mb] = x, y
                if not last:
                    sends.append(dist.isend(y.detach(), dst=stage + 1))
            else:
                grad = None
                if not last:
                    grad = torch.empty(shape)
                    dist.recv(grad, src=stage + 1)
                if tm:
                    tm.op_start("backward", mb)
                torch.autograd.backward(outputs.pop(mb), grad_tensors=grad)
                x = inputs.pop(mb)
                if tm:
                    tm.op_end("backward", mb)
                if not first:
                    sends.append(dist.isend(x.grad, dst=stage - 1))
        for work in sends:
            work.wait()
        opt.step()
        if tm:
            tm.step_end()  # reports the step to the agent when it holds the job
        elif job is not None:
            job.progress(tokens_total=(step + 1) * M * a.mb_size, steps_total=step + 1)
        if last:
            first_loss = loss_sum if first_loss is None else first_loss
            print(json.dumps({"step": step, "loss": round(loss_sum, 6),
                              "step_s": round(time.monotonic() - t0, 4)}), flush=True)
        step += 1
    if tm:
        tm.close()
    if job is not None:
        job.close()
    if last:
        print(json.dumps({"done": True, "steps": step, "first_loss": first_loss,
                          "last_loss": loss_sum}), flush=True)
    dist.destroy_process_group()


def free_port():
    """A loopback TCP port free now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    a = parse_args()
    if a.timings_dir:
        os.makedirs(a.timings_dir, exist_ok=True)
    if a.port == 0:
        a.port = free_port()
    # gloo's connections between the stages: on the loopback interface only.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    # SIGTERM ends the launcher like Ctrl-C: spawn's join then stops the stages.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        mp.spawn(run_stage, args=(a,), nprocs=a.stages, join=True)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
