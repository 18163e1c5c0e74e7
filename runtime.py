"""
The machinery around a run of mixit.py, kept out of it so that the tutorial reads as the paper:
which device and dtype, checkpoints and run records, the state a run saves when it is stopped
(SIGINT, SIGTERM) so that the same command continues it, torchrun's process group, and the
command-line flags generated from a config dataclass. Nothing here knows the model or the tasks;
mixit.py imports this file, and this file imports nothing of the project but tasks.UsageError.
"""

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import signal
import sys
import time

import torch
import torch.distributed as dist

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


def cpu_name():
    """The CPU's model name ("AMD EPYC ..."), so that records can tell two machines apart."""
    names = [line.split(":", 1)[1].strip() for line in cpu_info().splitlines()
             if line.startswith("model name")]
    return names[0] if names else platform.processor() or platform.machine()


def environment(device, dtype):
    """Where and with what a run ran, for its record."""
    name = torch.cuda.get_device_name() if device.startswith("cuda") else cpu_name()
    return {"device": device, "device_name": name, "cpu": cpu_name(), "cpu_bf16": cpu_has_bf16(),
            "dtype": str(dtype).replace("torch.", ""), "threads": torch.get_num_threads(),
            "torch": torch.__version__, "python": platform.python_version(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S")}


# -----------------------------------------------------------------------------
# Checkpoints and run records


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
    """SIGINT or SIGTERM arrived during training: the state was saved, the run stops."""


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


def resume_path(cfg):
    """Where a run saves its state: --resume, or for a run without it a path from its tag."""
    name = cfg.tag or f"{cfg.task}_{cfg.variant}_s{cfg.seed}"
    return cfg.resume or os.path.join("results", "ckpt", f"interrupted_{name.replace('/', '_')}.pt")


# settings that may differ between a run and its resumption: they change no number
RESUME_FREE = ("resume", "out", "log_interval", "examples", "save", "compile", "cuda_graphs")


def load_state(cfg):
    """The training state saved at --resume, if there is one, checked against this run."""
    if not (cfg.resume and os.path.isfile(cfg.resume)):
        return None
    state = load_checkpoint(cfg.resume)
    mine = dataclasses.asdict(cfg)
    for k, v in state["config"].items():
        if k in mine and k not in RESUME_FREE and mine[k] != v:
            raise UsageError(f"--resume {cfg.resume} was saved by another run (--{k} {v} there, "
                             f"{mine.get(k)} here): delete it or run with its settings")
    world = rank_world()[1]
    if "step" not in state or len(state["gens"]) != world:
        raise UsageError(f"--resume {cfg.resume} is not the state of a run on {world} process(es)")
    return state


def save_state(path, model, cfg, optimizer, gen, **state):
    """The whole training state: model, AdamW, every random generator, and `state` (step,
    learning curve, ...). Every rank calls it (their batch generators are gathered); rank 0
    writes."""
    rank, world = rank_world()
    gens = [gen.get_state()]
    if world > 1:
        gens = [None] * world
        dist.all_gather_object(gens, gen.get_state())
    if rank == 0:
        save_checkpoint(path, model, cfg, optimizer=optimizer.state_dict(), gens=gens,
                        cpu_rng=torch.get_rng_state(), **state)


def restore_state(state, model, optimizer, gen):
    """The inverse of save_state for the model, AdamW and the random generators."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    gen.set_state(state["gens"][rank_world()[0]])
    torch.set_rng_state(state["cpu_rng"])


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
    p = OneLineParser(description=description, epilog=epilog)
    for f in dataclasses.fields(config_class):
        kind = {"bool": _bool, "int": int, "float": float}.get(
            f.type if isinstance(f.type, str) else f.type.__name__, str)
        extra = {"nargs": "?", "const": True} if kind is _bool else {}  # "--resample" = "... true"
        # the value's kind names it in the usage and the list: --n_embd INT, --causal [BOOL]
        name = {_bool: "BOOL", int: "INT", float: "FLOAT"}.get(kind, "TEXT")
        default = str(f.default).lower() if kind is _bool else f.default
        default = "''" if default == "" else default  # an empty text, visibly
        p.add_argument(f"--{f.name}", type=kind, default=argparse.SUPPRESS, metavar=name,
                       help=f"{f.metadata['help']} (default: {default})", **extra)
    return vars(p.parse_args(argv))
