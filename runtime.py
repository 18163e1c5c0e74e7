"""
The machinery around a run of mixit.py, kept out of it so that the tutorial reads as the paper:
device and dtype, checkpoints and run records, stopping and resuming, the training loop's
bookkeeping, torch.compile, torchrun, and the flags generated from a config dataclass. Nothing
here knows the model or the tasks.
"""

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import platform
import shutil
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from tasks import UsageError

# -----------------------------------------------------------------------------
# Device, dtype and the machine a run ran on


def pick_device(name):
    """auto: CUDA when present, then Apple's MPS, then the CPU. A named device must exist."""
    cuda = torch.cuda.is_available()
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    kind = name.split(":")[0]
    if kind not in ("cpu", "cuda", "mps"):
        raise UsageError(f"unknown device '{name}'; use auto, cpu, cuda (or cuda:N) or mps")
    if (kind == "cuda" and not cuda) or (kind == "mps" and not mps):
        raise UsageError(f"--device {name} asked for, but no "
                         f"{'CUDA GPU' if kind == 'cuda' else 'Apple MPS'} is available")
    return name


def cpu_info():
    """/proc/cpuinfo as text ('' where there is none, e.g. on macOS)."""
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


def cpu_has_bf16():
    """Native bf16 matmuls (AVX-512 bf16 or AMX): where bf16 autocast pays on a CPU."""
    flags = cpu_info()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def pick_dtype(name, device):
    """auto: bf16 autocast on CUDA and on CPUs with native bf16, float32 elsewhere."""
    if name == "auto":
        native = device.startswith("cuda") or (device == "cpu" and cpu_has_bf16())
        name = "bfloat16" if native else "float32"
    return getattr(torch, name)


def check_memory(step_bytes, device, batch_size):
    """Refuse a training step larger than the device's memory (the GPU's, or the machine's),
    instead of being killed by the operating system halfway through the first step."""
    memory = (torch.cuda.mem_get_info()[1] if device.startswith("cuda")
              else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    if step_bytes > memory:
        raise UsageError(f"--batch_size {batch_size} needs about {step_bytes / 2**30:,.0f} GiB "
                         f"for one training step; this {device} has {memory / 2**30:,.0f} GiB")


def compiled(model, cfg, device, world=1):
    """The model to call in the hot loop, torch.compile'd where --compile says (auto: on CUDA
    only, as compiling on a CPU needs a C++ compiler, which a laptop may lack), and a sync
    function for honest timings."""
    on_cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if on_cuda else (lambda: None)
    if cfg.compile != "true":  # (mixit.resolve_config turns auto into true on CUDA only)
        return model, sync
    if not on_cuda and not c_compiler():
        raise UsageError("--compile true off CUDA needs a C++ compiler (g++, clang++ or $CXX) "
                         "and found none; use --compile auto")
    # dynamic=False: one graph per input shape (training, evaluation). cuda_graphs: a small
    # model's step is bound by kernel launches, and a graph launches each pass's kernels at once
    # (FINDINGS, Efficiency). Off under torchrun: DDP's hooks inside a graph were never tried.
    mode = "reduce-overhead" if cfg.cuda_graphs and on_cuda and world == 1 else "default"
    return torch.compile(model, dynamic=False, mode=mode), sync


def c_compiler():
    """The C++ compiler torch.compile would build CPU kernels with, or None."""
    for name in (os.environ.get("CXX"), "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def cpu_name():
    """The CPU's model name ("AMD EPYC ..."), so that records can tell two machines apart."""
    names = [line.split(":", 1)[1].strip() for line in cpu_info().splitlines()
             if line.startswith("model name")]
    return names[0] if names else platform.processor() or platform.machine()


def environment(device, dtype):
    """Where and with what a run ran, for its record."""
    name = torch.cuda.get_device_name() if device.startswith("cuda") else cpu_name()
    # cpu_capability: the vector instructions torch's CPU kernels use (AVX2, AVX512); float32
    # rounding may follow them, so a bit-identical rerun is asked for only within one kind
    return {"device": device, "device_name": name, "cpu": cpu_name(), "cpu_bf16": cpu_has_bf16(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "dtype": str(dtype).replace("torch.", ""), "threads": torch.get_num_threads(),
            "torch": torch.__version__, "python": platform.python_version(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S")}


# -----------------------------------------------------------------------------
# Checkpoints and run records


def snapshot_steps(text, save, steps):
    """--save_steps as Progress reads it ("0,50,100"): the steps after which the model is also
    evaluated and saved (0: at init), each from 0 to --steps; they need --save (snapshot_path)."""
    listed = [s.strip() for s in text.split(",") if s.strip()]
    if listed and not (save and all(s.isdigit() and int(s) <= steps for s in listed)):
        raise UsageError(f"--save_steps takes steps from 0 to --steps ({steps}), "
                         f"comma-separated, and needs --save; got '{text}'")
    return ",".join(str(int(s)) for s in listed)


def snapshot_path(save, step):
    """--save_steps' checkpoint after `step` steps: --save's path with _step{N} before its suffix."""
    root, suffix = os.path.splitext(save)
    return f"{root}_step{step}{suffix}"


def save_checkpoint(path, model, cfg, **state):
    """Written to a temporary file first, so an interrupted save never destroys an old one.
    `state` (a resumable run's optimizer, generators, step, ...) is saved beside the model."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    torch.save({"config": dataclasses.asdict(cfg), "model": model.state_dict(), **state}, tmp)
    os.replace(tmp, path)


def load_checkpoint(path):
    if not os.path.isfile(path):
        raise UsageError(f"checkpoint not found: {path}")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        assert isinstance(ckpt, dict) and "config" in ckpt and "model" in ckpt
    except Exception as e:
        raise UsageError(f"{path} is not a readable mixit checkpoint ({type(e).__name__})")
    return ckpt


def load_weights(model, path):
    """Load a checkpoint's weights into model, or say in one line why they do not fit."""
    try:
        model.load_state_dict(load_checkpoint(path)["model"])
    except RuntimeError as e:  # torch's message: a header line, then one line per problem
        lines = str(e).splitlines()
        raise UsageError(f"checkpoint {path} does not fit this model: {lines[-1].strip()}")


def append_record(path, record):
    """One JSON line per run, added by a single write() in append mode, so runs going in
    parallel (run_all.sh) never interleave their lines; earlier lines are never touched."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)


def writable(path):
    """Can a file be written at path? Creates the missing folders (they would be created at the
    end anyway) and checks that the folder accepts files, without touching the file itself."""
    folder = os.path.dirname(path) or "."
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return not os.path.isdir(path) and os.path.isdir(folder) and os.access(folder, os.W_OK)


def check_writable(**paths):
    """One line for the first flag (--out, --save, ...) whose file could not be written."""
    for flag, path in paths.items():
        if path and not writable(path):
            raise UsageError(f"--{flag} {path} is not a file path that can be written")


# -----------------------------------------------------------------------------
# Stopping and resuming: a signal saves the training state, the same command continues it


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived during training: the state was saved, the run stops. The
    message says where the state is and how to continue, in one line."""

    def __init__(self, cfg, step, ms_per_step):
        super().__init__(f"{signal.Signals(SIGNAL['got']).name} at step {step}: the run's state is "
                         f"saved in {resume_path(cfg)}; the same command continues it, --restart "
                         f"starts it over (no record was written yet; {ms_per_step:.1f} ms/step "
                         "so far)")


SIGNAL = {"got": None}  # set by the handler, read once per training step


def on_signal(signum, frame):
    SIGNAL["got"] = signum


@contextlib.contextmanager
def catch_signals():
    """`with catch_signals():` SIGINT and SIGTERM only set SIGNAL['got'] (the training loop
    saves its state at the next step and raises Interrupted); the old handlers come back after."""
    SIGNAL["got"] = None
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def command_line():
    """`with command_line():` around a run started from the command line. Bad input (a
    UsageError) ends it with one line "error: ..." and status 2, no traceback; a signal in
    training (Interrupted: the state is saved) with the line that says how to continue and
    status 128 + the signal's number; Ctrl-C anywhere else with a line and status 130. Under
    torchrun the process group is left in every case."""
    try:
        yield
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except Interrupted as e:
        if rank_world()[0] == 0:
            print(f"\n{e}", file=sys.stderr)
        sys.exit(128 + SIGNAL["got"])
    except KeyboardInterrupt:
        print("\ninterrupted: no record was written for this run", file=sys.stderr)
        sys.exit(130)
    finally:
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()


def rank_world():
    """(this process's rank, number of processes): (0, 1) unless under torchrun."""
    return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)


def agree(value):
    """Rank 0's value on every rank (DDP), so that all ranks stop at the same step."""
    if rank_world()[1] > 1:
        box = [value]
        dist.broadcast_object_list(box, src=0)
        value = box[0]
    return value


def signalled(may_sync):
    """Did a signal arrive? Under DDP the ranks agree on it, only where may_sync (a host sync)."""
    if rank_world()[1] == 1:
        return SIGNAL["got"] is not None
    return may_sync and agree(SIGNAL["got"]) is not None


# settings that may differ between a run and its resumption: they change no number
RESUME_FREE = ("resume", "restart", "out", "log_interval", "examples", "save", "compile",
               "cuda_graphs", "sdpa")


def resume_path(cfg):
    """Where a run saves its state when it is stopped: --resume, or for a run without it a path
    of its own settings (those that change a number: not RESUME_FREE), so that the same command
    run again finds it and another command never does."""
    if cfg.resume:
        return cfg.resume
    kept = {k: v for k, v in sorted(dataclasses.asdict(cfg).items()) if k not in RESUME_FREE}
    digest = hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:10]
    name = (cfg.tag or f"{cfg.task}_{cfg.variant}_s{cfg.seed}").replace("/", "_")
    return os.path.join("results", "ckpt", f"interrupted_{name}_{digest}.pt")


def load_state(cfg):
    """The training state that a stopped run of these settings saved, if any, checked against
    this run; with --restart it is deleted instead."""
    path = resume_path(cfg)
    if cfg.restart:  # every rank starts over; rank 0 deletes the old state
        if rank_world()[0] == 0 and os.path.isfile(path):
            os.remove(path)
            print(f"--restart: deleted {path}, the state of an earlier run stopped there")
        return None
    if not os.path.isfile(path):
        return None
    state = load_checkpoint(path)
    mine = dataclasses.asdict(cfg)
    for k, v in state["config"].items():
        if k in mine and k not in RESUME_FREE and mine[k] != v:
            raise UsageError(f"--resume {path} was saved by another run (--{k} {v} there, "
                             f"{mine.get(k)} here): run with its settings, or --restart")
    world = rank_world()[1]
    if "step" not in state or len(state["gens"]) != world:
        raise UsageError(f"--resume {path} is not the state of a run on {world} process(es): "
                         "--restart deletes it")
    return state


# -----------------------------------------------------------------------------
# The training loop's bookkeeping: its batches, its clock, its nan check, its saved state


def data_pool(cfg, device, world=1):
    """How many training batches to draw at once (--data_pool; 0 = auto). On a GPU a batch drawn
    alone is a few dozen small kernel launches (bench.py --profile counts them), which a small
    model's step waits on; drawn 32 at a time, 32 steps share them. On the CPU one at a time keeps the data
    stream the committed records were made with. Under torchrun each rank draws one at a time
    (only rank 0 saves the training state, and with it the batches drawn but not yet used)."""
    if world > 1:
        return 1
    return cfg.data_pool or (32 if device.startswith("cuda") else 1)


class BatchPool:
    """The training batches: draw(n) -> (x, y, mask), each (n, B, T), draws n of them at once
    (data_pool), and next(pool) hands them out one by one, (B, T) each. The batches drawn but not
    yet used are part of a run's saved state (Progress), so a resumed run reads the same stream."""

    def __init__(self, draw, n):
        self.draw, self.n, self.pool, self.used = draw, n, None, 0

    def __next__(self):
        if self.pool is None or self.used == len(self.pool[0]):  # draw the next n batches at once
            self.pool, self.used = self.draw(self.n), 0
        batch, self.used = tuple(t[self.used] for t in self.pool), self.used + 1
        return batch


class Progress:
    """The training loop's bookkeeping, so that mixit.train shows the loop alone, and all it
    takes to continue a run after a stop (save, restore: the resumed run ends as an
    uninterrupted one would).

    start: the step it starts from; history: the learning curve (one dict per evaluation);
    train_s: seconds of training, on a clock that stops while the loop evaluates; first_bad: the
    first step whose loss was nan or inf, or -1, kept on the device (a read waits for the GPU)."""

    def __init__(self, cfg, model, optimizer, gen, draw, record, t_run=None, sync=None):
        self.cfg, self.model, self.optimizer, self.gen = cfg, model, optimizer, gen
        self.record, self.t_run, self.sync = record, t_run or time.time(), sync or (lambda: None)
        record["data_pool"] = data_pool(cfg, str(gen.device), rank_world()[1])  # drawn at once
        self.batches = BatchPool(draw, record["data_pool"])  # next(batches): one at a time
        self.snapshots = {int(s) for s in cfg.save_steps.split(",") if s}  # --save_steps
        self.start, self.history, self.train_s = 0, [], 0.0
        self.first_bad = torch.tensor(-1, device=gen.device)
        self.logged = (0.0, 0)  # the clock and the step at the last log line (ms_per_step)

    def restore(self, state):
        """Continue from the state that save() wrote (load_state checked that it is this run's)."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.gen.set_state(state["gens"][rank_world()[0]])
        torch.set_rng_state(state["cpu_rng"])
        self.start, self.history, self.train_s = state["step"], state["history"], state["train_s"]
        self.first_bad = torch.tensor(state["first_bad"], device=self.gen.device)
        self.logged = (self.train_s, self.start)
        if state.get("pool") is not None:  # the drawn batches not yet used, as the run left them
            self.batches.pool = tuple(t.to(self.gen.device) for t in state["pool"])
            self.batches.used = state["pool_used"]
        self.record.update(state["record"])
        self.record["resumed_at"] = self.record.get("resumed_at", []) + [self.start]
        print(f"resumed from {resume_path(self.cfg)} at step {self.start}" + (
            "" if self.cfg.resume else ", where this command was stopped (--restart: start over)"))

    def save(self, path, step):
        """The whole training state at `step`: model, AdamW, every random generator (every
        rank's batch generator, gathered), the loop's bookkeeping. Every rank calls it, rank 0
        writes."""
        keep = {k: self.record[k] for k in ("unfrozen_params", "unfrozen_at", "resumed_at")
                if k in self.record}
        wall_s = self.record.get("wall_s", 0) + time.time() - self.t_run  # every sitting so far
        rank, world = rank_world()
        gens = [self.gen.get_state()]
        if world > 1:
            gens = [None] * world
            dist.all_gather_object(gens, self.gen.get_state())
        if rank == 0:
            save_checkpoint(path, self.model, self.cfg, optimizer=self.optimizer.state_dict(),
                            gens=gens, cpu_rng=torch.get_rng_state(), step=step,
                            history=self.history, train_s=self.train_s,
                            first_bad=int(self.first_bad), pool=self.batches.pool,
                            pool_used=self.batches.used, record={**keep, "wall_s": wall_s})

    def steps(self):
        """The steps to run, start to cfg.steps, with the clock going. A signal (SIGINT,
        SIGTERM) saves the state at the next step and stops the run (raises Interrupted)."""
        self.start_clock()
        for step in range(self.start, self.cfg.steps + 1):
            if signalled(may_sync=step % self.cfg.log_interval == 0):
                self.stop_clock()
                self.save(resume_path(self.cfg), step)
                raise Interrupted(self.cfg, step, 1000 * self.train_s / max(step, 1))
            yield step

    def evaluates(self, step):
        """Is `step` one to evaluate and not yet evaluated (a state saved after an evaluation
        resumes past it)? If so the clock stops."""
        due = step % self.cfg.eval_interval == 0 or step == self.cfg.steps or step in self.snapshots
        if not due or (self.history and self.history[-1]["step"] == step):
            return False
        self.sync()
        self.stop_clock()
        return True

    def add_eval(self, step, metrics):
        """An evaluation joins the learning curve (rank 0); at a --save_steps step the model is
        saved too, as it is after `step` optimizer steps (figures.py: forming)."""
        self.history.append({"step": step, "train_s": round(self.train_s, 2), **metrics})
        if step in self.snapshots:
            save_checkpoint(snapshot_path(self.cfg.save, step), self.model, self.cfg)

    def stops(self, step, reason):
        """After an evaluation: stop at the last step or for `reason`, saying why; else save the
        state (--resume: a run killed outright continues from here) and restart the clock."""
        if reason or step == self.cfg.steps:
            self.record["stop"] = {"reason": reason or "reached --steps", "step": step}
            print(f"step {step:5d} | stop: {self.record['stop']['reason']}")
            return True
        if self.cfg.resume and step > self.start:
            self.save(self.cfg.resume, step)
        self.start_clock()
        return False

    def next_batch(self, step):
        """The next training batch (x, y, mask); the first must score something."""
        batch = next(self.batches)
        if step == 0 and not batch[2].any():  # one host sync, once: is anything scored at all?
            raise UsageError(f"the first training batch of {self.cfg.task}-{self.cfg.task_size} "
                             "has no scored position: every row fell on the test side; use a "
                             "larger --batch_size or --task_size")
        return batch

    def finish(self):
        """The learning curve, once the loop is done; the record gets train_s, ms_per_step and,
        under torchrun, every rank's parameter sum (equal sums: identical replicas)."""
        self.record["train_s"] = round(self.train_s, 2)
        steps = max(1, self.record["stop"]["step"])  # the steps trained, in every sitting
        self.record["ms_per_step"] = round(1000 * self.train_s / steps, 2)
        if rank_world()[1] > 1:
            self.record["ddp"] = {"world_size": rank_world()[1],
                                  "param_checksums": replica_checksums(self.model)}
        return self.history

    def start_clock(self):
        self.t0 = time.time()

    def stop_clock(self):
        self.train_s += time.time() - self.t0

    def ms_per_step(self, step):
        """Milliseconds of training per step since the last log line; the clock goes on."""
        self.stop_clock()
        self.start_clock()
        (then, at), self.logged = self.logged, (self.train_s, step)
        return 1000 * (self.train_s - then) / (step - at)

    def watch(self, step, loss):
        """Remember the first step whose loss is nan or inf on the device; read it back (a host
        sync) only at a log line and at the last step, and stop the run if there was one."""
        bad = (self.first_bad < 0) & ~loss.isfinite()
        self.first_bad = torch.where(bad, step, self.first_bad)
        log_line = (step + 1) % self.cfg.log_interval == 0 or step + 1 == self.cfg.steps
        if log_line and self.first_bad.item() >= 0:
            raise UsageError(f"the training loss became nan or inf at step {int(self.first_bad)}; "
                             f"try a lower --lr (it is {self.cfg.lr:g}). Nothing was written for "
                             "this run")


def wall_times(record, t_run):
    """A run's wall time into its record: sitting_s, this sitting's (since t_run), and wall_s,
    every sitting's. Returns them in words: "526s", or "526s this sitting, 1216s in all (2
    sittings)"."""
    record["sitting_s"] = round(time.time() - t_run, 2)
    record["wall_s"] = round(record.get("wall_s", 0) + record["sitting_s"], 2)
    sittings = len(record.get("resumed_at", [])) + 1
    if sittings == 1:
        return f"{record['wall_s']:.0f}s"
    return (f"{record['sitting_s']:.0f}s this sitting, {record['wall_s']:.0f}s in all "
            f"({sittings} sittings)")


# -----------------------------------------------------------------------------
# Several processes: torchrun


def init_distributed(batch_size, device):
    """Under `torchrun --nproc_per_node=N mixit.py ...` (WORLD_SIZE > 1): join the process group
    (NCCL on GPUs, one per rank; gloo on CPUs) and silence every rank but 0. Returns
    (rank, world size); (0, 1) for a plain `python mixit.py`."""
    world = int(os.environ.get("WORLD_SIZE", 1))
    if world == 1:
        return 0, 1
    if batch_size % world:
        raise UsageError(f"--batch_size {batch_size} must divide among {world} processes")
    on_gpu = torch.cuda.is_available() and device != "cpu"
    if on_gpu:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group("nccl" if on_gpu else "gloo")
    if dist.get_rank() > 0:
        sys.stdout = open(os.devnull, "w")
    return dist.get_rank(), world


def data_parallel(model, cfg, device):
    """The model the training step calls under torchrun: wrapped in DistributedDataParallel,
    which averages the ranks' gradients in the backward pass, then compiled like the model.
    Frozen parameters and MixiT's buffers need nothing special: DDP skips them."""
    ddp = nn.parallel.DistributedDataParallel(
        model, device_ids=[torch.cuda.current_device()] if device.startswith("cuda") else None)
    return compiled(ddp, cfg, device, rank_world()[1])[0]


def replica_checksums(model):
    """Every rank's sum of its parameters, gathered: equal numbers mean equal replicas."""
    total = sum(p.detach().double().sum() for p in model.parameters())
    sums = [torch.zeros_like(total) for _ in range(rank_world()[1])]
    dist.all_gather(sums, total)
    return [x.item() for x in sums]


# -----------------------------------------------------------------------------
# Flags from a config dataclass: `--name value` for every field, its help string, one-line errors


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the whole usage; one line is enough
        raise UsageError(f"{message} (see python mixit.py --help)")


def _bool(s):
    if s.lower() in ("1", "true", "yes", "on"):
        return True
    if s.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{s}'")


def flags(config_class, argv, description, epilog):
    """argv -> the dict of the settings actually given (the rest keep their defaults)."""
    return vars(parser(config_class, description, epilog).parse_args(argv))


@functools.lru_cache(maxsize=None)  # built once: bench.py --plan reads hundreds of job lines
def parser(config_class, description, epilog):
    """The command line of config_class: a flag per field, with its help string and kind, listed
    by --help under the heading of the group it is in: a field whose metadata names a group
    starts it, and the fields after it join it until the next one does."""
    p = group = OneLineParser(description=description, epilog=epilog)
    for f in dataclasses.fields(config_class):
        if f.metadata.get("group"):
            group = p.add_argument_group(f.metadata["group"])
        kind = {"bool": _bool, "int": int, "float": float}.get(
            f.type if isinstance(f.type, str) else f.type.__name__, str)
        extra = {"nargs": "?", "const": True} if kind is _bool else {}  # "--resample" = "... true"
        # the value's kind names it in the usage and the list: --n_embd INT, --causal [BOOL]
        name = {_bool: "BOOL", int: "INT", float: "FLOAT"}.get(kind, "TEXT")
        default = str(f.default).lower() if kind is _bool else f.default
        default = "''" if default == "" else default  # an empty text, visibly
        group.add_argument(f"--{f.name}", type=kind, default=argparse.SUPPRESS, metavar=name,
                           help=f"{f.metadata['help']} (default: {default})", **extra)
    return p
