"""
Speed: time training steps of every variant, and the same step in Hugging Face for comparison.

    python bench.py                         # every variant, with any of mixit.py's flags
    python bench.py --variant mixit --task add --task_size 10 --n_embd 512
    python bench.py --hf --n_embd 128 --batch_size 256   # an HF Llama step of the same shape
    python bench.py --profile --task induction --task_size 64 --n_embd 512 --batch_size 256
                                            # one step taken apart: ops, kernels, GPU-busy time
    python bench.py --pack 1,4,8,16 --task induction --task_size 64 --n_embd 512
                                            # P runs at once on one GPU: samples/s in all
    python bench.py --graphs-check --task induction --task_size 64 --n_embd 512 --steps 1000
                                            # do CUDA graphs change training? (one recipe, three
                                            # runs: with graphs, and twice without)
    python bench.py --compile-vs-eager --task memorize --n_embd 16
                                            # each variant eager and torch.compile'd, in turns
    python bench.py --sdpa-vs-written --task memorize --n_embd 16 --compile true
                                            # softmax attention fused and written out, in turns
    python bench.py --time-tests            # the README's test command, timed, into
                                            # results/extra.jsonl (x/readme-tests)

`python bench.py` times full training steps (data, forward, backward, clipping, AdamW) and
prints ms/step, samples/s, tokens/s and, on a known GPU, the model FLOP utilization; it appends
one record. `--hf` times the core of the reference code's step (HF Trainer) for an
`LlamaForCausalLM` of our shape on the same batches; only it needs `transformers` (`pip install
"transformers>=4.50,<5"`, not in requirements.txt). The records become Table 7 and the
efficiency tables, made at the end of this file.
"""

import argparse
import collections
import dataclasses
import fnmatch
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace
from unittest import mock

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode  # (the op counter of --profile)

import mixit
import tasks
from mixit import VARIANTS, build, make_optimizer, train_step
from records import (LR, NAMES, STEPS, budget_of, budget_wanted, cell_of, load, lr_wanted, pct, read_records,
                     record_values, stale, stat, table, TWO_WAYS)
from runtime import (BatchPool, append_record, command_line, compiled, data_pool, environment,
                     pick_device, pick_dtype)

# -----------------------------------------------------------------------------
# Our step: `python bench.py`

KIT = os.path.dirname(os.path.abspath(__file__))  # this checkout: README.md, run_all.sh
PEAK_BF16_FLOPS = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12}  # dense


def shapes_only(cfg, vocab_size):
    """mixit.GPT(cfg, vocab_size) with its parameters left as torch.empty made them: the FLOP
    counts need only their shapes. (Not the meta device: it imports torch._dynamo, seconds.)"""
    keep = lambda tensor, *args, **kwargs: tensor  # noqa: E731
    with mock.patch.multiple(torch.nn.init, normal_=keep, uniform_=keep, kaiming_uniform_=keep,
                             zeros_=keep):
        return mixit.GPT(cfg, vocab_size)


def model_flops_per_token(model, T):
    """Forward + backward FLOPs per token: 6 per matmul weight (PaLM appendix B) plus the
    attention's T x T products (6 * n_layer * T * C). Embedding lookups cost no FLOPs."""
    n_matmul = sum(p.numel() for n, p in model.named_parameters() if p.dim() == 2 and "wte" not in n
                   and "wpe" not in n)
    return 6 * n_matmul + 6 * model.cfg.n_layer * T * model.cfg.n_embd


def frozen_qk_bound(config):
    """The most that freezing W_Q and W_K can save of a Standard training step's FLOPs (a
    fraction), for a run's config: a frozen matrix skips only its weight-gradient matmul, 2 of
    its 6 FLOPs per weight and token."""
    fields = {f.name for f in dataclasses.fields(mixit.Config)}
    cfg = mixit.Config(**{k: v for k, v in config.items() if k in fields})
    cfg.variant, cfg.positions, cfg.mlp_act, cfg.residual = "standard", "rope", "swiglu", "plain"
    task = task_shape(cfg.task, cfg.task_size, cfg.data_seed, cfg.data)
    cfg.block_size = cfg.block_size or task.block_size
    model = shapes_only(cfg, task.vocab_size)  # shapes are all it needs (as cost's FLOPs)
    qk = sum(p.numel() for n, p in model.named_parameters() if n.endswith(("q_proj.weight",
                                                                             "k_proj.weight")))
    return 2 * qk / model_flops_per_token(model, task.block_size)


def batches(task, cfg, gen, device):
    """Training batches one by one (next()), drawn as mixit.train draws them."""
    draw = lambda n: task.get_batches(n, cfg.batch_size, gen, cfg.resample)  # noqa: E731
    return BatchPool(draw, data_pool(cfg, device))


def bench(cfg, variants=VARIANTS, warmup=10, windows=7, per_window=None, both=None):
    """Time training steps after a warm-up, for each variant (and with both, a setting and its
    two values, e.g. ("compile", ("false", "true")), for each variant with each value).

    On a shared machine the speed drifts (on our 2-core VM by up to 30%). So the runs take
    turns, one window of steps each, round after round, and ms/step is each run's median
    window: a drift hits every run alike. Appends one record to cfg.out."""
    per_window = per_window or (20 if pick_device(cfg.device).startswith("cuda") else 4)
    print(f"benchmark: task {cfg.task}, n_layer {cfg.n_layer}, n_embd {cfg.n_embd}, n_head "
          f"{cfg.n_head}, batch {cfg.batch_size}, {warmup} warm-up steps, then the median of "
          f"{windows} windows of {per_window} steps, the runs taking turns")

    def steps(n, model, fwd, optimizer, data, dtype):
        for _ in range(n):
            train_step(model, fwd, optimizer, next(data), cfg.lr, cfg, dtype)

    runs = []  # per run: (its row's labels, model, its step arguments, its window times)
    flag, values = both or ("compile", (cfg.compile,))
    for variant in variants:
        for value in values:
            c = dataclasses.replace(cfg, variant=variant, **{flag: value})
            task, model, device, dtype, _ = build(c, verbose=False)  # task, device, dtype: alike
            fwd, sync = compiled(model, c, device)
            data = batches(task, c, torch.Generator(device).manual_seed(0), device)
            args = (model, fwd, make_optimizer(model, c, device), data, dtype)
            steps(warmup, *args)
            labels = {"variant": variant, **({flag: value} if both else {})}
            runs.append((labels, model, args, []))
    sync()
    wait_for_the_others()
    for _ in range(windows):
        for labels, model, args, window_s in runs:
            t0 = time.perf_counter()
            steps(per_window, *args)
            sync()
            window_s.append((time.perf_counter() - t0) / per_window)
    rows = []
    for labels, model, args, window_s in runs:
        dt = sorted(window_s)[windows // 2]  # the median window's seconds per step
        tokens = cfg.batch_size * task.block_size
        row = {**labels, "ms_per_step": 1000 * dt, "samples_per_s": cfg.batch_size / dt,
               "tokens_per_s": tokens / dt, "window_ms": [round(1000 * w, 2) for w in window_s]}
        peak = next((v for k, v in PEAK_BF16_FLOPS.items() if device.startswith("cuda")
                     and k in torch.cuda.get_device_name()), None)
        if peak:
            row["mfu"] = model_flops_per_token(model, task.block_size) * tokens / dt / peak
        rows.append(row)
        name = labels["variant"] + (f", {flag} {str(labels[flag]).lower()}" if both else "")
        print(f"{name:>10s} | {row['ms_per_step']:8.2f} ms/step "
              f"(windows {1000 * min(window_s):.1f}-{1000 * max(window_s):.1f}) | "
              f"{row['samples_per_s']:9.0f} samples/s | {row['tokens_per_s']:10.0f} tokens/s"
              + (f" | MFU {100 * row['mfu']:.1f}% of bf16 peak" if "mfu" in row else "")
              + f" | {device} {str(dtype).replace('torch.', '')}")
    if cfg.out:
        append_record(cfg.out, {"config": dataclasses.asdict(cfg), "bench": rows,
                                "windows": windows, "per_window": per_window,
                                **environment(device, dtype)})
    return rows


def wait_for_the_others():
    """Under `--pack`: each copy compiles for a different time, and one that timed as soon as it
    was ready would time the GPU alone. So each copy waits here, warmed up, until all P are: the
    barrier is a folder in which each copy leaves a file (PACK_BARRIER=folder:P)."""
    folder, _, n = os.environ.get("PACK_BARRIER", "").rpartition(":")
    if not folder:
        return
    open(os.path.join(folder, str(os.getpid())), "w").close()
    deadline = time.time() + 600  # a copy that died must not hang the others forever
    while len(os.listdir(folder)) < int(n) and time.time() < deadline:
        time.sleep(0.01)


# -----------------------------------------------------------------------------
# Where a step's time goes: `python bench.py --profile`


class OpCounter(TorchDispatchMode):
    """Counts the tensor operations run while it is active: on a GPU each op that is not a view
    is a kernel launch, what a launch-bound step pays for, and it can be watched on a CPU."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


def data_ops_per_batch(task, cfg, device, n_pool, n_batches=32):
    """Tensor ops per training batch, averaged over n_batches drawn n_pool at a time."""
    data = batches(task, dataclasses.replace(cfg, data_pool=n_pool), torch.Generator(device), device)
    with OpCounter() as ops:
        for _ in range(n_batches):
            next(data)
    return ops.n / n_batches


def profile(cfg, steps=30, warmup=10):
    """The profile of one training step of cfg's shape: ms/step, the tensor ops of drawing a
    batch and of a whole eager step, and on CUDA (torch.profiler) the kernels per step and the
    GPU-busy time against the wall time (busy well under wall: the GPU waits for launches).
    Appends one record."""
    task, model, device, dtype, _ = build(cfg, verbose=False)
    n_pool = data_pool(cfg, device)
    prof = {"data_pool": n_pool,
            "data_ops_per_batch": {str(p): data_ops_per_batch(task, cfg, device, p) for p in sorted({1, n_pool, 32})}}
    optimizer = make_optimizer(model, cfg, device)
    data = batches(task, cfg, torch.Generator(device).manual_seed(0), device)
    train_step(model, model, optimizer, next(data), cfg.lr, cfg, dtype)  # AdamW's state exists
    with OpCounter() as ops:  # eager: a compiled step hides its ops inside its graphs
        train_step(model, model, optimizer, next(data), cfg.lr, cfg, dtype)
    prof["eager_ops_per_step"] = ops.n
    fwd, sync = compiled(model, cfg, device)
    for _ in range(warmup):
        train_step(model, fwd, optimizer, next(data), cfg.lr, cfg, dtype)
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        train_step(model, fwd, optimizer, next(data), cfg.lr, cfg, dtype)
    sync()
    prof["ms_per_step"] = 1000 * (time.perf_counter() - t0) / steps
    if device.startswith("cuda"):
        from torch.profiler import ProfilerActivity
        with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            for _ in range(steps):
                train_step(model, fwd, optimizer, next(data), cfg.lr, cfg, dtype)
            sync()
        on_gpu = [e for e in p.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
        us = lambda e: getattr(e, "self_device_time_total", None) or e.self_cuda_time_total  # noqa: E731
        prof["kernels_per_step"] = sum(e.count for e in on_gpu) / steps
        prof["gpu_busy_ms_per_step"] = sum(us(e) for e in on_gpu) / 1000 / steps
        prof["top_kernels"] = [{"name": e.key[:80], "ms_per_step": us(e) / 1000 / steps,
                                "calls_per_step": e.count / steps}
                               for e in sorted(on_gpu, key=us, reverse=True)[:8]]
    print(f"profile: {cfg.variant} on {cfg.task}-{task.size}, width {cfg.n_embd}, {cfg.n_layer} "
          f"layers, batch {cfg.batch_size} | {device} {str(dtype).replace('torch.', '')}")
    print(f"  {prof['ms_per_step']:.2f} ms/step ({steps} steps after {warmup})")
    for p, n in prof["data_ops_per_batch"].items():
        print(f"  drawing a batch, {p} at a time: {n:.1f} tensor ops per batch")
    print(f"  a whole eager step: {prof['eager_ops_per_step']} tensor ops")
    if "kernels_per_step" in prof:
        print(f"  {prof['kernels_per_step']:.0f} kernels per step; GPU busy "
              f"{prof['gpu_busy_ms_per_step']:.2f} of {prof['ms_per_step']:.2f} ms")
        for k in prof["top_kernels"]:
            print(f"    {k['ms_per_step']:7.3f} ms  x{k['calls_per_step']:<5.0f} {k['name']}")
    if cfg.out:
        append_record(cfg.out, {"config": dataclasses.asdict(cfg), "profile": prof,
                                **environment(device, dtype)})
    return prof


# -----------------------------------------------------------------------------
# Packing several runs on one GPU: `python bench.py --pack 1,4,8,16 [flags]`

PACK_RECORDS = "results/gpu.jsonl"  # where bench_gpu.sh writes the packing records
DEFAULT_PER_GPU = 8  # before any packing record (best_packing): what the first GPU sweeps used


def pack(argv, counts):
    """For each P in counts, P copies of `python bench.py ARGV` (one variant, seeds 0..P-1) at once
    on this machine's GPU, their samples per second summed: what P runs at once get done. One
    record per P."""
    given = {"variant": "standard", **mixit.parse_args(argv)}
    out, tag = given.pop("out", PACK_RECORDS), given.pop("tag", "gpu/pack")
    rows = []
    for P in counts:
        files = [f"{out}.pack{P}-{i}.tmp" for i in range(P)]
        with tempfile.TemporaryDirectory() as folder:
            env = {**os.environ, "PACK_BARRIER": f"{folder}:{P}"}
            procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--variant",
                                       "standard", *argv, "--seed", str(i), "--out", f,
                                       "--tag", f"{tag}-P{P}-run"], stdout=subprocess.DEVNULL, env=env)
                     for i, f in enumerate(files)]
            if any(p.wait() for p in procs):
                raise tasks.UsageError(f"--pack: a copy of the benchmark failed at P = {P}")
        runs = [json.loads(open(f).readline()) for f in files]
        for f in files:
            os.remove(f)
        total = sum(r["bench"][0]["samples_per_s"] for r in runs)
        rows.append({"P": P, "samples_per_s": total, "together": True,  # timed after the barrier
                     "ms_per_step": [round(r["bench"][0]["ms_per_step"], 2) for r in runs],
                     # gpu_call.sh MPS=1 sets MPS_ACTIVE=1 once NVIDIA's MPS daemon is up: the
                     # copies' kernels may then share the chip instead of taking turns on it
                     "mps": os.environ.get("MPS_ACTIVE") == "1"})
        print(f"P = {P:2d} at once: {total:9.0f} samples/s in all "
              f"({total / rows[0]['samples_per_s']:.1f}x P = {rows[0]['P']})")
        append_record(out, {"config": {**dataclasses.asdict(mixit.resolve_config(given)), "tag": f"{tag}-P{P}"},
                            "pack": rows[-1], **environment(runs[0]["device"], runs[0]["dtype"])})
    return rows


PACK_SHAPE = "gpu/pack-barrier-induction64-w512"  # the shape PER_GPU and MPS are chosen at


def best_packing(path=PACK_RECORDS):
    """PER_GPU's and MPS's defaults: (P, mps) of the --pack record at PACK_SHAPE, on the GPU of
    the newest, that got the most samples per second; (DEFAULT_PER_GPU, False) where none has
    run. Records from before the barrier (no "together") overstate a large P."""
    packs = [r for r in latest_records(path).values()
             if r.get("pack", {}).get("together") and r["config"]["tag"].startswith(PACK_SHAPE)]
    if not packs:
        return DEFAULT_PER_GPU, False
    gpu = max(packs, key=lambda r: r["time"])["device_name"]
    done = {(r["pack"]["P"], r["pack"].get("mps", False)): r["pack"]["samples_per_s"]
            for r in packs if r["device_name"] == gpu}
    return max(done, key=done.get)


def measured_packing(per_gpu, path=PACK_RECORDS):
    """(speed-up, words): how many times one run's samples per second PER_GPU runs packed on one
    GPU train in total, as --pack measured it (the mean over shapes, each in its better mode);
    PACKING_SPEEDUP, said to be assumed, where none was measured at that P."""
    rates = {}  # {(shape, mps): {P: samples per second}}
    for r in latest_records(path).values():
        if r.get("pack", {}).get("together"):
            shape = re.sub(r"(-mps)?-P\d+$", "", r["config"]["tag"].removeprefix("gpu/pack-barrier-"))
            rates.setdefault((shape, r["pack"].get("mps", False)), {})[r["pack"]["P"]] = \
                r["pack"]["samples_per_s"]
    ratio = {}
    for (shape, mps), by_p in rates.items():
        if 1 in by_p and per_gpu in by_p:
            ratio[shape] = max(ratio.get(shape, 0), by_p[per_gpu] / by_p[1])
    if not ratio:
        x = PACKING_SPEEDUP.get(per_gpu) or max(v for k, v in PACKING_SPEEDUP.items() if k <= per_gpu)
        return x, f"{x:g}x assumed (no bench.py --pack record at P = {per_gpu})"
    x = sum(ratio.values()) / len(ratio)
    return x, (f"{x:.2f}x, as measured (bench.py --pack, P = {per_gpu}: "
               + ", ".join(f"{s} {v:.2f}x" for s, v in sorted(ratio.items())) + ")")


# -----------------------------------------------------------------------------
# Do CUDA graphs change training? `python bench.py --graphs-check [mixit flags]`
#
# A CUDA graph replay reads its inputs from the buffers it was recorded with: were a new batch
# not copied into them, the run would train on stale inputs and merely look slower to learn. So
# one recipe and seed run with graphs and without, and every step's batch, lr and loss compared.

GRAPHS_RUNS = {"graphs": "true", "eager": "false", "eager-again": "false"}  # --cuda_graphs of each
GRAPHS_LOSS_STEPS = 100  # losses are compared over the first steps only: later, two runs that
# differ in the last bit of one step drift apart (training amplifies it), graphs or not
BF16_EPS = 2.0 ** -8  # bf16's relative precision: a loss gap under it is rounding, not a bug


def traced_run(argv, trace_path):
    """One mixit.py run that also writes, for every training step, a digest of its batch, its
    learning rate and its loss (the check's child)."""
    rows = []
    step = mixit.train_step

    def traced(model, fwd, optimizer, batch, lr, cfg, dtype):
        loss = step(model, fwd, optimizer, batch, lr, cfg, dtype)
        digest = hashlib.sha1(b"".join(t.cpu().numpy().tobytes() for t in batch)).hexdigest()[:16]
        rows.append([digest, lr, loss.item()])  # (a host sync each step: this run is not timed)
        return loss

    mixit.train_step = traced  # train() looks train_step up in mixit's namespace at each step
    record = mixit.run(mixit.resolve_config(mixit.parse_args(argv)))
    with open(trace_path, "w") as f:
        json.dump({"steps": rows, "history": record["history"]}, f)


def graphs_verdict(traces):
    """traces: {run: {"steps": [[digest, lr, loss], ...], "history": [...]}} for GRAPHS_RUNS.
    With and without graphs the runs must draw the same batch and lr at every step, and their
    early losses differ by no more than two runs without graphs do, or bf16's rounding. Returns
    the record's "graphs_check" part; "same": the check passed."""
    g, e, e2 = (traces[k]["steps"] for k in GRAPHS_RUNS)
    n = min(len(g), len(e))

    def gap(a, b):  # the largest relative loss gap over the first steps
        return max((abs(x[2] - y[2]) / max(abs(y[2]), 1e-12)
                    for x, y in zip(a[:GRAPHS_LOSS_STEPS], b[:GRAPHS_LOSS_STEPS])), default=0.0)

    def first_other(i):  # the first step at which graphs and eager differ in field i
        return next((k for k in range(n) if g[k][i] != e[k][i]), None)

    check = {"steps": n, "loss_steps": min(n, GRAPHS_LOSS_STEPS),
             "first_other_batch": first_other(0), "first_other_lr": first_other(1),
             "loss_gap": gap(g, e), "loss_gap_without_graphs": gap(e2, e),
             "loss": {k: [round(s[2], 5) for s in traces[k]["steps"]] for k in GRAPHS_RUNS},
             "acc": {k: [[h["step"], h["acc"]] for h in traces[k]["history"]] for k in GRAPHS_RUNS}}
    check["same"] = (len(g) == len(e) and check["first_other_batch"] is None
                     and check["first_other_lr"] is None
                     and check["loss_gap"] <= max(check["loss_gap_without_graphs"], BF16_EPS))
    return check


def graphs_check(argv):
    """The runs of GRAPHS_RUNS at once, then one record and a line saying whether graphs train
    as the eager step does. Returns True where they do."""
    given = mixit.parse_args(argv)
    out, tag = given.pop("out", PACK_RECORDS), given.pop("tag", "gpu/graphs-check")
    cfg = mixit.resolve_config(given)  # (bad flags: one line here, before anything starts)
    argv = [*argv, "--out", "", "--examples", "0"]  # the children write no run record
    with tempfile.TemporaryDirectory() as folder:
        paths = {k: os.path.join(folder, f"{k}.json") for k in GRAPHS_RUNS}
        procs = {k: subprocess.Popen([sys.executable, os.path.abspath(__file__), "--graphs-trace",
                                      paths[k], *argv, "--cuda_graphs", v, "--tag", f"{tag}-{k}"],
                                     stdout=subprocess.DEVNULL)
                 for k, v in GRAPHS_RUNS.items()}
        if any([p.wait() for p in procs.values()]):  # (a list: wait for every one)
            raise tasks.UsageError("--graphs-check: a run failed (run its mixit.py line alone to see why)")
        traces = {k: json.load(open(paths[k])) for k in GRAPHS_RUNS}
    check = graphs_verdict(traces)
    device = pick_device(cfg.device)
    append_record(out, {"config": {**dataclasses.asdict(cfg), "tag": tag}, "graphs_check": check,
                        **environment(device, pick_dtype(cfg.dtype, device))})
    where = lambda k: "the same" if check[k] is None else f"differ from step {check[k]}"  # noqa: E731
    accs = "; ".join(f"{k} " + ", ".join(f"{a:.3f}" for _, a in check["acc"][k]) for k in GRAPHS_RUNS)
    print(f"graphs check, {check['steps']} steps: batches {where('first_other_batch')}, learning "
          f"rates {where('first_other_lr')}; largest loss gap over the first {check['loss_steps']} "
          f"steps {check['loss_gap']:.1e} (two runs without graphs: "
          f"{check['loss_gap_without_graphs']:.1e}) | test accuracy at each evaluation: {accs}")
    print("graphs check: " + ("CUDA graphs train as the eager step does" if check["same"] else
                              "CUDA graphs CHANGE training: run without them (--cuda_graphs false)"))
    return check["same"]


def graphs_safe(path=PACK_RECORDS):
    """run_all.sh's --cuda_graphs on a GPU: false where the latest graphs check failed."""
    checks = [r for r in read_records(path) if "graphs_check" in r]
    return not checks or max(checks, key=lambda r: r["time"])["graphs_check"]["same"]


# -----------------------------------------------------------------------------
# The Hugging Face step: `python bench.py --hf`


def bench_hf(argv):
    """The reference's model, an HF LlamaForCausalLM of our shape, trained on the same batches
    with AdamW and clipping (the core of the HF Trainer's step), timed like ours; one record."""
    parser = argparse.ArgumentParser(description="time an HF LlamaForCausalLM training step")
    parser.add_argument("--task", default="add", help="task whose batches are used (tasks.py)")
    parser.add_argument("--task_size", type=int, default=10, help="task size (add: digits)")
    parser.add_argument("--n_embd", type=int, default=128, help="hidden size d (MLP width 4d)")
    parser.add_argument("--n_layer", type=int, default=2, help="number of blocks")
    parser.add_argument("--n_head", type=int, default=4, help="attention heads")
    parser.add_argument("--batch_size", type=int, default=256, help="sequences per step")
    parser.add_argument("--resample", action="store_true", help="draw batches as --resample does")
    parser.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                        help="HF attention implementation (sdpa: torch's fused kernel)")
    parser.add_argument("--device", default="auto", help="cuda, mps or cpu; auto picks the first")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                        help="bfloat16: autocast, as our runs; auto = bf16 on CUDA, else fp32")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--iters", type=int, default=20, help="timed steps")
    parser.add_argument("--out", default="", help="append one record here ('' = don't)")
    parser.add_argument("--tag", default="", help="the record's tag (e.g. gpu/hf-w512)")
    args = parser.parse_args(argv)

    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        raise SystemExit('error: bench.py --hf needs transformers: pip install "transformers>=4.50,<5"')
    try:
        device = pick_device(args.device)
        task = tasks.make_task(args.task, args.task_size, device, data_seed=0, n_test=10)
    except tasks.UsageError as e:
        raise SystemExit(f"error: {e}")
    bf16 = args.dtype == "bfloat16" or (args.dtype == "auto" and device.startswith("cuda"))
    dtype = torch.bfloat16 if bf16 else torch.float32
    config = LlamaConfig(vocab_size=task.vocab_size, hidden_size=args.n_embd,
                         intermediate_size=4 * args.n_embd, num_hidden_layers=args.n_layer,
                         num_attention_heads=args.n_head, num_key_value_heads=args.n_head,
                         max_position_embeddings=task.block_size, attn_implementation=args.attn)
    model = LlamaForCausalLM(config).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = batches(task, SimpleNamespace(data_pool=0, batch_size=args.batch_size,
                                         resample=args.resample), torch.Generator(device), device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    print(f"HF LlamaForCausalLM ({args.attn}), {sum(p.numel() for p in model.parameters()):,} "
          f"parameters, task {args.task} (T={task.block_size}), batch {args.batch_size}, "
          f"{device} {str(dtype).replace('torch.', '')}, {torch.get_num_threads()} threads")
    for i in range(args.warmup + args.iters):
        if i == args.warmup:
            sync()
            t0 = time.time()
        x, y, mask = next(data)
        with torch.autocast(x.device.type, dtype=dtype, enabled=bf16):
            logits = model(input_ids=x).logits                  # (B, T, vocab)
        loss = F.cross_entropy(logits.float()[mask], y[mask])   # the answer positions only
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    sync()
    dt = (time.time() - t0) / args.iters
    row = {"variant": "standard", "model": f"hf-llama-{args.attn}", "ms_per_step": 1000 * dt,
           "samples_per_s": args.batch_size / dt, "tokens_per_s": args.batch_size * task.block_size / dt}
    print(f"{row['ms_per_step']:.1f} ms/step | {row['samples_per_s']:.0f} samples/s | "
          f"{row['tokens_per_s']:.0f} tokens/s")
    if args.out:  # a bench record (Standard's column): the efficiency table reads it by its tag
        append_record(args.out, {"config": {**vars(args), "hf": True}, "bench": [row],
                                 **environment(device, dtype)})
    return row


# -----------------------------------------------------------------------------
# The cost of a sweep before it runs: `bash run_all.sh --plan` (or python bench.py --plan FILE)
#
# The constants below were read off the H100 records of bench_gpu.sh (results/gpu.jsonl; FINDINGS,
# Efficiency): a small model's step is bound by kernel launches (a floor, STEP_FLOOR_MS), not by
# its FLOPs, until the model is large (then MFU of the chip's peak); quick-size runs packed P to a
# GPU finish more runs per minute than one at a time (PACKING_SPEEDUP); and every run pays a
# start-up (RUN_START_S: interpreter, data, compilation). The model: a run takes RUN_START_S
# plus, per step, max(FLOPs / (MFU x peak), STEP_FLOOR_MS); runs whose steps sit at the floor
# pack PER_GPU at a time with that speed-up, the others do not.

H100_PEAK = PEAK_BF16_FLOPS["H100"]
STEP_FLOOR_MS = 9.0
RUN_START_S = 16.0
MFU = 0.16
PACKING_SPEEDUP = {1: 1.0, 2: 1.8, 4: 3.5, 8: 6.0}
CALL_MINUTES = 9  # one call of a lent GPU (at most 10 minutes): run_all.sh --minutes 9
SPARE = 1.25  # run_all.sh --minutes starts a run only where its price, a quarter more, fits (todo)
QUEUE_PRICE = "results/queue-paper.jsonl"  # `bash run_all.sh --plan`: what is left, priced


# The model prices a run alone on a GPU; packed, or memory-bound, a step takes longer. So the
# queue of `--minutes` prices a run by the measured step time of its shape where a record has one.
SHAPE = ("task", "task_size", "variant", "n_layer", "n_head", "n_embd", "batch_size")


def shape_key(config):
    """What a step's time depends on (not the recipe: lr, steps, seed...)."""
    return tuple(config.get(k) for k in SHAPE)


def measured_step_ms(latest, compile=None):
    """{shape: ms per step of its newest run} of {tag: record}: the newest, because a faster
    launch (CUDA graphs, say) makes the older times wrong. With compile, only the runs launched
    with that --compile (on a CPU a compiled step is faster)."""
    by_shape = {}
    for r in sorted(latest.values(), key=lambda r: r.get("time", "")):
        if r.get("ms_per_step") and compile in (None, r["config"].get("compile")):
            by_shape[shape_key(r["config"])] = r["ms_per_step"]
    return by_shape


def steps_to_price(latest, tag, cfg, given):
    """How many steps to price a run at: its --steps, unless every other seed of its cell that
    ran this recipe stopped early by its stopping rule: then twice the most steps they ran (at
    most --steps). Nearly every paper run stops far before its --steps (64-head MixiT on add-10:
    step 1800 of 20000), and at full --steps almost nothing would fit in a 9-minute call."""
    cell, keys = tag.rsplit("/s", 1)[0], [k for k in given if k != "seed"]
    ran = [r["final"]["step"] for t, r in latest.items()
           if t != tag and t.rsplit("/s", 1)[0] == cell and same_recipe(r, cfg, keys)]
    return min(cfg.steps, 2 * max(ran)) if ran and max(ran) < cfg.steps else cfg.steps


@functools.lru_cache(maxsize=None)
def task_shape(name, size, data_seed, data):
    """A task's vocab_size and block_size, all that cost() needs of it, made once per process:
    making a task draws its test set, and ~500 prices share a few dozen tasks."""
    task = tasks.make_task(name, size, "cpu", data_seed, 8, data)
    return SimpleNamespace(vocab_size=task.vocab_size, block_size=task.block_size)


def cost(argv, models, measured=None, steps=None):
    """(config, training FLOPs, estimated H100 minutes, floor-bound?) of one job line's run, to
    its full --steps or to `steps`. models caches FLOPs per shape; measured: {shape: ms/step}."""
    cfg = mixit.resolve_config(mixit.parse_args(argv + ["--device", "cpu", "--out", ""]))
    task = task_shape(cfg.task, cfg.task_size, cfg.data_seed, cfg.data)
    cfg.block_size = cfg.block_size or task.block_size
    shape = (cfg.variant, cfg.n_layer, cfg.n_head, cfg.n_embd, task.vocab_size, cfg.block_size,
             cfg.positions)
    if shape not in models:  # building a model is the slow part: once per shape
        models[shape] = model_flops_per_token(shapes_only(cfg, task.vocab_size), task.block_size)
    flops = models[shape] * cfg.batch_size * task.block_size * cfg.steps
    step_ms = max(1000 * flops / max(1, cfg.steps) / (MFU * H100_PEAK), STEP_FLOOR_MS)
    floor_bound = step_ms == STEP_FLOOR_MS
    step_ms = (measured or {}).get(shape_key(dataclasses.asdict(cfg)), step_ms)
    return cfg, flops, (RUN_START_S + step_ms * (steps or cfg.steps) / 1000) / 60, floor_bound


def latest_records(path):
    """{tag: its latest record} of a results file (a rerun with a new recipe supersedes)."""
    return {r["config"]["tag"]: r for r in read_records(path)}


def plan(joblist, per_gpu=8, records="", price_out=""):
    """Print every run of a run_all.sh job list with its training FLOPs and estimated minutes
    on one H100 (and its measured minutes where records has run it), then the total with
    PER_GPU packing, the cells that dominate it and the price of what is left to run.
    price_out: write that price there as a one-line record, which FINDINGS reads."""
    models, rows, ran = {}, [], latest_records(records)
    for line in open(joblist):
        tag, *argv = line.split()
        if "--bench" not in argv:
            rows.append((tag, *cost(argv, models)))
    print(f"{'run':34s} {'width':>5s} {'layers':>6s} {'batch':>6s} {'steps':>6s} "
          f"{'PFLOP':>7s} {'min':>6s} {'ran':>7s}")
    for tag, cfg, flops, minutes, _ in rows:
        r = ran.get(tag)
        measured = f"{r['wall_s'] / 60:6.2f}{'' if same_recipe(r, cfg) else '*'}" if r and "wall_s" in r else ""
        print(f"{tag:34s} {cfg.n_embd:5d} {cfg.n_layer:6d} {cfg.batch_size:6d} {cfg.steps:6d} "
              f"{flops / 1e15:7.2f} {minutes:6.2f} {measured:>7s}")
    print("(PFLOP: training FLOPs at the full --steps; min: estimated minutes on one H100; ran: "
          "the measured minutes of its latest record, * where that record ran another recipe, "
          "so the run is queued again)")
    speedup = PACKING_SPEEDUP.get(per_gpu) or max(v for k, v in PACKING_SPEEDUP.items() if k <= per_gpu)
    serial = sum(r[3] for r in rows)
    packed = sum(r[3] for r in rows if not r[4]) + sum(r[3] for r in rows if r[4]) / speedup
    print(f"\n{len(rows)} runs, {sum(r[2] for r in rows) / 1e15:.1f} PFLOP of training; on one H100 "
          f"at {MFU:.0%} MFU, a {STEP_FLOOR_MS:.0f} ms floor per step and {RUN_START_S:.0f} s to start a "
          f"run: {serial:.0f} min one at a "
          f"time, {packed:.0f} min with PER_GPU={per_gpu} ({speedup}x on the floor-bound runs)")
    by_table = {}
    for tag, _, _, minutes, _ in rows:
        key = "/".join(tag.split("/")[:2])
        by_table[key] = by_table.get(key, 0) + minutes
    top = sorted(by_table.items(), key=lambda kv: -kv[1])[:5]
    print("dominated by: " + ", ".join(f"{k} {v:.0f} min" for k, v in top))
    both = [(m, ran[t]["wall_s"] / 60) for t, c, _, m, _ in rows
            if t in ran and "wall_s" in ran[t] and same_recipe(ran[t], c)]
    if both:
        print(f"{len(both)} of these runs have a record of this recipe: estimated "
              f"{sum(b[0] for b in both):.0f} min, measured {sum(b[1] for b in both):.0f} min of run time")
    left = queue(joblist, records, price=True, models=models)  # the shapes are built
    minutes = sum(m for _, m in left)
    superseded = sorted(line.split()[0] for line, _ in left if line.split()[0] in ran)
    if superseded:
        print(f"{len(superseded)} of them have a record of an earlier recipe (report.py marks it °)")
    packing, how = measured_packing(per_gpu)
    # records do not say whether a step time was taken packed or alone: the price is between
    print(f"left to run: {len(left)} runs, {minutes:.0f} min of run time at their full --steps "
          f"(a run's shape priced by its step time in a record where one ran, else by the model): "
          f"on a GPU with PER_GPU={per_gpu}, about {minutes / per_gpu:.0f} min where those step "
          f"times were taken {per_gpu} to a GPU, up to {minutes / packing:.0f} min where they were "
          f"taken alone, at the packing measured: {how}")
    # a lent GPU call: --minutes 9, less the 30 s its runs get to save their state
    too_long = [(line.split()[0], m) for line, m in left if m * SPARE > CALL_MINUTES - 0.5]
    if too_long:
        print(f"{len(too_long)} runs are priced too long for one {CALL_MINUTES}-minute call, so "
              "run_all.sh --minutes never starts them alone: " + ", ".join(
                  f"{t} {m:.0f} min" for t, m in too_long) + ". Each fits once another seed of "
              "its cell has a record that stopped early (priced at twice its steps), or in pieces "
              "over calls on one warm machine (PIECES=1 bash gpu_call.sh --minutes 9, then again)")
    if price_out:  # one line, rewritten: the price of today's queue, not a history
        name = os.path.basename(records).removesuffix(".jsonl")
        lines = "".join(line for line, _ in left)  # what `run_all.sh --list` prints
        price = {"config": {"tag": f"queue/{name}", "per_gpu": per_gpu,
                            "queue_sha256": hashlib.sha256(lines.encode()).hexdigest()},
                 "final": {"left": len(left), "run_minutes": minutes, "packing": packing,
                           "gpu_minutes": minutes / per_gpu, "gpu_minutes_alone": minutes / packing,
                           "superseded": superseded}}
        # an unchanged price keeps its old line, time included: `git status` stays clean
        old = read_records(price_out)  # [] where there is none yet
        if [{k: v for k, v in r.items() if k != "time"} for r in old] != [price]:
            with open(price_out, "w") as f:
                f.write(json.dumps({**price, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
    return serial, packed


def superseded_tags(scale):
    """The tags whose record ran an earlier recipe (the queue reruns them), as `bash run_all.sh
    --plan` found them (QUEUE_PRICE; paper scale only): report.py marks their cells °."""
    priced = read_records(QUEUE_PRICE) if scale == "paper" else []
    return set(priced[-1]["final"].get("superseded", [])) if priced else set()


def queue_price_stale():
    """FINDINGS' price of the paper-scale queue holds only for the queue it priced: the
    same records and recipe give the same `bash run_all.sh --list`, whose hash it keeps."""
    priced = read_records(QUEUE_PRICE)
    if not priced:
        return []
    env = {k: v for k, v in os.environ.items() if k not in ("ONLY", "YELP")}
    env["PYTHON"] = sys.executable  # run_all.sh runs bench.py with this one, not PATH's python
    listed = subprocess.run(["bash", "run_all.sh", "--list"], capture_output=True, text=True,
                            env=env, cwd=KIT)
    if listed.returncode != 0:
        return [f"{QUEUE_PRICE}: bash run_all.sh --list failed: {listed.stderr.strip()[-300:]}"]
    if hashlib.sha256(listed.stdout.encode()).hexdigest() == priced[-1]["config"]["queue_sha256"]:
        return []
    return [f"{QUEUE_PRICE}: the paper-scale queue changed since it was priced (new records or "
            "a new recipe): run bash run_all.sh --plan"]


# -----------------------------------------------------------------------------
# The queue of `bash run_all.sh`: what is left to run, in the order that decides most first

# the same run on another device or in another precision is the same cell (they have results
# files of their own); so is a run made faster by how its step is launched (compile, CUDA
# graphs) or by drawing its batches many at a time (--data_pool)
RECIPE_FREE = ("out", "tag", "save", "resume", "examples", "log_interval", "device", "dtype",
               "compile", "cuda_graphs", "data_pool", "sdpa")


def same_recipe(record, cfg, given=None):
    """Did this record run the recipe of cfg? Compared on the flags its job line gives (all of
    cfg's if given is None); a record older than a flag has that flag's default."""
    keys = given if given is not None else [f.name for f in dataclasses.fields(cfg)
                                             if f.name not in ("block_size",)]
    return not stale(record) and all(
        record["config"].get(k, getattr(mixit.Config, k)) == getattr(cfg, k)
        for k in keys if k not in RECIPE_FREE)


# Claim 6 at the reference's init first (Random with Q and K at 0.02, FINDINGS, claim 6), then
# the MixiT row of Table 6 it is compared with
FIRST = ("t6/add/random_ref-", "t6/add/mixit-")


def priority(tag):
    """Claim 6 at the reference's init (FIRST, every seed, the deepest first: the longest runs
    first let a packed call's slots finish together), then the claims' cells (seed 0), then their
    other seeds, then MixiT as the reference ships it (-shipped), then the studies."""
    seed = int(tag.rsplit("/s", 1)[1]) if tag.rsplit("/s", 1)[-1].isdigit() else 0
    for tier, prefix in enumerate(FIRST):
        if tag.startswith(prefix):
            layers = re.search(r"-L(\d+)/", tag)
            return tier, -int(layers.group(1)) if layers else 0
    if LR.search(cell_of(tag)):  # the lr sweep, behind the claims' seed-0 cells; claim 4's last
        return len(FIRST) + (2 if tag.startswith("c4/") else 1), 0
    tier = (3 if tag.split("/")[0] in ("t9", "t10", "s1", "s2", "s3") else
            2 if "-shipped/" in tag else int(seed > 0))
    return len(FIRST) + tier, 0


def paused_file(records):  # results/paper.jsonl -> results/paper-paused.jsonl (run_all.sh)
    return records.removesuffix(".jsonl") + "-paused.jsonl"


def doubling_filter(lines, records):
    """wanted(tag, argv): does the doubling rule (records.budget_wanted) ask for this run? A
    ladder is a cell whose job list also holds CELL-steps<N> cells; every other run is wanted."""
    budgets = collections.defaultdict(set)
    for line in lines:
        rung = STEPS.search(cell_of(line.split()[0]))
        if rung:
            budgets[STEPS.sub("", cell_of(line.split()[0]))].add(int(rung.group(1)))
    known = set()  # the ladders whose first budget is known
    for line in lines:  # each ladder's first budget: the base cell's own --steps
        tag, *argv = line.split()
        if cell_of(tag) in budgets:
            budgets[cell_of(tag)].add(int(argv[argv.index("--steps") + 1]))
            known.add(cell_of(tag))
    cells = load(records) if budgets else {}
    for base in set(budgets) - known:  # a base left out of the list (ONLY=): its records' budget
        if base in cells:
            budgets[base].add(budget_of(cells[base]))
            known.add(base)
    for cell in cells:  # rungs left out of the list (ONLY= on one budget): those that ran, and
        rung = STEPS.search(cell)  # every doubling up to the largest
        if rung and STEPS.sub("", cell) in budgets:
            budgets[STEPS.sub("", cell)].add(int(rung.group(1)))
    for base in known:
        first, top = min(budgets[base]), max(budgets[base])
        budgets[base].update(first * 2 ** k for k in range((top // first).bit_length()))

    def wanted(tag, argv):
        base = STEPS.sub("", cell_of(tag))
        if base not in budgets:
            return True
        if base not in known:
            return False  # neither listed nor run: its first budget, and so the rule, is unknown
        steps, seed = int(argv[argv.index("--steps") + 1]), int(tag.rsplit("/s", 1)[1])
        return budget_wanted(cells, base, sorted(budgets[base]), steps, seed)
    return wanted


def lr_filter(lines, records):
    """wanted(tag, argv): does the learning-rate sweep (records.lr_wanted) ask for this run? Runs
    of no sweep (tags without -lr<LR>) are wanted."""
    swept = any(LR.search(cell_of(line.split()[0])) for line in lines)
    cells = load(records) if swept else {}

    def wanted(tag, argv):
        m = LR.search(cell_of(tag))
        if not m:
            return True
        held = argv[argv.index("--task") + 1] in ("modadd", "lm")  # validates on -val runs
        return lr_wanted(cells, cell_of(tag)[:m.start()], float(m.group(1)),
                         int(tag.rsplit("/s", 1)[1]), final_only=held and not m.group(2))
    return wanted


def queue(joblist, records, price=False, models=None):
    """(line, minutes) of each run of a job list still to do, in priority order. A line is done
    when the latest record of its tag ran its recipe; a benchmark when it has a record. With
    price, minutes is the run's price (cost, at steps_to_price); models: cost's cache."""
    latest, models, jobs = latest_records(records), {} if models is None else models, []
    # {--compile: {shape: ms/step}}: the newest run of that --compile, else the newest of any
    measured = {c: {**measured_step_ms(latest), **measured_step_ms(latest, compile=c)}
                for c in ("true", "false")}
    # runs paused before they wrote a record price their shape where no finished run has
    paused = {t: r["ms_per_step"] for t, r in latest_records(paused_file(records)).items()}
    lines = open(joblist).readlines()
    wanted, swept = doubling_filter(lines, records), lr_filter(lines, records)
    for i, line in enumerate(lines):
        tag, *argv = line.split()
        if not (wanted(tag, argv) and swept(tag, argv)):
            continue  # a budget of a ladder that the doubling rule does not ask for (yet)
        done = tag in latest
        minutes = 2 if price else None  # a benchmark (a set number of steps) is priced at 2 minutes
        if "--bench" not in argv:
            given = mixit.parse_args(list(argv))
            cfg = mixit.resolve_config({**given, "device": "cpu", "out": ""})
            done = done and same_recipe(latest[tag], cfg, given)
            if price and not done:
                shape = shape_key(dataclasses.asdict(cfg))
                known = measured[cfg.compile]
                known = known if tag not in paused else {shape: paused[tag], **known}
                minutes = cost(argv, models, known, steps_to_price(latest, tag, cfg, given))[2]
        if not done:
            jobs.append((priority(tag), i, line, minutes))
    return [(line, minutes) for _, _, line, minutes in sorted(jobs)]


def todo(joblist, records, estimates=""):
    """The lines of a job list still to run (see queue). With estimates, writes 'tag minutes'
    per line there, for run_all.sh --minutes: the minutes a run must have left to start."""
    left = queue(joblist, records, price=bool(estimates))
    if estimates:
        with open(estimates, "w") as f:
            f.write("".join(f"{line.split()[0]} {SPARE * minutes:.2f}\n" for line, minutes in left))
    return [line for line, _ in left]


# -----------------------------------------------------------------------------
# Table 7 and the efficiency tables (results/tables_quick.md) from these benchmarks' records


def bench_runs(cells):
    """Table 7's benchmark records (one per seed) taken on the newest one's machine, dtype, width
    and thread count, so that a table never mixes two machines; [] if none ran."""
    def machine(r):
        return (r["device_name"], r.get("cpu_bf16"), r["device"], r["dtype"], r["threads"],
                r["config"]["n_embd"])
    runs = cells.get("t7/bench", [])
    return [r for r in runs if machine(r) == machine(runs[-1])]


def speedups(runs, variant):
    """Per benchmark record: how many % more samples per second `variant` trains than Standard."""
    rates = [{x["variant"]: x["samples_per_s"] for x in r["bench"]} for r in runs]
    return [100 * (r[variant] / r["standard"] - 1) for r in rates]


def bench_note(cells):
    """Table 7's machine: the newest benchmark's, which every row was taken on (bench_runs)."""
    runs = bench_runs(cells)
    if not runs:
        return ""
    b, days = runs[-1], sorted({r["time"][:10] for r in runs})
    return (f"{b['device_name']} ({b['device']}, {b['dtype']}, {b['threads']} threads, "
            f"torch {b['torch']}, {days[0]}{' to ' + days[-1] if len(days) > 1 else ''}), "
            + ", ".join(f"{k} {b['config'][k]}"
                        for k in ("task", "n_embd", "n_layer", "batch_size"))
            + (f"; mean ± std over {len(runs)} benchmarks" if len(runs) > 1 else ""))


def bench_rows(cells):
    """Table 7: each benchmarked variant's ms/step, samples/s and % against Standard."""
    runs = bench_runs(cells)
    if not runs:
        return None

    def of(v, key):
        return [x[key] for r in runs for x in r["bench"] if x["variant"] == v]
    return [[NAMES[v], stat(of(v, "ms_per_step"), 1, n=False),
             stat(of(v, "samples_per_s"), 1, 0, n=False), pct(speedups(runs, v))]
            for v in (x["variant"] for x in runs[-1]["bench"])]


# (records file, tag, row label, what to show): each GPU gets these rows where it has records
MS = "ms_per_step"
GPU_ROWS = [("paper", "t7/bench/s0", "width 512, batch 1000, compile + bf16: ms/step", MS),
            ("paper", "t7/bench/s0", "width 512, batch 1000: MFU (bf16 peak 989 TFLOP/s)", "mfu"),
            ("gpu", "gpu/w512-cudagraphs-bf16", "width 512, CUDA graphs: ms/step", MS),
            ("gpu", "gpu/w128-compile-bf16", "width 128, batch 256, compile + bf16: ms/step", MS),
            ("gpu", "gpu/w128-eager-fp32", "width 128, batch 256, eager fp32: ms/step", MS),
            ("gpu", "gpu/w128-cudagraphs-bf16", "width 128, CUDA graphs: ms/step", MS),
            # the reference's model (HF Llama, sdpa, bf16 autocast) at Table 1's induction shape
            # and ours beside it: bench.py --hf and bench.py --profile (bench_gpu.sh, part 5)
            ("gpu", "gpu/hf-induction64-w512", "HF Llama, induction-64, width 512, batch 256: ms/step", MS),
            ("gpu", "gpu/ours-induction64-w512", "ours, the same shape and batches: ms/step", MS)]
# (row label, tags in results/extra.jsonl): the AVX2-only CPU in fp32, the AVX-512 bf16 CPU in
# fp32 and in bf16 autocast
CPU_ROWS = [("width 128, AVX2 CPU, fp32", "x/t7-bench-sweep-2026-11-21"),
            ("width 128, AVX-512 bf16 CPU, fp32", "x/cpu-bench-w128-float32"),
            ("width 128, same CPU, bf16 autocast", "x/cpu-bench-w128-bfloat16"),
            ("width 512, AVX2 CPU, fp32", "x/bench-w512-*"),
            ("width 512, AVX-512 bf16 CPU, fp32", "x/cpu-bench-w512-*-float32"),
            ("width 512, same CPU, bf16 autocast", "x/cpu-bench-w512-*-bfloat16")]


def bench_row(label, records, key=MS):
    """A row of an efficiency table: each variant's ms/step (or MFU) in the records."""
    by = {x["variant"]: x[key] for r in records for x in r["bench"]}
    return [label] + ["–" if by.get(v) is None else f"{100 * by[v]:.1f}%" if key == "mfu"
                      else f"{by[v]:.1f}" for v in VARIANTS]


def efficiency():
    """The efficiency block of results/tables_quick.md: GPU ms/step and MFU per variant,
    packing several runs on one GPU (each run's own wall time, from its record), and the CPU
    benchmarks."""
    files = {name: read_records(f"results/{name}.jsonl") for name in ("paper", "gpu", "extra")}

    def on(gpu, tag, name="gpu"):
        return [r for r in files[name] if r["config"]["tag"] == tag and r["device_name"] == gpu]
    gpus = sorted({r["device_name"] for r in files["paper"] + files["gpu"]
                   if r["device"].startswith("cuda")})
    rows, pack = [], []
    for gpu in gpus:
        short = gpu.replace("NVIDIA ", "")
        rows += [bench_row(f"{short}, {label}", on(gpu, tag, name), key)
                 for name, tag, label, key in GPU_ROWS if on(gpu, tag, name)]
        for mode in ("compile", "eager"):
            one, eight = ([r["wall_s"] for r in on(gpu, f"gpu/pack-{mode}-P{p}")] for p in (1, 8))
            # the batch's wall clock: bench_gpu.sh records it since 2026-11-25
            clock = [r["pack_wall_s"] for r in on(gpu, f"gpu/pack-wall-{mode}-P8")]
            if one and eight:
                pack.append([short, mode, f"{max(one):.1f}", f"{max(eight):.1f}",
                             f"{clock[-1]:.1f}" if clock else "–",
                             f"{60 / max(one):.1f} vs {8 * 60 / max(eight):.1f}"])
    header = ["ms/step (or MFU)"] + [NAMES[v] for v in VARIANTS]
    out = [table(header, rows)]
    if pack:
        out.append("Packing (`PER_GPU`): quick-size runs (add-4, width 64, 1000 steps) one at a "
                   "time and eight at once on one GPU; each run's wall time from its record (model "
                   "build to record, without the interpreter's start), the slowest of the eight, "
                   "and the batch's wall clock where bench_gpu.sh recorded it.\n\n"
                   + table(["GPU", "mode", "1 run: s", "8 at once: s (slowest)",
                            "8 at once: wall clock, s", "runs/min, 1 vs 8"], pack))
    hits = {label: [r for r in files["extra"] if fnmatch.fnmatchcase(r["config"]["tag"], pattern)]
            for label, pattern in CPU_ROWS}
    rows = [bench_row(label, runs) for label, runs in hits.items() if runs]
    out.append("CPU, two kinds of 2-core AMD EPYC (2 threads, nothing else running), add-10, "
               "2 layers, 4 heads, batch 256 (records `x/bench-*`, `x/t7-bench-sweep-*` and "
               "`x/cpu-bench-*` in results/extra.jsonl):\n\n" + table(header, rows))
    for option in BOTH_WAYS:
        vs = [r for r in files["extra"] if r["config"]["tag"] == BOTH_WAYS[option].tag]
        if vs:
            out.append(both_ways(option, vs))
    return "\n\n".join(out)


# One setting timed both ways on the CPU, at claim 4's memorize shape (`bench.py OPTION`): the key
# of its ratio in a record (records.TWO_WAYS: the setting and its two values), the rows' names,
# the record's tag and what is compared
BothWays = collections.namedtuple("BothWays", "ratio rows tag what")
BOTH_WAYS = {
    "--compile-vs-eager": BothWays("compiled", ("eager (--compile false)", "compiled (--compile true)"),
                                   "x/cpu-compile-vs-eager-memorize-w16", "torch.compile on the CPU"),
    "--sdpa-vs-written": BothWays("written", ("fused (--sdpa true)", "written out (--sdpa false)"),
                                  "x/cpu-sdpa-vs-written-memorize-w16",
                                  "Softmax attention by the fused kernel and written out on the CPU"),
}


def both_ways(option, runs):
    """The efficiency block's table of `bench.py OPTION` (BOTH_WAYS) on the CPU: each variant's
    ms/step with each value, and the ratio, mean ± std over the benchmarks."""
    way = BOTH_WAYS[option]
    flag, values = TWO_WAYS[way.ratio]

    def ms(r, variant, value):
        return next(x[MS] for x in r["bench"] if (x["variant"], x[flag]) == (variant, value))
    variants = [v for v in VARIANTS if any(x["variant"] == v for x in runs[-1]["bench"])]
    rows = [[label] + [stat([ms(r, v, value) for r in runs], 1, n=False) for v in variants]
            for label, value in zip(way.rows, values)]
    rows.append([" / ".join(label.split(" (")[0] for label in way.rows) + ", x"] + [stat(
        [x for r in runs for x in record_values(r, f"{way.ratio}:{v}")], 1, 2, n=False) for v in variants])
    c, r = runs[-1]["config"], runs[-1]
    compiled = ", compiled" if flag != "compile" and c["compile"] == "true" else ""
    return (f"{way.what} (`python bench.py {option}`), claim 4's memorize "
            f"shape (task size {c['task_size']}, width {c['n_embd']}, {c['n_layer']} layers, "
            f"batch {c['batch_size']}, {r['dtype']}{compiled}), {r['threads']} thread on {r['device_name']}, "
            f"the two ways taking turns (record `{way.tag}`, n = {len(runs)}; FINDINGS, Efficiency, "
            "says what else ran):\n\n" + table(["ms/step"] + [NAMES[v] for v in variants], rows))


# -----------------------------------------------------------------------------
# How long the README's test command takes: `python bench.py --time-tests`, alone on the machine


def readme_commands(path=os.path.join(KIT, "README.md")):
    """The README's set-up commands, in order: the main job's, then the tests'."""
    return re.findall(r"^```bash\n(.+?)\n```", open(path).read(), re.M | re.S)


def time_tests(out="results/extra.jsonl"):
    """Run the README's test command as a newcomer would (its `python`, in this folder) and append
    its wall time to out, tagged x/readme-tests: the README renders it from there. A failing run
    records nothing. Nothing else should run meanwhile (the time is the machine's, all cores)."""
    command = readme_commands()[1]
    t0 = time.time()
    done = subprocess.run(command, shell=True, cwd=KIT)
    if done.returncode:
        raise tasks.UsageError(f"`{command}` failed (exit {done.returncode}): nothing recorded")
    append_record(out, {"config": {"tag": "x/readme-tests", "command": command},
                        "wall_s": round(time.time() - t0, 1), "cores": os.cpu_count(),
                        **environment("cpu", torch.float32)})


# -----------------------------------------------------------------------------
# The command line


def main(argv):
    """`python bench.py [mixit flags]`: time every variant (or the one named by --variant);
    `python bench.py --compile-vs-eager [mixit flags]`: the same, each eager and compiled;
    `python bench.py --sdpa-vs-written [mixit flags]`: the same, attention fused and written out;
    `python bench.py --profile [mixit flags]`: profile one variant's step (default Standard);
    the other modes: the module's docstring, run_all.sh, gpu_call.sh and bench_gpu.sh."""
    mode, rest = argv[:1], argv[1:]
    argv = [a for a in argv if a != "--bench"]  # run_all.sh's job lines mark benchmarks with it
    try:
        if mode == ["--hf"]:
            return bench_hf(rest)
        if mode == ["--pack"]:  # bench.py --pack 1,4,8,16 [mixit flags]
            try:
                counts = [int(p) for p in rest[0].split(",")]
                assert counts and min(counts) >= 1
            except (IndexError, ValueError, AssertionError):
                sys.exit("error: bench.py --pack P,P,... [mixit flags]: P are runs at once, e.g. 1,4,8,16")
            return pack(rest[1:], counts)
        if mode == ["--graphs-check"]:  # exit 3: the graphs changed training
            sys.exit(0 if graphs_check(rest) else 3)
        if mode == ["--graphs-trace"]:  # graphs_check's child: --graphs-trace PATH [mixit flags]
            if not rest:
                sys.exit("error: bench.py --graphs-trace PATH [mixit flags]: the trace's file first")
            with command_line():
                return traced_run(rest[1:], rest[0])
        if mode == ["--cuda-graphs"]:  # run_all.sh on a GPU: true unless a check failed
            return print(str(graphs_safe()).lower())
        if mode == ["--per-gpu"]:  # run_all.sh: PER_GPU's default, from --pack's records
            return print(best_packing()[0])
        if mode == ["--mps"]:  # gpu_call.sh: MPS's default (1: the best packing used it)
            return print(int(best_packing()[1]))
        if mode == ["--plan"]:
            try:
                return plan(rest[0], int(os.environ.get("PER_GPU") or best_packing()[0]), *rest[1:3])
            except (tasks.UsageError, IndexError, OSError) as e:
                sys.exit(f"error: bench.py --plan JOBLIST [RECORDS [PRICE_OUT]]: {e}")
        if mode == ["--time-tests"]:  # README: the tests' run time
            return time_tests(*rest[:1])
        if mode == ["--todo"]:  # run_all.sh: bench.py --todo JOBLIST RECORDS [ESTIMATES]
            try:
                return sys.stdout.write("".join(todo(*rest[:3])))
            except (tasks.UsageError, TypeError, OSError) as e:
                sys.exit(f"error: bench.py --todo JOBLIST RECORDS [ESTIMATES]: {e}")
        if argv[:1] == ["--profile"]:
            given = {"variant": "standard", **mixit.parse_args(argv[1:])}
            return profile(mixit.resolve_config(given))
        way = BOTH_WAYS.get(argv[0]) if argv else None  # one setting both ways, in turns
        given = mixit.parse_args(argv[1:] if way else argv)
        cfg = mixit.resolve_config(given)
        variants = (cfg.variant,) if "variant" in given else VARIANTS
        if way:
            return bench(cfg, variants, windows=15, both=TWO_WAYS[way.ratio])
        return bench(cfg, variants)
    except tasks.UsageError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
