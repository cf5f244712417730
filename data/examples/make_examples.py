#!/usr/bin/env python3
"""Regenerates the SYNTHETIC example traces in this folder (deterministic, no inputs).

    python3 data/examples/make_examples.py        # from the repository root

Writes:
  trace/gpus.csv, trace/jobs.csv, trace/meta.json  flexwatt trace, 4 GPUs, 0.5 s, 60 s
  nvsmi_8gpu.csv                                   nvidia-smi-style log, 8 GPUs, 100 ms, 15 s

Nothing here is measured. Shapes follow public facts only (calibration.md Part 3 #1: an
8xH100 training log at 100 ms, idle -> ramp -> ~530-575 W per GPU, columns
`timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]`, no index column,
each row with its own timestamp a few ms apart within one query loop). Noise comes from
a fixed linear congruential generator, so the files are byte-identical on every run.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class Lcg:
    """Numerical Recipes LCG; uniform() in [0, 1)."""

    def __init__(self, seed):
        self.s = seed & 0xFFFFFFFF

    def uniform(self):
        self.s = (1664525 * self.s + 1013904223) & 0xFFFFFFFF
        return self.s / 2**32


def flexwatt_trace():
    rng = Lcg(7)
    out = os.path.join(HERE, "trace")
    os.makedirs(out, exist_ok=True)
    n_gpus, dt, n_ticks = 4, 0.5, 120
    energy = [0.0] * n_gpus
    prev = [None] * n_gpus
    tokens = 0.0
    with open(os.path.join(out, "gpus.csv"), "w") as g, open(os.path.join(out, "jobs.csv"), "w") as j:
        g.write("time_s,gpu,power_w,energy_j,power_limit_w,sm_util,mem_util,sm_clock_mhz,temp_c\n")
        j.write("time_s,job,phase,tokens_total,steps_total,gen_concurrency,group_size\n")
        for k in range(n_ticks):
            t = k * dt
            # A GRPO-like cycle of 20 s: 12 s generate, 6 s update, 2 s weight sync.
            c = t % 20.0
            phase, base, util = (("generate", 380.0, 0.55) if c < 12 else
                                 ("update", 640.0, 0.95) if c < 18 else ("sync", 210.0, 0.10))
            for i in range(n_gpus):
                p = base + 25.0 * (rng.uniform() - 0.5) + 6.0 * i
                if prev[i] is not None:
                    energy[i] += 0.5 * (prev[i] + p) * dt
                prev[i] = p
                g.write(f"{t:.3f},{i},{p:.2f},{energy[i]:.3f},700.0,{util:.3f},{util*0.6:.3f},"
                        f"{1980 if phase == 'update' else 1755},{55 + 0.02 * p:.1f}\n")
            tokens += {"generate": 2400.0, "update": 0.0, "sync": 0.0}[phase] * dt
            j.write(f"{t:.3f},0,{phase},{tokens:.0f},{int(t // 20)},64,8\n")
    meta = {"format": "flexwatt-trace/1", "synthetic": True,
            "generator": "data/examples/make_examples.py (LCG seed 7)",
            "gpus": list(range(n_gpus)), "interval_s": dt,
            "note": "synthetic example, not a measurement"}
    with open(os.path.join(out, "meta.json"), "w") as m:
        m.write(json.dumps(meta, indent=2) + "\n")


def nvsmi_log():
    rng = Lcg(11)
    n_gpus, n_loops = 8, 150
    start_ms = (23 * 3600 + 32 * 60 + 9) * 1000 + 703  # 2025/07/26 23:32:09.703
    with open(os.path.join(HERE, "nvsmi_8gpu.csv"), "w") as f:
        f.write("timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n")
        for k in range(n_loops):
            t_loop_s = k * 0.1
            ms = start_ms + k * 100 + int(rng.uniform() * 3)
            for i in range(n_gpus):
                ms += int(rng.uniform() * 2)  # each GPU row has its own timestamp
                if t_loop_s < 2.0:  # idle with a CUDA context
                    p, u, mem = 70.0 + 3.0 * rng.uniform(), 0, 17 if i else 132
                elif t_loop_s < 3.0:  # ramp (Hopper power.draw is a 1 s mean)
                    frac = (t_loop_s - 2.0) / 1.0
                    p, u, mem = 72.0 + frac * 480.0 + 5.0 * rng.uniform(), 100, 61000
                else:  # training plateau, ~530-575 W per GPU
                    p = 530.0 + 45.0 * rng.uniform()
                    u, mem = 100, 61000 + i
                h, rem = divmod(ms, 3600 * 1000)
                mi, rem = divmod(rem, 60 * 1000)
                s, msr = divmod(rem, 1000)
                stamp = f"2025/07/26 {h:02d}:{mi:02d}:{s:02d}.{msr:03d}"
                power = f"{p:.2f} W"
                util = f"{u} %"
                if k == 40 and i == 3:
                    power = "[N/A]"  # a sensor dropout: reported as a gap, not an error
                if k == 41 and i == 5:
                    util = "[N/A]"
                f.write(f"{stamp}, {power}, {util}, {mem} MiB\n")


if __name__ == "__main__":
    flexwatt_trace()
    nvsmi_log()
