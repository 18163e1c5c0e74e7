"""
Tests for mixit.py (model, variants, freezing, training, CLI) and tasks.py (the data).

Run them with

    python -m pytest -q -n 2 --dist worksteal test_mixit.py

(-n 2: pytest-xdist runs them in two processes, one per core of a small machine; worksteal hands
a process that ran out of tests half of the other's; without those flags one process runs them
all, in about twice the time.) Every model here is tiny (width 32, 4 heads, 2 layers) and every
task small, so the whole file runs in about two minutes on a 2-core CPU. Each test checks one
property, said in its docstring; the sections follow the order of mixit.py: model, MixiT's
mixing matrices, freezing, tasks, training, checkpoints, command line, learning-rate schedule;
then report.py's tables.
"""

import ast
import contextlib
import dataclasses
import hashlib
import io
import json
import lzma
import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import tokenize

import pytest
import torch
import torch.nn.functional as F

import mixit
import runtime
import tasks

HERE = os.path.dirname(os.path.abspath(__file__))
# every script the tests start (run_all.sh, gpu_call.sh, report.py's) runs Python with this
# interpreter, not whichever python comes first on PATH (a venv need not be activated)
os.environ["PYTHON"] = sys.executable
# One thread per process, here and in every process a test starts (they inherit the variable):
# the models are tiny, and where processes share the cores (grading's two jobs, run_all.sh's
# slots, another program) a second thread spins waiting on the first: on a loaded 2-core CPU the
# in-process training tests ran several times slower with two threads than with one.
os.environ["OMP_NUM_THREADS"] = "1"
torch.set_num_threads(1)

# Flags shared by every test that builds a model: tiny, on the CPU, in fp32, quiet, no records.
BASE_FLAGS = ["--n_embd", "32", "--n_head", "4", "--n_layer", "2", "--device", "cpu",
              "--dtype", "float32", "--examples", "0", "--out", "", "--eval_size", "64"]

# For command lines that must fail: settings that make a *valid* run fast, so that a case the
# CLI wrongly accepts fails quickly instead of training for minutes. Later flags win.
SAFE = BASE_FLAGS + ["--steps", "0", "--eval_size", "8"]

# A small size for every task (digits, modulus, n, pairs, length, hops, context).
SMALL_SIZES = {"add": 3, "modadd": 11, "memorize": 6, "dyck": 4, "needle": 5, "copy": 5,
               "induction": 10, "hop": 2, "lm": 32, "classify": 24}

# classify's reviews: a bag of words decides the label (2-3 words of the label's sentiment among
# 1-3 neutral ones), so every variant learns it in a few hundred steps. Written once per session.
REVIEW_WORDS = {1: ["bad", "awful", "rude", "cold"], 2: ["good", "great", "tasty", "nice"],
                0: "the food was and our place we had a it".split()}
REVIEWS = {}  # path of the session's reviews.csv


def write_reviews(path, n, seed=0):
    """n reviews in Yelp's CSV format: "label","text", every field quoted, no header."""
    r = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            label = r.choice([1, 2])
            words = [r.choice(REVIEW_WORDS[0]) for _ in range(r.randint(1, 3))]
            for _ in range(r.randint(2, 3)):
                words.insert(r.randint(0, len(words)), r.choice(REVIEW_WORDS[label]))
            f.write(f'"{label}","{" ".join(words)}"\n')
    return str(path)


@pytest.fixture(scope="session", autouse=True)
def reviews_csv(tmp_path_factory):
    REVIEWS["csv"] = write_reviews(tmp_path_factory.mktemp("classify") / "reviews.csv", 2000)
    return REVIEWS["csv"]


def data_flags(task):
    """The --data flags a task needs in a test: classify reads the session's reviews."""
    return ["--data", REVIEWS["csv"]] if task == "classify" else []


def make_config(*flags):
    """A Config built exactly as the command line builds it: BASE_FLAGS, then `flags`."""
    return mixit.resolve_config(mixit.parse_args(BASE_FLAGS + list(flags)))


def build_model(variant, *flags):
    """(task, model) for a tiny model of `variant`, by default on copy with strings up to 4."""
    cfg = make_config("--variant", variant, "--task", "copy", "--task_size", "4", *flags)
    task, model, _, _, _ = mixit.build(cfg, verbose=False)
    model.eval()
    return task, model


def random_tokens(task, batch=3, seed=0):
    """A (batch, block_size) tensor of random tokens of the task's vocabulary."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, task.vocab_size, (batch, task.block_size), generator=gen)


def rows(t):
    """A (B, T) tensor as a list of B plain Python lists, for easy decoding."""
    return t.tolist()


def decodable_rows(task, batch_size=64, seed=1):
    """The rows (x, y, mask) of the task's test set and of one training batch, as plain Python
    lists. Training rows that equal a test row have an all-False mask (a property tested on
    its own below), so they are left out here."""
    x, y, mask = (torch.cat([a, b]) for a, b in
                  zip(task.test, task.get_batch(batch_size, torch.Generator().manual_seed(seed))))
    return [(xs, ys, ms) for xs, ys, ms in zip(rows(x), rows(y), rows(mask)) if any(ms)]


def assert_usage_error(argv, capsys):
    """mixit.main(argv) must exit with status 2 and print exactly one 'error: ...' line on
    stderr, with no traceback. Returns that line so a test can check what it says."""
    with pytest.raises(SystemExit) as exc:
        mixit.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


# -----------------------------------------------------------------------------
# Model: shapes and causality, for every variant


@pytest.mark.parametrize("variant", mixit.VARIANTS)
def test_logits_have_shape_batch_time_vocab(variant):
    """The model maps (B, T) token ids to (B, T, vocab) logits, for full and shorter inputs; a
    shorter input gets the same logits as the first positions of the full one."""
    task, model = build_model(variant)
    x = random_tokens(task, batch=3)
    with torch.no_grad():
        full = model(x)
        prefix = model(x[:, :5])
    assert full.shape == (3, task.block_size, task.vocab_size)
    assert prefix.shape == (3, 5, task.vocab_size)
    assert torch.allclose(prefix, full[:, :5], atol=1e-5)  # a prefix sees the same positions


@pytest.mark.parametrize("variant", mixit.VARIANTS)
def test_model_is_causal(variant):
    """Changing the token at position t leaves the logits before t bit-identical (no position
    looks ahead), while the logits from t on do change (the model does read its input)."""
    task, model = build_model(variant)
    x = random_tokens(task, batch=2)
    with torch.no_grad():
        before = model(x)
        for t in range(1, task.block_size):
            changed = x.clone()
            changed[:, t] = (changed[:, t] + 1) % task.vocab_size
            after = model(changed)
            assert torch.equal(after[:, :t], before[:, :t]), f"position < {t} saw token {t}"
            assert not torch.equal(after[:, t:], before[:, t:])


@pytest.mark.parametrize("variant", mixit.VARIANTS)
def test_model_traces_as_one_graph_for_torch_compile(variant):
    """On CUDA the model runs through torch.compile. A graph break (Python that the tracer
    cannot follow, e.g. .item() or data-dependent control flow) would split it into pieces and
    lose the fusion, so the forward pass must trace as one graph. Tracing is device-independent,
    so this runs on the CPU, without compiling any kernel."""
    task, model = build_model(variant)
    explanation = torch._dynamo.explain(model)(random_tokens(task))
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0), \
        explanation.break_reasons


def test_a_training_step_reads_nothing_back_to_the_host(monkeypatch, tmp_path):
    """On a GPU, reading a tensor's value in Python (.item(), .tolist(), if tensor:, float())
    makes the host wait for the device every step. Sampling a batch of every task and one
    optimizer step of every variant must run with all those reads made to fail."""
    data = tmp_path / "text.txt"
    data.write_text("a small corpus for the language-modelling task. " * 20)

    def no_read(*args, **kwargs):
        raise AssertionError("a value was read back to the host inside a training step")

    steps = []
    for variant in mixit.VARIANTS:
        for name in tasks.TASKS:
            cfg = make_config("--variant", variant, "--task", name,
                              "--task_size", str(SMALL_SIZES[name]),
                              *(["--data", str(data)] if name == "lm" else data_flags(name)))
            task, model, device, dtype, _ = mixit.build(cfg, verbose=False)
            # the optimizer as it is built on CUDA (fused AdamW; the CPU one reads its step
            # counter with .item(), which costs nothing there: the counter lives on the host)
            steps.append((task, model, mixit.make_optimizer(model, cfg, "cuda"), cfg, dtype))
    with monkeypatch.context() as m:
        for method in ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__"):
            m.setattr(torch.Tensor, method, no_read)
        for task, model, optimizer, cfg, dtype in steps:
            batch = task.get_batch(8, torch.Generator().manual_seed(0))
            mixit.train_step(model, model, optimizer, batch, 1e-3, cfg, dtype)


@pytest.mark.parametrize("variant", ["standard", "mixit"])
def test_attention_maps_are_the_ones_the_model_uses(variant):
    """With return_hidden=True (used for the figures) the model gives the same logits as the
    fast path, and every returned attention map is causal with rows summing to 1."""
    task, model = build_model(variant)
    x = random_tokens(task, batch=2)
    T = task.block_size
    with torch.no_grad():
        logits, hidden, atts = model(x, return_hidden=True)
        assert torch.allclose(logits, model(x), atol=1e-5)
    assert len(hidden) == len(atts) == 2  # one per layer
    for att in atts:
        assert att.shape == (2, 4, T, T)
        assert torch.equal(att.triu(1), torch.zeros_like(att))
        assert torch.allclose(att.sum(-1), torch.ones(2, 4, T), atol=1e-5)


def test_input_longer_than_block_size_is_a_usage_error():
    """Feeding more tokens than block_size raises a clean UsageError, not an index error."""
    task, model = build_model("standard")
    too_long = torch.zeros(1, task.block_size + 1, dtype=torch.long)
    with pytest.raises(tasks.UsageError):
        model(too_long)


@pytest.mark.parametrize("variant", ["standard", "frozen_qk", "mixit"])
def test_init_is_normal_002_except_queries_and_keys_at_one_over_d(variant):
    """Every Linear and Embedding weight starts N(0, 0.02^2) as in the reference code, except
    W_Q and W_K, which start N(0, 1/d) (the paper's Frozen-QK; every softmax variant shares it);
    every bias at 0, every norm gain at 1."""
    cfg = make_config("--variant", variant, "--task", "copy", "--task_size", "10", "--n_embd", "64")
    assert cfg.qk_init_std == 0.125  # the record and the printed config carry the real value
    _, model, _, _, _ = mixit.build(cfg, verbose=False)
    for name, p in model.named_parameters():
        if name.endswith(".bias"):
            assert torch.equal(p, torch.zeros_like(p)), name
        elif p.dim() == 1:  # RMSNorm gains
            assert torch.equal(p, torch.ones_like(p)), name
        else:
            std = 0.125 if name.endswith(("q_proj.weight", "k_proj.weight")) else mixit.INIT_STD
            assert abs(p.mean().item()) < 0.01, name
            assert p.std().item() == pytest.approx(std, rel=0.15), name


# -----------------------------------------------------------------------------
# MixiT: the fixed random mixing matrices


def test_mixing_matrices_are_causal_and_rows_sum_to_one():
    """Every head's A is lower-triangular, each row sums to 1, and (unlike softmax attention)
    some entries are negative."""
    gen = torch.Generator().manual_seed(0)
    A = mixit.mixing_matrices(4, 16, 8, gen, sink=True)
    assert A.shape == (4, 16, 16)
    assert torch.equal(A.triu(1), torch.zeros_like(A))
    assert torch.allclose(A.sum(-1), torch.ones(4, 16), atol=1e-5)
    assert (A < 0).any()


def sink_matrix(T):
    """The sink head written out by hand: 1/2 on the diagonal plus 1/2 on column 0."""
    S = 0.5 * torch.eye(T)
    S[:, 0] += 0.5
    return S


def test_sink_head_is_half_self_half_first_token():
    """With sink=True head 0 is exactly 0.5 on the diagonal + 0.5 on column 0, so its row 0 is
    [1, 0, ...]; the other heads are not the sink."""
    A = mixit.mixing_matrices(4, 8, 8, torch.Generator().manual_seed(0), sink=True)
    assert torch.equal(A[0], sink_matrix(8))
    assert A[0, 0].tolist() == [1.0] + [0.0] * 7
    for h in range(1, 4):
        assert not torch.allclose(A[h], sink_matrix(8))


def test_no_sink_head_when_sink_is_off():
    """With sink=False head 0 is random mixing like the others (off-diagonal noise, rows sum
    to 1)."""
    A = mixit.mixing_matrices(4, 8, 8, torch.Generator().manual_seed(0), sink=False)
    assert not torch.allclose(A[0], sink_matrix(8))
    noise = (A[0] - torch.eye(8)).tril(-1)
    assert noise.abs().sum() > 0
    assert torch.allclose(A[0].sum(-1), torch.ones(8), atol=1e-5)


def test_mixing_strength_differs_between_heads_and_stays_in_range():
    """sigma_h ~ U[1/sqrt(T d_h), 1/sqrt(T)]: the spread of the off-diagonal entries differs from
    head to head and stays (up to sampling noise) between those two bounds."""
    T, head_dim, H = 64, 16, 8
    A = mixit.mixing_matrices(H, T, head_dim, torch.Generator().manual_seed(0), sink=False)
    below_diagonal = torch.ones(T, T).tril(-1).bool()
    stds = torch.stack([A[h][below_diagonal].std() for h in range(H)])
    lo, hi = 1 / (T * head_dim) ** 0.5, 1 / T ** 0.5
    assert (stds > 0.85 * lo).all() and (stds < 1.05 * hi).all(), stds
    assert stds.max() / stds.min() > 1.5, stds  # heads mix with clearly different strengths


def test_mixing_matrices_depend_on_seed_only():
    """The same generator seed gives bit-identical matrices; another seed gives other ones."""
    def draw(seed):
        return mixit.mixing_matrices(4, 16, 8, torch.Generator().manual_seed(seed))
    assert torch.equal(draw(0), draw(0))
    assert not torch.equal(draw(0), draw(1))


def mixing_buffers(model):
    """The A buffer of every MixiT block."""
    return [block.attn.A for block in model.blocks]


def test_each_layer_has_its_own_mixing_matrix():
    """Different layers get different random heads (only the sink head 0 is shared)."""
    _, model = build_model("mixit")
    A0, A1 = mixing_buffers(model)
    assert torch.equal(A0[0], A1[0])  # the sink
    assert not torch.equal(A0[1:], A1[1:])
    _, model = build_model("mixit", "--mixit_sink", "false")
    A0, A1 = mixing_buffers(model)
    for h in range(4):
        assert not torch.equal(A0[h], A1[h])


def test_model_mixing_matrices_follow_the_seed():
    """Two MixiT models built with the same --seed have identical A; another seed changes A."""
    _, first = build_model("mixit", "--seed", "0")
    _, again = build_model("mixit", "--seed", "0")
    _, other = build_model("mixit", "--seed", "1")
    for a, b, c in zip(mixing_buffers(first), mixing_buffers(again), mixing_buffers(other)):
        assert torch.equal(a, b)
        assert not torch.equal(a, c)


def test_mixing_matrix_survives_save_and_load(tmp_path):
    """A is saved in the checkpoint: loading it into a model built with a *different* seed
    (hence a different A) restores the original A and the original logits exactly."""
    cfg = make_config("--variant", "mixit", "--task", "copy", "--task_size", "4", "--seed", "0")
    task, saved, _, _, _ = mixit.build(cfg, verbose=False)
    path = str(tmp_path / "mixit.pt")
    runtime.save_checkpoint(path, saved, cfg)

    _, fresh = build_model("mixit", "--seed", "1")
    assert not torch.equal(mixing_buffers(fresh)[0], mixing_buffers(saved)[0])
    fresh.load_state_dict(runtime.load_checkpoint(path)["model"])

    for a, b in zip(mixing_buffers(fresh), mixing_buffers(saved)):
        assert torch.equal(a, b)
    x = random_tokens(task)
    saved.eval()
    with torch.no_grad():
        assert torch.equal(fresh(x), saved(x))


def test_mixing_matrix_moves_with_the_model():
    """A is a buffer: model.to(float64) converts it too, and the float64 model computes the
    same logits as the float32 one."""
    task, model = build_model("mixit")
    x = random_tokens(task)
    with torch.no_grad():
        logits32 = model(x)
        model.to(torch.float64)
        assert all(A.dtype == torch.float64 for A in mixing_buffers(model))
        logits64 = model(x)
    assert logits64.dtype == torch.float64
    assert torch.allclose(logits64.float(), logits32, atol=1e-5)


# -----------------------------------------------------------------------------
# Freezing: which parameters each variant trains


def is_trainable(variant, name):
    """What SPEC.md says each variant trains, written independently of mixit.freeze()."""
    if variant == "frozen_qk":
        return not re.search(r"\.attn\.(q_proj|k_proj)\.", name)
    if variant == "frozen_mlp":
        return ".mlp." not in name
    if variant == "random":
        return name.split(".")[0] in ("wte", "wpe", "lm_head")
    return True  # standard and mixit train every parameter (MixiT's A is not a parameter)


def tiny_training_config(variant, *flags):
    """A few steps of 2-digit addition, enough to move every trainable weight."""
    return make_config("--variant", variant, "--task", "add", "--task_size", "2",
                       "--steps", "3", "--warmup", "0", "--batch_size", "16", "--lr", "1e-2",
                       "--eval_interval", "100", "--log_interval", "100", *flags)


@pytest.mark.parametrize("variant", mixit.VARIANTS)
def test_training_changes_exactly_the_trainable_parameters(variant):
    """After a few steps of the real training loop, frozen parameters (and all buffers, such as
    MixiT's A) are bit-identical to their init, and every trainable parameter has moved."""
    cfg = tiny_training_config(variant)
    task, model, device, dtype, _ = mixit.build(cfg, verbose=False)
    params_before = {n: p.detach().clone() for n, p in model.named_parameters()}
    buffers_before = {n: b.detach().clone() for n, b in model.named_buffers()}

    mixit.train(cfg, task, model, device, dtype, record={})

    for name, p in model.named_parameters():
        assert p.requires_grad == is_trainable(variant, name), name
        if is_trainable(variant, name):
            assert not torch.equal(p, params_before[name]), f"{name} did not train"
        else:
            assert torch.equal(p, params_before[name]), f"{name} is frozen but changed"
    for name, b in model.named_buffers():
        assert torch.equal(b, buffers_before[name]), f"buffer {name} changed"


@pytest.mark.skipif(runtime.c_compiler() is None, reason="no C++ compiler")
def test_compile_true_compiles_on_the_cpu_and_computes_what_eager_computes():
    """--compile auto leaves the CPU's model eager; --compile true hands the training loop a
    compiled model whose logits and gradients are the eager model's, up to rounding."""
    cfg = tiny_training_config("mixit", "--compile", "true")
    task, model, device, _, _ = mixit.build(cfg, verbose=False)
    assert runtime.compiled(model, make_config(), device)[0] is model  # auto, on the CPU
    fwd, _ = runtime.compiled(model, cfg, device)
    assert fwd is not model
    x, y, mask = task.get_batch(16, torch.Generator().manual_seed(0))
    results = []
    for f in (model, fwd):
        model.zero_grad()
        logits = f(x)
        mixit.masked_loss(logits, y, mask).backward()
        results.append([logits.detach()] + [p.grad.clone() for p in model.parameters()])
    for eager, compiled in zip(*results):
        torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-6)


def test_compile_true_without_a_c_compiler_is_a_one_line_error(monkeypatch, capsys):
    """Compiling on the CPU builds C++ kernels: without a compiler the run stops before it
    trains, in one line that says what to use instead."""
    monkeypatch.setattr(runtime.shutil, "which", lambda name: None)
    line = assert_usage_error(SAFE + ["--compile", "true"], capsys)
    assert "C++ compiler" in line and "--compile auto" in line


def frozen_names(model):
    """Names of the parameters that get no gradient."""
    return {n for n, p in model.named_parameters() if not p.requires_grad}


def test_frozen_qk_freezes_exactly_query_and_key_weights_and_biases():
    """Frozen-QK freezes W_Q, W_K and their biases in every layer, and nothing else."""
    _, model = build_model("frozen_qk")
    expected = {f"blocks.{i}.attn.{proj}.{kind}" for i in range(2)
                for proj in ("q_proj", "k_proj") for kind in ("weight", "bias")}
    assert frozen_names(model) == expected


def test_frozen_mlp_freezes_exactly_the_mlps():
    """Frozen-MLP freezes gate, up and down projections (weights and biases) of every layer."""
    _, model = build_model("frozen_mlp")
    expected = {f"blocks.{i}.mlp.{proj}.{kind}" for i in range(2)
                for proj in ("gate_proj", "up_proj", "down_proj") for kind in ("weight", "bias")}
    assert frozen_names(model) == expected


def test_random_transformer_trains_only_embeddings_and_head():
    """The random transformer trains the token embedding and the output head only."""
    _, model = build_model("random")
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"wte.weight", "lm_head.weight"}


def test_mixit_attention_has_only_value_and_output_projections():
    """MixiT has no queries and keys: its attention learns only V and O (A is a fixed buffer)."""
    _, model = build_model("mixit")
    for block in model.blocks:
        names = {n for n, _ in block.attn.named_parameters()}
        assert names == {"v_proj.weight", "v_proj.bias", "o_proj.weight", "o_proj.bias"}
        assert [n for n, _ in block.attn.named_buffers()] == ["A"]


@pytest.mark.parametrize("variant, parts", [("frozen_qk", "q,k"), ("frozen_mlp", "mlp"),
                                             ("random", "q,k,v,o,mlp,norm")])
def test_each_variant_is_its_preset_of_parts(variant, parts):
    """Standard with --freeze set to a variant's parts freezes exactly what the variant does."""
    _, preset = build_model(variant)
    _, composed = build_model("standard", "--freeze", parts)
    assert frozen_names(preset) == frozen_names(composed)


@pytest.mark.parametrize("variant, parts, expected", [
    ("standard", "v,o", {"attn.v_proj", "attn.o_proj"}),
    ("frozen_qk", "v,o", {"attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.o_proj"}),
    ("mixit", "wpe,head", {"wpe", "lm_head"}),
    ("standard", "norm,wte", {"norm1", "norm2", "norm_f", "wte"}),
])
def test_freeze_freezes_exactly_the_named_parts(variant, parts, expected):
    """--freeze adds parts to the variant's preset; a parameter is frozen iff its name contains
    one of the expected module names (written out here, independently of mixit.PARTS)."""
    _, model = build_model(variant, "--freeze", parts)
    want = {n for n, _ in model.named_parameters()
            if any(f".{e}." in f".{n}" for e in expected)}
    assert frozen_names(model) == want and want


def test_unfreezing_hands_exactly_the_frozen_tensors_to_the_optimizer():
    """unfreeze() gives the optimizer the frozen tensors (fresh state) and nothing twice; in a
    run with --unfreeze_at, W_Q and W_K stay at init until that step and train after it."""
    cfg = make_config("--variant", "frozen_qk", "--task", "copy", "--task_size", "4")
    _, model, device, _, (n_train, n_frozen) = mixit.build(cfg, verbose=False)
    optimizer = mixit.make_optimizer(model, cfg, device)
    frozen = {id(p) for p in model.parameters() if not p.requires_grad}
    assert mixit.unfreeze(model, optimizer, cfg) == n_frozen
    held = [id(p) for g in optimizer.param_groups for p in g["params"]]
    assert len(held) == len(set(held)) and set(held) == {id(p) for p in model.parameters()}
    assert all(not optimizer.state[p] for p in model.parameters() if id(p) in frozen)

    def qk_after(*flags):
        c = tiny_training_config("frozen_qk", *flags)
        task, m, dev, dtype, _ = mixit.build(c, verbose=False)
        before = m.blocks[0].attn.q_proj.weight.detach().clone()
        record = {}
        mixit.train(c, task, m, dev, dtype, record)
        return torch.equal(before, m.blocks[0].attn.q_proj.weight), record
    unchanged, record = qk_after("--steps", "6", "--unfreeze_at", "3")
    assert not unchanged and record["unfrozen_at"] == 3
    assert qk_after()[0]  # without it, W_Q never moves


def test_block_switches_default_to_each_variants_block_and_change_only_what_they_name():
    """auto resolves to RoPE, SwiGLU and plain residuals for softmax variants and to learned
    positions, the shaped GLU and sqrt(1/2) residuals for MixiT. --mlp_act and --residual keep
    every parameter bit-identical and change only the function; --positions learned adds
    exactly wpe and turns RoPE off."""
    std, mix = make_config("--variant", "standard"), make_config("--variant", "mixit")
    assert (std.positions, std.mlp_act, std.residual) == ("rope", "swiglu", "plain")
    assert (mix.positions, mix.mlp_act, mix.residual) == ("learned", "shaped", "scaled")
    task, base = build_model("standard")
    x = random_tokens(task)
    for flag, value in (("--mlp_act", "shaped"), ("--residual", "scaled")):
        _, other = build_model("standard", flag, value)
        for (n, p), (_, q) in zip(base.named_parameters(), other.named_parameters()):
            assert torch.equal(p, q), n
        assert not torch.allclose(base(x), other(x))
    _, learned = build_model("standard", "--positions", "learned")
    names = {n for n, _ in learned.named_parameters()}
    assert names - {n for n, _ in base.named_parameters()} == {"wpe.weight"}
    assert not any(b.attn.rope for b in learned.blocks) and all(b.attn.rope for b in base.blocks)


@pytest.mark.parametrize("variant", mixit.VARIANTS)
def test_parameter_counts_and_optimizer_match_the_freezing(variant):
    """build() reports n_train + n_frozen == all parameters, n_frozen matches what the variant
    freezes, and the optimizer holds each trainable parameter once and no frozen one."""
    cfg = make_config("--variant", variant, "--task", "copy", "--task_size", "4")
    _, model, device, _, (n_train, n_frozen) = mixit.build(cfg, verbose=False)
    named = list(model.named_parameters())
    assert n_train + n_frozen == sum(p.numel() for _, p in named)
    assert n_frozen == sum(p.numel() for n, p in named if not is_trainable(variant, n))

    optimizer = mixit.make_optimizer(model, cfg, device)
    in_optimizer = [id(p) for g in optimizer.param_groups for p in g["params"]]
    assert len(in_optimizer) == len(set(in_optimizer))
    assert set(in_optimizer) == {id(p) for n, p in named if is_trainable(variant, n)}


def test_weight_decay_applies_to_matrices_and_embeddings_only():
    """AdamW decays 2-D weights (matrices, embeddings) and never biases or norm gains."""
    cfg = make_config("--variant", "standard", "--task", "copy", "--task_size", "4")
    _, model, device, _, _ = mixit.build(cfg, verbose=False)
    for group in mixit.make_optimizer(model, cfg, device).param_groups:
        for p in group["params"]:
            assert (group["weight_decay"] > 0) == (p.dim() >= 2)


# -----------------------------------------------------------------------------
# Tasks: shapes, vocabularies, reproducibility


def small_task(name, data_seed=123, n_test=64):
    """A task of the size SMALL_SIZES gives it, on the CPU."""
    data = REVIEWS["csv"] if name == "classify" else ""
    return tasks.make_task(name, SMALL_SIZES[name], "cpu", data_seed, n_test, data)


@pytest.mark.parametrize("name", list(tasks.TASKS))
def test_task_batches_have_the_right_shapes_and_tokens(name):
    """Test set and training batches are (B, block_size) int64 x, y and bool mask, with every
    token inside the vocabulary and (nearly) every test row scored somewhere."""
    task = small_task(name)
    batch = task.get_batch(32, torch.Generator().manual_seed(0))
    for x, y, mask in (task.test, batch):
        assert x.shape == y.shape == mask.shape
        assert x.shape[0] >= 1 and x.shape[1] == task.block_size
        assert x.dtype == y.dtype == torch.int64 and mask.dtype == torch.bool
        for t in (x, y):
            assert 0 <= t.min() and t.max() < task.vocab_size
    assert batch[0].shape[0] == 32
    assert task.test[2].any(1).float().mean() > 0.9


@pytest.mark.parametrize("name", list(tasks.TASKS))
def test_training_batches_follow_the_generator_seed(name):
    """The same generator seed draws the identical batch; another seed draws a different one."""
    task = small_task(name)
    def draw(seed):
        return task.get_batch(32, torch.Generator().manual_seed(seed))
    for a, b in zip(draw(1), draw(1)):
        assert torch.equal(a, b)
    assert not torch.equal(draw(1)[0], draw(2)[0])


@pytest.mark.parametrize("name", list(tasks.TASKS))
def test_test_set_is_fixed_by_the_data_seed(name):
    """The same data seed gives the identical test set; another data seed (except for lm,
    whose test set is the end of the text) gives a different one."""
    first, again, other = small_task(name, 1), small_task(name, 1), small_task(name, 2)
    for a, b in zip(first.test, again.test):
        assert torch.equal(a, b)
    if name != "lm":
        assert any(not torch.equal(a, c) for a, c in zip(first.test, other.test))


def test_unknown_task_and_bad_sizes_are_usage_errors():
    """make_task refuses an unknown task name and sizes the task cannot take."""
    with pytest.raises(tasks.UsageError):
        tasks.make_task("nosuchtask")
    for name, bad_size in [("add", 18), ("modadd", 3), ("needle", 129), ("hop", 33)]:
        with pytest.raises(tasks.UsageError):
            tasks.make_task(name, bad_size, "cpu", 0, 8)


def test_tasks_py_run_alone_says_what_it_is_and_refuses_other_arguments_in_one_line(
        monkeypatch, capsys):
    """`python tasks.py -h` (or no argument) prints its usage, what it is and its tasks, exit
    status 0; any other argument gets one line "error: ..." on stderr, exit status 2."""
    import runpy
    for argv, status in ((["-h"], 0), ([], 0), (["--bogus", "x"], 2)):
        monkeypatch.setattr(sys, "argv", ["tasks.py", *argv])
        try:
            runpy.run_path(os.path.join(HERE, "tasks.py"), run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        assert code == status, argv
        if status:
            assert out == "" and len(err.splitlines()) == 1 and err.startswith("error: ")
            assert "--bogus" in err
        else:
            assert err == "" and out.startswith("usage: python tasks.py") and "k-hop" in out


# -----------------------------------------------------------------------------
# Tasks: every example decodes to a correct answer


def test_add_answer_is_the_reversed_sum():
    """add: decoding a and b (least-significant digit first) from x, y[mask] spells the N+1
    digits of a+b least-significant first, and mask covers exactly those N+1 positions."""
    N = 3
    task = tasks.make_task("add", N, "cpu", 0, 64)
    for xs, ys, ms in decodable_rows(task):
        a_digits, b_digits = xs[:N], xs[N + 1:2 * N + 1]
        assert xs[N] == 10 and xs[2 * N + 1] == 11  # '+' and '='
        a = sum(d * 10 ** i for i, d in enumerate(a_digits))
        b = sum(d * 10 ** i for i, d in enumerate(b_digits))
        assert 10 ** (N - 1) <= a < 10 ** N and 10 ** (N - 1) <= b < 10 ** N  # exactly N digits
        expected = [(a + b) // 10 ** i % 10 for i in range(N + 1)]
        answer_positions = [t for t, m in enumerate(ms) if m]
        assert answer_positions == list(range(2 * N + 1, 3 * N + 2))
        assert [ys[t] for t in answer_positions] == expected


def test_modadd_answer_and_disjoint_split():
    """modadd: y[mask] == (a + b) mod p; the train and test pairs are disjoint, together they
    are all p^2 pairs (95% / 5%), and training batches only draw training pairs."""
    p = 11
    task = tasks.make_task("modadd", p, "cpu", 0, 1000)
    train_x, test_x = task.train[0], task.test[0]
    for x, y, mask in (task.train, task.test):
        assert torch.equal(mask, torch.tensor([[False, True]]).expand_as(mask))
        assert torch.equal(y[:, 1], (x[:, 0] + x[:, 1]) % p)
    train_pairs = {tuple(r) for r in rows(train_x)}
    test_pairs = {tuple(r) for r in rows(test_x)}
    assert len(train_pairs) == train_x.shape[0] and len(test_pairs) == test_x.shape[0]
    assert not train_pairs & test_pairs
    assert train_pairs | test_pairs == {(a, b) for a in range(p) for b in range(p)}
    assert len(test_pairs) == p * p - int(0.95 * p * p)
    batch_x = task.get_batch(256, torch.Generator().manual_seed(0))[0]
    assert {tuple(r) for r in rows(batch_x)} <= train_pairs


def test_memorize_table_is_consistent_and_complete():
    """memorize: the training set lists every pair (x1, x2) once, each pair always gets the
    same label (in the training set, the test set and random batches), labels lie in [n]."""
    n = 6
    task = tasks.make_task("memorize", n, "cpu", 0, 64)
    x, y, mask = task.train
    pairs = [(x1, x2 - n) for x1, x2 in rows(x)]
    assert sorted(pairs) == [(a, b) for a in range(n) for b in range(n)]
    assert mask[:, 1].all() and not mask[:, 0].any()
    table = dict(zip(pairs, y[:, 1].tolist()))
    assert all(0 <= label < n for label in table.values())
    batch = task.get_batch(200, torch.Generator().manual_seed(0))
    for xs, ys in zip(rows(torch.cat([batch[0], task.test[0]])),
                      rows(torch.cat([batch[1], task.test[1]]))):
        assert ys[1] == table[(xs[0], xs[1] - n)]


def is_balanced(brackets):
    """Plain Python: token 1 is '(' and token 2 is ')'."""
    depth = 0
    for b in brackets:
        depth += 1 if b == 1 else -1
        if depth < 0:
            return False
    return depth == 0


def test_dyck_label_matches_the_brackets():
    """dyck: the label after '?' is 'yes' exactly when the bracket string is balanced, and the
    mask is the single position that predicts it (the one holding '?'). Both answers are common."""
    task = tasks.make_task("dyck", 4, "cpu", 0, 100)
    labels = []
    for xs, ys, ms in decodable_rows(task, 100):
        q = xs.index(3)  # the '?'
        assert all(b in (1, 2) for b in xs[:q])
        assert [t for t, m in enumerate(ms) if m] == [q]
        assert ys[q] == (4 if is_balanced(xs[:q]) else 5)
        labels.append(ys[q])
    assert 0.25 < labels.count(4) / len(labels) < 0.75  # neither answer dominates


def test_needle_answer_is_the_value_of_the_queried_key():
    """needle: parse the distinct key-value pairs and the query; y at the query position (the
    only scored one) is the value stored under the queried key."""
    N = 5
    task = tasks.make_task("needle", N, "cpu", 0, 64)
    for xs, ys, ms in decodable_rows(task):
        stored, i = {}, 0
        while 256 <= xs[i] < 256 + N:  # a key token, followed by its value
            key, value = xs[i] - 256, xs[i + 1]
            assert key not in stored and 1 <= value <= 255
            stored[key] = value
            i += 2
        assert stored and 256 + N <= xs[i] < 256 + 2 * N  # the query token
        assert [t for t, m in enumerate(ms) if m] == [i]
        assert ys[i] == stored[xs[i] - 256 - N]


def test_copy_answer_is_the_string():
    """copy: the string before the separator is exactly what the masked positions must produce,
    and the mask covers exactly the copied part."""
    task = tasks.make_task("copy", 5, "cpu", 0, 64)
    for xs, ys, ms in decodable_rows(task):
        sep = xs.index(26)
        string = xs[:sep]
        assert 1 <= len(string) <= 5 and all(c < 26 for c in string)
        assert [t for t, m in enumerate(ms) if m] == list(range(sep, 2 * sep))
        assert ys[sep:2 * sep] == string


def test_induction_query_appears_once_and_answer_is_its_follower():
    """induction: the last token of x occurs exactly once earlier, and the single scored answer
    is the token that followed that earlier occurrence."""
    task = tasks.make_task("induction", 10, "cpu", 0, 64)
    for xs, ys, ms in decodable_rows(task):
        query = xs[-1]
        earlier = [t for t in range(len(xs) - 1) if xs[t] == query]
        assert len(earlier) == 1
        assert [t for t, m in enumerate(ms) if m] == [len(xs) - 1]
        assert ys[-1] == xs[earlier[0] + 1]


def k_hop(xs, i, k):
    """Plain Python k-hop induction from position i: k times, jump to the token after the
    previous occurrence of the current token. None if some hop finds no previous occurrence."""
    pos = i
    for _ in range(k):
        previous = [j for j in range(pos) if xs[j] == xs[pos]]
        if not previous:
            return None
        pos = previous[-1] + 1
    return xs[pos]


@pytest.mark.parametrize("hops", [1, 3])
def test_hop_answers_match_a_python_loop(hops):
    """hop: at every position the mask is 'the k-hop answer is defined' and y is that answer,
    both recomputed here with a plain Python loop."""
    task = tasks.make_task("hop", hops, "cpu", 0, 4)
    for xs, ys, ms in decodable_rows(task, 4):
        answers = [k_hop(xs, i, hops) for i in range(len(xs))]
        assert ms == [a is not None for a in answers]
        assert [ys[i] for i in range(len(xs)) if ms[i]] == [a for a in answers if a is not None]


def test_lm_windows_come_from_the_text(tmp_path):
    """lm: y is x shifted by one byte; training windows are pieces of the first 90% of the text
    and test windows pieces of the last 10%; every position is scored."""
    text = " ".join(f"word{i}" for i in range(3000)).encode()
    path = tmp_path / "text.txt"
    path.write_bytes(text)
    context = 16
    task = tasks.make_task("lm", context, "cpu", 0, 8, data_path=str(path))
    n_val = len(text) // 10
    train_text, val_text = text[:-n_val], text[-n_val:]
    batch = task.get_batch(16, torch.Generator().manual_seed(0))
    for (x, y, mask), part in ((batch, train_text), (task.test, val_text)):
        assert mask.all()
        assert torch.equal(x[:, 1:], y[:, :-1])
        for xs, ys in zip(rows(x), rows(y)):
            assert part.find(bytes(xs + ys[-1:])) >= 0


def test_lm_data_file_must_exist_and_not_be_empty(tmp_path):
    """lm with --data: a missing or an empty file is a UsageError, not a crash."""
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    for path in (tmp_path / "missing.txt", empty):
        with pytest.raises(tasks.UsageError):
            tasks.make_task("lm", 16, "cpu", 0, 8, data_path=str(path))


# -----------------------------------------------------------------------------
# Text classification (Yelp-style CSV files): the loader, the rows, the bidirectional model


def test_classify_reads_the_yelp_csv_format_exactly(tmp_path):
    """Yelp's CSV: quoted fields, "" for a quote, \n (backslash n) for a newline, real newlines
    and commas inside quotes, CRLF line ends, UTF-8, no final newline; blank lines are skipped.
    Each row comes back as (the line it starts on, label, text bytes)."""
    path = tmp_path / "yelp.csv"
    path.write_bytes(b'"1","plain"\r\n'
                     b'"2","say ""hi"", twice"\r\n'
                     b'"1","first\\nsecond"\r\n'
                     b'\r\n'
                     b'"2","a real\nnewline, and caf\xc3\xa9"\r\n'
                     b'5,unquoted')
    assert tasks.read_labelled(str(path), "--data") == [
        (1, 1, b"plain"), (2, 2, b'say "hi", twice'), (3, 1, b"first\nsecond"),
        (5, 2, "a real\nnewline, and café".encode()), (7, 5, b"unquoted")]


def test_classify_reads_label_tab_text_files(tmp_path):
    """label<TAB>text: the text runs to the end of its line, tabs and quotes kept as they are."""
    path = tmp_path / "reviews.tsv"
    path.write_text('2\tgood "food"\tand\\n more\n\n1\tbad, bad\n')
    assert tasks.read_labelled(str(path), "--data") == [
        (1, 2, b'good "food"\tand\\n more'), (3, 1, b"bad, bad")]


def test_classify_rows_are_the_docstrings_example(tmp_path):
    """Context 8, the test row "2","Yum!": pads, BOS, the bytes, so that the text ends at the last
    position, which alone is scored, with the class index of label 2. A text longer than the
    context keeps its first context-1 bytes. The head has one output per class."""
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text('"1","no"\n"2","yes"\n"3","maybe"\n')
    test.write_text('"2","Yum!"\n"1","far too long a text"\n')
    task = tasks.make_task("classify", 8, "cpu", 0, 10, str(train), str(test))
    x, y, mask = task.test
    rows_by_label = {int(y[i, -1]): i for i in range(2)}
    yum, long_ = x[rows_by_label[1]], x[rows_by_label[0]]
    assert yum.tolist() == [tasks.PAD] * 3 + [tasks.BOS] + list(b"Yum!")
    assert long_.tolist() == [tasks.BOS] + list(b"far too")
    assert mask.tolist() == [[False] * 7 + [True]] * 2
    assert task.classes == [1, 2, 3] and task.pad_id == tasks.PAD
    assert tasks.text_of(yum) == "Yum!"
    _, model, _, _, _ = mixit.build(make_config("--task", "classify", "--data", str(train),
                                                "--test_data", str(test), "--task_size", "8"))
    assert model(x).shape == (2, 8, 3)


def test_classify_train_and_test_never_share_a_text(tmp_path):
    """Hash split: about one distinct text in five is held out, and no training row is a test
    row. With --test_data, the test file's texts are the test set and are left out of training."""
    task = small_task("classify", n_test=10_000)
    test_rows = {tuple(r) for r in rows(task.test[0])}
    train_rows = {tuple(r) for r in rows(task.get_batch(5000, torch.Generator().manual_seed(0))[0])}
    assert not test_rows & train_rows
    assert 0.1 < len(test_rows) / (len(test_rows) + len(train_rows)) < 0.3
    test = tmp_path / "test.csv"
    test.write_text("".join(f'"{c}","{t}"\n' for c, t in [(1, "bad bad"), (2, "good nice")]))
    with open(REVIEWS["csv"]) as f:
        test.write_text(test.read_text() + f.readline())  # a text that is also in --data
    task = tasks.make_task("classify", 24, "cpu", 0, 100, REVIEWS["csv"], str(test))
    test_rows = {tuple(r) for r in rows(task.test[0])}
    assert len(test_rows) == 3
    train_rows = {tuple(r) for r in rows(task.get_batch(5000, torch.Generator().manual_seed(0))[0])}
    assert not test_rows & train_rows


BAD_CLASSIFY_FILES = [  # (case, file contents or None for a missing file, words the error names)
    ("missing", None, ["not found"]),
    ("empty", "", ["empty"]),
    ("blank lines only", "\n\n", ["empty"]),
    ("one class only", '"1","good"\n"1","bad"\n', ["one class"]),
    ("three fields", '"1","good"\n"2","bad"\n"1","x","y"\n', ["line 3", "3 fields"]),
    ("label only", '"1","good"\n"2"\n', ["line 2", "1 field"]),
    ("label not an integer", '"1","good"\n"two","bad"\n', ["line 2", "'two'", "integer"]),
    ("stray quote", '"1","good"\n"2","ba"d"\n', ["line 2"]),
    ("unclosed quote on a later line", '"1","good"\n\n"2","a\nb\n"1","c\n', ["line 3"]),
    ("tab file without tab", "1\tgood\n2 bad\n", ["line 2", "label<TAB>text"]),
]


@pytest.mark.parametrize("contents, words", [pytest.param(c, w, id=case)
                                             for case, c, w in BAD_CLASSIFY_FILES])
def test_bad_classify_files_are_one_line_errors(tmp_path, capsys, contents, words):
    """Every bad file stops the run with one 'error:' line that names the file and the problem
    (and the line, where one is at fault), and no traceback."""
    path = tmp_path / "bad.csv"
    if contents is not None:
        path.write_text(contents)
    line = assert_usage_error(SAFE + ["--task", "classify", "--data", str(path)], capsys)
    assert str(path) in line
    for word in words:
        assert word in line


@pytest.mark.parametrize("flags, must_mention", [
    (["--task", "classify"], "--data"),
    (["--task", "add", "--test_data", "x.csv"], "--test_data"),
    (["--task", "copy", "--causal", "false"], "--causal false"),
    (["--task", "classify", "--data", "@reviews", "--block_size", "40"], "--block_size"),
    (["--task", "classify", "--data", "@reviews", "--test_data", "/no/such/test.csv"],
     "/no/such/test.csv"),
])
def test_bad_classify_command_lines_are_one_line_errors(capsys, flags, must_mention):
    """No data, test data for another task, a bidirectional next-token task (it would see its
    answer), a block longer than the texts (a full MixiT matrix has no shorter corner), a
    missing test file: each is one 'error:' line."""
    flags = [REVIEWS["csv"] if f == "@reviews" else f for f in flags]  # written at session start
    assert must_mention in assert_usage_error(SAFE + flags, capsys)


def test_classify_test_labels_must_be_classes_of_the_training_file(tmp_path, capsys):
    test = tmp_path / "test.csv"
    test.write_text('"1","ok"\n"7","hm"\n')
    line = assert_usage_error(SAFE + ["--task", "classify", "--data", REVIEWS["csv"],
                                      "--test_data", str(test)], capsys)
    assert "line 2" in line and "label 7" in line


@pytest.mark.parametrize("variant", mixit.VARIANTS)
@pytest.mark.parametrize("causal", [False, True])
def test_causal_switch_decides_whether_a_token_sees_later_ones(variant, causal):
    """Classify rows end with the text, after pads. --causal false: changing a later token changes
    every real position's output; --causal true: the positions before it are bit-identical.
    In both modes no real token ever sees a pad: a different pad embedding changes nothing at
    the real positions."""
    cfg = make_config("--task", "classify", "--variant", variant, "--causal", str(causal),
                      "--task_size", "24", *data_flags("classify"))
    task, model, _, _, _ = mixit.build(cfg, verbose=False)
    model.eval()
    x = task.test[0][:4]
    real = x != tasks.PAD
    t = task.block_size - 1  # the last token, a real one in every row
    changed = x.clone()
    changed[:, t] = (changed[:, t] + 1) % 256
    with torch.no_grad():
        before, after = model(x), model(changed)
        earlier = real.clone()
        earlier[:, t] = False
        assert torch.equal(before[earlier], after[earlier]) == causal
        assert not torch.equal(before[:, t], after[:, t])
        model.wte.weight[tasks.PAD] += 1.0  # what a pad looks like
        assert torch.allclose(model(x)[real], before[real], atol=1e-6)


def test_bidirectional_mixing_matrix_is_full_and_its_rows_sum_to_one():
    """--causal false: every head's A is a full T x T matrix (entries above the diagonal), the
    same for every input; each row still sums to 1 (the reference's drift bug is not copied)."""
    A = mixit.mixing_matrices(4, 12, 8, torch.Generator().manual_seed(0), sink=False, causal=False)
    assert torch.allclose(A.sum(-1), torch.ones(4, 12), atol=1e-6)
    above = torch.triu_indices(12, 12, 1)
    assert (A[:, above[0], above[1]] != 0).all()  # every later token is mixed in
    causal = mixit.mixing_matrices(4, 12, 8, torch.Generator().manual_seed(0), sink=False)
    assert torch.equal(causal.triu(1), torch.zeros_like(causal))


@pytest.mark.parametrize("variant", ["standard", "frozen_qk", "frozen_mlp", "mixit"])
def test_every_variant_learns_the_bag_of_words_reviews(variant, tmp_path):
    """200 steps of a tiny bidirectional model classify the reviews (a bag of words decides
    them) far above the majority class (~50%). The record holds the accuracy like any task's."""
    out = tmp_path / "runs.jsonl"
    cfg = make_config("--task", "classify", *data_flags("classify"), "--variant", variant,
                      "--task_size", "24", "--batch_size", "32", "--steps", "200", "--warmup", "20", "--lr", "3e-3",
                      "--eval_interval", "100", "--eval_size", "300", "--out", str(out))
    record = mixit.run(cfg)
    assert record["history"][0]["acc"] < 0.7 < 0.9 < record["final"]["acc"]
    saved = json.loads(out.read_text())
    assert saved["config"]["causal"] is False and saved["final"]["acc"] == record["final"]["acc"]


def test_classify_examples_print_the_review_and_both_classes(capsys):
    """The examples read 'review '...' -> predicted C, true C', with the file's own labels, and
    RIGHT exactly where the two agree."""
    cfg = make_config("--task", "classify", *data_flags("classify"), "--task_size", "24")
    task, model, _, dtype, _ = mixit.build(cfg, verbose=False)
    mixit.show_examples(model, task, dtype, 6)
    shown = re.findall(r"(RIGHT|WRONG)  review '(.*)' -> predicted (\d), true (\d)",
                       capsys.readouterr().out)
    assert len(shown) == 6
    for verdict, text, predicted, true in shown:
        assert (verdict == "RIGHT") == (predicted == true) and true in "12"
        assert any(w in text.split() for w in REVIEW_WORDS[int(true)])


SAMPLED_TASKS = [t for t in tasks.TASKS if t not in ("modadd", "memorize", "lm", "classify")]


@pytest.mark.parametrize("name", SAMPLED_TASKS)
def test_train_and_test_are_split_by_hash_and_never_share_a_sequence(name):
    """Every test row lies on the test side of the hash split; a training row on that side gets
    an all-False mask, every other training row keeps its scored positions. So no training row
    that carries loss equals a test row."""
    task = small_task(name, n_test=200)
    test_rows = {tuple(r) for r in rows(task.test[0])}
    assert tasks.on_test_side(task.test[0]).all()
    x, _, mask = task.get_batch(2000, torch.Generator().manual_seed(1))
    side = tasks.on_test_side(x)
    _, _, raw_mask = task.sample(2000, torch.Generator().manual_seed(1))  # the same draw
    assert not mask[side].any() and torch.equal(mask[~side], raw_mask[~side])
    assert 0.1 < side.float().mean() < 0.3  # about one row in five
    assert not test_rows & {tuple(r) for r in rows(x[mask.any(1)])}


def test_dyck_trains_on_the_answer_mix_it_is_tested_on():
    """dyck-6 and dyck-10: the share of 'yes' among scored training answers is within 10 points
    of the test set's, and the docstring's figure (66% at N = 3 to 40% at N = 30) holds for the
    generator itself."""
    for n in (6, 10):
        task = tasks.make_task("dyck", n, "cpu", 12345, 500)
        x, y, mask = task.get_batch(20000, torch.Generator().manual_seed(0))
        yes_train = (y[mask] == 4).float().mean()
        yes_test = (task.test[1][task.test[2]] == 4).float().mean()
        assert abs(yes_train - yes_test) < 0.10
    for n, share in ((3, 0.66), (30, 0.40)):
        _, y, mask = tasks.sample_dyck(20000, torch.Generator().manual_seed(0), n)
        assert abs((y[mask] == 4).float().mean() - share) < 0.02


@pytest.mark.parametrize("hops", [1, 2, 3, 16])
def test_hop_has_no_adjacent_repeats_and_no_constant_shortcut(hops):
    """hop: no token equals its predecessor; the best per-position constant scores near chance
    (1/4); "copy the current token" never works at k = 1 and is near chance at k = 3 (the quick
    tables' k) and 16. At k = 2 it is right about half the time: the second hop often lands back
    on the current token ("b a b"), see README; the floor row of Table 1 is the rule's score."""
    task = tasks.make_task("hop", hops, "cpu", 12345, 1000)
    x, y, mask = task.test
    assert (x[:, 1:] != x[:, :-1]).all()
    rules = tasks.baselines(task)
    assert rules["majority per position"] < 0.3
    copy = ((x == y) & mask).sum() / mask.sum()
    assert copy == 0 if hops == 1 else (0.4 < copy < 0.6 if hops == 2 else copy < 0.3)
    if hops in (3, 16):  # no rule that reads only the current token and position gets far
        assert rules["current token + position"] < 0.33


def test_baselines_find_a_rule_that_solves_the_task():
    """The trivial rules are fitted on training rows and scored on the test set: a task whose
    answer is the current token is solved by 'current token + position', while 'majority per
    position' stays near chance; the dyck counting rule is right on every balanced string."""
    def echo(B, gen):
        x = torch.randint(0, 8, (B, 6), generator=gen)
        return x, x.clone(), torch.ones_like(x, dtype=torch.bool)
    gen = torch.Generator().manual_seed(0)
    task = tasks.Task("echo", 6, vocab_size=8, block_size=6, itos=list("abcdefgh"),
                      test=tasks.held_out_test(echo, 500, gen, "echo", 1), sample=echo)
    rules = tasks.baselines(task)
    assert rules["current token + position"] == 1.0
    assert rules["majority per position"] < 0.25
    dyck = tasks.make_task("dyck", 10, "cpu", 0, 500)
    x, y, mask = dyck.test
    rules = tasks.baselines(dyck)
    assert (y[mask] == 4).float().mean() <= rules["counting rule"] < 0.85  # "yes" balances them
    assert rules["counting rule"] <= rules["counting rule + ends"] < 0.85  # shuffles need nesting


def test_sizes_too_small_to_split_are_refused_naming_the_smallest():
    """A sampler with almost no distinct sequences cannot hold out a test set: the error names
    the smallest size that works. Sizes below each task's minimum are refused up front."""
    def one_string(B, gen):
        x = torch.zeros(B, 3, dtype=torch.long)
        x[:, 0] = 1 if tasks.on_test_side(torch.zeros(1, 3, dtype=torch.long))[0] else 0
        return x, x, torch.ones_like(x, dtype=torch.bool)
    with pytest.raises(tasks.UsageError, match="--task_size 7 or more"):
        tasks.held_out_test(one_string, 10, torch.Generator(), "tiny", 7)
    for name, size, smallest in (("dyck", 2, 3), ("induction", 3, 4)):
        with pytest.raises(tasks.UsageError, match=f"{smallest}\\.\\."):
            tasks.make_task(name, size, "cpu", 0, 8)


# -----------------------------------------------------------------------------
# Training and evaluation


def test_masked_loss_only_looks_at_masked_positions():
    """masked_loss is the mean cross-entropy over the masked positions; logits elsewhere do not
    matter."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=gen)
    y = torch.randint(0, 7, (2, 5), generator=gen)
    mask = torch.tensor([[False, True, True, False, False], [False, False, False, False, True]])
    expected = F.cross_entropy(logits[mask], y[mask])
    assert torch.allclose(mixit.masked_loss(logits, y, mask), expected)
    noisy = logits + 100 * torch.randn(2, 5, 7, generator=gen) * ~mask[:, :, None]
    assert torch.allclose(mixit.masked_loss(noisy, y, mask), expected)


class ModAddOracle(torch.nn.Module):
    """A fake model for modadd (x = a b, y = b (a+b)%p): at the scored second position it
    predicts (a + b + offset) mod p; at the unscored first position it predicts b + offset,
    so it is right there exactly when it is wrong on the answer."""

    def __init__(self, p, offset):
        super().__init__()
        self.p, self.offset = p, offset

    def forward(self, x):
        logits = torch.zeros(x.shape[0], 2, self.p)
        logits[:, 0] = 10.0 * F.one_hot((x[:, 1] + 1 - self.offset) % self.p, self.p)
        logits[:, 1] = 10.0 * F.one_hot((x[:, 0] + x[:, 1] + self.offset) % self.p, self.p)
        return logits


def test_evaluate_scores_only_the_answer_positions():
    """evaluate() gives accuracy and exact match 1 (and a small loss) to a model that is right on
    every answer but wrong elsewhere, and 0 to one that is wrong on every answer but right
    elsewhere: only the masked positions count."""
    task = tasks.make_task("modadd", 23, "cpu", 0, 1000)
    right = mixit.evaluate(ModAddOracle(23, 0), task, torch.float32)
    assert right["acc"] == 1.0 and right["exact"] == 1.0 and right["loss"] < 0.01
    wrong = mixit.evaluate(ModAddOracle(23, 1), task, torch.float32)
    assert wrong["acc"] == 0.0 and wrong["exact"] == 0.0 and wrong["loss"] > 5


def test_show_examples_prints_right_and_wrong_answers(capsys):
    """show_examples() labels an example RIGHT exactly when the prediction equals the expected
    answer, and shows the wrong ones first."""
    task = tasks.make_task("modadd", 23, "cpu", 0, 1000)
    mixit.show_examples(ModAddOracle(23, 0), task, torch.float32, 4)
    printed = capsys.readouterr().out
    assert printed.count("RIGHT") == 4 and "WRONG" not in printed
    expected = re.findall(r"expected: (.*)", printed)
    got = re.findall(r"got: +(.*)", printed)
    assert len(expected) == 4 and expected == got
    mixit.show_examples(ModAddOracle(23, 1), task, torch.float32, 4)
    printed = capsys.readouterr().out
    assert "WRONG" in printed and "RIGHT" not in printed
    assert re.findall(r"expected: (.*)", printed) != re.findall(r"got: +(.*)", printed)


class ModAddOracleWrongWhereOdd(ModAddOracle):
    """ModAddOracle with offset 1 on the rows whose a is odd: wrong on exactly those."""

    def forward(self, x):
        self.offset = x[:, 0] % 2
        return super().forward(x)


def test_examples_say_the_wrong_ones_come_first_and_how_many_of_the_test_set_are_wrong(capsys):
    """Up to half of the examples shown are wrong ones, so 3 WRONG of 6 could be 3 of 2000 or
    all of them: the header says the wrong ones come first and how many of the test set are
    wrong. Each example is labelled as its answer is, and no WRONG follows a RIGHT."""
    task = tasks.make_task("modadd", 23, "cpu", 0, 1000)
    n, odd = len(task.test[0]), int((task.test[0][:, 0] % 2).sum())
    assert 0 < odd < n
    for model, wrong in [(ModAddOracle(23, 0), 0), (ModAddOracleWrongWhereOdd(23, 0), odd),
                         (ModAddOracle(23, 1), n)]:
        mixit.show_examples(model, task, torch.float32, 6)
        printed = capsys.readouterr().out
        said = re.search(r"the wrong ones first: ([\d,]+) of its ([\d,]+) are wrong", printed)
        assert said and (int(said[1].replace(",", "")), int(said[2].replace(",", ""))) == (wrong, n), printed
        labels = re.findall(r"^  (RIGHT|WRONG) ", printed, re.M)
        assert labels == ["WRONG"] * min(wrong, 3) + ["RIGHT"] * min(n - wrong, 6 - min(wrong, 3))
        expected, got = re.findall(r"expected: (.*)", printed), re.findall(r"got: +(.*)", printed)
        assert [e == g for e, g in zip(expected, got)] == [label == "RIGHT" for label in labels]


def test_lm_loss_is_in_nats_and_bits_per_byte(tmp_path):
    """On lm, evaluate() reports the loss in nats per byte and bpb = loss / ln 2; an untrained
    model (near-uniform predictions over 256 bytes) scores about ln 256 nats = 8 bits."""
    path = tmp_path / "text.txt"
    path.write_bytes(b"the quick brown fox jumps over the lazy dog. " * 200)
    cfg = make_config("--variant", "standard", "--task", "lm", "--task_size", "16",
                      "--data", str(path))
    task, model, _, dtype, _ = mixit.build(cfg, verbose=False)
    m = mixit.evaluate(model, task, dtype)
    assert m["bpb"] == pytest.approx(m["loss"] / math.log(2))
    assert m["loss"] == pytest.approx(math.log(256), abs=0.05)


class FakeHidden(torch.nn.Module):
    """Stands in for the model in the analysis functions: it returns a fixed last hidden state
    or fixed attention maps, whatever the input."""

    def __init__(self, hidden=None, att=None):
        super().__init__()
        self.hidden, self.att = hidden, att

    def forward(self, idx, return_hidden=False):
        return None, [self.hidden], [self.att]


def test_token_covariance_detects_rank_collapse():
    """token_covariance() is about 1 when every position carries the same vector (rank
    collapse) and about 0 for independent random vectors."""
    task = tasks.make_task("copy", 5, "cpu", 0, 64)
    gen = torch.Generator().manual_seed(0)
    same = torch.randn(64, 1, 32, generator=gen).expand(64, task.block_size, 32)
    assert mixit.token_covariance(FakeHidden(hidden=same), task) == pytest.approx(1.0, abs=1e-4)
    independent = torch.randn(64, task.block_size, 32, generator=gen)
    assert abs(mixit.token_covariance(FakeHidden(hidden=independent), task)) < 0.05


def test_induction_scores_find_induction_and_previous_token_heads():
    """induction_scores() gives 1 to a head that attends from the query to the token after its
    earlier occurrence, and 1 (previous-token score) to a head that attends from t to t-1."""
    task = tasks.make_task("induction", 10, "cpu", 0, 50)
    x = task.test[0]
    B, T = x.shape
    att = torch.zeros(B, 2, T, T)
    att[:, 0] = torch.eye(T)  # head 0 attends to itself ...
    for b, xs in enumerate(rows(x)):
        earlier = xs[:-1].index(xs[-1])
        att[b, 0, T - 1] = 0.0
        att[b, 0, T - 1, earlier + 1] = 1.0  # ... except the query: an induction head
    att[:, 1, 0, 0] = 1.0
    att[:, 1, torch.arange(1, T), torch.arange(0, T - 1)] = 1.0  # head 1: previous token
    import figures
    [scores] = figures.induction_scores(FakeHidden(att=att), task)
    assert scores["induction"][0] == pytest.approx(1.0)
    assert scores["previous"][1] == pytest.approx(1.0)
    assert scores["previous"][0] < 0.2 and scores["induction"][1] < 0.5


def run_config(out, *flags):
    """A Config for mixit.run(): tiny standard model on 2-digit addition, record written to out."""
    return make_config("--task", "add", "--task_size", "2", "--variant", "standard",
                       "--eval_size", "500", "--out", str(out), *flags)


def test_short_run_learns_addition_and_writes_one_record_per_run(tmp_path):
    """400 steps of a tiny standard model learn 2-digit addition far above chance (predicting
    each answer digit's most common value scores about 0.4). Each run appends exactly one JSON
    line (config, final metrics, history, device, torch version) and leaves earlier lines alone."""
    out = tmp_path / "runs.jsonl"
    cfg = run_config(out, "--steps", "400", "--batch_size", "128", "--lr", "1e-2",
                     "--warmup", "20", "--eval_interval", "200", "--seed", "0")
    record = mixit.run(cfg)
    assert record["final"]["acc"] > 0.9
    assert record["final"]["exact"] > 0.7
    assert record["history"][0]["acc"] < 0.2  # untrained, for comparison

    lines = out.read_text().splitlines()
    assert len(lines) == 1
    saved = json.loads(lines[0])
    assert saved["config"]["task"] == "add" and saved["config"]["steps"] == 400
    assert saved["final"]["acc"] == record["final"]["acc"]
    assert [h["step"] for h in saved["history"]] == [0, 200, 400]
    assert saved["history"][-1]["acc"] == saved["final"]["acc"]
    assert saved["device"] == "cpu" and saved["torch"] == torch.__version__
    # the machine, so that a table can keep to one: the CPU's model name and native bf16 or not
    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    assert saved["cpu"] == saved["device_name"] == (model or saved["cpu"])
    assert saved["cpu_bf16"] == runtime.cpu_has_bf16()

    mixit.run(run_config(out, "--steps", "2", "--tag", "second"))
    lines_after = out.read_text().splitlines()
    assert len(lines_after) == 2
    assert lines_after[0] == lines[0]
    assert json.loads(lines_after[1])["config"]["tag"] == "second"


def test_memorize_reports_bits_per_trainable_parameter():
    """memorize: the run record reports accuracy * n^2 * log2(n) / #trainable parameters."""
    n = 4
    record = mixit.run(make_config("--task", "memorize", "--task_size", str(n), "--steps", "2",
                                   "--variant", "frozen_mlp", "--out", ""))
    final = record["final"]
    assert final["bits_per_param"] == pytest.approx(
        final["acc"] * n * n * math.log2(n) / record["n_trainable"])
    cfg = make_config("--task", "memorize", "--task_size", str(n), "--variant", "frozen_mlp")
    assert record["n_trainable"] == mixit.build(cfg, verbose=False)[4][0]


def test_bench_times_the_named_variant_and_appends_one_record(tmp_path):
    """`python bench.py --variant X` times that variant only and appends one record of timings;
    a bad flag is a one-line error."""
    import bench
    out = tmp_path / "bench.jsonl"
    bench.main(BASE_FLAGS + ["--variant", "mixit", "--task", "copy",
                             "--task_size", "4", "--batch_size", "8", "--out", str(out)])
    [line] = out.read_text().splitlines()
    [row] = json.loads(line)["bench"]
    assert row["variant"] == "mixit" and row["ms_per_step"] > 0
    with pytest.raises(SystemExit, match="unknown variant 'fast'"):
        bench.main(BASE_FLAGS + ["--variant", "fast"])


@pytest.mark.parametrize("option, flag, values", [("--compile-vs-eager", "compile", ["false", "true"]),
                                                  ("--sdpa-vs-written", "sdpa", [True, False])])
def test_bench_both_ways_times_each_variant_with_each_value_in_one_record(tmp_path, monkeypatch,
                                                                          option, flag, values):
    """`python bench.py --compile-vs-eager` times the variant eager and compiled, in turns, and
    `--sdpa-vs-written` with softmax attention fused and written out; each appends one record
    with a row for each. The model each run steps is the one runtime.compiled hands back for
    its config, spied on here (the test above checks what compiling computes, and on a fresh
    clone, with no compile cache, each compile is slow), and it is built with that value."""
    import bench
    asked = []
    def spy(model, cfg, device):
        asked.append(getattr(cfg, flag))
        assert flag != "sdpa" or model.blocks[0].attn.sdpa == cfg.sdpa
        return model, lambda: None
    monkeypatch.setattr(bench, "compiled", spy)
    timed = bench.bench  # with the fewest steps
    monkeypatch.setattr(bench, "bench", lambda cfg, variants, windows, both: timed(
        cfg, variants, warmup=1, windows=1, per_window=1, both=both))
    out = tmp_path / "bench.jsonl"
    bench.main([option] + BASE_FLAGS + ["--variant", "standard", "--task", "copy", "--task_size", "4",
                                        "--n_embd", "16", "--batch_size", "8", "--out", str(out)])
    [line] = out.read_text().splitlines()
    rows = json.loads(line)["bench"]
    assert asked == values
    assert [(r["variant"], r[flag]) for r in rows] == [("standard", v) for v in values]
    assert all(r["ms_per_step"] > 0 for r in rows)


@pytest.mark.parametrize("option, rows", [
    ("--compile-vs-eager", ["eager (--compile false)", "compiled (--compile true)", "eager / compiled, x"]),
    ("--sdpa-vs-written", ["fused (--sdpa true)", "written out (--sdpa false)", "fused / written out, x"])])
def test_the_both_ways_table_reads_each_benchmarks_ratio(option, rows):
    """The CPU tables of one setting both ways (compile; sdpa): ms/step with each value, mean ±
    std over the benchmarks, and the ratio taken within each benchmark (its runs took turns),
    then averaged."""
    import bench
    way = bench.BOTH_WAYS[option]
    flag, values = bench.TWO_WAYS[way.ratio]

    def run(slow, fast):
        return {"config": {"tag": way.tag, "task_size": 128, "n_embd": 16, "n_layer": 2,
                           "batch_size": 1024, "compile": "true"},
                "bench": [{"variant": "standard", flag: values[0], "ms_per_step": slow},
                          {"variant": "standard", flag: values[1], "ms_per_step": fast}],
                "dtype": "float32", "threads": 1, "device_name": "Some CPU"}
    text = bench.both_ways(option, [run(30.0, 10.0), run(20.0, 10.0)])
    assert f"| {rows[0]} | 25.0 ± 7.1 |" in text
    assert f"| {rows[1]} | 10.0 ± 0.0 |" in text
    assert f"| {rows[2]} | 2.50 ± 0.71 |" in text and "n = 2" in text


PAPER_SIZES = {"add": 10, "modadd": 599, "memorize": 512, "dyck": 30, "needle": 30, "copy": 20,
               "induction": 64, "hop": 16, "lm": 256}


@pytest.mark.parametrize("name", list(PAPER_SIZES))
def test_a_batch_drawn_as_a_gpu_draws_it_costs_a_few_tensor_ops(name):
    """At its paper size, batch 256 and --resample, a task's training batch costs at most 60
    tensor ops (each a kernel launch on a GPU) when drawn --data_pool at a time, as on a GPU (32,
    averaged over 32 batches); and one at a time (the CPU's stream) no op count grows with the
    sequence length: the row hash and the samplers have no loop over positions."""
    import bench
    cfg = make_config("--task", name, "--task_size", str(PAPER_SIZES[name]), "--batch_size", "256",
                      "--resample")
    task = tasks.make_task(name, PAPER_SIZES[name], n_test=16)
    assert bench.data_ops_per_batch(task, cfg, "cpu", 32) <= 60
    alone = bench.data_ops_per_batch(task, cfg, "cpu", 1, n_batches=2)
    assert alone < 130  # before: add-10 304, induction-64 555, hop-16 1326, dyck-30 1652


def test_profile_takes_a_step_apart_and_appends_one_record(tmp_path):
    """`python bench.py --profile`: ms/step, the tensor ops of a batch drawn one and 32 at a time
    and of a whole eager step, in one record (on a CPU: no kernel counts)."""
    import bench
    out = tmp_path / "profile.jsonl"
    bench.main(["--profile"] + BASE_FLAGS + ["--task", "copy", "--task_size", "4",
                                             "--batch_size", "8", "--out", str(out)])
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    prof = record["profile"]
    assert record["config"]["variant"] == "standard" and prof["ms_per_step"] > 0
    assert set(prof["data_ops_per_batch"]) == {"1", "32"} and prof["data_pool"] == 1
    assert prof["data_ops_per_batch"]["32"] < prof["data_ops_per_batch"]["1"] < prof["eager_ops_per_step"]
    assert "kernels_per_step" not in prof


def test_pack_sums_the_samples_of_runs_at_once_and_per_gpu_takes_the_best(tmp_path, monkeypatch):
    """bench.py --pack: one copy of the benchmark, then (under MPS) two at once, one record per P
    with their samples/s summed and whether MPS was up. PER_GPU's default (bench.py
    --per-gpu) is the P that got the most at Table 1's induction shape, DEFAULT_PER_GPU before
    any such record; MPS's default (bench.py --mps) is whether that best measurement ran under
    MPS (gpu_call.sh MPS=1)."""
    import bench
    out = tmp_path / "gpu.jsonl"
    assert bench.best_packing(str(out)) == (bench.DEFAULT_PER_GPU, False)
    flags = BASE_FLAGS + ["--task", "copy", "--task_size", "4", "--batch_size", "8", "--out", str(out)]
    # as gpu_call.sh measures: first without MPS, then with it (MPS_ACTIVE=1, set once the
    # daemon is up), the latter's tags ending in -mps
    rows = bench.pack(flags + ["--tag", bench.PACK_SHAPE], [1])
    monkeypatch.setenv("MPS_ACTIVE", "1")
    rows += bench.pack(flags + ["--tag", bench.PACK_SHAPE + "-mps"], [2])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["config"]["tag"] for r in records] == [bench.PACK_SHAPE + suffix
                                                     for suffix in ("-P1", "-mps-P2")]
    assert [len(r["ms_per_step"]) for r in rows] == [1, 2] and records[0]["config"]["variant"] == "standard"
    assert [r["mps"] for r in rows] == [False, True]
    best = max(rows, key=lambda r: r["samples_per_s"])
    assert bench.best_packing(str(out)) == (best["P"], best["mps"]) and not list(tmp_path.glob("*.tmp"))

    def add(tag, **pack):  # a record like the last one, newer, with another tag and result
        with open(out, "a") as f:
            f.write(json.dumps({**records[-1], "config": {"tag": tag}, "time": "9999",
                                "pack": {**records[-1]["pack"], **pack}}) + "\n")
    # a record from before the barrier (no "together") overstated large P: it does not count
    add("gpu/pack-P64", P=64, samples_per_s=1e12, together=False)
    # nor does another shape's: samples/s of different shapes are not comparable
    add("gpu/pack-barrier-mixit16-w512-P4", P=4, samples_per_s=1e12)
    assert bench.best_packing(str(out)) == (best["P"], best["mps"])
    # a measurement that got more: PER_GPU and MPS follow it, with MPS or without
    add(bench.PACK_SHAPE + "-mps-P4", P=4, samples_per_s=1e12, mps=True)
    assert bench.best_packing(str(out)) == (4, True)
    add(bench.PACK_SHAPE + "-P8", P=8, samples_per_s=2e12, mps=False)
    assert bench.best_packing(str(out)) == (8, False)


def test_pack_copies_wait_for_each_other_before_they_time(tmp_path, monkeypatch):
    """A --pack copy that is warmed up waits until all P copies are (a file each in the barrier
    folder), so that no copy times the GPU while the others still compile; without the barrier
    variable it does not wait at all."""
    import threading
    import bench
    monkeypatch.delenv("PACK_BARRIER", raising=False)
    bench.wait_for_the_others()  # not under --pack: returns at once, writes nothing
    monkeypatch.setenv("PACK_BARRIER", f"{tmp_path}:2")
    late = threading.Timer(0.3, lambda: (tmp_path / "the-other-copy").touch())
    t0 = time.perf_counter()
    late.start()
    bench.wait_for_the_others()
    assert time.perf_counter() - t0 >= 0.3 and len(list(tmp_path.iterdir())) == 2


def test_graphs_check_traces_every_step_and_fails_on_a_stale_batch_lr_or_loss(tmp_path, monkeypatch):
    """bench.py --graphs-check's pieces. A traced run writes one row per training step: its
    batch's digest (a new batch each step under --resample), the learning rate of the schedule
    and the loss. The verdict passes identical runs and fails a run with graphs that replays an
    old batch or an old learning rate, or whose losses differ by more than two runs without
    graphs do and more than bf16's rounding; a gap inside that noise passes. run_all.sh's
    --cuda_graphs on a GPU (bench.py --cuda-graphs) follows the latest check."""
    import bench
    monkeypatch.setattr(mixit, "train_step", mixit.train_step)  # traced_run wraps it: restored after
    path = tmp_path / "trace.json"
    bench.traced_run(BASE_FLAGS + ["--task", "copy", "--task_size", "4", "--batch_size", "8",
                                   "--steps", "6", "--warmup", "3", "--resample", "--eval_interval", "3"],
                     str(path))
    trace = json.loads(path.read_text())
    cfg = mixit.resolve_config(mixit.parse_args(BASE_FLAGS + ["--task", "copy", "--steps", "6", "--warmup", "3"]))
    assert [row[1] for row in trace["steps"]] == [mixit.get_lr(s, cfg) for s in range(6)]
    assert len({row[0] for row in trace["steps"]}) == 6 and all(row[2] > 0 for row in trace["steps"])
    assert [h["step"] for h in trace["history"]] == [0, 3, 6]

    def verdict(graphs, again=None):
        return bench.graphs_verdict({"graphs": graphs, "eager": trace, "eager-again": again or trace})
    assert verdict(trace)["same"] and verdict(trace)["first_other_batch"] is None

    def planted(step, field, value):  # the trace with one step's field replaced
        rows = [list(r) for r in trace["steps"]]
        rows[step][field] = value(rows)
        return {**trace, "steps": rows}
    stale = verdict(planted(4, 0, lambda rows: rows[3][0]))  # step 4 replays step 3's batch
    assert not stale["same"] and stale["first_other_batch"] == 4
    stale_lr = verdict(planted(5, 1, lambda rows: rows[4][1]))
    assert not stale_lr["same"] and stale_lr["first_other_lr"] == 5
    gap = 3 * bench.BF16_EPS  # a loss 3 bf16 roundings off at step 2
    off = planted(2, 2, lambda rows: rows[2][2] * (1 + gap))
    assert not verdict(off)["same"] and verdict(off)["loss_gap"] == pytest.approx(gap)
    assert verdict(off, again=off)["same"]  # the runs without graphs differ as much: noise
    assert verdict(planted(2, 2, lambda rows: rows[2][2] * (1 + bench.BF16_EPS / 2)))["same"]
    assert not verdict({**trace, "steps": trace["steps"][:5]})["same"]  # a step missing

    records = tmp_path / "gpu.jsonl"
    assert bench.graphs_safe(str(records))  # no check yet: graphs on
    for t, same in (("2026-01-02", False), ("2026-01-01", True)):  # the newer one counts
        runtime.append_record(str(records), {"config": {"tag": "gpu/graphs-check"}, "time": t,
                                             "graphs_check": {"same": same}})
    assert not bench.graphs_safe(str(records))


def test_no_file_imports_a_file_that_imports_it():
    """The project's files import one way only (tasks <- runtime <- mixit <- bench, figures <-
    report; records, which reads the run records, imports tasks alone): a reader can read mixit.py
    without bench.py, and a change to one cannot break another's import. No chain of imports,
    however long, leads from a file back to itself."""
    import ast
    ours = {"mixit", "tasks", "runtime", "bench", "report", "records", "figures"}
    imports = {}
    for name in ours:
        tree = ast.parse(open(os.path.join(HERE, name + ".py")).read())
        imports[name] = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                         for a in n.names} | {n.module.split(".")[0] for n in ast.walk(tree)
                                              if isinstance(n, ast.ImportFrom) and n.module}
        imports[name] &= ours
    assert imports["mixit"] == {"tasks", "runtime"} and imports["runtime"] == {"tasks"}
    assert imports["records"] == {"tasks"}
    for start in ours:  # every file reachable from start, by following imports
        reached, todo = set(), list(imports[start])
        while todo:
            name = todo.pop()
            assert name != start, f"{start}.py imports itself through {sorted(reached)}"
            if name not in reached:
                reached.add(name)
                todo += imports[name]


# -----------------------------------------------------------------------------
# Checkpoints


def test_checkpoint_round_trip_reproduces_the_test_metrics(tmp_path):
    """Train a MixiT model briefly and --save it; --load it with --steps 0 (and another --seed,
    which must not matter: A comes from the checkpoint) and get the same test metrics."""
    ckpt, out = str(tmp_path / "ckpt.pt"), str(tmp_path / "runs.jsonl")
    mixit.main(BASE_FLAGS + ["--task", "copy", "--task_size", "4", "--variant", "mixit",
                             "--steps", "20", "--save", ckpt, "--out", out])
    mixit.main(["--load", ckpt, "--steps", "0", "--seed", "7", "--device", "cpu",
                "--dtype", "float32", "--examples", "0", "--eval_size", "64", "--out", out])
    trained, loaded = [json.loads(line) for line in open(out)]
    assert loaded["config"]["variant"] == "mixit" and loaded["config"]["n_embd"] == 32
    for key in ("loss", "acc", "exact"):
        assert loaded["final"][key] == pytest.approx(trained["final"][key], rel=1e-6, abs=1e-9)


def test_the_same_seed_retrains_to_the_same_record_and_another_seed_does_not(tmp_path):
    """A sweep rebuilt from an empty results file gives the published numbers only if a run is a
    function of its flags: the same --seed on the same machine retrains to the same learning
    curve and final metrics, bit for bit; another seed (init, mixing matrices, batches) does not."""
    out = str(tmp_path / "runs.jsonl")
    for seed in ("3", "3", "4"):
        mixit.main(BASE_FLAGS + ["--task", "add", "--task_size", "2", "--variant", "frozen_qk",
                                 "--steps", "30", "--eval_interval", "10", "--seed", seed, "--out", out])
    a, b, c = [json.loads(line) for line in open(out)]
    curve = lambda r: [(h["step"], h["loss"], h["acc"]) for h in r["history"]]  # noqa: E731
    metrics = lambda r: {k: v for k, v in r["final"].items() if k != "train_s"}  # noqa: E731
    assert curve(a) == curve(b) and metrics(a) == metrics(b)  # up to timings
    assert curve(a) != curve(c)


# The cheapest committed cells of results/quick.jsonl: fp32 on the CPU, one thread, 400 steps of
# 2-pair needle at width 64; one MixiT and one softmax variant.
# each cell with the step its rerun stops at: MixiT's at its end, Frozen-QK's at its first evaluation
# after step 0 (half the price; a change to the loop moves a number long before it)
RERUN_CELLS = {"f1/needle2/mixit/s2": None, "f1/needle2/frozen_qk/s1": 200}


def rerun_reference(tag):
    """The committed record that a rerun of cell `tag` here must equal bit for bit: the cell's own
    (results/quick.jsonl) or its rerun on another kind of CPU (results/extra.jsonl, tagged
    x/rerun/TAG), made with this torch on a CPU of this model name and cpu_capability (float32
    rounding follows the vector instructions, and MKL picks its kernels by vendor too). None if
    no such record was committed."""
    capability = torch.backends.cpu.get_cpu_capability()

    def alike(r):
        if "cpu_capability" not in r:  # made before the field was kept, on AVX-512 machines: the
            return capability == "AVX512"  # cells above reran bit-identical there, not on AVX2
        return (r["cpu_capability"], r["cpu"]) == (capability, runtime.cpu_name())
    found = [r for path, name in (("quick.jsonl", tag), ("extra.jsonl", "x/rerun/" + tag))
             for r in map(json.loads, open(os.path.join(HERE, "results", path)))
             if r["config"].get("tag") == name and r["torch"] == torch.__version__ and alike(r)]
    return found[-1] if found else None


@pytest.mark.parametrize("tag", RERUN_CELLS)
def test_a_committed_cell_reruns_bit_identical_from_its_records_config(tag, monkeypatch):
    """A record is a function of the config it keeps: rerun from that config (on the record's
    number of threads), a committed cell gives the same learning curve and final metrics (with
    the token covariance), bit for bit, timings aside; a rerun stopped early (RERUN_CELLS), the
    same curve up to where it stopped. A change to the training loop that moves a number fails
    here. (Bit-identical needs the torch and the kind of CPU the record was made with: where no
    committed record has both, it is a skip, saying so.)"""
    record = rerun_reference(tag)
    if record is None:
        pytest.skip(f"no record of {tag} made with torch {torch.__version__} on an "
                    f"{torch.backends.cpu.get_cpu_capability()} {runtime.cpu_name()}")
    fields = {f.name for f in dataclasses.fields(mixit.Config)}
    config = {k: v for k, v in record["config"].items() if k in fields}
    cfg = mixit.Config(**{**config, "out": "", "examples": 0, "save": "", "resume": ""})
    stop = RERUN_CELLS[tag]
    if stop:  # the stopping rule says stop at that evaluation (the schedule stays the record's)
        monkeypatch.setattr(mixit, "stop_reason", lambda cfg, history, task: (
            "the test stops it" if history[-1]["step"] >= stop else None))
    threads = torch.get_num_threads()
    torch.set_num_threads(record["threads"])
    try:
        rerun = mixit.run(cfg)
    finally:
        torch.set_num_threads(threads)
    drop = lambda h: {k: v for k, v in h.items() if k != "train_s"}  # noqa: E731
    if stop:  # the curve so far (its last point is the rerun's final: token_cov is added there)
        curve = [{k: v for k, v in drop(h).items() if k != "token_cov"} for h in rerun["history"]]
        assert curve == [drop(h) for h in record["history"][:len(curve)]] and len(curve) > 1
        assert rerun["final"]["step"] == stop < record["final"]["step"]
        return
    assert [drop(h) for h in rerun["history"]] == [drop(h) for h in record["history"]]
    assert drop(rerun["final"]) == drop(record["final"]) and len(rerun["history"]) > 2


@pytest.fixture
def checkpoint(tmp_path):
    """A freshly initialized tiny MixiT checkpoint on copy (no training needed)."""
    cfg = make_config("--variant", "mixit", "--task", "copy", "--task_size", "4")
    _, model, _, _, _ = mixit.build(cfg, verbose=False)
    path = str(tmp_path / "init.pt")
    runtime.save_checkpoint(path, model, cfg)
    return path


@pytest.mark.parametrize("flag, value", [("--n_embd", "64"), ("--variant", "standard")])
def test_checkpoint_with_other_model_settings_is_refused(checkpoint, flag, value, capsys):
    """--load with a model flag that contradicts the checkpoint is a clean one-line error."""
    line = assert_usage_error(SAFE + ["--load", checkpoint, flag, value], capsys)
    assert flag in line


def test_checkpoint_whose_weights_do_not_fit_is_refused(checkpoint, tmp_path, capsys):
    """A checkpoint whose tensors have the wrong shapes gives a one-line error, not a crash."""
    ckpt = torch.load(checkpoint, weights_only=True)
    ckpt["model"]["lm_head.weight"] = torch.zeros(3, 3)
    path = str(tmp_path / "bad_shapes.pt")
    torch.save(ckpt, path)
    assert_usage_error(SAFE + ["--load", path], capsys)


@pytest.mark.parametrize("content", ["missing", "random bytes", "not a checkpoint"])
def test_unreadable_checkpoint_is_a_usage_error(tmp_path, capsys, content):
    """--load of a missing path, of random bytes, or of a torch file that is not a mixit
    checkpoint exits with status 2 and a one-line error."""
    path = tmp_path / "ckpt.pt"
    if content == "random bytes":
        path.write_bytes(random.Random(0).randbytes(2000))
    elif content == "not a checkpoint":
        torch.save({"weights": torch.zeros(3)}, str(path))
    line = assert_usage_error(SAFE + ["--load", str(path)], capsys)
    assert str(path) in line


# -----------------------------------------------------------------------------
# Stopping rule, resumable runs, every row learns


def same_run(a, b):
    """Two records describe the same training: learning curve and final metrics bit for bit,
    the timings (train_s) aside."""
    drop = lambda h: {k: v for k, v in h.items() if k != "train_s"}  # noqa: E731
    return [drop(h) for h in a["history"]] == [drop(h) for h in b["history"]] \
        and drop(a["final"]) == drop(b["final"]) and a["stop"] == b["stop"]


# a run to break and resume: 60 steps, the warm-up (50 steps) and the decay after it
RESUME_RUN = ["--task", "add", "--task_size", "2", "--variant", "frozen_qk", "--steps", "60",
              "--warmup", "50", "--eval_interval", "30", "--log_interval", "10", "--seed", "3",
              "--resample"]


def test_a_run_killed_by_sigterm_saves_its_state_and_resumes_to_the_uninterrupted_record(tmp_path):
    """SIGTERM to a training process: it saves its whole state, says in one line how to go on,
    exits 143 and writes no record. The same command then continues from that state and writes
    the record an uninterrupted run writes (same curve, same final metrics, bit for bit), and
    deletes the saved state. The killed and the resumed run are real processes and the signal a
    real one, one thread each; the uninterrupted run is mixit.main here, on the same flags."""
    out, state = tmp_path / "runs.jsonl", tmp_path / "state.pt"
    argv = BASE_FLAGS + RESUME_RUN + ["--out", str(out)]
    mixit.main(argv + ["--tag", "whole"])  # (one thread here too: OMP_NUM_THREADS above)
    cmd = [sys.executable, "-u", os.path.join(HERE, "mixit.py"), *argv, "--tag", "cut",
           "--resume", str(state)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    killed = subprocess.Popen(cmd, env=env, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    for line in killed.stdout:  # kill it between two evaluations, mid-training
        if line.startswith("step    40 | loss"):
            killed.send_signal(15)
            break
    _, err = killed.communicate(timeout=60)
    assert killed.returncode == 143, err[-2000:]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "SIGTERM at step" in err and "the same command continues it" in err
    assert state.exists() and len(out.read_text().splitlines()) == 1  # no record for the cut run
    resumed = subprocess.run(cmd, env=env, cwd=HERE, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0 and "resumed from" in resumed.stdout
    whole, cut = [json.loads(line) for line in out.read_text().splitlines()]
    assert 40 <= cut["resumed_at"][0] < 60 and same_run(whole, cut)  # between two evaluations
    assert not state.exists()
    # its last line says the time of this sitting and of both, as the record holds them (wall_s:
    # every sitting's); a run never stopped has one sitting, and says one time
    said = re.search(r"\| (\d+)s this sitting, (\d+)s in all \(2 sittings\)$", resumed.stdout, re.M)
    assert said, resumed.stdout[-500:]
    assert (int(said[1]), int(said[2])) == (round(cut["sitting_s"]), round(cut["wall_s"]))
    assert cut["sitting_s"] < cut["wall_s"] and whole["sitting_s"] == whole["wall_s"]


def test_a_run_stopped_by_ctrl_c_is_continued_by_the_same_command_into_one_record(tmp_path):
    """Ctrl-C (SIGINT) mid-training, then exactly the same command again, no flag added: it says
    that it resumes, continues from the state the stopped run saved (results/ckpt/ where it runs),
    writes one record, the one an uninterrupted run writes (same curve, same final metrics), and
    deletes the state. Real processes and a real signal; the uninterrupted run is mixit.main."""
    out = tmp_path / "runs.jsonl"
    argv = BASE_FLAGS + RESUME_RUN + ["--out", str(out)]
    mixit.main(argv[:-1] + [str(tmp_path / "whole.jsonl")])  # the same run, never stopped
    [whole] = [json.loads(line) for line in (tmp_path / "whole.jsonl").open()]
    cmd = [sys.executable, "-u", os.path.join(HERE, "mixit.py"), *argv]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    stopped = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    for line in stopped.stdout:  # Ctrl-C between two evaluations, mid-training
        if line.startswith("step    40 | loss"):
            stopped.send_signal(signal.SIGINT)
            break
    _, err = stopped.communicate(timeout=60)
    assert stopped.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert "SIGINT at step" in err and "the same command continues it, --restart" in err
    [state] = (tmp_path / "results" / "ckpt").glob("interrupted_*.pt")
    assert str(state.relative_to(tmp_path)) in err and not out.exists()  # no record yet
    again = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"resumed from {state.relative_to(tmp_path)} at step" in again.stdout
    [cut] = [json.loads(line) for line in out.open()]  # one record for the run
    assert 40 <= cut["resumed_at"][0] < 60 and same_run(whole, cut) and not state.exists()


def test_restart_starts_over_where_a_stopped_run_left_its_state(tmp_path, monkeypatch, capsys):
    """--restart deletes the state a stopped run of the same command saved and trains from step
    0 (the record has no resumed_at); the state of another command is never read (its own path)."""
    monkeypatch.chdir(tmp_path)

    def built(*flags):  # a run's config as its state's path reads it: after build()
        cfg = run_config("runs.jsonl", *RESUME_RUN, *flags)
        return cfg, mixit.build(cfg, verbose=False)[1]
    cfg, model = built()
    path = runtime.resume_path(cfg)
    runtime.save_checkpoint(path, model, cfg, step=30, gens=[torch.Generator().get_state()])
    assert runtime.resume_path(built("--lr", "0.01")[0]) != path
    assert runtime.resume_path(built("--out", "other.jsonl", "--log_interval", "5")[0]) == path
    record = mixit.run(run_config("runs.jsonl", *RESUME_RUN, "--restart"))
    assert "resumed_at" not in record and not os.path.exists(path)
    assert f"--restart: deleted {path}" in capsys.readouterr().out


def test_a_run_killed_outright_resumes_from_its_last_evaluation(tmp_path, monkeypatch):
    """A run that dies without a chance to save (SIGKILL, a crash) resumes from the state saved
    at its last evaluation, and still ends exactly where an uninterrupted run ends; so does a
    run whose --unfreeze_at falls before the break (its optimizer then has more groups), and one
    that draws its batches 16 at a time (the state keeps the drawn batches not yet used)."""
    flags = [*RESUME_RUN, "--eval_interval", "15"]  # the break (step 35) in the warm-up
    for extra in ([], ["--unfreeze_at", "22"], ["--data_pool", "16"]):  # 30: mid-pool
        out, state = tmp_path / "runs.jsonl", tmp_path / "state.pt"
        out.unlink(missing_ok=True)
        whole = mixit.run(run_config(out, *flags, *extra))
        real_step, calls = mixit.train_step, []

        def dies_at_step_35(*args):
            calls.append(1)
            if len(calls) > 35:
                raise RuntimeError("killed")
            return real_step(*args)
        monkeypatch.setattr(mixit, "train_step", dies_at_step_35)
        with pytest.raises(RuntimeError):
            mixit.run(run_config(out, *flags, *extra, "--resume", str(state)))
        monkeypatch.setattr(mixit, "train_step", real_step)
        assert torch.load(state, weights_only=True)["step"] == 30  # the last evaluation's
        cut = mixit.run(run_config(out, *flags, *extra, "--resume", str(state)))
        assert cut["resumed_at"] == [30] and same_run(whole, cut)
        assert len(out.read_text().splitlines()) == 2 and not state.exists()


def test_resume_refuses_the_state_of_another_run(tmp_path, capsys):
    """A saved state continues only the run that saved it: another --lr is a one-line error."""
    state = tmp_path / "state.pt"
    cfg = run_config("", *RESUME_RUN, "--steps", "60", "--resume", str(state))
    _, model, _, _, _ = mixit.build(cfg, verbose=False)
    runtime.save_checkpoint(str(state), model, cfg, step=30, gens=[torch.Generator().get_state()])
    line = assert_usage_error(SAFE + RESUME_RUN + ["--steps", "60", "--resume", str(state),
                                                   "--lr", "0.5", "--out", ""], capsys)
    assert "--lr" in line and state.exists()


def test_stopping_rule_stops_at_the_target_or_on_a_plateau_and_never_by_default():
    """--stop_acc stops at the first evaluation that reaches it; --patience K once the last K
    steps gained at most --min_delta (accuracy; lm: validation loss), not before --min_steps;
    with neither, nothing stops a run early."""
    curve = lambda *accs, loss=None: [{"step": 100 * i, "acc": a, "loss": (loss or [0] * len(accs))[i]}  # noqa: E731
                                      for i, a in enumerate(accs)]
    add, lm = SimpleTask("add"), SimpleTask("lm")
    cfg = lambda *f: make_config("--task", "add", *f)  # noqa: E731
    assert mixit.stop_reason(cfg(), curve(0.1, 1.0, 1.0), add) is None
    assert "stop_acc" in mixit.stop_reason(cfg("--stop_acc", "0.9"), curve(0.1, 0.95), add)
    assert mixit.stop_reason(cfg("--stop_acc", "0.9"), curve(0.1, 0.85), add) is None
    flat = cfg("--patience", "200", "--min_delta", "0.01")
    assert mixit.stop_reason(flat, curve(0.1, 0.5, 0.505, 0.508), add)  # +0.008 in 200 steps
    assert mixit.stop_reason(flat, curve(0.1, 0.5, 0.505, 0.52), add) is None
    assert mixit.stop_reason(cfg("--patience", "200", "--min_delta", "0.01", "--min_steps", "400"),
                             curve(0.1, 0.5, 0.505, 0.508), add) is None
    overfits = curve(0, 0, 0, 0, loss=[5.0, 2.0, 2.1, 2.3])  # lm: its best loss was 200 steps ago
    assert "validation loss" in mixit.stop_reason(cfg("--patience", "200"), overfits, lm)
    assert mixit.stop_reason(cfg("--patience", "300"), overfits, lm) is None


class SimpleTask:
    def __init__(self, name):
        self.name = name


def test_a_stopped_run_records_why_and_when(tmp_path):
    """A run that reaches --stop_acc ends there: its record's last evaluation is that step, its
    steps are the steps it trained, and "stop" says why; a run without the rule says it ran to
    --steps."""
    out = tmp_path / "runs.jsonl"
    rec = mixit.run(run_config(out, "--steps", "400", "--batch_size", "128", "--lr", "1e-2",
                               "--warmup", "20", "--eval_interval", "50", "--stop_acc", "0.6"))
    assert rec["stop"]["step"] == rec["steps"] == rec["history"][-1]["step"] < 400
    assert "stop_acc" in rec["stop"]["reason"] and rec["final"]["acc"] >= 0.6
    assert all(h["acc"] < 0.6 for h in rec["history"][:-1])
    assert mixit.run(run_config(out, "--steps", "4"))["stop"] == {"reason": "reached --steps", "step": 4}


@pytest.mark.parametrize("name", [n for n in tasks.TASKS if n not in ("modadd", "memorize", "lm", "classify")])
def test_resample_fills_every_row_from_the_training_side(name):
    """--resample: a batch has B rows, none on the test side of the split (so no test sequence
    is ever trained on) and every row has its scored positions; without it about a fifth of the
    rows are on the test side and carry no loss."""
    task = tasks.make_task(name, SMALL_SIZES[name], "cpu", 12345, 32)
    x, y, mask = task.get_batch(512, torch.Generator().manual_seed(0), resample=True)
    assert x.size(0) == 512 and not tasks.on_test_side(x).any() and mask.any(1).all()
    x, y, mask = task.get_batch(512, torch.Generator().manual_seed(0))
    assert 0.05 < tasks.on_test_side(x).float().mean() < 0.5 and not mask[tasks.on_test_side(x)].any()


def test_row_hash_is_the_polynomial_of_a_plain_python_loop():
    """The vectorised row hash (a weighted sum mod P) gives the values of the loop it replaced,
    h = (h * BASE + token) mod P column by column, on random rows of several lengths, tokens up
    to the largest int64 values included (no overflow in the sum)."""
    r = random.Random(0)
    for T in (1, 2, 7, 81, 300):
        for top in (2, 600, 2 ** 31, 2 ** 62):
            x = torch.tensor([[r.randrange(top) for _ in range(T)] for _ in range(5)])
            x[0, -1] = top - 1  # the largest token of this range
            expect = []
            for row in x.tolist():
                h = 0
                for token in row:
                    h = (h * tasks.HASH_BASE + token) % tasks.HASH_P
                expect.append(h)
            assert tasks._hash_rows(x).tolist() == expect, (T, top)


# sha256 of each task's test set (300 rows) followed by four batches of 97 drawn from seed 7,
# without and then with --resample: written by the samplers before they were vectorised (the row
# hash as a loop over columns, hop's and dyck's loops over positions). The same digests now say
# that the split and the CPU's data stream are unchanged, so the committed records rerun as they ran
STREAM_SHA256 = {
    ("add", 3): "c506521fe1075894", ("add", 10): "cb98cdae9f978df1",
    ("needle", 5): "a4c5b26e4d185b16", ("needle", 30): "501d1a662580683d",
    ("copy", 5): "ea9dfe182ad159d9", ("copy", 20): "7ca24cc10594abe4",
    ("induction", 10): "566b8e18ed3338d6", ("induction", 64): "660f1d70a4398401",
    ("hop", 2): "6d855449acee6b95", ("hop", 3): "0c75e50e05ebe007", ("hop", 16): "9023e36522259619",
    ("dyck", 3): "0bd0fb2b1ce0110f", ("dyck", 4): "923b2b7a32c78bdd", ("dyck", 10): "836cd02a4b1a6413",
    ("dyck", 30): "c486b92c30f268c2", ("dyck", 100): "6ae988f2e6d35e25",
    ("lm", 32): "982e11020e7aa5fa", ("modadd", 11): "61e8d6379d8c992f",
}


@pytest.mark.parametrize("name, size", list(STREAM_SHA256))
def test_test_sets_and_training_batches_are_the_ones_the_records_were_made_with(name, size):
    """Every task's test set and its training batches, with and without --resample, bit for bit
    what the per-position samplers drew (see STREAM_SHA256); lm's on any Python (corpus/)."""
    task = tasks.make_task(name, size, n_test=300)
    h = hashlib.sha256()
    for t in task.test:
        h.update(t.numpy().tobytes())
    for resample in (False, True):
        gen = torch.Generator().manual_seed(7)
        for _ in range(4):
            for t in task.get_batch(97, gen, resample=resample):
                h.update(t.numpy().tobytes())
    assert h.hexdigest()[:16] == STREAM_SHA256[name, size]


@pytest.mark.parametrize("name", ["add", "dyck", "hop", "memorize"])
def test_batches_drawn_many_at_a_time_follow_the_same_rules(name):
    """get_batches(n): n batches from one draw. One at a time it is get_batch's own stream; n at a
    time every batch has B rows, and with --resample none on the test side, each row scored."""
    task = small_task(name, n_test=32)
    one = task.get_batch(64, torch.Generator().manual_seed(3), resample=True)
    first = task.get_batches(1, 64, torch.Generator().manual_seed(3), resample=True)
    assert all(torch.equal(a, b[0]) for a, b in zip(one, first))
    x, y, mask = task.get_batches(8, 64, torch.Generator().manual_seed(3), resample=True)
    assert x.shape[:2] == y.shape[:2] == mask.shape[:2] == (8, 64)
    if task.train is None:
        assert not tasks.on_test_side(x.flatten(0, 1)).any() and mask.any(2).all()
        assert len({tuple(r) for r in rows(x.flatten(0, 1))}) > 64  # not one batch eight times


def test_the_lm_texts_are_the_shipped_ones_whatever_the_python(monkeypatch, tmp_path):
    """The default text and --data stdlib are corpus/'s bytes (made from Python 3.11.7, the quick
    records' Python), not this Python's: with another help text and another standard library in
    place, the texts, the lm task's windows and its record's digest stay the same. A damaged
    corpus file, or a missing one, is refused in one line."""
    import pydoc_data.topics
    import sysconfig
    help_text, stdlib = tasks.load_text(), tasks.load_text("stdlib")
    assert hashlib.sha256(help_text).hexdigest()[:16] == "37d06970fc926e60"  # 3.11.7's help text
    assert len(stdlib) > 10 * len(help_text) and b"def " in stdlib
    before = tasks.make_task("lm", 32, "cpu", 0, 8)
    monkeypatch.setattr(pydoc_data.topics, "topics", {"another": "Python's help text"})
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: {"stdlib": str(tmp_path)})
    (tmp_path / "os.py").write_text("another standard library")
    assert tasks.load_text() == help_text and tasks.load_text("stdlib") == stdlib
    after = tasks.make_task("lm", 32, "cpu", 0, 8)
    assert all(torch.equal(a, b) for a, b in zip(before.test, after.test))
    assert after.corpus_sha256 == before.corpus_sha256 == tasks.CORPORA[""][1]
    damaged = tmp_path / "corpus"
    damaged.mkdir()
    (damaged / "help.txt.xz").write_bytes(lzma.compress(help_text[:-1]))
    monkeypatch.setattr(tasks, "CORPUS", str(damaged))
    (damaged / "stdlib.txt.xz").write_bytes(b"not xz")
    for data in ("stdlib", "stdlib", ""):  # not xz, then missing, then another text
        with pytest.raises(tasks.UsageError, match="missing or not the shipped text"):
            tasks.load_text(data)
        (damaged / "stdlib.txt.xz").unlink(missing_ok=True)


def test_a_cell_never_pools_two_texts_and_reruns_a_record_of_another(tmp_path):
    """An lm record carries its text's sha256 and a --mixit_shipped one its sink's row 0. A cell
    keeps the records of one text, the shipped one's where it has any: a record made on another
    Python's help text (no digest, Python 3.12.3) or an earlier shipped sink (no sink_row0) is
    stale, shown ° only until the cell has a fresh record, and run_all.sh's queue reruns it.
    A record of Python 3.11.7 without a digest read the shipped bytes (corpus/README.md)."""
    import bench
    import records
    text = tmp_path / "text.txt"
    text.write_bytes(b"the quick brown fox jumps over the lazy dog. " * 100)
    out = tmp_path / "quick.jsonl"
    run = ("--task", "lm", "--task_size", "16", "--steps", "1", "--eval_size", "8", "--out", str(out))
    lm = mixit.run(make_config(*run, "--data", str(text), "--tag", "x/file/s0"))
    assert lm["corpus_sha256"] == hashlib.sha256(text.read_bytes()).hexdigest()
    mixit.run(make_config(*run, "--variant", "mixit", "--mixit_shipped", "--tag", "x/lm/shipped/s0"))
    shipped = json.loads(out.read_text().splitlines()[-1])
    assert shipped["sink_row0"] == 0.5 and shipped["corpus_sha256"] == tasks.CORPORA[""][1]
    assert not records.stale(shipped)

    def rec(tag, final, python="3.11.7", **extra):
        return {"config": {**shipped["config"], "tag": tag, "mixit_shipped": "shipped" in tag},
                "final": {"loss": final},
                "history": [], "python": python, **extra}
    sha = tasks.CORPORA[""][1]
    with open(out, "w") as f:
        for r in (rec("t2/lm/standard/s0", 2.0, "3.12.3"), rec("t2/lm/standard/s1", 1.0, corpus_sha256=sha),
                  rec("t2/lm/mixit/s0", 3.0, "3.12.3"), rec("t2/lm/mixit/s1", 3.0, "3.12.1"),
                  rec("t2/lm/random/s0", 4.0), rec("t2/lm/random/s1", 5.0, corpus_sha256=sha),
                  rec("x/lm/shipped/s0", 6.0, corpus_sha256=sha, sink_row0=1.0)):
            f.write(json.dumps(r) + "\n")
    cells = records.load(str(out))
    assert [r["final"]["loss"] for r in cells["t2/lm/standard"]] == [1.0]  # the fresh one only
    assert records.entry(cells, "t2/lm/standard", "loss") == "1.000 (n=1)"
    assert [r["final"]["loss"] for r in cells["t2/lm/mixit"]] == [3.0]  # two Pythons: not pooled
    assert records.entry(cells, "t2/lm/mixit", "loss") == "3.000 (n=1) °"
    assert records.entry(cells, "t2/lm/random", "loss") == "4.500 ± 0.707 (n=2)"  # 3.11.7: shipped
    assert records.entry(cells, "x/lm/shipped", "loss") == "6.000 (n=1) °"  # the sink's old row
    jobs = tmp_path / "jobs.txt"
    line = " ".join(a for a in run if a != str(out) and a != "--out")
    jobs.write_text(f"t2/lm/random/s1 {line}\nt2/lm/mixit/s1 {line}\n"
                    f"x/lm/shipped/s0 {line} --variant mixit --mixit_shipped\n")
    assert sorted(j.split()[0] for j in bench.todo(str(jobs), str(out))) == ["t2/lm/mixit/s1",
                                                                             "x/lm/shipped/s0"]


def test_qk_init_std_changes_only_the_query_and_key_weights():
    """--qk_init_std redraws W_Q, W_K at that scale; every other weight is bit-identical to the
    default model of the same seed (the knob must not shift the random stream of the rest)."""
    base = mixit.build(make_config("--variant", "frozen_qk", "--n_embd", "64"), verbose=False)[1]
    wide = mixit.build(make_config("--variant", "frozen_qk", "--n_embd", "64",
                                   "--qk_init_std", "0.3"), verbose=False)[1]
    wide_params = dict(wide.named_parameters())
    n_qk = 0
    for name, p in base.named_parameters():
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            n_qk += 1
            assert wide_params[name].std().item() == pytest.approx(0.3, rel=0.1), name
        else:
            assert torch.equal(p, wide_params[name]), name
    assert n_qk == 4  # 2 layers x (W_Q, W_K)


# -----------------------------------------------------------------------------
# Command line


def bad_input(case, flags, must_mention, bug=None):
    """One bad command line: its flags and a word the error line must contain. `bug` marks a
    case the code gets wrong today: a strict xfail, so the fix must also remove the mark (an
    unexpected pass is reported as a failure)."""
    marks = [pytest.mark.xfail(reason=bug, strict=True)] if bug else []
    return pytest.param(flags, must_mention, id=case, marks=marks)


BAD_INPUTS = [
    bad_input("unknown task", ["--task", "nosuchtask"], "nosuchtask"),
    bad_input("unknown variant", ["--variant", "nosuchvariant"], "nosuchvariant"),
    bad_input("unknown flag", ["--no_such_flag", "1"], "--no_such_flag"),
    bad_input("width not divisible by heads", ["--n_embd", "30", "--n_head", "4"], "divisible"),
    bad_input("block_size too short", ["--task", "add", "--task_size", "3", "--block_size", "5"],
              "block_size"),
    bad_input("negative steps", ["--steps", "-1"], "--steps"),
    bad_input("bad bool", ["--mixit_sink", "maybe"], "maybe"),
    bad_input("bad int", ["--n_layer", "two"], "two"),
    bad_input("bad dtype", ["--dtype", "float16"], "float16"),
    bad_input("bad compile", ["--compile", "cpu"], "--compile"),
    bad_input("missing lm data file", ["--task", "lm", "--data", "/no/such/file.txt"],
              "/no/such/file.txt"),
    bad_input("data for another task", ["--task", "add", "--data", "/no/such/file.txt"], "--data"),
    bad_input("unknown device", ["--device", "tpu"], "tpu"),
    bad_input("negative lr", ["--lr", "-1"], "lr"),
    bad_input("beta1 above 1", ["--beta1", "1.5"], "beta1"),
    bad_input("negative qk_init_std", ["--qk_init_std", "-0.1"], "qk_init_std"),
    bad_input("out is a directory", ["--out", HERE], "out"),
    bad_input("rope for mixit", ["--variant", "mixit", "--positions", "rope"], "rope"),
    bad_input("unknown activation", ["--mlp_act", "gelu"], "gelu"),
    bad_input("unknown part to freeze", ["--freeze", "q,zz"], "zz"),
    bad_input("part the model lacks", ["--variant", "mixit", "--freeze", "q"], "--freeze q"),
    bad_input("unfreeze with nothing frozen", ["--variant", "standard", "--steps", "10",
                                              "--unfreeze_at", "5"], "unfreeze_at"),
    bad_input("unfreeze after the end", ["--steps", "10", "--unfreeze_at", "10"], "unfreeze_at"),
    bad_input("out cannot be created", ["--out", "/proc/x/y.jsonl"], "/proc/x/y.jsonl"),
    bad_input("infinite lr", ["--lr", "inf"], "lr"),
    bad_input("no test set", ["--eval_size", "0"], "eval_size"),
    bad_input("copy too long", ["--task", "copy", "--task_size", "5000"], "copy"),
    bad_input("induction too short", ["--task", "induction", "--task_size", "2"], "4..1024"),
    bad_input("dyck too small to split", ["--task", "dyck", "--task_size", "2"], "3..256"),
    bad_input("seed beyond torch's range", ["--seed", "99999999999999999999"], "--seed"),
    bad_input("MixiT scaled to zero", ["--variant", "mixit", "--mixit_mult", "0"], "mixit_mult"),
    bad_input("a batch no machine holds", ["--batch_size", "100000000"], "GiB"),
    bad_input("zero heads", ["--n_head", "0"], "--n_head"),
]


@pytest.mark.parametrize("flags, must_mention", BAD_INPUTS)
def test_bad_command_line_is_a_one_line_error(flags, must_mention, capsys):
    """Each bad input exits with status 2 and one 'error: ...' line naming the problem."""
    line = assert_usage_error(SAFE + flags, capsys)
    assert must_mention in line


def test_a_loss_that_turns_nan_stops_the_run_naming_the_step(tmp_path, capsys):
    """A learning rate that blows the loss up stops the run at the next log line with a one-line
    error naming the first bad step; no record is appended."""
    out = tmp_path / "runs.jsonl"
    line = assert_usage_error(BASE_FLAGS + ["--task", "add", "--task_size", "3", "--lr", "1e6",
                                            "--steps", "40", "--log_interval", "20",
                                            "--out", str(out)], capsys)
    assert "nan or inf at step" in line and not out.exists()


def test_a_first_batch_without_scored_positions_is_refused(capsys):
    """With copy-1 and batch 1, some seeds draw a first row on the test side of the split: that
    run would train on nothing, so it stops at once with a one-line error."""
    task = tasks.make_task("copy", 1, "cpu", 12345, 64)
    seed = next(s for s in range(100)
                if not task.get_batch(1, torch.Generator().manual_seed(s))[2].any())
    line = assert_usage_error(SAFE + ["--task", "copy", "--task_size", "1", "--batch_size", "1",
                                      "--steps", "5", "--seed", str(seed), "--data_seed",
                                      "12345"], capsys)
    assert "no scored position" in line


@pytest.fixture(scope="module")
def script_help():
    """`python mixit.py --help`, run once for the tests that read it."""
    return subprocess.run([sys.executable, "mixit.py", "--help"], cwd=HERE,
                          capture_output=True, text=True, timeout=120)


def test_help_lists_every_config_field(script_help):
    """`python mixit.py --help` exits 0 and documents every Config field as a flag."""
    result = script_help
    assert result.returncode == 0, result.stderr
    for field in dataclasses.fields(mixit.Config):
        assert f"--{field.name}" in result.stdout


def test_help_lists_the_papers_flags_first_then_the_reference_stopping_and_machinery(script_help):
    """--help lists the flags in four groups (Config's group metadata): the paper's run first
    (variant, task, sizes, learning rate, steps), then MixiT as the reference code ships it, then
    stopping, then the machinery."""
    text = script_help.stdout
    order = ["\nthe paper's run:\n", "--task", "--variant", "--n_embd", "--steps", "--lr",
             "\nas the reference code ships it:\n", "--mixit_shipped", "--mixit_mult", "--residual",
             "\nstopping:\n", "--patience", "--restart", "\nmachinery:\n", "--unfreeze_at",
             "--val_size", "--cuda_graphs"]
    order = [s if s.startswith("\n") else f"\n  {s} " for s in order]  # a heading, a flag's entry
    assert all(text.count(s) == 1 for s in order), [s for s in order if text.count(s) != 1]
    assert [text.index(s) for s in order] == sorted(text.index(s) for s in order)


def test_script_reports_bad_flags_on_one_line():
    """Run as a script, a bad flag exits with status 2 and one error line, no traceback."""
    result = subprocess.run([sys.executable, "mixit.py", "--no_such_flag", "1"], cwd=HERE,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_help_names_each_flags_value_and_default(script_help):
    """`python mixit.py --help` shows what each flag takes, in the usage line and in the list
    (--n_embd INT, --causal [BOOL]: a bare --causal means true), and each flag's default."""
    result = script_help
    usage, listing = result.stdout.split("\n\n")[0], result.stdout.split("options:\n")[1]
    entries = {}  # flag -> its entry in the list, its lines joined
    for line in listing.splitlines():
        if line.startswith("  --"):
            flag = line.split()[0]
            entries[flag] = line.strip()
        elif line.startswith("   ") and entries:
            entries[flag] += " " + line.strip()
    for f in dataclasses.fields(mixit.Config):
        kind = {bool: "[BOOL]", int: "INT", float: "FLOAT", str: "TEXT"}[type(f.default)]
        assert f"[--{f.name} {kind}]" in " ".join(usage.split()), f.name
        default = str(f.default).lower() if isinstance(f.default, bool) else f.default
        assert entries[f"--{f.name}"].startswith(f"--{f.name} {kind} ")
        assert entries[f"--{f.name}"].endswith(f"(default: {default if default != '' else repr('')})")


def test_a_run_opens_with_its_settings_in_a_few_short_lines(tmp_path, capsys, monkeypatch):
    """A run opens with its settings in a few lines a person reads (task, model, training,
    testing), not the whole config as one long JSON line: every other setting that is not its
    default follows as the flag that gives it, so those flags read back give the same settings.
    The record keeps the whole config."""
    monkeypatch.chdir(tmp_path)  # a short --out path, as a run's usually is
    out = tmp_path / "runs.jsonl"
    cfg = make_config("--task", "add", "--task_size", "3", "--steps", "0", "--tag", "a b/c",
                      "--resample", "--stop_acc", "0.9", "--qk_init_std", "0.02", "--out", out.name)
    mixit.run(cfg)
    printed = capsys.readouterr().out.splitlines()
    opening = printed[:next(i for i, line in enumerate(printed) if line.startswith("step "))]
    assert len(opening) <= 7 and max(map(len, opening)) <= 150, opening
    text = "\n".join(opening)
    for shown in ("3-digit addition", "2 layers, 4 heads, width 32", "0 steps of 128 sequences",
                  "64 held-out sequences", "runs.jsonl"):
        assert shown in text, (shown, text)
    [other] = [line.split("other settings: ", 1)[1] for line in opening if "other settings: " in line]
    assert mixit.parse_args(shlex.split(other)) == {
        "tag": "a b/c", "resample": True, "stop_acc": 0.9, "qk_init_std": 0.02, "examples": 0}
    assert json.loads(out.read_text())["config"] == dataclasses.asdict(cfg)


def test_flags_reach_the_config():
    """Given flags override the task's recipe and the defaults, with the right types."""
    cfg = make_config("--task", "add", "--lr", "0.5", "--steps", "7", "--mixit_sink", "off")
    assert cfg.task == "add" and cfg.lr == 0.5 and cfg.steps == 7 and cfg.mixit_sink is False
    assert make_config("--task", "add").steps == tasks.TASKS["add"][4]["steps"]


# -----------------------------------------------------------------------------
# Learning-rate schedule


def test_learning_rate_warms_up_linearly_then_decays_to_zero():
    """get_lr: linear warm-up to the peak lr, never above it, then down to about 0 at the end."""
    cfg = make_config("--lr", "0.01", "--warmup", "10", "--steps", "100")
    lrs = [mixit.get_lr(step, cfg) for step in range(100)]
    warmup = lrs[:10]
    steps_up = [b - a for a, b in zip(warmup, warmup[1:])]
    assert all(d > 0 for d in steps_up)
    assert max(steps_up) == pytest.approx(min(steps_up))  # a straight line
    assert max(lrs) == pytest.approx(0.01)
    assert lrs[9] == pytest.approx(0.01)  # the peak is reached when the warm-up ends
    decay = lrs[10:]
    assert all(b <= a for a, b in zip(decay, decay[1:]))
    assert lrs[-1] < 0.01 * 0.01
    assert mixit.get_lr(100, cfg) == pytest.approx(0.0, abs=1e-12)
    assert min(lrs) >= 0


# -----------------------------------------------------------------------------
# Tables: report.py renders them from the run records


def test_report_py_refuses_a_bad_argument_in_one_line(monkeypatch, capsys):
    """A bad value or an unknown flag: one line "error: ..." on stderr, exit status 2."""
    import report
    for argv in (["--scale", "bad"], ["--bogus"]):
        monkeypatch.setattr(sys, "argv", ["report.py", *argv])
        with pytest.raises(SystemExit) as e:
            report.main()
        out, err = capsys.readouterr()
        assert e.value.code == 2 and out == "" and len(err.splitlines()) == 1, (argv, err)
        assert err.startswith("error: ") and argv[-1] in err


def test_report_renders_tables_from_the_records(tmp_path):
    """Two seeds of a cell become 'mean ± std (n=2) [paper]'; a 2-layer Table 3 add run also
    fills Table 6's 2-layer cell, and Random at another lr has its own Table 6 row."""
    import report

    def record(tag, acc, history, n_layer=2):
        return {"config": {"tag": tag, "task": tag.split("/")[1], "task_size": 6,
                           "data_seed": 0, "eval_size": 64, "n_layer": n_layer, "n_head": 4,
                           "eval_interval": 200},
                "final": {"acc": acc, "token_cov": 0.5}, "n_trainable": 10,
                "history": [{"step": s, "train_s": t, "acc": a} for s, t, a in history],
                "wall_s": 60}

    path = tmp_path / "quick.jsonl"
    with open(path, "w") as f:
        for r in (record("t1/needle/standard/s0", 1.0, [(0, 0, 0.1), (200, 21.4, 0.995)]),
                  record("t1/needle/standard/s1", 0.9, [(0, 0, 0.1), (200, 20, 0.9)]),
                  record("t3/add/mixit/s0", 0.45, [(0, 0, 0.1), (1000, 80, 0.45)]),
                  record("t6/add/random-lr1e-2-L4/s0", 0.25, [(0, 0, 0.1), (1000, 80, 0.25)], 4)):
            f.write(json.dumps(r) + "\n")
    cells = report.load(str(path))
    assert [r["config"]["tag"] for r in cells["t6/add/mixit-L2"]] == ["t3/add/mixit/s0"]
    md = report.render(cells, "quick")
    needle_row = next(line for line in md.splitlines() if line.startswith("| Standard | 95.0"))
    assert needle_row.startswith("| Standard | 95.0 ± 7.1 (n=2) [100] |")
    assert "| MixiT | accuracy % | 45.0 (n=1) | – |" in md
    assert "| Random, lr 1e-2 | accuracy % | – | 25.0 (n=1) |" in md  # claim 6 at the reference's lr
    floor_row = next(line for line in md.splitlines() if line.startswith(f"| {report.FLOOR} |"))
    assert "(current token + position)" in floor_row or "(majority per position)" in floor_row


def test_about_equal_needs_close_means_and_tight_cells_so_noise_cannot_pass():
    """same(): two cells are equal when their means lie within 5 points over the spread, at every
    point of their mean ± std (True); not equal when at none (False); open (None) where the
    spread straddles the 5-point line. Widening a cell's spread around the same means can only
    turn a pass into an open test, never a fail into a pass. differ() keeps its meaning for the
    'beyond the spread' links of claims 4-6."""
    import records
    import report
    tight = [0.94, 0.95, 0.96]
    assert report.same([0.96, 0.97, 0.98], tight) is True  # 2 points apart, stds 1: at most 4
    assert report.same([0.80, 0.81, 0.82], tight) is False  # 14 points apart
    assert report.same([0.80, 0.98, 1.0], tight) is None  # mean 92.7, but one cell is noisy
    assert report.same([0.70, 0.98, 1.0], tight) is None  # noisier still: still no pass
    assert records.differ([0.50, 0.70, 0.60], [0.62, 0.64, 0.66]) is False
    assert records.differ([0.50, 0.52, 0.51], [0.90, 0.92, 0.91]) is True
    assert records.differ([], [0.5]) is None

    def cells(mixit_accs):
        c = {}
        for cell in ("t3/add", "t3/modadd", "t3/dyck"):
            c[f"{cell}/standard"] = [{"final": {"acc": a}} for a in (0.98, 0.99, 1.0)]
            c[f"{cell}/mixit"] = [{"final": {"acc": a}} for a in mixit_accs]
        # memorize (Table 4's cells) doubled, 1200 steps moving nothing: read at 600, five seeds
        for v, accs in (("standard", (0.98, 0.99, 1.0)), ("mixit", mixit_accs)):
            for rung, steps, n in (("", 600, 5), ("-steps1200", 1200, 3)):
                c[f"t4/memorize/{v}{rung}"] = [
                    {"config": {"tag": f"t4/memorize/{v}{rung}/s{i}", "steps": steps, "task_size": 8},
                     "final": {"acc": a}} for i, a in enumerate((accs + accs)[:n])]
        return c
    verdict = lambda md: next(l for l in md.splitlines() if l.startswith("| 3. MixiT")).split(" | ")[3]  # noqa: E731
    assert verdict(report.verdicts(cells((0.985, 0.99, 0.995)))) == "reproduced"
    assert verdict(report.verdicts(cells((0.40, 0.42, 0.41)))) == "not reproduced"
    # mean 93, std 3.6: the spread straddles the 5-point line on each task, so noise decides
    assert verdict(report.verdicts(cells((0.90, 0.92, 0.97)))) == "inconclusive: at the threshold"


def test_no_verdict_rests_on_an_unstable_cell():
    """A cell whose seeds lie more than 10 points apart is marked † in the claims table, and the
    row that reads it says 'inconclusive: seeds disagree' whatever its mean: claim 2 with
    induction at 96.8, 84.2 and 94.2 (mean 91.7, over the 90% bar) is not 'reproduced'. A
    longer run of that cell
    (c2/induction, `run_all.sh --claims`) that is stable replaces it and settles the row."""
    import records
    import report
    runs = lambda *accs: [{"final": {"acc": a}} for a in accs]  # noqa: E731
    cells = {f"t1/{t}/frozen_qk": runs(1.0, 1.0, 0.99) for t in ("needle", "induction", "copy", "hop")}
    cells["t1/induction/frozen_qk"] = runs(0.968, 0.842, 0.942)
    row = lambda md: next(l for l in md.splitlines() if l.startswith("| 2. "))  # noqa: E731
    r2 = row(report.verdicts(cells))
    verdict = r2.split(" | ")[3]
    assert "induction 91.7 ± 6.7 †" in r2 and verdict == records.SEEDS_DISAGREE
    assert r2.endswith(f"| {records.SEEDS_DISAGREE} |")  # at the shared lr too: no sweep ran
    cells["c2/induction/frozen_qk"] = runs(1.0, 0.998, 1.0)
    r2 = row(report.verdicts(cells))
    assert "induction (Table 11) 99.9 ± 0.1" in r2 and r2.split(" | ")[3] == records.REPRODUCED


def test_table_5s_64_head_cell_is_table_6s_2_layer_mixit_where_that_has_64_heads(tmp_path):
    """One configuration, one run: where Table 6's MixiT has 64 heads (the paper scale), Table 5's
    64-head cell reads Table 6's 2-layer MixiT, and a t5/add/heads64 record of another recipe
    beside it is not read; where Table 6's MixiT has 4 heads (the quick scale), Table 5 keeps its
    own cell. Claim 3 reads that 64-head cell on add where Table 11 has none."""
    import report
    def rec(tag, acc, **config):
        return json.dumps({"config": {"tag": tag, "n_head": 4, "n_layer": 2, **config},
                           "final": {"acc": acc}, "history": []})
    paper, quick = tmp_path / "paper.jsonl", tmp_path / "quick.jsonl"
    t6 = [f"t6/add/mixit-L2/s{i}" for i in range(3)]
    paper.write_text("\n".join(
        [rec("t5/add/heads64/s0", 0.4, n_head=64, steps=10000)]
        + [rec(tag, 1.0, n_head=64, steps=20000) for tag in t6]
        + [rec(f"t3/add/{v}/s{i}", a) for v, a in (("mixit", 0.3), ("standard", 1.0)) for i in range(3)]))
    cells = report.load(str(paper))
    assert [r["config"]["tag"] for r in cells["t5/add/heads64"]] == t6
    row = next(l for l in report.verdicts(cells).splitlines() if l.startswith("| 3. "))
    assert "add (MixiT 64 heads) 100.0 ± 0.0 vs 100.0 ± 0.0" in row, row
    quick.write_text("\n".join([rec(f"t5/add/heads64/s{i}", 0.9, n_head=64) for i in range(3)]
                               + [rec(f"t3/add/mixit/s{i}", 0.3) for i in range(3)]))
    cells = report.load(str(quick))  # Table 6's 2-layer MixiT borrows Table 3's 4-head cell
    assert [r["final"]["acc"] for r in cells["t5/add/heads64"]] == [0.9] * 3


def test_table_11_shows_a_doubled_copy_cell_once_where_its_ladder_stands(tmp_path):
    """Row 1c's copies are doubled (c1/copy16/standard-steps4000 beside c1/copy16/standard): Table
    11 gives the cell one row, at the largest budget all of whose seeds have run until a doubling
    settles, and renders
    while a doubling is under way (it once stopped with a KeyError on the rung's name)."""
    import report
    def rec(tag, acc, steps):
        return json.dumps({"config": {"tag": tag, "n_head": 4, "n_layer": 2, "steps": steps},
                           "steps": steps, "final": {"acc": acc}, "history": []})
    path = tmp_path / "quick.jsonl"
    lines = [rec(f"c1/copy16/standard/s{i}", 0.5, 2000) for i in range(3)]
    lines.append(rec("c1/copy16/standard-steps4000/s0", 0.9, 4000))  # the next rung, one seed in
    path.write_text("\n".join(lines))
    rows = [r[0] for r in report.plateau_rows(report.load(str(path)))]
    assert [r for r in rows if "copy16" in r] == ["Standard (copy16, 2000 steps)"], rows
    path.write_text("\n".join(lines + [rec(f"c1/copy16/standard-steps4000/s{i}", 0.9, 4000)
                                       for i in (1, 2)]))  # that doubling moved: not yet read
    rows = [r[0] for r in report.plateau_rows(report.load(str(path)))]
    assert [r for r in rows if "copy16" in r] == ["Standard (copy16, 4000 steps)"], rows


def test_a_ladders_base_with_extra_seeds_is_not_its_cap():
    """capacity_cell reads a ladder at its cap only where the cap is a doubled budget: a base that
    holds READ_SEEDS seeds while its first doubling has one seed is 'not settled' (False), not
    'at its cap, not converged'; a last rung with READ_SEEDS seeds is the cap."""
    import records
    def runs(cell, accs):
        return [{"config": {"tag": f"{cell}/s{i}", "steps": 1}, "final": {"acc": a}, "history": []}
                for i, a in enumerate(accs)]
    cells = {"t5/add/heads8": runs("t5/add/heads8", [0.64, 0.46, 0.46, 0.45, 0.62]),
             "t5/add/heads8-steps8000": runs("t5/add/heads8-steps8000", [0.47])}
    assert records.capacity_cell(cells, "t5/add/heads8") == ("t5/add/heads8", False)
    cells["t5/add/heads8-steps8000"] = runs("t5/add/heads8-steps8000", [0.2, 0.5, 0.8, 0.3, 0.9])
    assert records.capacity_cell(cells, "t5/add/heads8") == ("t5/add/heads8-steps8000", records.CAP)


def test_report_skips_a_broken_record_line_and_names_it(tmp_path, capsys):
    """A run killed while writing leaves half a line: report.py names the file and the line on
    stderr and renders the other records, instead of stopping with a traceback."""
    import report
    path = tmp_path / "quick.jsonl"
    good = json.dumps({"config": {"tag": "t1/needle/mixit/s0"}, "final": {"acc": 0.5}})
    path.write_text(good + "\n" + good[:30] + "\n\n" + '{"no": "config"}\n' + good.replace("s0", "s1") + "\n")
    cells = report.load(str(path))
    assert [r["config"]["tag"] for r in cells["t1/needle/mixit"]] == ["t1/needle/mixit/s0", "t1/needle/mixit/s1"]
    err = capsys.readouterr().err
    assert f"{path} line 2 skipped" in err and f"{path} line 4 skipped" in err


def test_marked_numbers_in_prose_come_from_the_records(tmp_path, monkeypatch):
    """A number in a document's template is a marker naming its records; fill_numbers() renders
    it (mean ± std, mean, each seed, a range, a count of runs, an accuracy at a step,
    several cells at once; a rerun's latest record only, unless [KEY=VALUE] names the earlier
    recipe), and a marker whose records are
    missing is reported, not guessed. A rendered accuracy keeps its cell's marks (issue 63): †
    where its seeds lie more than records.UNSTABLE points apart, ° where a run is of an earlier
    recipe."""
    import report
    monkeypatch.chdir(tmp_path)
    os.makedirs("results")
    with open("results/quick.jsonl", "w") as f:
        for i, a in enumerate((0.5, 0.7)):
            f.write(json.dumps({"config": {"tag": f"t1/copy/mixit/s{i}", "steps": 400}, "wall_s": 90,
                                "final": {"acc": a, "loss": 1.23456},
                                "history": [{"step": 200, "acc": a / 2}, {"step": 400, "acc": a}]}) + "\n")
        for a, lr in ((0.2, 1e-3), (0.9, 3e-4)):  # a rerun supersedes the earlier record of its tag
            f.write(json.dumps({"config": {"tag": "t3/add/mixit/s0", "lr": lr}, "final": {"acc": a},
                                "history": []}) + "\n")
        f.write(json.dumps({"config": {"tag": "t7/bench/s0"}, "bench": [
            {"variant": "standard", "ms_per_step": 200.0, "samples_per_s": 100.0},
            {"variant": "mixit", "ms_per_step": 160.0, "samples_per_s": 125.0}]}) + "\n")
    m = lambda spec: f"<!--= {spec} -->"  # noqa: E731
    doc = " | ".join([m("quick t1/copy/mixit acc"), m("quick t1/copy/mixit acc mean:0"),
                      m("quick t1/copy/mixit acc seeds"), m("quick t1/copy/mixit acc range"),
                      m("quick t1/copy/mixit loss"), m("quick t1/* runs"), m("quick t1/* minutes"),
                      m("quick t1/copy/mixit/s1 acc@200"), m("quick t1/copy/mixit,t3/add/mixit acc mean"),
                      m("quick t1/copy/mixit steps range"), m("quick t1/copy/mixit reached:60 seeds"),
                      m("quick t7/bench speedup:mixit"), m("quick t7/bench ms:mixit"),
                      m("quick t7/bench samples:standard"), m("quick t3/add/mixit acc"),
                      # [KEY=VALUE]: the runs of that config, superseded ones too (1e-3 = 0.001)
                      m("quick t3/add/mixit[lr=1e-3] acc"), m("quick t3/add/mixit[lr=3e-4&tag=t3/add/mixit/s0] acc"),
                      # a,!c: a's runs but c's (by tag or cell)
                      m("quick t*,!t7/* runs"), m("quick t*,!t1/copy/mixit/s0,!t7/* runs"),
                      # n: the runs the mean pools, a rerun's earlier record where a selection keeps it
                      m("quick t1/copy/mixit acc n"), m("quick t3/add/mixit acc n"),
                      m("quick t3/add/mixit[tag=t3/add/mixit/s0] acc"),
                      m("quick t3/add/mixit[tag=t3/add/mixit/s0] acc n")])
    values = ["60.0 ± 14.1 †", "60 †", "50.0, 70.0 †", "50.0-70.0 †", "1.235 ± 0.000", "2", "3",
              "35.0", "70.0 †", "400", "not reached, 400", "25.0", "160", "100", "90.0", "20.0",
              "90.0", "3", "2", "2", "1", "55.0 ± 49.5 †", "2"]
    problems = []
    assert report.fill_numbers(doc, problems) == " | ".join(values) and not problems
    assert report.fill_numbers(m("quick t9/none acc"), problems) == m("quick t9/none acc")
    assert len(problems) == 1 and "no record" in problems[0] and "t9/none" in problems[0]


def test_check_fails_on_a_stale_number_and_passes_once_rendered(tmp_path, monkeypatch, capsys):
    """`report.py --check` renders every document from its template and the records, in memory,
    and compares: a number edited by hand in a document fails it, as does a template's marker
    that nothing renders (a block, or a number whose records are missing, named); rendering
    mends what the records can. A rendered document holds no marker, only a first line naming
    its template."""
    import figures
    import report
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(report, "DOCS", {"README.md": "templates/README.md",
                                         "results/FINDINGS.md": "templates/FINDINGS.md"})
    os.makedirs("results")
    os.makedirs("templates")
    for setting in figures.INIT_SETTINGS:  # the numbers at init, kept (not recomputed by --check)
        shutil.copy(os.path.join(HERE, setting[5]), "results")
    with open("results/quick.jsonl", "w") as f:
        f.write(json.dumps({"config": {"tag": "t3/add/mixit/s0", "task": "add", "task_size": 3,
                                       "data_seed": 0, "eval_size": 64, "n_layer": 2,
                                       "variant": "mixit", "n_head": 4, "n_embd": 64, "lr": 1e-3},
                            "final": {"acc": 0.9, "token_cov": 0.1}, "history": [{"step": 0, "train_s": 0, "acc": 0.9}], "wall_s": 60}) + "\n")
    with open("templates/README.md", "w") as f:
        f.write("MixiT adds <!--= quick t3/add/mixit acc -->%.\n<!-- quick-glance -->\n")
    with open("templates/FINDINGS.md", "w") as f:
        f.write("## Claim 3\n<!-- quick: Table 3 -->\nThe end.\n")
    for scale in ("quick", "paper"):  # as `python report.py --scale S` renders (and draws)
        for path, text in report.render_all(scale).items():
            with open(path, "w") as f:
                f.write(text)
    readme = open("README.md").read()
    assert readme.startswith("<!-- Rendered from templates/README.md by report.py: edit that "
                             "file, then run python report.py -->\nMixiT adds 90.0%.\n")
    placed = open("results/FINDINGS.md").read().split("\n", 1)[1]
    assert placed.startswith("## Claim 3\n**Table 3.") and "| MixiT | 90.0 (n=1)" in placed
    assert placed.endswith("\nThe end.\n") and "**Table 1." not in placed
    for text in (readme.split("\n", 1)[1], placed):
        assert "<!--" not in text
    assert report.check()
    with open("README.md", "w") as f:  # a digit changed by hand
        f.write(readme.replace("90.0%", "95.0%"))
    assert not report.check() and "README.md: differs" in capsys.readouterr().out
    with open("README.md", "w") as f:  # rendered again
        f.write(report.render_all("quick", draw=False)["README.md"])
    assert report.check()
    with open("templates/README.md", "a") as f:  # markers nothing renders
        f.write("<!-- quick: Table 99 -->\nMixiT <!--= quick t9/none acc -->.\n")
    assert not report.check()
    out = capsys.readouterr().out
    assert "templates/README.md: nothing renders the block '<!-- quick: Table 99 -->'" in out
    assert "templates/README.md: 'quick t9/none acc': no record" in out


def test_words_of_comparison_are_rendered_by_the_spread_rule_so_check_catches_a_planted_one(tmp_path, monkeypatch):
    """A marked comparison (`vs:`, `share:`) is rendered from the records by the rule the
    verdicts use: beyond both cells' spread is above or below, inside it is within the spread,
    one run a side says n = 1. A sentence that says more than its records ("above" where the
    cells overlap) is rewritten, so `report.py --check` fails on it, as on a stale number."""
    import report
    monkeypatch.chdir(tmp_path)
    os.makedirs("results")

    def run(tag, acc):
        return {"config": {"tag": tag}, "final": {"acc": acc}}
    records = [run(f"x/high/s{i}", a) for i, a in enumerate([0.90, 0.91, 0.92])]
    records += [run(f"x/low/s{i}", a) for i, a in enumerate([0.50, 0.52, 0.51])]
    records += [run(f"x/wide/s{i}", a) for i, a in enumerate([0.80, 0.99, 0.90])]
    records += [run("x/one/s0", 0.6)]
    with open("results/extra.jsonl", "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    word = lambda spec: report.fill_numbers(f"<!--= extra {spec} -->")  # noqa: E731
    assert word("x/high acc vs:x/low") == "above" and word("x/low acc vs:x/high") == "below"
    assert word("x/wide acc vs:x/high") == "within the spread of"  # 0.897 ± 0.095 against 0.91
    assert word("x/one acc vs:x/low") == "above (n = 1)"
    # a share is judged over the spread (issue 63): a word only where every end of it earns one
    assert word("x/low acc share:x/low,x/high") == "0% (-5 to 5% over the spread: no one word)"
    assert word("x/wide acc share:x/low,x/high") == "97% (70 to 124% over the spread: no one word)"
    assert word("x/high acc share:x/low,x/high") == "100% (95 to 105% over the spread: no one word)"
    template, problems = "Wide is <!--= extra x/wide acc vs:x/high --> high.\n", []
    rendered = report.fill_numbers(template, problems)
    assert rendered == "Wide is within the spread of high.\n" and not problems
    planted = rendered.replace("within the spread of", "above")  # --check compares these two
    assert planted != rendered


def ladder_cells(**budgets):
    """Made-up capacity cells: ladder_cells(s6000=[accs], s12000=[...]) -> {cell: records}, the
    first budget the base cell x/mem, the others x/mem-steps<N> (as run_all.sh names them)."""
    cells = {}
    for i, (key, accs) in enumerate(budgets.items()):
        steps = int(key[1:])
        cell = "c4/memorize/mixit" + (f"-steps{steps}" if i else "")
        cells[cell] = [{"config": {"tag": f"{cell}/s{s}", "steps": steps, "task_size": 128},
                        "final": {"acc": a, "bits_per_param": 10 * a}} for s, a in enumerate(accs)]
    return cells


def test_doubling_reads_a_cell_only_at_a_budget_that_doubling_no_longer_moves():
    """Issue 65: a capacity cell is read at budget B only where the same cell at 2B (a run of its
    own) moves its mean by less than the larger spread (or records.SETTLED points). A cell still
    moving is doubled again, a † side settles nothing, and the next budget waits for the seeds of
    the one below; five seeds run at the budget read, three at each other."""
    import records
    base, ladder = "c4/memorize/mixit", [6000, 12000, 24000, 48000]

    def wanted(cells):
        return [(b, s) for b in ladder for s in range(5)
                if records.budget_wanted(cells, base, ladder, b, s)]
    seeds3 = lambda b: [(b, s) for s in range(3)]  # noqa: E731
    # nothing ran: the first budget's three seeds
    assert wanted({}) == seeds3(6000)
    # the first budget ran: its doubling runs, nothing beyond
    moving = ladder_cells(s6000=[0.14, 0.15, 0.13])
    assert wanted(moving) == seeds3(6000) + seeds3(12000)
    # doubling moved it by 4.3 points against spreads of 1 and 0.5: double again
    moving = ladder_cells(s6000=[0.14, 0.15, 0.13], s12000=[0.18, 0.19, 0.185])
    assert records.doubling(records.final(moving, base), records.final(moving, base + "-steps12000")) == "moved"
    assert records.read_budget(moving, base) is None
    assert records.capacity_cell(moving, base) == (base + "-steps12000", False)
    assert wanted(moving) == seeds3(6000) + seeds3(12000) + seeds3(24000)
    # a doubling whose seeds have not all finished: the next budget waits for them
    waiting = ladder_cells(s6000=[0.14, 0.15, 0.13], s12000=[0.18, 0.19])
    assert wanted(waiting) == seeds3(6000) + seeds3(12000)
    # settled: 12000 -> 24000 moved 0.3 points, inside the 1-point tolerance: read at 12000,
    # with five seeds there, and no 48000
    settled = ladder_cells(s6000=[0.14, 0.15, 0.13], s12000=[0.180, 0.190, 0.185],
                           s24000=[0.186, 0.190, 0.188])
    assert records.read_budget(settled, base) == (base + "-steps12000", 12000)
    assert records.capacity_cell(settled, base) == (base + "-steps12000", True)
    assert wanted(settled) == (seeds3(6000) + [(12000, s) for s in range(5)] + seeds3(24000))
    # a doubling compares the seeds both budgets ran: a fourth seed at 24000 (there only) that
    # pulls its mean within the spread of 12000's settles nothing, and 24000's seeds still run
    fourth = ladder_cells(s6000=[0.14, 0.15, 0.13], s12000=[0.180, 0.190, 0.185],
                          s24000=[0.200, 0.205, 0.210, 0.170])
    low, high = base + "-steps12000", base + "-steps24000"
    assert records.doubling(records.final(fourth, low), records.final(fourth, high)) == "settled"
    assert records.paired(fourth, low, high) == ([0.180, 0.190, 0.185], [0.200, 0.205, 0.210])
    assert records.doubling(*records.paired(fourth, low, high)) == "moved"
    assert records.read_budget(fourth, base) is None and (48000, 0) in wanted(fourth)
    # a spread wider than the move settles it too; a move wider than both spreads does not
    wide = ladder_cells(s6000=[0.10, 0.14, 0.18], s12000=[0.13, 0.17, 0.15])
    assert records.doubling(*[records.final(wide, c) for c in wide]) == "settled"
    # noisy: seeds more than records.UNSTABLE points apart settle nothing: double again
    noisy = ladder_cells(s6000=[0.10, 0.30, 0.20], s12000=[0.12, 0.30, 0.21])
    assert records.doubling(*[records.final(noisy, c) for c in noisy]) == "noisy"
    assert records.read_budget(noisy, base) is None and (24000, 0) in wanted(noisy)


def sweep_cells(base="t1/needle/mixit", shared=3e-3, task="needle", **grid):
    """Made-up records of a learning-rate sweep: {cell: records}, the cell itself at its shared lr
    (test scores only) and CELL-lr<LR> for each grid entry lr<LR>=[each seed's (val, test)]."""
    def rec(tag, lr, val, test):
        r = {"config": {"tag": tag, "task": task, "lr": lr}, "final": {"acc": test, "loss": 1 - test}}
        return {**r, "val": {"acc": val, "loss": 1 - val}} if val is not None else r
    cells = {base: [rec(f"{base}/s{s}", shared, None, 0.5) for s in range(3)]}
    for key, seeds in grid.items():
        lr = float(key[2:].replace("_", "-"))
        cells[f"{base}-{key.replace('_', '-')}"] = [rec(f"{base}-{key.replace('_', '-')}/s{s}", lr, v, t)
                                                   for s, (v, t) in enumerate(seeds)]
    return cells


def test_a_validation_set_shares_no_sequence_with_the_test_set_and_leaves_it_as_it_was():
    """--val_size (tasks.with_validation): sampled tasks draw it on the training side of the hash
    split from a generator of their own, so the test set is the same tensor as without it;
    modadd and lm hold it out of their training side, which then no longer holds it."""
    for name, size in (("needle", 6), ("dyck", 10), ("add", 4)):
        plain, with_val = tasks.make_task(name, size, n_test=300), tasks.make_task(name, size, n_test=300, n_val=200)
        assert all(torch.equal(a, b) for a, b in zip(plain.test, with_val.test))
        assert with_val.val[0].shape[0] == 200 and not tasks.on_test_side(with_val.val[0]).any()
        test_rows = {tuple(r) for r in plain.test[0].tolist()}
        assert not test_rows & {tuple(r) for r in with_val.val[0].tolist()}
    plain, held = tasks.make_task("modadd", 59), tasks.make_task("modadd", 59, n_val=200)
    assert torch.equal(plain.test[0], held.test[0]) and held.train[0].shape[0] == plain.train[0].shape[0] - 200
    pairs = lambda x: {tuple(r) for r in x.tolist()}  # noqa: E731
    assert pairs(held.val[0]) == pairs(plain.train[0]) - pairs(held.train[0])
    plain, held = tasks.make_task("lm", 32, n_test=50), tasks.make_task("lm", 32, n_test=50, n_val=40)
    assert torch.equal(plain.test[0], held.test[0]) and held.val[0].shape == (40, 32)
    # the validation windows lie past every training window: the last training start + 33 bytes
    x, _, _ = held.sample(4000, torch.Generator().manual_seed(0))
    assert not pairs(x) & pairs(held.val[0])
    with pytest.raises(tasks.UsageError, match="memorize has no validation set"):
        tasks.make_task("memorize", 8, n_val=10)


def test_the_lr_sweep_chooses_by_validation_and_keeps_the_shared_lr_within_its_spread():
    """records.chosen_lr, the rule written once: the lr with the best mean validation score over
    two seeds; the shared lr stays where the best is within its spread; an inner grid whose best
    lies at its edge waits for the lr beyond it; a cell with one seed at an lr waits; a missing
    inner lr waits (the grid is records.SWEEP_GRIDS', not what happened to run)."""
    import records
    listed = records.sweep_grid(3e-3)[0]  # 1e-4 [3e-4 1e-3 3e-3 1e-2] 3e-2
    inner = dict(lr3e_4=[(0.20, 0.9), (0.22, 0.9)], lr1e_3=[(0.60, 0.1), (0.64, 0.1)],
                 lr3e_3=[(0.30, 0.99), (0.34, 0.99)], lr1e_2=[(0.05, 0.5), (0.07, 0.5)])
    # a clear winner: 1e-3 beats the shared 3e-3 by 30 points, far beyond either spread
    cells = sweep_cells(**inner)
    assert records.chosen_lr(cells, "t1/needle/mixit") == (1e-3, "best")
    # selection reads no test score: the test accuracies above favour 3e-3 (99%) and 3e-4;
    # swapping every test score for its opposite changes nothing
    flipped = sweep_cells(**{k: [(v, 1 - t) for v, t in seeds] for k, seeds in inner.items()})
    assert records.chosen_lr(flipped, "t1/needle/mixit") == (1e-3, "best")
    # a tie within the spread: 1e-3 ahead by 2 points, the shared lr's seeds 6 points apart
    tie = sweep_cells(**{**inner, "lr1e_3": [(0.33, 0), (0.35, 0)], "lr3e_3": [(0.29, 0), (0.35, 0)]})
    assert records.chosen_lr(tie, "t1/needle/mixit") == (3e-3, "shared")
    # a tie at the top between the shared lr and the edge's (both solve it) keeps the shared lr
    # and tries nothing beyond the edge
    top = sweep_cells(**{**inner, "lr3e_4": [(1.0, 0), (1.0, 0)], "lr3e_3": [(1.0, 0), (1.0, 0)]})
    assert records.chosen_lr(top, "t1/needle/mixit") == (3e-3, "shared")
    assert not records.lr_wanted(top, "t1/needle/mixit", 1e-4, 0)
    # the best inner lr at the inner grid's edge (3e-4): 1e-4 runs, then decides
    edge = {**inner, "lr3e_4": [(0.90, 0), (0.92, 0)]}
    cells = sweep_cells(**edge)
    assert records.chosen_lr(cells, "t1/needle/mixit") is None
    assert records.lr_wanted(cells, "t1/needle/mixit", 1e-4, 0)
    assert not records.lr_wanted(cells, "t1/needle/mixit", 3e-2, 0)  # the other edge: no
    assert records.chosen_lr(sweep_cells(**edge, lr1e_4=[(0.95, 0), (0.97, 0)]), "t1/needle/mixit") == (1e-4, "edge")
    assert records.chosen_lr(sweep_cells(**edge, lr1e_4=[(0.10, 0), (0.12, 0)]), "t1/needle/mixit") == (3e-4, "best")
    # one seed at an inner lr: the choice waits, and that lr's second seed is wanted
    missing = sweep_cells(**{k: v for k, v in inner.items() if k != "lr1e_2"})
    assert records.chosen_lr(missing, "t1/needle/mixit") is None
    one = sweep_cells(**{**inner, "lr1e_2": [(0.05, 0.5)]})
    assert records.chosen_lr(one, "t1/needle/mixit") is None
    assert records.lr_wanted(one, "t1/needle/mixit", 1e-2, 1)
    # the third seed runs at the chosen lr only, and not where the shared lr stays (the cell
    # itself has its seeds there); a third seed at the chosen lr changes no choice
    cells = sweep_cells(**inner)
    assert [lr for lr in listed if records.lr_wanted(cells, "t1/needle/mixit", lr, 2)] == [1e-3]
    assert not any(records.lr_wanted(tie, "t1/needle/mixit", lr, 2) for lr in listed)
    third = sweep_cells(**{**inner, "lr1e_3": inner["lr1e_3"] + [(0.0, 0.1)]})
    assert records.chosen_lr(third, "t1/needle/mixit") == (1e-3, "best")


def test_what_tuning_changed_names_the_cells_that_moved_and_only_verdicts_decided_both_ways():
    """report.tuning: a cell the sweep moved off its shared lr is named with its test score at
    each lr; a cell whose choice waits is named as waiting; a claims row whose verdict differs
    at the shared lr is a flip only where both verdicts are decided (a wait is no flip)."""
    import report
    inner = dict(lr3e_4=[(0.20, 0.9), (0.22, 0.9)], lr1e_3=[(0.60, 0.8), (0.64, 0.8)],
                 lr3e_3=[(0.30, 0.5), (0.34, 0.5)], lr1e_2=[(0.05, 0.5), (0.07, 0.5)])
    cells = sweep_cells(**inner)
    row = lambda tuned, shared: ["1. x", "", "", tuned, "", "", shared]  # noqa: E731
    text = report.tuning(cells, [row("reproduced", "reproduced")])
    assert "1 moved off the shared lr: MixiT on needle to 1e-3 (test 80.0" in text
    assert "50.0 ± 0.0 (n=3) at 3e-3" in text and text.endswith("lr: none.")
    assert "1 (not reproduced at the shared lr, reproduced tuned)" in report.tuning(
        cells, [row("reproduced", "not reproduced")])
    assert report.tuning(cells, [row("not yet run", "reproduced")]).endswith("lr: none.")
    waiting = sweep_cells(**{k: v for k, v in inner.items() if k != "lr1e_2"})
    assert "none moved off the shared lr; 1 still waits for runs: MixiT on needle" in report.tuning(waiting, [])
    assert "has not run" in report.tuning({"t1/needle/mixit": cells["t1/needle/mixit"]}, [])


def test_the_job_list_runs_what_the_lr_sweep_asks_for_and_a_held_out_task_trains_as_its_cell(tmp_path):
    """bench.py --todo keeps of a sweep (records.lr_wanted): the choosing runs of every inner lr
    (modadd's CELL-lr<LR>-val, with --val_size); then the chosen lr's seeds 0-2 of CELL-lr<LR>,
    which on modadd train as the cell does (no --val_size), and no edge lr where the best is inner."""
    import bench
    line = ("{tag} --task modadd --task_size 11 --n_embd 16 --n_layer 1 --batch_size 64 --steps 20 "
            "--variant mixit --lr {lr}{val} --seed {seed}\n")
    grid = ["1e-4", "3e-4", "1e-3", "3e-3", "1e-2", "3e-2"]
    jobs = [line.format(tag=f"c3/modadd/mixit-lr{lr}{v}/s{s}", lr=lr, seed=s,
                        val=" --val_size 20" if v else "")
            for lr in grid for s in range(3) for v in ("-val", "") if not (v and s == 2)]
    (tmp_path / "jobs").write_text("".join(jobs))
    records = tmp_path / "quick.jsonl"
    records.write_text("")
    left = lambda: sorted(line.split()[0] for line in bench.todo(str(tmp_path / "jobs"), str(records)))  # noqa: E731
    assert left() == []  # the cell itself has not run: its shared lr is unknown

    def ran(tag, lr, val=None):  # a record of the job line of this tag (the cell's: 3e-3)
        argv = next((j.split()[1:] for j in jobs if j.startswith(tag + " ")),
                    line.format(tag="", lr=lr, val="", seed=tag[-1]).split())
        config = {**dataclasses.asdict(mixit.resolve_config(mixit.parse_args(argv))), "tag": tag}
        runtime.append_record(str(records), {"config": config, "final": {"acc": 0.5, "loss": 1.0},
                                             **({"val": {"acc": val, "loss": 1 - val}} if val else {})})
    for s in range(3):
        ran(f"c3/modadd/mixit/s{s}", 3e-3)
    inner = ["3e-4", "1e-3", "3e-3", "1e-2"]
    assert left() == sorted(f"c3/modadd/mixit-lr{lr}-val/s{s}" for lr in inner for s in range(2))
    for lr, val in zip(inner, (0.3, 0.9, 0.4, 0.2)):
        for s in range(2):
            ran(f"c3/modadd/mixit-lr{lr}-val/s{s}", float(lr), val + 0.01 * s)
    assert left() == [f"c3/modadd/mixit-lr1e-3/s{s}" for s in range(3)]
    assert all("--val_size" not in j for j in bench.todo(str(tmp_path / "jobs"), str(records)))


def test_a_claims_cost_counts_the_runs_of_its_cells_with_their_sweeps_and_ladders():
    """report.claim_costs: row 8 (the LM) reads t2/lm/{standard,frozen_qk,mixit}; its cost counts
    their runs and the sweep's (t2/lm/mixit-lr6e-4), not another table's."""
    import report

    def runs(cell, n, wall):
        return [{"config": {"tag": f"{cell}/s{i}", "task": "lm", "lr": 2e-3}, "wall_s": wall,
                 "final": {"loss": 1.0, "acc": 0.5}} for i in range(n)]
    cells = {c: runs(c, 3, 1200) for c in ("t2/lm/standard", "t2/lm/frozen_qk", "t2/lm/mixit")}
    cells["t2/lm/mixit-lr6e-4"] = runs("t2/lm/mixit-lr6e-4", 2, 1800)
    cells["t3/add/mixit"] = runs("t3/add/mixit", 3, 3600)
    row = next(l for l in report.claim_costs(cells, {}).splitlines() if l.startswith("| 8 |"))
    assert row == "| 8 | 11 | 4.0 | 0 | 0 |", row  # 9 x 20 min + 2 x 30 min


def test_the_glance_table_gives_each_claim_its_verdict_at_both_scales(monkeypatch):
    """FINDINGS opens with report.glance: a row per claims row, ours at each scale short (notes in
    brackets dropped, n kept), the verdict word, its verdict at the shared lr, and the sentence and
    caveat written for that row's verdict (report.BELIEVE): '–' where its verdict has none, so a
    sentence written for one verdict never stands beside another."""
    import report
    monkeypatch.setattr(report, "BELIEVE", {("1", "reproduced"): ("MixiT cannot retrieve.", "small"),
                                            ("2", "reproduced"): ("Frozen-QK retrieves.", "init")})
    quick = [["1. a claim", "p1", "needle 0.4 ± 0.3 (Table 11) (n = 3)", "reproduced", "rule",
              "Table 1", "partly (fails: x)"],
             ["2. another", "p2", "hop 40.1 ± 0.2 at lr 3e-4", "not yet run", "rule", "Table 2",
              "not yet run"]]
    paper = [["1. a claim", "p1", "needle 10.2", "inconclusive: seeds disagree", "rule", "Table 1",
              "–"]]
    rows = [l for l in report.glance(quick, paper, "2 to 3", "1").splitlines()
            if l.startswith(("| 1.", "| 2."))]
    assert rows == [
        "| 1. a claim | p1 | needle 0.4 ± 0.3 (n = 3) | needle 10.2 (n = 1); verdict: inconclusive: "
        "seeds disagree | **reproduced** | partly | MixiT cannot retrieve. | small |",
        "| 2. another | p2 | hop 40.1 ± 0.2 at lr 3e-4 (n = 2 to 3) | not yet run | **not yet run** "
        "| not yet run | – | – |"], rows
    # the same sentence is gone where the verdict moved: nothing is written for ('1', 'partly')
    moved = [["1. a claim", "p1", "needle 40.0 ± 0.3", "partly (fails: needle)", "rule", "T", "–"]]
    line = next(l for l in report.glance(moved, []).splitlines() if l.startswith("| 1."))
    assert "MixiT cannot retrieve" not in line and line.endswith("| **partly** | – | – | – |"), line


def test_the_glance_sentences_and_captions_are_read_from_their_files_and_checked_as_prose(
        tmp_path, monkeypatch):
    """templates/believe.md holds the glance table's sentences: report.believe reads each
    heading's row and verdict (a verdict with a colon in it too) and the sentence and caveat under
    it, each onto one line. Each table's caption is its Table's or, for every other table, the
    one under its title in templates/captions.md, which names no other. The prose check reads
    both files: a typed number there is named."""
    import report
    (tmp_path / "templates").mkdir()
    path = tmp_path / report.BELIEVE_MD
    path.write_text("# What to believe\n\nAn intro.\n\n## 5: inconclusive: seeds disagree\n\n"
                    "The seeds\nend apart.\n\nCaveat: Small\ntasks.\n\n"
                    "## 4ˢ: partly (fails: Standard > Frozen-QK)\n\nMLPs memorize.\n\n"
                    "Caveat: As claim 4.\n")
    assert report.believe(str(path)) == {
        ("5", "inconclusive: seeds disagree"): ("The seeds end apart.", "Small tasks."),
        ("4ˢ", "partly (fails: Standard > Frozen-QK)"): ("MLPs memorize.", "As claim 4.")}
    assert report.BELIEVE and all(sentence and caveat for sentence, caveat in report.BELIEVE.values())
    tables = report.TABLES + report.STUDIES
    assert sorted(t.title for t in tables if t.caption is None) == sorted(report.CAPTIONS)
    monkeypatch.chdir(tmp_path)
    (tmp_path / report.CAPTIONS_MD).write_text("## Table 1. Retrieval\n\n: test accuracy.\n")
    assert report.overclaims() == []
    path.write_text(path.read_text().replace("The seeds", "The 7 seeds"))
    (tmp_path / report.CAPTIONS_MD).write_text("## Table 1. Retrieval\n\n: 3 runs' accuracy.\n")
    assert [line.split(" (")[0] for line in report.overclaims()] == [
        f"{report.BELIEVE_MD}: typed number", f"{report.CAPTIONS_MD}: typed number"]


def test_a_ladder_that_still_moves_at_its_cap_is_read_there_as_not_converged():
    """A ladder whose last doubling still moved (or was noisy) runs five seeds at its last budget,
    the cap run_all.sh lists, and is read there, marked 'at its cap, not converged'
    (records.CAP); a budget below the cap gets five seeds only where its doubling settled."""
    import records
    base, ladder = "c4/memorize/mixit", [6000, 12000]
    moved = ladder_cells(s6000=[0.14, 0.15, 0.13], s12000=[0.20, 0.21, 0.19])
    assert [s for s in range(5) if records.budget_wanted(moved, base, ladder, 12000, s)] == list(range(5))
    assert records.capacity_cell(moved, base) == (base + "-steps12000", False)
    assert not records.readable(moved, base)
    five = ladder_cells(s6000=[0.14, 0.15, 0.13], s12000=[0.20, 0.21, 0.19, 0.20, 0.22])
    assert records.capacity_cell(five, base) == (base + "-steps12000", records.CAP)
    assert records.readable(five, base)
    # a longer ladder: the same doubling below the cap asks for the next budget, not the seeds
    assert not records.budget_wanted(moved, base, [6000, 12000, 24000], 12000, 3)
    # a noisy cap (seeds apart: all-or-nothing cells) is read at the cap too
    noisy = ladder_cells(s6000=[0.24, 0.25, 0.99], s12000=[0.24, 1.0, 1.0])
    assert records.budget_wanted(noisy, base, ladder, 12000, 4)


def capacity_cells(accs_by_variant):
    """ladder_cells for several variants: {variant: {s6000: [accs], ...}} -> {cell: records}."""
    cells = {}
    for v, budgets in accs_by_variant.items():
        for cell, runs in ladder_cells(**budgets).items():
            cells[cell.replace("mixit", v, 1)] = [
                {**r, "config": {**r["config"], "tag": r["config"]["tag"].replace("mixit", v, 1)}}
                for r in runs]
    return cells


def test_a_marker_reads_a_ladder_at_the_budget_a_verdict_reads():
    """A CELL@read names a ladder's cell at the budget a verdict reads (records.read_budget: the
    first whose doubling settled, else the largest that ran), so a sentence follows the rule's
    budget; `gain` says by how much the doubling that settled it moved it (at its cap: the doubling
    into the cap), against the spread and the tolerance."""
    import records

    def read(spec, **budgets):  # CELL@read: the cell at the budget a verdict reads
        runs = [r for rs in ladder_cells(**budgets).values() for r in rs]
        return records.number(f"quick {spec}", lambda name, every=False: runs)
    moving = dict(s6000=[0.14, 0.15, 0.13], s12000=[0.18, 0.19, 0.185])
    assert read("c4/memorize/mixit@read acc mean", **moving) == "18.5"  # not settled: 12000's
    settled = dict(moving, s24000=[0.186, 0.190, 0.188])
    assert read("c4/memorize/mixit@read steps mean:0", **settled) == "12000"
    assert read("c4/memorize/mixit@read acc vs:c4/memorize/mixit", **settled) == "above"
    # gain: what settled it, 12000 -> 24000: +0.30 points against the larger std, 0.50; a move
    # beyond the spread but under records.SETTLED says that it settled by the tolerance
    assert read("c4/memorize/mixit acc gain", **settled) == "+0.30 points, within the spread (0.50)"
    tight = dict(s6000=[0.14, 0.15, 0.13], s12000=[0.184, 0.185, 0.186],
                 s24000=[0.191, 0.192, 0.193])
    assert read("c4/memorize/mixit acc gain", **tight) == (
        "+0.70 points, beyond the spread (0.10) but under the 1-point tolerance")
    with pytest.raises(ValueError, match="has neither settled nor reached its cap"):
        read("c4/memorize/mixit acc gain", **moving)
    # at its cap (the last budget with records.READ_SEEDS seeds), the doubling into the cap
    capped = dict(moving, s12000=[0.18, 0.19, 0.185, 0.18, 0.19])
    assert read("c4/memorize/mixit acc gain", **capped) == (
        "+4.50 points, beyond the spread (1.00) and the 1-point tolerance")


def test_table_12_applies_claim_4s_rule_at_each_budget_without_giving_a_verdict():
    """Table 12's last row reads claim 4's rule on the four cells' bits per parameter at each
    budget where all have three seeds (a cell settled below that budget at its settled one):
    the reading can differ between budgets, as a verdict read at a budget would, while the
    claims row gives none until every cell has settled."""
    import report
    cells = capacity_cells({  # accuracies; bits per parameter are 10x
        "standard": dict(s6000=[.30, .30, .31], s12000=[.40, .40, .41], s24000=[.45, .45, .45]),
        "frozen_qk": dict(s6000=[.25, .25, .26], s12000=[.38, .38, .37], s24000=[.44, .45, .45]),
        "mixit": dict(s6000=[.10, .10, .11], s12000=[.36, .36, .35], s24000=[.40, .41]),
        # settled at 6000 (12000 moved it half a point): read there at every larger budget
        "frozen_mlp": dict(s6000=[0.15, 0.15, 0.16], s12000=[0.155, 0.155, 0.16])})
    header = report.budgets_tried(cells)
    row = dict(zip(header, report.budget_rows(cells)[-1][1:]))
    assert row[6000].endswith(": not reproduced; fails: Frozen-QK ≈ MixiT, each > Frozen-MLP")
    assert row[6000].startswith("3.03 ± 0.06 / 2.53 ± 0.06 / 1.03 ± 0.06 / 1.53 ± 0.06")
    assert row[12000].endswith(": reproduced") and row[24000] == "waits for seeds"  # MixiT's
    cells["c4/memorize/mixit-steps24000"] += [{**cells["c4/memorize/mixit-steps24000"][0],
                                               "config": {"tag": "c4/memorize/mixit-steps24000/s2",
                                                          "steps": 24000, "task_size": 128}}]
    row = dict(zip(header, report.budget_rows(cells)[-1][1:]))
    assert row[24000].endswith(" / 1.53 ± 0.06: partly; fails: Standard > Frozen-QK")  # F at 6000
    ours, tests, *_ = report.capacity_order(report.Reader(cells))
    assert tests is None and "doubling not settled: Standard, Frozen-QK, MixiT" in ours
    # Frozen-MLP without a settled budget: the budgets where it did not run wait for it
    del cells["c4/memorize/frozen_mlp-steps12000"]
    row = dict(zip(header, report.budget_rows(cells)[-1][1:]))
    assert row[6000].endswith("not reproduced; fails: Frozen-QK ≈ MixiT, each > Frozen-MLP")
    assert row[12000] == row[24000] == "waits for seeds"


def test_claim_4_waits_while_a_ladders_lr_grid_has_not_chosen_and_reads_on_once_it_has():
    """Claim 4's lr grid runs at one budget of each ladder (CELL-steps<N>-lr<LR>). While a
    variant's grid waits for a run (its best inner lr at the grid's edge, the edge not run), that
    variant's ladder is not read: the row is 'not yet run' and names the grid it waits for; once
    the grid keeps the shared lr the row reads the ladders as before."""
    import records
    import report
    flat = dict(s6000=[0.30, 0.31, 0.30, 0.30, 0.31], s12000=[0.305, 0.31, 0.30])
    mixit = dict(s6000=[0.20, 0.21, 0.20, 0.20, 0.21], s12000=[0.205, 0.21, 0.20])
    cells = capacity_cells({"standard": flat, "frozen_qk": flat, "mixit": mixit, "frozen_mlp": flat})
    base = "c4/memorize/frozen_qk-steps12000"
    grid = lambda **accs: {f"{base}-{k.replace('_', '-')}": [  # noqa: E731
        {"config": {"tag": f"{base}-{k.replace('_', '-')}/s{s}", "steps": 12000, "task_size": 128,
                    "task": "memorize", "lr": float(k[2:].replace("_", "-"))},
         "final": {"acc": a, "bits_per_param": 10 * a}} for s, a in enumerate(v)]
        for k, v in accs.items()}
    for r in cells[base]:
        r["config"].update(task="memorize", lr=1e-2)
    row4 = lambda cs: next(r for r in report.claim_rows(cs)[1] if r[0].startswith("4."))  # noqa: E731
    before = row4(cells)
    # the best inner lr, 3e-3, is the inner grid's low edge: 1e-3 has to run before a choice
    waiting = {**cells, **grid(lr3e_3=[0.308, 0.309], lr3e_2=[0.2, 0.2])}
    assert records.chosen_lr(waiting, base) is None
    row = row4(waiting)
    assert before[3] != records.NOT_RUN and row[3] == records.NOT_RUN and f"lr sweep not finished: {base}" in row[2]
    assert row[6] == before[3]  # at the shared lr the ladders read as they did
    # the edge run: the shared lr is within the spread of the best: the row reads as before
    done = {**waiting, **grid(lr1e_3=[0.28, 0.29])}
    assert records.chosen_lr(done, base) == (1e-2, "shared")
    assert row4(done)[2:4] == before[2:4]
    # a ladder emptied while its grid waits is skipped where a setting is read off the cells
    assert records.config_of({"c4/a": [], "c4/b": [{"config": {"task_size": 128}}]}, "c4/") == 128


def test_claim_4_gives_no_verdict_until_each_cell_is_read_at_capacity():
    """Claim 4 reads each cell at the budget its doubling settled, with records.READ_SEEDS seeds
    there: while one cell still moves, or lacks those seeds, the row has no tests (verdict 'not
    yet run') and says which; once all have settled it judges the cells at their read budgets,
    its ≈ on MixiT / Frozen-QK seed by seed. Claim 3's memorize test reads Table 4's cells by
    the same rule, never claim 4's: until those may be read it is left open as waiting, and a
    verdict that turns on it is 'not yet run', not 'at the threshold'."""
    import records
    import report
    cells_for = capacity_cells
    flat = dict(s6000=[0.30, 0.31, 0.30, 0.30, 0.31], s12000=[0.305, 0.31, 0.30])
    still = dict(s6000=[0.10, 0.11, 0.10, 0.10, 0.11], s12000=[0.20, 0.21, 0.20])
    cells = cells_for({"standard": flat, "frozen_qk": flat, "mixit": still, "frozen_mlp": flat})
    ours, tests, *_ , reads = report.capacity_order(report.Reader(cells))
    assert tests is None and "doubling not settled: MixiT" in ours
    assert "c4/memorize/mixit-steps12000" in reads  # where it stands: its largest budget
    # MixiT settles at 12000, but with three seeds there: still no verdict
    cells = cells_for({"standard": flat, "frozen_qk": flat, "frozen_mlp": flat,
                       "mixit": dict(still, s24000=[0.205, 0.21, 0.20])})
    ours, tests, *_ = report.capacity_order(report.Reader(cells))
    assert tests is None and f"fewer than {records.READ_SEEDS} seeds" in ours
    read_at = {row[0]: row[-1] for row in report.budget_rows(cells)}
    assert read_at["MixiT"] == f"12000 steps; next: {records.READ_SEEDS - 3} more seeds"
    assert read_at["Standard"] == "6000 steps"  # its five seeds are there
    cells["c4/memorize/mixit-steps12000"] += [
        {"config": {"tag": f"c4/memorize/mixit-steps12000/s{s}", "steps": 12000, "task_size": 128},
         "final": {"acc": 0.205, "bits_per_param": 2.05}} for s in (3, 4)]
    ours, tests, *_, reads = report.capacity_order(report.Reader(cells))
    assert tests is not None and "c4/memorize/mixit-steps12000" in reads
    assert "c4/memorize/standard" in reads and "(12000)" in ours
    # ≈ reads MixiT / Frozen-QK seed by seed (2.05 / 3.04 over the five seeds both ran)
    assert "; MixiT / Frozen-QK 0.67 ± 0.01 paired by seed (n = 5; paper 0.97)" in ours
    # the row names the tests that fail (here all three: equal cells, MixiT far below)
    assert tests == [False] * 3 and ours.endswith(
        "; fails: Standard > Frozen-QK, Frozen-QK ≈ MixiT, each > Frozen-MLP")
    # claim 3's memorize test reads Table 4's cells, not these: with claim 4's all readable and
    # Table 4's not run, it is still left open
    to_t4 = lambda cs: {c.replace("c4/", "t4/"): [  # noqa: E731
        {**r, "config": {**r["config"], "tag": r["config"]["tag"].replace("c4/", "t4/")}}
        for r in runs] for c, runs in cs.items()}
    same = [{"final": {"acc": a}, "config": {"tag": f"x/s{i}"}} for i, a in enumerate((0.99, 0.98, 0.99))]
    three = {**cells, **{f"t3/{t}/{v}": same for t in ("add", "modadd", "dyck")
                         for v in ("mixit", "standard")}}
    ours, tests, *_, reads = report.mixit_matches_without_retrieval(report.Reader(three))
    assert "memorize: doubling not settled: MixiT, Standard; its test left open" in ours
    assert not any(c.startswith("c4/") for c in reads) and tests is None  # not run at all
    # Table 4's cells doubled: open, as waiting, while MixiT's settled budget lacks its
    # READ_SEEDS seeds; the verdict turns on it (reproduced or partly): it waits, not straddles
    three.update(to_t4(capacity_cells({"standard": flat,
                                       "mixit": dict(s6000=flat["s6000"][:3], s12000=flat["s12000"])})))
    ours, tests, *_, reads = report.mixit_matches_without_retrieval(report.Reader(three))
    assert (f"memorize: fewer than {records.READ_SEEDS} seeds at the budget read: MixiT; its "
            "test left open") in ours
    assert tests == [True, True, True, None] and tests.waiting == {"memorize"}
    assert "t4/memorize/mixit" in reads and "t4/memorize/standard" in reads
    r3 = next(l for l in report.verdicts(three).splitlines() if l.startswith("| 3. "))
    assert r3.split(" | ")[3] == records.NOT_RUN
    # ...then read at the budgets their doubling settled, and judged
    three["t4/memorize/mixit"] += [{**three["t4/memorize/mixit"][0], "config": {
        "tag": f"t4/memorize/mixit/s{s}", "steps": 6000, "task_size": 128}} for s in (3, 4)]
    ours, tests, *_, reads = report.mixit_matches_without_retrieval(report.Reader(three))
    assert "left open" not in ours and tests == [True] * 4 and not tests.waiting
    r3 = next(l for l in report.verdicts(three).splitlines() if l.startswith("| 3. "))
    assert r3.split(" | ")[3] == records.REPRODUCED
    # the paper scale (no c4 cells): Table 4's cells at their budget until one is doubled, then
    # by the same rule
    paper = {c.replace("c4/", "t4/"): [{**r, "config": {**r["config"], "tag": r["config"]["tag"]
                                                         .replace("c4/", "t4/")}} for r in runs]
             for c, runs in cells_for({v: dict(s6000=flat["s6000"][:3]) for v in report.CAPACITY}).items()}
    ours, tests, *_, reads = report.capacity_order(report.Reader(paper))
    assert tests is not None and "read at a budget" in ours and "t4/memorize/mixit" in reads
    paper["t4/memorize/mixit-steps12000"] = [
        {"config": {"tag": f"t4/memorize/mixit-steps12000/s{s}", "steps": 12000, "task_size": 128},
         "final": {"acc": 0.4, "bits_per_param": 4.0}} for s in range(3)]
    ours, tests, *_ = report.capacity_order(report.Reader(paper))  # the others wait for theirs
    assert tests is None and "doubling not settled: Standard, Frozen-QK, MixiT, Frozen-MLP" in ours


def test_table_captions_say_what_their_records_ran():
    """Table 2 names the corpus each row trained on (--data, from its records), and Table 4 which
    cells claim 4 reads: Tables 11 and 12 where the capacity cells ran (quick), else this table,
    at its budget until its cells are doubled, then at the budget their doubling settled."""
    import report
    lm = lambda v, data: [{"config": {"tag": f"t2/lm/{v}/s0", "data": data}}]  # noqa: E731
    one = report.lm_caption({"t2/lm/standard": lm("standard", ""), "t2/lm/mixit": lm("mixit", "")})
    assert one.startswith(" (bytes of Python's help text):")
    two = report.lm_caption({"t2/lm/standard": lm("standard", ""),
                             "t2/lm/mixit": lm("mixit", "stdlib")})
    assert two.startswith(" (bytes of Python's help text: Standard; of Python's standard "
                          "library sources: MixiT):")
    mem = {"t4/memorize/standard": [{"config": {"tag": "t4/memorize/standard/s0"}}]}
    assert "until run_all.sh doubles it; claim 4 reads this table" in report.capacity_caption(mem)
    mem["t4/memorize/mixit-steps30000"] = [{"config": {"tag": "t4/memorize/mixit-steps30000/s0"}}]
    assert "budget its doubling settled" in report.capacity_caption(mem)
    assert "claim 4 reads Tables 11 and 12" in report.capacity_caption(
        {**mem, **capacity_cells({"standard": dict(s6000=[.3, .3, .3])})})
    # a caption's fields ({KEY:CELL}: a setting of the cell's config) read its first record
    run = {"steps": 1500, "config": {"tag": "c6/add/random-L2/s0", "lr": 0.01, "n_embd": 256,
                                     "task_size": 3}}
    assert report.caption({"c6/add/random-L2": [run]}, "lr {lr:c6/add/random-L2}, width "
                          "{n_embd:c6/add/random-L2}, {steps:c6/add/random-L2} steps, add-"
                          "{size:c6/} ({n_embd:c6/add/mixit-L2}), {SETTLED}") \
        == f"lr 0.01, width 256, 1500 steps, add-3 (–), {report.SETTLED:g}"


def heads_cells(**ladders):
    """Made-up Table 5 cells of MixiT on add-4: heads_cells(h2=([accs at 4000], [accs at 8000]),
    ...) -> {cell: records}, the base cell t5/add/heads<H> at 4000 steps and, where given, its
    doubling t5/add/heads<H>-steps8000 (as run_all.sh --claims names it)."""
    cells = {}
    for key, budgets in ladders.items():
        for steps, accs in zip((4000, 8000), budgets):
            cell = f"t5/add/heads{key[1:]}" + ("-steps8000" if steps == 8000 else "")
            cells[cell] = [{"config": {"tag": f"{cell}/s{i}", "task": "add", "task_size": 4,
                                       "data_seed": 0, "eval_size": 64, "steps": steps},
                            "final": {"acc": a}} for i, a in enumerate(accs)]
    return cells


def test_claim_5_reads_each_head_count_from_2_where_its_doubling_settled():
    """Claim 5 reads MixiT's Table 5 cells from 2 heads up (the 1-head cell, the sink head alone,
    is neither shown nor read), each at the budget its doubling settled with records.READ_SEEDS
    seeds there: while a head count's doubling moves, or has settled with fewer seeds, the row
    has no tests (verdict 'not yet run') and says what it waits for; once each is readable the
    three tests are judged at those budgets (a cell that moved is read at its doubled budget), and
    'partly' names the test that fails. A cell that was never doubled is read at its budget."""
    import records
    import report
    rule = next(r for c, _, r, _ in report.CLAIMS if c.startswith("5. "))

    def judged(cells):
        A = report.Reader(cells)
        ours, tests, partly, where, reads = report.heads_help(A)
        return ours, tests, reads, report.verdict(tests, partly, reads, A, rule)
    # no cell doubled (the paper scale): each is read at its budget, and the row says so
    ours, tests, reads, verdict = judged(heads_cells(h2=([0.30] * 3,), h64=([0.95] * 3,)))
    assert ours == "heads: 2 30.0 ± 0.0, 64 95.0 ± 0.0 (at Table 5's budget, not doubled: each)"
    assert verdict == records.REPRODUCED and reads == ["t5/add/heads2", "t5/add/heads64"]
    flat = [0.30, 0.31, 0.30, 0.30, 0.31]
    cells = heads_cells(h1=([0.24, 0.23, 0.23],), h2=(flat, [0.305, 0.31, 0.30]),
                        h64=([0.50, 0.52, 0.51], [0.90, 0.91, 0.92]))  # 64 heads still moves
    ours, tests, reads, verdict = judged(cells)
    assert tests is None and verdict == records.NOT_RUN and "(doubling not settled)" in ours
    assert ours.startswith("heads: 2 30.4 ± 0.5, 64 91.0 ± 1.0")  # where each stands
    assert "t5/add/heads1" not in reads and "heads: 1 " not in ours
    # 64 heads settles at 8000 (16000 moves it half a point), with three seeds there
    cells.update({"t5/add/heads64-steps16000": [
        {"config": {"tag": f"t5/add/heads64-steps16000/s{i}", "task": "add", "task_size": 4,
                    "data_seed": 0, "eval_size": 64, "steps": 16000}, "final": {"acc": a}}
        for i, a in enumerate([0.905, 0.91, 0.915])]})
    ours, tests, reads, verdict = judged(cells)
    assert tests is None and verdict == records.NOT_RUN
    assert f"fewer than {records.READ_SEEDS} seeds at the budget read" in ours
    read = cells["t5/add/heads64-steps8000"]  # seeds 3 and 4 at the budget read
    read += [{"config": {**read[0]["config"], "tag": f"t5/add/heads64-steps8000/s{i}"},
              "final": {"acc": 0.91}} for i in (3, 4)]
    ours, tests, reads, verdict = judged(cells)
    assert reads == ["t5/add/heads2", "t5/add/heads64-steps8000"]
    assert tests == [True, True, True] and verdict == records.REPRODUCED
    assert tests.names == ["64 heads above 2", "no head count below a smaller one", "64 heads ≥ 90%"]
    # a head count between them above the most heads, beyond the spread: more heads hurt there
    cells.update(heads_cells(h16=([0.99] * 5, [0.99] * 3)))
    ours, tests, reads, verdict = judged(cells)
    assert "16 99.0 ± 0.0" in ours and "t5/add/heads16" in reads
    assert tests == [True, False, True]
    assert verdict == "partly (fails: no head count below a smaller one)"


def test_a_claims_row_names_its_own_n_where_the_scales_n_is_a_range():
    """A scale whose cells have 3 to 5 seeds: a row whose cells all have 3 names n = 3 (the
    glance shows it), not the scale's range; the scale's n is the range."""
    import report

    def runs(tag, values, key):
        return [{"config": {"tag": f"{tag}/s{s}", "seed": s}, "final": {key: x}}
                for s, x in enumerate(values)]
    cells = {f"t2/lm/{v}": runs(f"t2/lm/{v}", [x, x + 0.01, x + 0.02], "loss")
             for v, x in (("standard", 1.0), ("frozen_qk", 1.1), ("mixit", 1.9))}
    cells["t4/memorize/standard"] = runs("t4/memorize/standard", [1.0] * 5, "acc")
    n, rows = report.claim_rows(cells)
    row8 = next(r for r in rows if r[0].startswith("8."))
    assert n == "3 to 5" and row8[2].endswith("(n = 3)")
    assert report.effect(row8[2], n).endswith("(n = 3)")


def test_claim_5_refuses_a_study_without_two_head_counts_from_2_heads():
    """Claim 5 reads head counts from 2 heads up only: a study of the 1-head cell alone (even
    doubled and settled), or of 1 head beside one other count, gives no tests and no verdict
    ('not yet run'), and says why; the rows 5 and 5ˢ of the claims table say so too."""
    import records
    import report
    one = heads_cells(h1=([0.24] * 5, [0.24] * 3))
    for cells in (one, {**one, **heads_cells(h64=([1.0] * 5, [1.0] * 3))}):
        ours, tests, partly, where, reads = report.heads_help(report.Reader(cells))
        assert ours == "fewer than two head counts from 2 heads up"
        assert tests is None and reads == []
        assert report.verdict(tests, partly, reads, report.Reader(cells)) == records.NOT_RUN
    md = report.verdicts(one)
    for n in ("5. ", "5ˢ. "):
        row = next(l for l in md.splitlines() if l.startswith(f"| {n}"))
        assert "| fewer than two head counts from 2 heads up | not yet run |" in row


def test_an_all_or_nothing_cell_is_read_as_k_of_n_solved():
    """A cell whose seeds each solve the task (≥ 90%) or stay within 10 points of its floor, and
    lie apart (†), is all-or-nothing: claim 5 shows it as 'k of n solved', compares it by k/n
    (records.more_solved: the two 95% Wilson intervals do not overlap: 5/5 above 0/5, but not
    4/5 above 1/5 nor above 0/5, though the means differ beyond their spread), and its † does
    not make the verdict 'inconclusive: seeds disagree'."""
    import records
    import report
    low = 0.24  # add-4's floor (records.baseline): 24.1%
    assert records.all_or_nothing([1.0, 1.0, 0.25, 0.3], low)
    assert not records.all_or_nothing([1.0, 1.0, 0.6], low)  # a seed half way: not all-or-nothing
    assert not records.all_or_nothing([1.0] * 5, low)  # no † (seeds agree): read by mean ± std
    assert records.solved([1.0, 0.95, 0.25, 0.9]) == (3, 4)
    assert records.more_solved([1.0] * 5, [low] * 5)
    assert not records.more_solved([1, 1, 1, 1, low], [1, low, low, low, low])
    assert not records.more_solved([1, 1, 1, 1, low], [low] * 5)
    assert not records.more_solved([low] * 5, [1.0] * 5)
    lo, hi = records.wilson(4, 5)
    assert 0.37 < lo < 0.38 and 0.96 < hi < 0.97
    rule = next(r for c, _, r, _ in report.CLAIMS if c.startswith("5. "))
    # 64 heads settles at 4000 (seeds 0-2 solve at 4000 and 8000); of its five seeds there one
    # stays at the floor: 4 of 5 solved, against 2 heads' 0 of 5
    cells = heads_cells(h2=([low] * 5, [low] * 3), h64=([1.0, 1.0, 1.0, 1.0, 0.25], [1.0] * 3))
    A = report.Reader(cells)
    ours, tests, partly, where, reads = report.heads_help(A)
    assert "64 85.0 ± 33.5 † (4 of 5 solved)" in ours and "2 24.0 ± 0.0," in ours
    assert "(0 of 5 solved)" not in ours  # 2 heads' cell is not all-or-nothing: no † there
    assert records.beyond(A("t5/add/heads64"), A("t5/add/heads2"))  # by mean ± std it would pass
    assert tests[0] is False  # by k/n it does not: 4/5 vs 0/5, the intervals overlap
    verdict = report.verdict(tests, partly, reads, A, rule)
    assert verdict == "partly (fails: 64 heads above 2)"  # the † cell read as k of n, not 'disagree'
    # ten seeds, nine solved, against none: beyond the intervals
    cells = heads_cells(h2=([low] * 10, [low] * 3), h64=([1.0] * 9 + [0.25], [1.0] * 3))
    ours, tests, *_ = report.heads_help(report.Reader(cells))
    assert "(9 of 10 solved)" in ours and tests[0] is True
    # a † cell that is not all-or-nothing still holds the verdict back
    cells = heads_cells(h2=([low] * 5, [low] * 3), h64=([1.0, 1.0, 1.0, 1.0, 0.6], [1.0] * 3))
    A = report.Reader(cells)
    ours, tests, partly, where, reads = report.heads_help(A)
    assert "solved" not in ours
    assert report.verdict(tests, partly, reads, A, rule) == records.SEEDS_DISAGREE


def test_the_job_list_runs_only_the_budgets_that_the_doubling_rule_asks_for(tmp_path):
    """bench.py --todo (run_all.sh) drops the rungs of a ladder that records.budget_wanted does
    not ask for yet; every other line passes."""
    import bench
    line = ("{tag} --task memorize --task_size 16 --n_embd 16 --n_layer 1 --batch_size 64 "
            "--steps {steps} --variant mixit --seed {seed}\n")
    jobs = [line.format(tag=f"c4/memorize/mixit{'' if b == 600 else f'-steps{b}'}/s{s}",
                        steps=b, seed=s) for s in range(5) for b in (600, 1200, 2400)]
    jobs.append(line.format(tag="t4/memorize/mixit/s0", steps=600, seed=0))
    (tmp_path / "jobs").write_text("".join(jobs))
    records = tmp_path / "quick.jsonl"
    records.write_text("")
    left = [line.split()[0] for line in bench.todo(str(tmp_path / "jobs"), str(records))]
    assert sorted(left) == sorted([f"c4/memorize/mixit/s{s}" for s in range(3)]
                                  + ["t4/memorize/mixit/s0"])
    # a list that ONLY= cut down to the ladder's rungs: without the base's line its first budget
    # comes from the base's records, and only the first doubling is asked for; with neither,
    # no rung runs (the rule cannot place them)
    rungs = tmp_path / "rungs"
    rungs.write_text("".join(j for j in jobs if "-steps" in j.split()[0]))
    assert bench.todo(str(rungs), str(records)) == []
    def ran(lines, acc):  # a record of each of these lines, at that accuracy
        for j in lines:
            tag, *argv = j.split()
            config = dataclasses.asdict(mixit.resolve_config(mixit.parse_args(argv)))
            runtime.append_record(str(records), {"config": {**config, "tag": tag}, "final": {"acc": acc},
                                                 "steps": config["steps"]})
    ran(jobs[:9:3], 0.2)  # the base's seeds 0-2 ran
    left = [line.split()[0] for line in bench.todo(str(rungs), str(records))]
    assert sorted(left) == [f"c4/memorize/mixit-steps1200/s{s}" for s in range(3)]
    # cut down to one budget (ONLY='c4/memorize/mixit-steps2400/'): the rungs below it come from
    # their records, so 2400 runs once the doubling to 1200 has moved, and not before
    top = tmp_path / "top"
    top.write_text("".join(j for j in jobs if "-steps2400/" in j.split()[0]))
    assert bench.todo(str(top), str(records)) == []  # 1200 has not run: its doubling is unknown
    ran(jobs[1:9:3], 0.5)  # the 1200 rung's seeds 0-2 ran, far above 600's 20%: it moved
    left = [line.split()[0] for line in bench.todo(str(top), str(records))]
    assert sorted(left) == [f"c4/memorize/mixit-steps2400/s{s}" for s in range(3)]


def test_check_finds_a_figure_that_its_records_no_longer_draw(tmp_path, monkeypatch):
    """A figure is a file, not text: report.FIGURES keeps what each figure drawn from the records
    shows (figures.shown) and its PNG's hash. --check (stale_figures) redraws them in a folder of
    its own: a new record the figure does not show yet fails it, and so does a PNG that is not
    the one drawn; drawing again mends both."""
    import figures
    import report
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(figures, "floor_pct", lambda cells, prefix: 3.5)
    os.makedirs("results")

    def add(tag, steps, acc):
        with open("results/quick.jsonl", "a") as f:
            f.write(json.dumps({"config": {"tag": tag, "task": "memorize", "task_size": 128,
                                           "n_embd": 16, "steps": steps},
                                "final": {"acc": acc, "bits_per_param": 10 * acc}}) + "\n")

    def draw():
        index = report.figure_index(figures.draw_all(report.scale_cells("quick"), "quick",
                                                     {"standard": 2.98}))
        with open(report.FIGURES, "w") as f:
            f.write(index)
    for s, acc in enumerate((0.25, 0.26, 0.27)):
        add(f"c4/memorize/standard/s{s}", 6000, acc)
        add(f"c4/memorize/standard-steps12000/s{s}", 12000, acc + 0.03)
    draw()
    assert json.load(open(report.FIGURES)).keys() == {"capacity_quick.png"}
    assert report.stale_figures("quick") == [] and figures.PLOT_DIR == "plots"
    add("c4/memorize/standard-steps24000/s0", 24000, 0.33)  # a budget the figure lacks
    assert report.stale_figures("quick") == ["plots/capacity_quick.png (quick): not the figure "
                                             "its records draw now"]
    draw()
    assert report.stale_figures("quick") == []
    with open("plots/capacity_quick.png", "ab") as f:  # a PNG that is not the one drawn
        f.write(b"\0")
    assert len(report.stale_figures("quick")) == 1
    draw()
    assert report.stale_figures("quick") == []
    monkeypatch.setattr(figures, "PLOT_DIR", figures.PLOT_DIR)  # (draw_all sets it)
    assert figures.draw_all(report.scale_cells("quick"), "paper", {"standard": 2.98}) == {}  # (no
    # document shows a figure of the paper scale)


def test_the_committed_readme_and_findings_match_the_records(monkeypatch, capsys):
    """The freshness check on the repository itself: every rendered table and every marked number
    in README.md, results/FINDINGS.md and results/tables_*.md is what the records give. (In this
    process, as `python report.py --check` runs it: a start of its own would import torch again.)"""
    import report
    monkeypatch.chdir(HERE)
    assert report.check(), capsys.readouterr().out[-3000:]


def test_ci_runs_the_readmes_test_command_and_only_a_passing_run_is_timed(tmp_path, monkeypatch):
    """.ci/run ends with the README's test command, word for word (one source: CI tests what a
    newcomer runs). bench.py --time-tests appends that command's wall time as x/readme-tests,
    which the README renders; a failing command records nothing and says so in one line."""
    import bench
    main_job, tests = bench.readme_commands()[:2]
    assert "mixit.py" in main_job and "pytest" in tests
    assert open(os.path.join(HERE, ".ci", "run")).read().rstrip().splitlines()[-1] == tests
    out = tmp_path / "extra.jsonl"
    monkeypatch.setattr(bench, "readme_commands", lambda: [main_job, "exit 3"])
    with pytest.raises(tasks.UsageError, match="exit 3.*nothing recorded"):
        bench.time_tests(str(out))
    assert not out.exists()
    monkeypatch.setattr(bench, "readme_commands", lambda: [main_job, "sleep 0.2"])
    bench.time_tests(str(out))
    [record] = [json.loads(line) for line in out.open()]
    assert record["config"] == {"tag": "x/readme-tests", "command": "sleep 0.2"}
    assert record["wall_s"] >= 0.2 and record["cores"] == os.cpu_count()


def test_the_queue_check_runs_python_from_its_own_interpreter_not_from_path(tmp_path, monkeypatch):
    """report.py --check lists the paper queue through run_all.sh, which runs bench.py. With a
    `python` first on PATH that cannot run anything (as a system python without torch, beside an
    unactivated venv), the check still lists the queue: the scripts use report.py's interpreter
    (here the test's own, sys.executable, with no PYTHON in the environment)."""
    import bench
    for name in ("python", "python3"):
        (tmp_path / name).write_text("#!/bin/sh\necho 'not this python' >&2; exit 1\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.delenv("PYTHON")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    said = bench.queue_price_stale()
    assert not any("failed" in s or "not this python" in s for s in said), said


def test_every_record_cited_as_evidence_exists():
    """The paper-scale recipe in run_all.sh cites the records behind each setting (`x/...`,
    `t4/memorize/standard/s0`), and the documents (report.DOCS) name records in backticks: every
    such name (a tag, a glob of tags, or a cell without its /sN) matches a committed record, so a
    renamed or never-run probe cannot be cited."""
    tags = [json.loads(line)["config"]["tag"] for path in os.listdir(os.path.join(HERE, "results"))
            if path.endswith(".jsonl") and not path.startswith("queue")
            for line in open(os.path.join(HERE, "results", path)) if line.strip()]
    name = r"(?:x|t\d|f\d|c\d)/[\w.*/-]*[\w*]"
    script = open(os.path.join(HERE, "run_all.sh")).read()
    recipe = script[script.index("# One recipe per task"):]
    recipe = recipe[:recipe.index("\nfi\n")]                 # the paper scale's settings
    cited = re.findall(rf"(?<![\w/]){name}", "\n".join(
        line.split("#", 1)[1] for line in recipe.splitlines() if "#" in line))
    import report
    for doc in report.DOCS:
        cited += re.findall(rf"`({name})`", open(os.path.join(HERE, doc)).read())
    assert len(cited) > 20
    missing = sorted({c for c in cited if not any(re.fullmatch(
        re.escape(c).replace(r"\*", ".*") + r"(/s\d+)?", tag) for tag in tags)})
    assert not missing, f"cited, but no record has this tag: {missing}"


def test_claims_read_the_long_runs_of_table_11_where_they_exist():
    """Without `run_all.sh --claims`, claim 3 compares Table 3's 4-head MixiT on add and dyck;
    with it, the 64-head long runs (and claim 4 the n = 128 capacity cells; claim 3's memorize
    stays on Table 4's cells, read where their doubling settled), and Table 11 shows each long
    cell beside its accuracy 1000 steps before the end."""
    import report

    def runs(task, size, *accs, bits=None, steps=2000):
        return [{"config": {"task": task, "task_size": size, "data_seed": 0, "eval_size": 64,
                            "n_embd": 16},
                 "steps": steps, "n_trainable": 10,
                 "final": {"acc": a, **({"bits_per_param": bits * a} if bits else {})},
                 "history": [{"step": 0, "train_s": 0, "acc": 0.1},
                             {"step": 1000, "train_s": 9, "acc": a - 0.01},
                             {"step": steps, "train_s": 20, "acc": a}]} for a in accs]
    cells = {f"{c}/{v}": runs(t, n, *accs) for c, t, n in (
                 ("t3/add", "add", 4), ("t3/modadd", "modadd", 11), ("t3/dyck", "dyck", 6))
             for v, accs in (("standard", (1.0, 1.0, 0.99)), ("mixit", (0.45, 0.40, 0.50)))}
    # Table 4's cells, doubled (2000 -> 4000 steps moves nothing) with five seeds at 2000
    for v, accs in (("standard", (1.0, 1.0, 0.99, 1.0, 0.99)), ("mixit", (0.45, 0.40, 0.50, 0.45, 0.45))):
        for c, n, steps in ((f"t4/memorize/{v}", 5, 2000), (f"t4/memorize/{v}-steps4000", 3, 4000)):
            cells[c] = runs("memorize", 8, *accs[:n], steps=steps)
            for i, r in enumerate(cells[c]):
                r["config"]["tag"] = f"{c}/s{i}"
    row = lambda md, n: next(l for l in md.splitlines() if l.startswith(f"| {n}. "))  # noqa: E731
    verdict = lambda md, n: row(md, n).split(" | ")[3]  # noqa: E731
    assert verdict(report.verdicts(cells), 3) == "not reproduced"
    cells["c3/add/mixit-heads64"] = runs("add", 4, 1.0, 0.99, 1.0, steps=8000)
    cells["c3/dyck/mixit-heads64"] = runs("dyck", 6, 0.9, 0.92, 0.91)
    for v, a in (("standard", 0.5), ("frozen_qk", 0.4), ("mixit", 0.48), ("frozen_mlp", 0.2)):
        cells[f"c4/memorize/{v}"] = runs("memorize", 8, a, a + 0.01, a - 0.01, bits=3.0)
    cells["c4/memorize/mixit_stdblock"] = runs("memorize", 8, 0.3, 0.3, 0.3, bits=3.0)
    r3 = row(report.verdicts(cells), 3)
    assert "add (MixiT 64 heads) 99.7 ± 0.6 vs 99.7 ± 0.6" in r3
    assert "memorize 45.0 ± 3.5 vs 99.6 ± 0.5" in r3 and "memorize (Table 11)" not in r3
    assert "dyck (MixiT 64 heads) 91.0 ± 1.0 vs 99.7 ± 0.6" in r3
    # modadd still reads Table 3, where MixiT is far behind; memorize Table 4's cells
    assert r3.split(" | ")[3] == "partly (fails: modadd, dyck, memorize)"
    r4 = row(report.verdicts(cells), 4)  # the capacity cells ran at one budget: no verdict yet
    assert "(memorize-8)" in r4 and "doubling not settled" in r4
    assert r4.split(" | ")[3] == "not yet run"
    for c, rs in cells.items():
        for i, r in enumerate(rs):
            r["config"]["tag"] = f"{c}/s{i}"
    md = report.render(cells, "quick")
    assert "| MixiT, 64 heads (add) | 99.7 ± 0.6 (n=3) | – | 98.7 ± 0.6 (n=3) |" in md
    assert "| MixiT, 64 heads (dyck) | 91.0 ± 1.0 (n=3) | – | 90.0 ± 1.0 (n=3) |" in md
    assert ("| MixiT in Standard's block (learned positions kept) (memorize, 2000 steps, not settled "
            "by doubling) | 30.0 ± 0.0 (n=3) | "
            "0.90 ± 0.00 (n=3) |") in md


def test_plan_costs_each_run_by_its_flops_and_the_measured_floor(tmp_path, capsys):
    """bench.plan: a tiny run sits on the per-step floor (start-up + steps x floor), a huge one is
    costed by its FLOPs at the stated MFU, and packing divides only the floor-bound runs."""
    import bench
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("a/tiny/s0 --task add --task_size 3 --n_embd 32 --steps 100\n"
                    "b/huge/s0 --task add --task_size 10 --n_embd 1024 --batch_size 4096 "
                    "--steps 100\n")
    serial, packed = bench.plan(str(jobs), per_gpu=8)
    tiny = (bench.RUN_START_S + 100 * bench.STEP_FLOOR_MS / 1000) / 60
    cfg = mixit.resolve_config(mixit.parse_args(["--task", "add", "--task_size", "10",
                                                 "--n_embd", "1024", "--out", ""]))
    cfg.block_size = 32
    flops = bench.model_flops_per_token(mixit.GPT(cfg, 12), 32) * 4096 * 32 * 100
    huge = (bench.RUN_START_S + flops / (bench.MFU * bench.H100_PEAK)) / 60
    assert serial == pytest.approx(tiny + huge, rel=1e-6)
    assert packed == pytest.approx(tiny / bench.PACKING_SPEEDUP[8] + huge, rel=1e-6)
    assert "b/huge/s0" in capsys.readouterr().out


def test_queue_runs_claims_first_and_reruns_a_cell_only_when_its_recipe_changed(tmp_path):
    """bench.todo (run_all.sh's queue): seed 0 of the claims' cells first, then the other seeds,
    then the studies, in list order within each; a cell whose latest record ran its recipe is
    dropped, one whose recipe changed since (another --lr) stays; a benchmark with a record is
    done. The estimates file has one 'tag minutes' line per run left, in the queue's order: the
    start-up plus the measured step time of its shape (a record of another recipe), else the
    cost model's."""
    import bench
    jobs, records, est = tmp_path / "jobs.txt", tmp_path / "runs.jsonl", tmp_path / "est.txt"
    run = "--task add --task_size 3 --n_embd 32 --steps 100"
    jobs.write_text("".join(f"{tag} {run}{extra}\n" for tag, extra in [
        ("t9/add/x/s0", ""), ("t1/add/a/s1", ""), ("t1/add/a/s0", ""), ("t3/add/done/s0", ""),
        ("t3/add/changed/s0", " --lr 1e-3"), ("t7/bench/s0", " --bench"), ("t3/add/b/s0", "")]))
    cfg = lambda *f: dataclasses.asdict(mixit.resolve_config(mixit.parse_args(run.split() + list(f))))  # noqa: E731
    records.write_text("".join(json.dumps(r) + "\n" for r in [
        {"config": {**cfg(), "tag": "t3/add/done/s0"}, "history": [], "ms_per_step": 600.0},
        {"config": {**cfg(), "tag": "t3/add/changed/s0"}, "history": []},
        {"config": {**cfg(), "tag": "t7/bench/s0"}, "bench": []}]))
    order = [line.split()[0] for line in bench.todo(str(jobs), str(records), str(est))]
    assert order == ["t1/add/a/s0", "t3/add/changed/s0", "t3/add/b/s0", "t1/add/a/s1", "t9/add/x/s0"]
    assert [line.split()[0] for line in est.read_text().splitlines()] == order
    # every run left has the measured shape: 16 s to start plus 100 steps of 600 ms, in minutes,
    # written with bench.SPARE to spare (the time a run must have left to start)
    assert {line.split()[1] for line in est.read_text().splitlines()} == {f"{bench.SPARE * 76 / 60:.2f}"}
    records.write_text("")  # no measurement: the model's floor of 9 ms a step
    bench.todo(str(jobs), str(records), str(est))
    assert f"{bench.SPARE * (bench.RUN_START_S + 0.9) / 60:.2f}" in est.read_text().split()


CLOCK_TICK = 10  # seconds the test's clock moves on at each `date +%s` that run_all.sh reads

# The test's clock: a file of whole seconds. `python tick.py CLOCK [SECONDS]` moves it on by
# SECONDS (CLOCK_TICK by default) under a lock, and prints the new time: the `date +%s` shim.
TICK = """import fcntl, os, sys
clock, seconds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else {tick}
with open(clock + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    now = int(open(clock).read()) + seconds
    with open(clock + ".tmp", "w") as f:
        f.write(str(now))
    os.replace(clock + ".tmp", clock)
print(now)
"""


def clock_repo(tmp_path, measured_ms):
    """A copy of run_all.sh and its Python files in tmp_path/repo, on a clock the test controls:
    shims for `date +%s`, which reads a file and moves it on by CLOCK_TICK seconds at each call
    (CLOCK_STEP seconds where that variable is set),
    and for `timeout`, which stops its command (SIGTERM, status 124) once that clock passes its
    duration. Nothing depends on how fast the machine runs: time passes only by run_all.sh's
    own `date +%s` calls and where the test moves the clock (tick.py). A record prices
    memorize's shape at measured_ms a step. Returns (repo, call, clock), call(minutes, only,
    drive=None, **env) running `REPORT=0 run_all.sh --smoke --claims --seeds 2 --minutes M` on
    the runs whose tags match only, calling drive() every 0.1 s while it runs."""
    repo, shims, clock = tmp_path / "repo", tmp_path / "bin", tmp_path / "clock"
    repo.mkdir(), shims.mkdir()
    clock.write_text("1000000")
    for f in ("mixit.py", "tasks.py", "runtime.py", "bench.py", "records.py", "figures.py", "report.py", "run_all.sh"):
        shutil.copy(os.path.join(HERE, f), repo)
    (tmp_path / "tick.py").write_text(TICK.format(tick=CLOCK_TICK))
    (shims / "date").write_text(f'#!/bin/sh\n[ "$1" = +%s ] || exec {shutil.which("date")} "$@"\n'
                                f'exec {sys.executable} {tmp_path / "tick.py"} {clock} $CLOCK_STEP\n')
    (shims / "timeout").write_text(  # timeout -k KILL DURATION CMD...: DURATION on the test's clock
        f'#!/bin/sh\nshift 2; end=$(( $(cat {clock}) + $1 )); shift\n'
        '"$@" & pid=$!\n'
        f'while kill -0 $pid 2>/dev/null; do\n'
        f'  if [ "$(cat {clock})" -ge $end ]; then kill -TERM $pid; wait $pid; exit 124; fi\n'
        '  sleep 0.1\n'
        'done\n'
        'wait $pid\n')
    for shim in shims.iterdir():
        shim.chmod(0o755)
    measured = dataclasses.asdict(mixit.resolve_config(mixit.parse_args(
        "--task memorize --task_size 128 --n_embd 32 --batch_size 1024 --variant standard".split())))
    (repo / "results").mkdir()
    (repo / "results" / "smoke.jsonl").write_text(json.dumps(
        {"config": {**measured, "tag": "x/measured"}, "history": [], "ms_per_step": measured_ms}) + "\n")
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}", "REPORT": "0",  # no tables
           "PYTHONUNBUFFERED": "1"}  # each run's log line by line, as the test reads it

    def call(minutes, only, drive=None, **more):
        with open(tmp_path / "stdout", "w") as out, open(tmp_path / "stderr", "w") as err:
            done = subprocess.Popen(["bash", "run_all.sh", "--smoke", "--claims", "--seeds", "2",
                                     "--minutes", str(minutes)], env={**env, "ONLY": only, **more},
                                    cwd=repo, stdout=out, stderr=err, text=True)
            t0 = time.time()
            while done.poll() is None:
                if time.time() - t0 > 600:
                    done.kill()
                    pytest.fail("run_all.sh took more than 10 minutes")
                if drive:
                    drive()
                time.sleep(0.1)
        stdout, stderr = (tmp_path / "stdout").read_text(), (tmp_path / "stderr").read_text()
        assert done.returncode == 0, stderr[-2000:]
        return stdout
    return repo, call, clock


def test_run_all_minutes_stops_inside_its_budget_and_the_next_call_resumes(tmp_path):
    """`run_all.sh --minutes M` on the test's clock: of three smoke runs, the short one finishes
    and writes its record, the long one (width 256, 64 heads: a few times the short one's time)
    gets SIGTERM at the end of the call, saves its state and is reported paused, and the third,
    whose price fits the time left when it would start but not with a quarter of it to spare,
    does not start. The next call starts nothing twice: it resumes the long run from the step
    where it stopped."""
    # A 3-minute call's budget is 150 s (30 s are kept to save state). run_all.sh reads the clock
    # once to start and once per run it considers (10 s a read): the third run, measured at
    # 4.2 s a step (16 s to start + 20 steps = 100 s), fits the time left when it is considered,
    # but not with the quarter to spare (125 s). The test ends each call (the clock moved past
    # every deadline) once the short run has written its record and the long one is training.
    repo, call, clock = clock_repo(tmp_path, 4200.0)
    short, long, later = "t3/add/standard/s0", "c6/add/mixit-w256-L2/s0", "t4/memorize/standard/s1"
    records = repo / "results" / "smoke.jsonl"
    state = repo / "results" / "ckpt" / "smoke" / "c6_add_mixit-w256-L2_s0.pt"
    log_path = repo / "results" / "logs" / "smoke" / "c6_add_mixit-w256-L2_s0.log"
    ended = []

    def end_the_call_once(training):  # training: the long run's log line that says it trains
        def drive():
            log = log_path.read_text() if log_path.exists() else ""
            if training not in ended and training in log and short in records.read_text():
                subprocess.run([sys.executable, tmp_path / "tick.py", clock, "1000"], check=True,
                               timeout=60)
                ended.append(training)
        return drive
    out = call(3, "|".join([short, long, later]), end_the_call_once("step     0 | test loss"))
    assert ended and f"done   {short}" in out and f"paused {long}" in out, out[:2000]
    assert f"later  {later}" in out, out[:2000]
    tags = [json.loads(line)["config"]["tag"] for line in records.open()]
    assert tags == ["x/measured", short]  # one record: the finished run's
    assert not (repo / "results" / "tables_smoke.md").exists()  # REPORT=0: no tables rendered
    log = log_path.read_text()
    stopped = re.search(r"SIGTERM at step (\d+): the run's state is saved", log)
    assert stopped and state.exists(), log[-2000:]
    [paused] = [json.loads(line) for line in (repo / "results" / "smoke-paused.jsonl").open()]
    assert paused["config"]["tag"] == long and paused["ms_per_step"] > 0  # its speed, for --plan
    out = call(2, f"{short}|{long}", end_the_call_once("resumed from"))
    assert short not in out and long in out and len(ended) == 2, out[:2000]  # not rerun
    log = log_path.read_text()
    assert f"resumed from results/ckpt/smoke/c6_add_mixit-w256-L2_s0.pt at step {stopped[1]}\n" in log


# (the environment that holds the run back, the one that starts it, the call's minutes, and the
# seconds the test's clock moves at each read)
PIECES_CASES = {"another call follows": ({}, {"PIECES": "1"}, 2, {}),
                "the state stays": ({"PIECES": "1"}, {"PIECES": "keep"}, 3, {"CLOCK_STEP": "80"})}


@pytest.mark.parametrize("case", list(PIECES_CASES))
def test_run_all_minutes_starts_a_run_longer_than_the_time_left_only_where_its_state_is_kept(tmp_path, case):
    """A run priced longer than the whole call (16 s + 20 steps at 12 s = 256 s against a
    2-minute call's 90 s) would be paused at the call's end and its state lost with the machine:
    --minutes does not start it, unless PIECES=1 says a second call follows on the same machine;
    then it starts with at least half the call left. Where the state stays (PIECES=keep: a CPU)
    it starts even with less than half left, where PIECES=1 holds it back: in a 3-minute call
    (a budget of 150 s) whose clock moves 80 s at each read, it is considered with 70 s left,
    over the minute that any start needs. Started, it is paused at the call's end, its state
    saved for the next call."""
    held, starts, minutes, clock_step = PIECES_CASES[case]
    repo, call, clock = clock_repo(tmp_path, 12000.0)
    tag = "t4/memorize/standard/s1"
    state = repo / "results" / "ckpt" / "smoke" / "t4_memorize_standard_s1.pt"
    assert f"later  {tag}" in call(minutes, tag, **held, **clock_step)
    assert not state.exists()
    log = repo / "results" / "logs" / "smoke" / "t4_memorize_standard_s1.log"

    def end_the_call():  # once it trains: the call ends, as it would on the real clock
        if log.exists() and "step     0 | test loss" in log.read_text() and not ended:
            subprocess.run([sys.executable, tmp_path / "tick.py", clock, "1000"], check=True,
                           timeout=60)
            ended.append(True)
    ended = []
    out = call(minutes, tag, end_the_call, **starts, **clock_step)
    assert f"paused {tag}" in out and state.exists(), out[:2000]


def test_gpu_call_keeps_every_record_when_a_call_is_sent_the_old_records(tmp_path):
    """gpu_call.sh, with run_all.sh replaced by a stand-in that appends one record per call. Call 2
    is sent this checkout's results/paper.jsonl before call 1's record was merged here: the machine
    adds its kept copy back before run_all.sh runs, and --merge here adds only the lines missing,
    however often it runs."""
    repo, machine = tmp_path / "repo", tmp_path / "machine"
    for side in (repo, machine):
        (side / "results").mkdir(parents=True)
        shutil.copy(os.path.join(HERE, "gpu_call.sh"), side)
        (side / "results" / "paper.jsonl").write_text('{"tag": "a"}\n')
    # the stand-in run_all.sh: fails unless it sees every record so far, then writes the next one
    (machine / "run_all.sh").write_text(
        'n=$(wc -l <results/paper.jsonl); [ "$n" = "$EXPECT" ] || exit 7\n'
        'echo "{\\"tag\\": \\"run$n\\"}" >>results/paper.jsonl\n')

    def call(expect):
        out = tmp_path / f"out{expect}"
        out.mkdir()
        done = subprocess.run(["bash", "gpu_call.sh", "--minutes", "9"], cwd=machine,
                              env={**os.environ, "OUT": str(out), "EXPECT": str(expect)},
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return out

    def merge(folder):  # from the folder above, with relative paths
        done = subprocess.run(["bash", "repo/gpu_call.sh", "--merge", folder.name], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return (repo / "results" / "paper.jsonl").read_text().splitlines()

    first = call(1)
    # call 2 is sent this checkout, which does not have call 1's record yet
    shutil.copy(repo / "results" / "paper.jsonl", machine / "results" / "paper.jsonl")
    second = call(2)  # the stand-in exits 7 unless call 1's record was added back
    want = ['{"tag": "a"}', '{"tag": "run1"}', '{"tag": "run2"}']
    assert merge(second) == want
    assert merge(first) == want and merge(second) == want  # an older file or a repeat adds nothing
    (repo / "results" / "paper.jsonl").write_text("")  # a checkout with no records yet takes all
    assert merge(second) == want
    bad = subprocess.run(["bash", "gpu_call.sh", "--merge", str(tmp_path / "nowhere")], cwd=repo,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no paper.jsonl" in bad.stderr


def test_gpu_call_measures_packing_first_and_sends_back_what_only_the_machine_can_make(tmp_path):
    """gpu_call.sh with stand-ins for bench.py, run_all.sh and figures.py. PACK=1,4,8: the packing
    measurement runs first, and the queue gets --minutes M less the whole minutes it took; the
    queue renders no tables there (REPORT=0); where induction checkpoints are on the machine,
    their heads' scores are computed there. Its records, the packing records and the scores
    come back, and --merge adds them here."""
    repo, machine, out = tmp_path / "repo", tmp_path / "machine", tmp_path / "out"
    for side in (repo, machine):
        (side / "results").mkdir(parents=True)
        shutil.copy(os.path.join(HERE, "gpu_call.sh"), side)
        (side / "results" / "paper.jsonl").write_text('{"tag": "a"}\n')
        (side / "results" / "gpu.jsonl").write_text('{"tag": "old"}\n')
    out.mkdir()
    (machine / "bench.py").write_text(  # takes a second: the queue then gets a minute less
        "import sys, time\ntime.sleep(1.2)\nassert sys.argv[1:3] == ['--pack', '1,4,8']\n"
        "open('results/gpu.jsonl', 'a').write('{\"tag\": \"gpu/pack\"}\\n')\n")
    (machine / "run_all.sh").write_text(
        'echo "run_all.sh $* REPORT=$REPORT"\necho \'{"tag": "run"}\' >>results/paper.jsonl\n')
    (machine / "figures.py").write_text(
        "def plot_attention(scale):\n    open(f'results/heads_{scale}.json', 'w').write('{}')\n")
    (machine / "results" / "ckpt").mkdir()
    (machine / "results" / "ckpt" / "paper_induction_standard.pt").write_text("")
    done = subprocess.run(["bash", "gpu_call.sh", "--minutes", "9"], cwd=machine,
                          env={**os.environ, "OUT": str(out), "PACK": "1,4,8"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run_all.sh --minutes 8 REPORT=0" in done.stdout, done.stdout
    assert sorted(os.listdir(out)) == ["gpu.jsonl", "heads_paper.json", "paper.jsonl"]
    merged = subprocess.run(["bash", "gpu_call.sh", "--merge", str(out)], cwd=repo,
                            capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    assert (repo / "results" / "gpu.jsonl").read_text().splitlines() == ['{"tag": "old"}', '{"tag": "gpu/pack"}']
    assert (repo / "results" / "paper.jsonl").read_text().splitlines() == ['{"tag": "a"}', '{"tag": "run"}']
    assert (repo / "results" / "heads_paper.json").exists()


def test_gpu_call_profiles_the_memorize_step_first_at_the_queues_shape(tmp_path):
    """gpu_call.sh PROFILE=1, with stand-ins for bench.py and run_all.sh: before the queue,
    bench.py --profile runs once per variant with that cell's own line from run_all.sh --list,
    its tag and PROFILE_ARGS; a cell the queue no longer lists (here MixiT's) is said and
    skipped; the profile's records come back."""
    machine, out = tmp_path / "machine", tmp_path / "out"
    (machine / "results").mkdir(parents=True)
    out.mkdir()
    shutil.copy(os.path.join(HERE, "gpu_call.sh"), machine)
    (machine / "bench.py").write_text(  # takes a second: the queue then gets a minute less
        "import sys, time\ntime.sleep(1.2)\n"
        "open('results/gpu.jsonl', 'a').write(' '.join(sys.argv[1:]) + '\\n')\n")
    (machine / "run_all.sh").write_text(
        'if [ "$1" = --list ]; then echo "t4/memorize/standard/s0 --n_embd 128 --task memorize";\n'
        'echo "t4/memorize/mixit-steps30000/s0 --n_embd 64"; exit 0; fi\necho "run_all.sh $*"\n')
    done = subprocess.run(["bash", "gpu_call.sh", "--minutes", "9"], cwd=machine,
                          env={**os.environ, "OUT": str(out), "PROFILE": "1",
                               "PROFILE_ARGS": "--batch_size 64", "MPS": "0"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "gpu.jsonl").read_text().splitlines() == [
        "--profile --n_embd 128 --task memorize --tag gpu/profile-memorize-standard "
        "--out results/gpu.jsonl --batch_size 64"]
    assert "t4/memorize/mixit/s0 is not in the queue" in done.stdout
    assert done.stdout.rstrip().endswith("run_all.sh --minutes 8"), done.stdout


def test_gpu_call_mps_runs_every_run_of_the_call_through_the_daemon_or_says_why_not(tmp_path):
    """gpu_call.sh MPS=1 PACK=1,4,8, with stand-ins for NVIDIA's nvidia-cuda-mps-control, bench.py
    and run_all.sh: the packing measurement runs at both shapes without MPS, then the daemon
    starts and it runs again (tags -mps) and the queue runs under it, and the daemon is told to
    quit at the end. Where the daemon is missing, or will not start, the call says so in one
    line (with the daemon's message) and goes on without it."""
    machine, bin_ = tmp_path / "machine", tmp_path / "bin"
    (machine / "results").mkdir(parents=True)
    bin_.mkdir()
    shutil.copy(os.path.join(HERE, "gpu_call.sh"), machine)
    (machine / "results" / "paper.jsonl").write_text("")
    seen = 'MPS_ACTIVE=${MPS_ACTIVE:-} PIPE=${CUDA_MPS_PIPE_DIRECTORY:-}'
    (machine / "bench.py").write_text(  # prints the tag it would write, and what MPS it saw
        "import os, sys\n"
        "if sys.argv[1] == '--mps': print(0); sys.exit()\n"
        "print('bench', sys.argv[sys.argv.index('--tag') + 1], 'MPS_ACTIVE=' + os.environ.get("
        "'MPS_ACTIVE', ''), 'PIPE=' + os.environ.get('CUDA_MPS_PIPE_DIRECTORY', ''))\n"
        "open('results/gpu.jsonl', 'a').close()\n")
    (machine / "run_all.sh").write_text(f'echo "run_all.sh {seen}"\n')
    daemon = bin_ / "nvidia-cuda-mps-control"

    def call(path, **env):
        out = tmp_path / "out"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        done = subprocess.run(["bash", "gpu_call.sh", "--minutes", "9"], cwd=machine,
                              env={**os.environ, "PATH": path, "OUT": str(out), "PYTHON": sys.executable,
                                   "PACK": "1,4,8", "MPS": "1", **env}, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.splitlines()

    # a daemon that starts (-d) and, later, reads "quit" on its standard input
    daemon.write_text('#!/bin/bash\nif [ "${1:-}" = -d ]; then echo started >>"$LOG"; else echo "$(cat)" >>"$LOG"; fi\n')
    daemon.chmod(0o755)
    log = tmp_path / "daemon.log"
    lines = call(f"{bin_}:{os.environ['PATH']}", LOG=str(log))
    on = "MPS_ACTIVE=1 PIPE=/tmp/mps-pipe"
    assert [l for l in lines if l.startswith(("bench", "run_all", "gpu_call.sh: MPS"))] == [
        "bench gpu/pack-barrier-induction64-w512 MPS_ACTIVE= PIPE=",
        "bench gpu/pack-barrier-mixit16-w512 MPS_ACTIVE= PIPE=",
        "gpu_call.sh: MPS on",
        f"bench gpu/pack-barrier-induction64-w512-mps {on}",
        f"bench gpu/pack-barrier-mixit16-w512-mps {on}",
        f"run_all.sh {on}",
        "gpu_call.sh: MPS off"], lines
    assert log.read_text().splitlines() == ["started", "quit"]

    # no daemon on the machine: one line says so, and everything runs without MPS
    lines = call(os.environ["PATH"])
    assert "gpu_call.sh: MPS could not start (nvidia-cuda-mps-control not found); the runs go on without it" in lines
    assert "run_all.sh MPS_ACTIVE= PIPE=" in lines and not any("-mps " in l for l in lines)
    assert sum("could not start" in l for l in lines) == 1, lines
    # a daemon that will not start: its message is in that line
    daemon.write_text('#!/bin/bash\necho "An instance of this daemon is already running" >&2; exit 1\n')
    lines = call(f"{bin_}:{os.environ['PATH']}")
    assert any(l.startswith("gpu_call.sh: MPS could not start (nvidia-cuda-mps-control -d: An instance")
               for l in lines), lines
    assert "run_all.sh MPS_ACTIVE= PIPE=" in lines
    # MPS unset: it follows the best measurement (the stand-in's bench.py --mps says 0)
    lines = call(f"{bin_}:{os.environ['PATH']}", MPS="")
    assert "run_all.sh MPS_ACTIVE= PIPE=" in lines and not any("MPS on" in l for l in lines)

# two runs the size of a `run_all.sh --paper-smoke --list` line (its 2 steps), tiny and on the CPU
SMOKE_RUN = ("--n_embd 32 --n_head 4 --n_layer 1 --batch_size 8 --device cpu --dtype float32 "
             "--steps 2 --eval_interval 1 --eval_size 64 --warmup 1")
SLURM_LIST = [f"t1/copy/standard/s0 --task copy --task_size 4 --variant standard --seed 0 {SMOKE_RUN}",
              f"t3/add/mixit/s0 --task add --task_size 2 --variant mixit --seed 0 {SMOKE_RUN}"]


def slurm_repo(tmp_path, lines=SLURM_LIST):
    """A copy of what slurm.sh runs, a job list, and the environment of a task outside Slurm."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for f in ("mixit.py", "tasks.py", "runtime.py", "bench.py", "records.py", "slurm.sh"):
        shutil.copy(os.path.join(HERE, f), repo)
    (repo / "queue.txt").write_text("".join(line + "\n" for line in lines))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "PYTHONUNBUFFERED"}
    env.update(SCALE="paper-smoke", PYTHON=sys.executable, OMP_NUM_THREADS="1")
    return repo, env


def slurm(repo, env, *args, task=None):
    env = env if task is None else {**env, "SLURM_ARRAY_TASK_ID": str(task)}
    return subprocess.run(["bash", "slurm.sh", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120)


def test_slurm_array_tasks_write_records_of_their_own_and_the_merge_adds_each_once(tmp_path):
    """Two array tasks, at once: each runs its line of the list as run_one would (its state,
    --tag, --examples 0 --log_interval 250, its log) and writes its record to a file of its own.
    The merge adds both to results/paper-smoke.jsonl once, after the lines already there; a second
    merge adds nothing, and a task started again after its run ended does not train it again."""
    repo, env = slurm_repo(tmp_path)
    (repo / "results").mkdir()
    (repo / "results" / "paper-smoke.jsonl").write_text('{"tag": "earlier"}\n')
    jobs = [subprocess.Popen(["bash", "slurm.sh", "queue.txt"], cwd=repo, text=True,
                              env={**env, "SLURM_ARRAY_TASK_ID": str(i)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for i in (1, 2)]
    for t, line in zip(jobs, SLURM_LIST):
        out, err = t.communicate(timeout=120)
        tag = line.split()[0]
        assert t.returncode == 0 and f"done   {tag}  (final test accuracy" in out, out + err
        name = tag.replace("/", "_")
        mine = (repo / "results" / "slurm" / "paper-smoke" / f"{name}.jsonl").read_text().splitlines()
        config = json.loads(mine[0])["config"]
        assert len(mine) == 1 and config["tag"] == tag
        assert config["resume"] == f"results/ckpt/paper-smoke/{name}.pt"  # run_one's state
        assert (config["examples"], config["log_interval"], config["steps"]) == (0, 250, 2)
        assert "final test accuracy" in (repo / "results" / "logs" / "paper-smoke" / f"{name}.log").read_text()
        assert not (repo / config["resume"]).exists()  # the record holds the run now
    records = repo / "results" / "paper-smoke.jsonl"
    assert records.read_text() == '{"tag": "earlier"}\n'  # no task wrote the shared file
    merged = slurm(repo, env, "--merge")
    assert merged.returncode == 0 and "2 new records" in merged.stdout, merged.stderr
    lines = records.read_text().splitlines()
    assert lines[0] == '{"tag": "earlier"}'
    assert sorted(json.loads(x)["config"]["tag"] for x in lines[1:]) == ["t1/copy/standard/s0", "t3/add/mixit/s0"]
    again = slurm(repo, env, "--merge", "results/slurm/paper-smoke")
    assert again.returncode == 0 and "0 new records" in again.stdout
    assert records.read_text().splitlines() == lines
    rerun = slurm(repo, env, "queue.txt", task=2)  # Slurm starts a finished task again
    assert rerun.returncode == 0 and "its record is in" in rerun.stdout, rerun.stderr
    assert len((repo / "results" / "slurm" / "paper-smoke" / "t3_add_mixit_s0.jsonl").read_text().splitlines()) == 1


def test_slurm_near_its_time_limit_saves_the_state_requeues_and_the_next_start_resumes(tmp_path):
    """USR1 (#SBATCH --signal, before the time limit): the task stops its run, which saves its
    state, puts itself back in the queue (scontrol requeue, a stand-in here) and says it paused;
    started again, it resumes from that state and writes the record."""
    line = SLURM_LIST[0].replace("--steps 2 --eval_interval 1", "--steps 300 --eval_interval 100")
    repo, env = slurm_repo(tmp_path, [line])
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "scontrol").write_text(f'#!/bin/sh\necho "$@" >>{tmp_path}/scontrol.calls\n')
    (bin_ / "scontrol").chmod(0o755)
    job = {**env, "PATH": f"{bin_}:{env['PATH']}", "SLURM_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": "1"}
    task = subprocess.Popen(["bash", "slurm.sh", "queue.txt"], cwd=repo, env=job, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    log = repo / "results" / "logs" / "paper-smoke" / "t1_copy_standard_s0.log"
    for _ in range(600):  # the step-0 evaluation: training has begun, a signal now saves the state
        if task.poll() is not None or log.exists() and "| test loss" in log.read_text():
            break
        time.sleep(0.1)
    assert task.poll() is None, "the run ended before it could be stopped"
    task.send_signal(10)  # SIGUSR1
    out, err = task.communicate(timeout=60)
    state = repo / "results" / "ckpt" / "paper-smoke" / "t1_copy_standard_s0.pt"
    assert task.returncode == 143 and "paused t1/copy/standard/s0" in out, out + err
    assert state.exists() and (tmp_path / "scontrol.calls").read_text() == "requeue 77\n"
    resumed = slurm(repo, env, "queue.txt", task=1)
    assert resumed.returncode == 0 and "done   t1/copy/standard/s0" in resumed.stdout, resumed.stderr
    assert f"resumed from {state.relative_to(repo)}" in log.read_text() and not state.exists()
    record = json.loads((repo / "results" / "slurm" / "paper-smoke" / "t1_copy_standard_s0.jsonl").read_text())
    assert record["steps"] == 300


def test_slurm_says_in_one_line_what_is_wrong(tmp_path):
    """No list file, no task id, a task id past the list, a paper-smoke line submitted as paper,
    a merge of a folder that is not there: one line on stderr, exit 2, nothing run."""
    repo, env = slurm_repo(tmp_path)
    paper = {**env, "SCALE": "paper"}
    for args, task, e, said in [(["nowhere.txt"], 1, env, "no list file 'nowhere.txt'"),
                                (["queue.txt"], None, env, "SLURM_ARRAY_TASK_ID is not set"),
                                (["queue.txt"], 3, env, "task 3 is not a line of"),
                                (["queue.txt"], "x", env, "task x is not a line of"),
                                (["queue.txt"], 1, paper, "submit it with SCALE=paper-smoke"),
                                (["--merge", "nowhere"], None, env, "no folder"),
                                ([], None, env, "usage")]:
        done = slurm(repo, e, *args, task=task)
        assert done.returncode == 2 and said in done.stderr and len(done.stderr.splitlines()) == 1, (args, done.stderr)
    assert not (repo / "results").exists()


def no_gpu(tmp_path):
    """PATH with an nvidia-smi that finds no GPU in front, as on a machine without one."""
    shims = tmp_path / "no-gpu"
    shims.mkdir()
    (shims / "nvidia-smi").write_text("#!/bin/sh\necho 'No devices were found' >&2; exit 6\n")
    (shims / "nvidia-smi").chmod(0o755)
    return {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}


def test_run_all_cpu_compile_compiles_every_quick_run_and_nothing_else_changes(tmp_path):
    """CPU_COMPILE=1 adds --compile true --sdpa false to each quick (here smoke) job line, and
    only that: the line is otherwise the one run without it, so the run's recipe is the same
    (bench.RECIPE_FREE), and a run stopped one way resumes the other (runtime.RESUME_FREE)."""
    import bench
    for f in ("run_all.sh", "mixit.py", "tasks.py", "runtime.py", "bench.py", "records.py"):
        shutil.copy(os.path.join(HERE, f), tmp_path)
    env = {**os.environ, "PYTHON": sys.executable, "ONLY": "t1/copy/mixit/"}
    lines = [subprocess.run(["bash", "run_all.sh", "--smoke", "--list"], cwd=tmp_path, text=True,
                            capture_output=True, timeout=120, env={**env, **more}).stdout.split()
             for more in ({}, {"CPU_COMPILE": "1"})]
    assert lines[0] and "--compile" not in lines[0]
    assert lines[1] == lines[0][:lines[0].index("--steps")] + ["--compile", "true", "--sdpa", "false"] + \
        lines[0][lines[0].index("--steps"):]
    assert {"compile", "sdpa"} <= set(bench.RECIPE_FREE) & set(runtime.RESUME_FREE)


def test_run_all_help_lists_every_option_it_parses():
    """`bash run_all.sh --help` prints a line for each option the script's parser takes, and a
    usage line that names every one; both are the header's own lines, so the two cannot drift.
    A bad option is one line on stderr, with that usage, and exit 2."""
    script = open(os.path.join(HERE, "run_all.sh")).read()
    parser = script[script.index("while [ $# -gt 0 ]"):]
    parser = parser[:parser.index("\ndone\n")]
    options = [o for case in re.findall(r"^\s+(-[-\w|]+)\)", parser, re.M) for o in case.split("|")]
    assert {"--quick", "--list", "--plan", "--paper-smoke", "--help"} <= set(options)
    done = subprocess.run(["bash", "run_all.sh", "--help"], cwd=HERE, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr, done.stderr
    lines = done.stdout.splitlines()
    [usage] = [line for line in lines if line.startswith("usage: ")]
    header = script.splitlines()
    for line in lines:
        assert not line or f"# {line}" in header or f"#{line[1:]}" in header, line
    for option in options:
        assert re.search(rf"(?<![\w-]){option}(?![\w-])", usage), option
        assert sum(line.split()[:1] == [option] for line in lines) == 1, option
    bad = subprocess.run(["bash", "run_all.sh", "--nope"], cwd=HERE, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and not bad.stdout and len(bad.stderr.splitlines()) == 1
    assert "unknown option '--nope'" in bad.stderr and usage in bad.stderr


def test_the_paper_scale_on_a_machine_without_a_gpu_is_refused_unless_asked_for(tmp_path):
    """Width-512 runs on a CPU take weeks and leave state files of hundreds of MB when stopped.
    On a machine without a GPU, run_all.sh at paper scale (no --quick, --smoke) refuses in one
    line that names ALLOW_CPU=1 and writes nothing; ALLOW_CPU=1 lets it start, and --paper-smoke
    (two steps a run, meant for a CPU) is not refused. slurm.sh refuses a paper-scale task on such
    a node the same way, and runs it with ALLOW_CPU=1."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for f in ("mixit.py", "tasks.py", "runtime.py", "bench.py", "records.py", "run_all.sh"):
        shutil.copy(os.path.join(HERE, f), repo)
    env = {**no_gpu(tmp_path), "ONLY": "no-such-tag", "REPORT": "0"}  # if it starts: no run, no table

    def run_all(*args, **more):
        return subprocess.run(["bash", "run_all.sh", *args], cwd=repo, env={**env, **more},
                              capture_output=True, text=True, timeout=120)
    for args in ([], ["--claims", "--seeds", "1"]):
        refused = run_all(*args)
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "needs a GPU" in refused.stderr and "ALLOW_CPU=1" in refused.stderr
        assert not (repo / "results").exists()
    assert "run_all (paper): 0 runs to do" in run_all(ALLOW_CPU="1").stdout
    assert "run_all (paper-smoke): 0 runs to do" in run_all("--paper-smoke").stdout
    line = f"t1/copy/standard/s0 --task copy --task_size 4 --variant standard --seed 0 {SMOKE_RUN}"
    (tmp_path / "slurm").mkdir()  # a paper line (3 steps: not the paper smoke test's 2)
    repo, env = slurm_repo(tmp_path / "slurm", [line.replace("--steps 2 ", "--steps 3 ")])
    env = {**env, "SCALE": "paper", "PATH": no_gpu(tmp_path / "slurm")["PATH"]}
    refused = slurm(repo, env, "queue.txt", task=1)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "needs a GPU" in refused.stderr and "ALLOW_CPU=1" in refused.stderr
    assert not (repo / "results").exists()
    allowed = slurm(repo, {**env, "ALLOW_CPU": "1"}, "queue.txt", task=1)
    assert allowed.returncode == 0 and "done   t1/copy/standard/s0" in allowed.stdout, allowed.stderr
    assert (repo / "results" / "slurm" / "paper" / "t1_copy_standard_s0.jsonl").exists()


def test_a_second_sweep_into_the_same_records_is_refused_while_the_first_runs(tmp_path):
    """run_all.sh holds a lock (results/.run_all-NAME.lock, with its pid) while it runs: a second
    run_all.sh into the same records from the same checkout exits 2 in one line that names the
    first's pid (two would run the same cells into the same state files). A lock whose process
    has ended is taken over, and the sweep removes its lock at the end."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for f in ("mixit.py", "tasks.py", "runtime.py", "bench.py", "records.py", "run_all.sh"):
        shutil.copy(os.path.join(HERE, f), repo)
    lock = repo / "results" / ".run_all-smoke.lock"
    lock.mkdir(parents=True)
    (lock / "pid").write_text(f"{os.getpid()}\n")  # this test's process: alive
    env = {**no_gpu(tmp_path), "ONLY": "no-such-tag", "REPORT": "0"}

    def run_all(*args):
        return subprocess.run(["bash", "run_all.sh", "--smoke", *args], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=120)
    refused = run_all()
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert f"another run_all.sh is running" in refused.stderr and str(os.getpid()) in refused.stderr
    ended = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    (lock / "pid").write_text(ended + "\n")  # a process that has ended: a stale lock
    done = run_all()
    assert done.returncode == 0 and "0 runs to do" in done.stdout, done.stderr
    assert not lock.exists()


def test_run_all_without_torch_says_what_to_activate_and_an_empty_list_says_so(tmp_path):
    """Outside the environment (a Python that cannot import torch), `run_all.sh --list` and
    `--plan` end with one line that says what to activate, status 2, no traceback; --help needs
    no Python at all. A --list with nothing left says so, on stderr (stdout stays the queue)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for f in ("mixit.py", "tasks.py", "runtime.py", "bench.py", "records.py", "run_all.sh"):
        shutil.copy(os.path.join(HERE, f), repo)
    shim = tmp_path / "python"  # -S: no site-packages, so no torch
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    shim.chmod(0o755)

    def run_all(*args, **env):
        return subprocess.run(["bash", "run_all.sh", *args], cwd=repo, capture_output=True,
                              text=True, timeout=120, env=env)
    for option in ("--list", "--plan"):
        done = run_all("--quick", option, **{**os.environ, "PYTHON": str(shim)})
        assert done.returncode == 2 and done.stdout == "", done.stderr[-2000:]
        [line] = done.stderr.splitlines()
        assert "cannot import torch" in line and "activate" in line and "Traceback" not in line
    helped = run_all("--help", PATH="/usr/bin:/bin")
    assert helped.returncode == 0 and "--list" in helped.stdout and not helped.stderr
    empty = run_all("--quick", "--list", **{**os.environ, "PYTHON": sys.executable, "ONLY": "no/such"})
    assert empty.returncode == 0 and empty.stdout == "", empty.stderr[-2000:]
    assert "nothing left to run" in empty.stderr and "ONLY='no/such'" in empty.stderr


def test_list_and_plan_leave_a_fresh_clone_clean_and_name_each_flag_once(tmp_path):
    """In a clone of this checkout (its working tree committed there), on a machine without a GPU,
    `bash run_all.sh --help`, `--list` and `--plan` run and leave `git status` clean: --plan
    rewrites the tracked price of the queue (results/queue-paper.jsonl) only when the price
    changed, not for a new time. (Where the committed price is out of date, the first --plan
    updates it and a second must change nothing.) Each line of the queue names each flag once,
    the last value the recipe gave it, as mixit.py reads the recipe (a Slurm task's line)."""
    if not os.path.isdir(os.path.join(HERE, ".git")):
        pytest.skip("not a git checkout (a downloaded copy): there is no clone to make")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", HERE, str(clone)], check=True, timeout=60)

    def git(*args, cwd=clone):
        return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@localhost",
                               *args], cwd=cwd, capture_output=True, text=True, check=True,
                              timeout=60).stdout
    for f in git("ls-files", "-z", cwd=HERE).split("\0")[:-1]:
        if os.path.isfile(os.path.join(HERE, f)):
            shutil.copyfile(os.path.join(HERE, f), clone / f)
        elif (clone / f).exists():
            (clone / f).unlink()
    git("add", "-A")
    git("commit", "-q", "--allow-empty", "-m", "this checkout's working tree")
    env = no_gpu(tmp_path)

    def run_all(*args):
        done = subprocess.run(["bash", "run_all.sh", *args], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout
    run_all("--help")
    for line in run_all("--list").splitlines():
        flags = [w for w in line.split()[1:] if w.startswith("--")]
        assert len(flags) == len(set(flags)), line
    assert "left to run" in run_all("--plan")
    price = "results/queue-paper.jsonl"
    if git("status", "--porcelain") == f" M {price}\n":  # the committed price was out of date
        old, new = (json.loads(text) for text in (git("show", f"HEAD:{price}"), (clone / price).read_text()))
        assert {**old, "time": None} != {**new, "time": None}, "only the time changed"
        git("commit", "-q", "-am", "the price of today's queue")
        run_all("--plan")
    assert git("status", "--porcelain") == ""


def test_plan_prices_the_queue_left_and_check_knows_when_that_price_is_stale(tmp_path, monkeypatch):
    """bench.plan's price record: the runs left (a done cell is not), their minutes as --minutes
    prices them, divided over PER_GPU, the hash of the queue it priced and the runs left whose
    record ran another recipe (superseded). report.py --check takes that hash as current only
    while `bash run_all.sh --list` prints that same queue."""
    import bench
    jobs, records, price = tmp_path / "jobs.txt", tmp_path / "paper.jsonl", tmp_path / "price.jsonl"
    run = "--task add --task_size 3 --n_embd 32 --steps 100"
    jobs.write_text(f"t1/add/a/s0 {run}\nt1/add/done/s0 {run}\nt3/add/b/s1 {run}\n")
    config = dataclasses.asdict(mixit.resolve_config(mixit.parse_args(run.split())))
    records.write_text("".join(json.dumps(r) + "\n" for r in [
        {"config": {**config, "tag": "t1/add/done/s0"}, "history": [], "ms_per_step": 600.0},
        {"config": {**config, "tag": "t1/add/a/s0", "steps": 50}, "history": []}]))
    bench.plan(str(jobs), 4, str(records), str(price))
    [r] = [json.loads(line) for line in price.read_text().splitlines()]
    left = bench.todo(str(jobs), str(records))
    assert r["config"]["tag"] == "queue/paper" and r["final"]["left"] == len(left) == 2
    assert r["final"]["run_minutes"] == pytest.approx(2 * 76 / 60)  # 16 s + 100 x 600 ms each
    assert r["final"]["gpu_minutes"] == pytest.approx(r["final"]["run_minutes"] / 4)
    assert r["config"]["queue_sha256"] == hashlib.sha256("".join(left).encode()).hexdigest()
    assert r["final"]["superseded"] == ["t1/add/a/s0"]
    # --check: the committed price is of today's queue; one of another queue is stale
    assert bench.queue_price_stale() == []
    monkeypatch.setattr(bench, "QUEUE_PRICE", str(price))
    assert "run bash run_all.sh --plan" in bench.queue_price_stale()[0]


def test_a_record_of_an_earlier_recipe_is_marked_and_no_verdict_rests_on_it(tmp_path, monkeypatch):
    """While the paper queue is half done, a table mixes cells of today's recipe and records of
    an earlier one that run_all.sh reruns (the tags `--plan` lists as superseded). Those cells
    are marked ° in the tables and in the claims table, and a claim that reads one says 'not yet
    run' whatever its numbers (here two seeds over the bar: 'reproduced' otherwise), at either
    lr, until the rerun's record replaces it. Quick scale reads no
    such list."""
    import bench
    import report
    path, price = tmp_path / "paper.jsonl", tmp_path / "price.jsonl"
    path.write_text("".join(json.dumps({"config": {"tag": f"t1/{t}/frozen_qk/s{s}", "task_size": 8},
                                        "history": [], "final": {"acc": 0.99 - s / 100}}) + "\n"
                            for t in ("needle", "induction", "copy", "hop") for s in (0, 1)))
    price.write_text(json.dumps({"config": {"tag": "queue/paper"},
                                 "final": {"superseded": ["t1/hop/frozen_qk/s0"]}}) + "\n")
    monkeypatch.setattr(bench, "QUEUE_PRICE", str(price))
    assert bench.superseded_tags("paper") == {"t1/hop/frozen_qk/s0"} and bench.superseded_tags("quick") == set()
    row = lambda md: next(l for l in md.splitlines() if l.startswith("| 2. "))  # noqa: E731
    cells = report.load(str(path), bench.superseded_tags("paper"))
    r2 = row(report.verdicts(cells))
    assert "hop 98.5 ± 0.7 °" in r2 and "needle 98.5 ± 0.7;" in r2
    assert r2.split(" | ")[3] == "not yet run" and r2.endswith("| not yet run |")
    assert report.entry(cells, "t1/hop/frozen_qk") == "98.5 ± 0.7 (n=2) °"  # as Table 1 shows it
    assert report.entry(cells, "t1/copy/frozen_qk") == "98.5 ± 0.7 (n=2)"
    cells = report.load(str(path))  # the rerun's record is of today's recipe
    r2 = row(report.verdicts(cells))
    assert "°" not in r2 and r2.split(" | ")[3] == "reproduced"


def test_report_reads_a_rerun_cell_from_its_latest_record_and_keeps_every_benchmark(tmp_path):
    """A cell rerun with a new recipe has two records of one tag: the tables read the later one.
    Benchmarks (one per machine) all stay."""
    import report
    path = tmp_path / "runs.jsonl"
    rec = lambda tag, **kw: json.dumps({"config": {"tag": tag}, **kw}) + "\n"  # noqa: E731
    path.write_text(rec("t1/a/s0", history=[], final={"acc": 0.1}) + rec("t7/bench/s0", bench=[])
                    + rec("t1/a/s0", history=[], final={"acc": 0.9}) + rec("t7/bench/s0", bench=[]))
    cells = report.load(str(path))
    assert [r["final"]["acc"] for r in cells["t1/a"]] == [0.9] and len(cells["t7/bench"]) == 2


def test_torchrun_trains_lm_on_two_cpu_processes_with_identical_replicas(tmp_path):
    """`torchrun --nproc_per_node=2 mixit.py --task lm` on the CPU (gloo): the run finishes,
    rank 0 alone writes exactly one record and the checkpoint, and both ranks end with the same
    parameters (their parameter sums, gathered into the record, agree)."""
    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 400)
    out, ckpt = tmp_path / "runs.jsonl", tmp_path / "lm.pt"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           os.path.join(HERE, "mixit.py"), "--task", "lm", "--data", str(text), "--task_size", "16",
           "--n_embd", "32", "--steps", "6", "--batch_size", "8", "--lr", "1e-2", "--warmup", "0",
           "--device", "cpu", "--dtype", "float32", "--eval_size", "8", "--examples", "0",
           "--out", str(out), "--save", str(ckpt)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=HERE)
    assert done.returncode == 0, done.stderr[-2000:]
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["ddp"]["world_size"] == 2
    a, b = record["ddp"]["param_checksums"]
    assert a == b and record["final"]["loss"] < 5.5  # trained, and the replicas agree
    assert ckpt.exists()


def test_report_renders_the_studies_from_their_cells():
    """A Table 9 cell lands in its row and task column; Standard's row borrows the main tables'
    cell; the seed study joins seeds 0-2 of Table 1 with its own seeds 3-9."""
    import report

    def runs(*accs, seed0=0):  # the draw study rebuilds MixiT's models from these configs
        return [{"config": {"task": "needle", "task_size": 4, "variant": "mixit", "seed": seed0 + i,
                            "n_embd": 16, "eval_size": 16},
                 "final": {"acc": a, "loss": 1.0, "bpb": 1.4}, "train_s": 5} for i, a in enumerate(accs)]
    cells = {"t9/add/mixit_stdblock": runs(0.5, 0.7), "t3/add/standard": runs(1.0),
             "t1/needle/mixit": runs(0.01, 0.02, 0.03), "s1/needle/mixit": runs(0.04, 0.05, seed0=3)}
    md = report.render_studies(cells)
    assert "| MixiT in Standard's block (learned positions kept) | 60.0 ± 14.1 (n=2) † |" in md
    assert "| Standard | 100.0 (n=1) |" in md
    assert re.search(r"\| MixiT \| 3\.0 ± 1\.6 \(n=5\), 1\.0–5\.0; r = [+-][01]\.\d\d \|", md)
    assert report.render_studies({"t3/add/standard": runs(1.0)}) == ""


def test_row_1c_tests_copy_8_against_copy_32_and_shows_copy_16_without_waiting_for_it():
    """Row 1c reads MixiT's copy-8 and copy-32 and Standard's copy-32, each where its doubling
    settled: it waits while one of those has fewer than records.READ_SEEDS seeds there, and then
    judges its two tests. Copy-16 is shown where its doubling stands: its seeds far apart (†) and
    still moving do not hold the verdict back, though its runs count as the row's."""
    import records
    import report

    def rung(cell, steps, *accs):  # cell at 2000 steps, or its doubling cell-steps<steps>
        name = cell + (f"-steps{steps}" if steps > 2000 else "")
        return {name: [{"config": {"tag": f"{name}/s{i}", "steps": steps}, "final": {"acc": a}}
                       for i, a in enumerate(accs)]}
    cells = {**rung("c1/copy/mixit", 2000, 1.0, 0.99, 1.0),
             **rung("c1/copy/standard", 2000, 1.0, 1.0, 1.0),
             **rung("c1/copy32/mixit", 2000, 0.10, 0.09, 0.10),
             **rung("c1/copy32/mixit", 4000, 0.10, 0.10, 0.09),  # settled at 2000
             **rung("c1/copy32/standard", 2000, *[1.0] * 5),
             **rung("c1/copy32/standard", 4000, 1.0, 1.0, 1.0),
             **rung("c1/copy16/mixit", 2000, 0.15, 0.28, 0.16),
             **rung("c1/copy16/mixit", 4000, 0.16, 0.16, 0.62)}  # † and still moving
    ours, tests, _, _, reads = report.copy_by_length(report.Reader(cells))
    assert tests is None and f"fewer than {records.READ_SEEDS} seeds at the budget read: MixiT" in ours
    cells.update(rung("c1/copy32/mixit", 2000, 0.10, 0.09, 0.10, 0.095, 0.1))
    A = report.Reader(cells)
    ours, tests, partly, _, reads = report.copy_by_length(A)
    assert "copy-16 31.3 ± 26.6 † vs –" in ours
    assert "(copy-16, not tested: doubling not settled: MixiT)" in ours
    assert reads == ["c1/copy/mixit", "c1/copy32/mixit", "c1/copy32/standard", "c1/copy/standard",
                     "c1/copy16/mixit-steps4000"]  # (the cells only shown: the row's cost counts them)
    assert tests == [True, True] and report.verdict(tests, partly, reads, A, "spread") == "reproduced"


def test_claim_2_reads_frozen_qks_long_hop_runs_where_they_exist():
    """Claims 1 and 2 read hop beside needle and induction, the paper's retrieval tasks (copy,
    ours, has its own row 1c and moves neither). Frozen-QK's 1000-step hop (87%) misses the 90%
    bar, and the row names the task that fails; the 3000-step runs of `run_all.sh --claims`
    (Table 11), when present, are the ones claim 2 reads, and the row says so. Claim 2 names its
    init, N(0, 1/d), and shows the reference-init cells (frozen_qk_ref) beside, not read."""
    import report
    runs = lambda *accs: [{"final": {"acc": a}} for a in accs]  # noqa: E731
    cells = {}
    for t in ("needle", "induction", "copy", "hop"):
        cells[f"t1/{t}/standard"] = runs(1.0, 0.99, 1.0)
        cells[f"t1/{t}/mixit"] = runs(0.3, 0.31, 0.29)
        cells[f"t1/{t}/frozen_qk"] = runs(0.97, 0.98, 0.99)
    cells["t1/hop/frozen_qk"] = runs(0.87, 0.86, 0.88)
    # copy is not a task of claims 1 and 2: MixiT copying as well as Standard, Frozen-QK failing
    cells["t1/copy/mixit"], cells["t1/copy/frozen_qk"] = runs(1.0, 0.99, 1.0), runs(0.1, 0.11, 0.12)
    # the reference's init, shown but not read: far under the bar, it moves no verdict
    cells["t1/needle/frozen_qk_ref"] = runs(0.5, 0.51, 0.49)
    row = lambda md, n: next(l for l in md.splitlines() if l.startswith(f"| {n}. "))  # noqa: E731
    verdict = lambda md, n: row(md, n).split(" | ")[3]  # noqa: E731
    assert verdict(report.verdicts(cells), 1) == "reproduced"
    r2 = row(report.verdicts(cells), 2)
    assert "at N(0, 1/d): needle 98.0 ± 1.0; induction 98.0 ± 1.0; hop 87.0 ± 1.0;" in r2
    assert "copy" not in r2.split(" | ")[2]
    assert "at the reference's 0.02 (Table 1, not read): needle 50.0 ± 1.0; induction –; hop –" in r2
    assert verdict(report.verdicts(cells), 2) == "partly (fails: hop)"
    cells["c2/hop/frozen_qk"] = runs(0.95, 0.96, 0.94)
    r2 = row(report.verdicts(cells), 2)
    assert "hop (Table 11) 95.0 ± 1.0" in r2 and "Tables 1, 11" in r2
    assert r2.split(" | ")[3] == "reproduced"


def test_claim_6_reads_depth_where_random_adds_where_it_exists():
    """Table 6's width-64 Random never adds, so its depth row says little; with the cells of
    `run_all.sh --claims` (Random at width 256, MixiT with 64 heads over Table 5's 2-layer
    cell), claim 6 reads those instead, and Table 6b shows them with their covariance."""
    import report

    def runs(cell, width, heads, size, *accs, cov=0.5):
        return [{"config": {"tag": f"{cell}/s{i}", "task": "add", "task_size": size,
                            "data_seed": 0, "eval_size": 64, "n_embd": width, "n_head": heads,
                            "n_layer": 2, "lr": 1e-2, "batch_size": 256, "eval_interval": 200},
                 "steps": 1500, "n_trainable": 10, "final": {"acc": a, "token_cov": cov},
                 "history": [{"step": 0, "train_s": 0, "acc": 0.1}]} for i, a in enumerate(accs)]
    cells = {}
    for v in ("random", "mixit"):  # Table 6: nothing to lose, so nothing lost
        cells[f"t6/add/{v}-L2"] = runs(f"t6/add/{v}-L2", 64, 4, 4, 0.35, 0.36, 0.34)
        cells[f"t6/add/{v}-L6"] = runs(f"t6/add/{v}-L6", 64, 4, 4, 0.34, 0.35, 0.36)
    row = lambda md: next(l for l in md.splitlines() if l.startswith("| 6. "))  # noqa: E731
    verdict = lambda r: r.split(" | ")[3]  # noqa: E731
    r6 = row(report.verdicts(cells))
    assert "L=2→6: Random 35.0 ± 1.0" in r6 and "| Table 6 |" in r6
    cells["t5/add/heads64"] = runs("t5/add/heads64", 64, 64, 4, 1.0, 1.0, 1.0)
    cells["c6/add/mixit-heads64-L8"] = runs("c6/add/mixit-heads64-L8", 64, 64, 4, 1.0, 0.99, 1.0)
    cells["c6/add/random-w256-L2"] = runs("c6/add/random-w256-L2", 256, 4, 3, 0.99, 1.0, 0.98, cov=0.2)
    cells["c6/add/random-w256-L8"] = runs("c6/add/random-w256-L8", 256, 4, 3, 0.3, 0.25, 0.2, cov=0.8)
    r6 = row(report.verdicts(cells))
    assert "L=2→8: Random (width 256, 4 heads, add-3) 99.0 ± 1.0 → 25.0 ± 5.0" in r6
    assert "MixiT (width 64, 64 heads, add-4) 100.0 ± 0.0 → 99.7 ± 0.6" in r6
    assert verdict(r6) == "reproduced" and "| Table 6b |" in r6
    cells["c6/add/random-w256-L8"] = runs("c6/add/random-w256-L8", 256, 4, 3, 0.99, 0.97, 0.98, cov=0.8)
    assert verdict(row(report.verdicts(cells))) == "partly"  # Random keeps adding: one half fails
    # slower is not collapsed: a drop beyond the spread that stays above halfway to the floor
    # (add-3's is about 27%, so halfway from 99% is about 63%)
    cells["c6/add/random-w256-L8"] = runs("c6/add/random-w256-L8", 256, 4, 3, 0.92, 0.9, 0.88, cov=0.8)
    assert verdict(row(report.verdicts(cells))) == "partly"
    cells["c6/add/random-w256-L8"] = runs("c6/add/random-w256-L8", 256, 4, 3, 0.6, 0.6, 0.6, cov=0.8)
    assert verdict(row(report.verdicts(cells))) == "reproduced"
    cells["c6/add/random-w256-L8"] = runs("c6/add/random-w256-L8", 256, 4, 3, 0.99, 0.97, 0.98, cov=0.8)
    md = report.render(cells, "quick")
    assert ("| Random (width 256, 4 heads, add-3, lr 0.01, 1500 steps) | accuracy % | 99.0 ± 1.0 "
            "(n=3) | 98.0 ± 1.0 (n=3) |") in md
    # MixiT in Random's own setting, once it has two depths, replaces Table 5's; each variant
    # reads from its shallowest to its deepest run, and a cell with fewer seeds shows its n
    cells["c6/add/random-w256-L16"] = runs("c6/add/random-w256-L16", 256, 4, 3, 0.3, 0.2, cov=0.9)
    cells["c6/add/mixit-w256-L2"] = runs("c6/add/mixit-w256-L2", 256, 64, 3, 1.0, 1.0, 1.0)
    r6 = row(report.verdicts(cells))
    assert verdict(r6) == "reproduced"  # Table 5's MixiT still: the same-setting row has one depth
    cells["c6/add/mixit-w256-L8"] = runs("c6/add/mixit-w256-L8", 256, 64, 3, 0.5, 0.52, 0.48)
    r6 = row(report.verdicts(cells))
    assert "L=2→16: Random (width 256, 4 heads, add-3) 99.0 ± 1.0 → 25.0 ± 7.1 (n=2)" in r6
    assert "MixiT (width 256, 64 heads, add-3) L=2→8 100.0 ± 0.0 → 50.0 ± 2.0" in r6
    assert verdict(r6) == "partly"  # MixiT loses it too
    cells["c6/add/mixit-w256-L8"] = runs("c6/add/mixit-w256-L8", 256, 64, 3, 0.5, 0.6, 0.4)
    r6 = row(report.verdicts(cells))  # its seeds lie 20 points apart: †, at either lr
    assert verdict(r6) == "inconclusive: seeds disagree" and r6.endswith("| inconclusive: seeds disagree |")
    md = report.render(cells, "quick")
    assert "| MixiT (width 256, 64 heads, add-3, lr 0.01, 1500 steps) | accuracy % | 100.0 ± 0.0 (n=3) | 50.0" in md
    assert "| 0.900 ± 0.000 (n=2) |" in md  # the 16-layer column, where only Random has run


def test_claim_7_and_table_7_average_one_benchmark_per_seed_on_one_machine():
    """Table 7 is one benchmark per seed: claim 7 reads each record's speed-up over Standard and
    reports their mean ± std; a record from another machine or dtype is left out, so a table
    never mixes two machines; one benchmark shows no spread. The rule reads direction (faster
    than Standard) and size (at least half the paper's figure), each over the spread."""
    import report

    def bench(seed, std_ms, qk_ms, mx_ms, device_name="x86_64", dtype="float32"):
        return {"config": {"tag": f"t7/bench/s{seed}", "task": "add", "n_embd": 128, "n_layer": 2,
                           "batch_size": 100},
                "device_name": device_name, "device": "cpu", "dtype": dtype, "threads": 2,
                "torch": "2.13", "time": f"2026-11-2{seed}T00:00:00",
                "bench": [{"variant": v, "ms_per_step": t, "samples_per_s": 100_000 / t}
                          for v, t in (("standard", std_ms), ("frozen_qk", qk_ms), ("mixit", mx_ms))]}
    row = lambda md: next(l for l in md.splitlines() if l.startswith("| 7. "))  # noqa: E731
    verdict = lambda r: r.split(" | ")[3]  # noqa: E731
    cells = {"t7/bench": [bench(0, 100, 100, 80)]}  # +0% and +25%
    # one benchmark has no spread for "beyond the spread" to read: no verdict until a second
    r7 = row(report.verdicts(cells))
    assert "+0% / +25% (x86_64, 1 benchmark);" in r7 and verdict(r7) == "not yet run"
    cells["t7/bench"] += [bench(1, 100, 90, 80), bench(2, 90, 80, 72)]  # +11%, +12.5%: +25%, +25%
    r7 = row(report.verdicts(cells))
    # Frozen-QK's +8 ± 7% is faster over its spread, but straddles half the paper's +23.9%:
    # reproduced or partly, so the row is at the threshold
    assert "+8 ± 7% / +25 ± 0% (x86_64, 3 benchmarks);" in r7
    assert verdict(r7) == "inconclusive: at the threshold"
    cells["t7/bench"].insert(0, bench(3, 100, 50, 50, dtype="bfloat16"))  # another dtype: left out
    assert row(report.verdicts(cells)) == r7
    md = report.render(cells, "quick")
    assert "2026-11-20 to 2026-11-22), task add, n_embd 128, n_layer 2, batch_size 100; mean ± std over 3" in md
    assert "| Standard | 96.7 ± 5.8 | 1037 ± 64 | +0 ± 0% |" in md
    cells["t7/bench"][-1] = bench(2, 100, 70, 80)  # Frozen-QK +0, +11, +43%: faster on average,
    r7 = row(report.verdicts(cells))  # but not over its spread, in direction nor in size
    assert "+18 ± 22% / +25 ± 0% (x86_64, 3 benchmarks);" in r7
    assert verdict(r7) == "inconclusive: at the threshold"
    cells["t7/bench"][-2:] = [bench(1, 100, 99, 80), bench(2, 100, 99, 80)]  # +0, +1, +1%
    # Frozen-QK faster over its spread, but far under half the paper's figure: partly, naming it
    assert verdict(row(report.verdicts(cells))) == "partly (fails: Frozen-QK ≥ half the paper's (11.95%))"


def test_no_verdict_on_one_run_where_the_rule_reads_a_spread():
    """A rule that speaks of a spread ('beyond the spread', 'within', 'std') has none to read in a
    cell of one run: its verdict reads 'not yet run' until every cell it reads has n ≥ 2 (claim
    6′, 'as claim 6', follows claim 6's rule). Claim 3 is judged here with its memorize cells
    (Table 4's) doubled and readable, so that only the one-run cells hold it back."""
    import report
    runs = lambda *accs: [{"final": {"acc": a}} for a in accs]  # noqa: E731
    verdict = lambda cells, n: next(l for l in report.verdicts(cells).splitlines()  # noqa: E731
                                    if l.startswith(f"| {n}. ")).split(" | ")[3]
    # claim 3's memorize: Table 4's cells settled at 600 steps (1200 moves nothing), five seeds
    memorize = {f"t4/memorize/{v}{rung}": [
        {"config": {"tag": f"t4/memorize/{v}{rung}/s{i}", "steps": steps, "task_size": 8},
         "final": {"acc": 0.99}}
        for i in range(n)] for v in ("standard", "mixit")
        for rung, steps, n in (("", 600, 5), ("-steps1200", 1200, 3))}
    cells = {f"{c}/{v}": runs(0.99) for c in ("t3/add", "t3/modadd", "t3/dyck")
             for v in ("standard", "mixit")}
    assert verdict({**cells, **memorize}, 3) == "not yet run"  # equal means, but no std to read
    cells = {c: runs(0.99, 0.98) for c in cells}
    assert verdict({**cells, **memorize}, 3) == "reproduced"
    cells["t3/add/mixit"] = runs(0.99)  # one cell of one run holds the verdict back
    assert verdict({**cells, **memorize}, 3) == "not yet run"
    one = {f"t1/{t}/{v}": runs(a) for t in report.PAPER_RETRIEVAL
           for v, a in (("standard", 1.0), ("mixit", 0.1))}
    assert verdict(one, 1) == "not yet run"  # every rule now reads its threshold over the spread
    assert verdict({c: r + runs(r[0]["final"]["acc"]) for c, r in one.items()}, 1) == "reproduced"
    assert report.spread_rule("as claim 6") and not report.spread_rule("≥ 90% on each")
    # claim 8 compares the two losses by the spread too: one LM run each gives no verdict
    lm = {f"t2/lm/{v}": [{"final": {"loss": x}}] for v, x in
          (("standard", 1.0), ("frozen_qk", 1.1), ("mixit", 2.0))}
    assert verdict(lm, 8) == "not yet run"
    lm = {c: r + [{"final": {"loss": r[0]["final"]["loss"] + 0.01}}] for c, r in lm.items()}
    assert verdict(lm, 8) == "reproduced"


def test_a_figure_spans_the_floor_to_100_and_says_its_n():
    """A half-point dip between two single runs, 99.9 to 99.4%, must not fill the accuracy axis:
    it spans at least from the task's floor (drawn dashed) to 100%; a legend says each curve's n,
    'one seed' where there is no spread to draw."""
    import matplotlib.pyplot as plt
    import figures
    fig, ax = plt.subplots()
    ax.plot([2, 4, 8], [99.9, 99.6, 99.4])
    figures.accuracy_axis(ax, [16.3])
    lo, hi = ax.get_ylim()
    plt.close(fig)
    assert lo <= 16.3 and hi >= 100
    assert figures.with_n("Random", [1, 1]) == "Random (one seed)"
    assert figures.with_n("MixiT", [3, 3]) == "MixiT (n=3)" and "n=1–3" in figures.with_n("M", [1, 3])


def test_a_legend_lists_only_what_its_panels_draw_and_the_grid_leaves_out_the_colour_bar():
    """legend_outside: the legend right of the panels lists what every panel draws; what only one
    panel draws (the floor, the paper's number) gets a legend under that panel alone. The grid
    that save writes into the PNG counts panels, not a colour bar."""
    import matplotlib.pyplot as plt
    import figures
    fig, (acc, bits) = plt.subplots(1, 2)
    for ax in (acc, bits):
        ax.plot([1, 2], [1, 2], label="Standard (n=3)")
    acc.axhline(0.5, label="trivial rule (floor)")
    bits.axhline(3.0, label="the paper's number")
    figures.legend_outside(fig)
    shown = [[t.get_text() for t in legend.get_texts()] for legend in fig.legends]
    assert shown == [["Standard (n=3)"], ["trivial rule (floor)"], ["the paper's number"]]
    for legend, ax in zip(fig.legends[1:], (acc, bits)):  # each under its own panel
        x, y = ax.transAxes.inverted().transform(legend.get_bbox_to_anchor().p0)
        assert x == pytest.approx(0.5) and y < 0
    assert figures.grid(fig) == "1 x 2"
    plt.close(fig)
    fig, axes = plt.subplots(2, 4, layout="constrained")
    fig.colorbar(axes[0][0].imshow([[0, 1]]), ax=axes)
    assert figures.grid(fig) == "2 x 4"
    plt.close(fig)


ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}


def layout_misfits(caption, grid):
    """What a caption says of a figure's layout that its grid ('rows x columns'; None where the
    figure records none) does not have: 'left'/'right' need two columns, 'top'/'bottom' two
    rows, 'third column' three columns at least, '2 × 4' that grid."""
    rows, cols = map(int, grid.split(" x ")) if grid else (None, None)
    fits = []  # (the words, whether the grid has what they name)
    for m in re.finditer(r"\((left|right)\b|\b(left|right) (panel|column)", caption):
        fits.append((m[0], cols == 2))
    for m in re.finditer(r"\((top|bottom)\b|\b(top|bottom|upper|lower) (panel|row)", caption):
        fits.append((m[0], rows == 2))
    for m in re.finditer(rf"\b({'|'.join(ORDINALS)}) (row|column)\b", caption):
        fits.append((m[0], bool(grid) and ORDINALS[m[1]] <= (rows if m[2] == "row" else cols)))
    for m in re.finditer(r"\b(\d+) ?× ?(\d+)\b", caption):
        fits.append((m[0], grid == f"{m[1]} x {m[2]}"))
    return [f"{words!r}, but its grid is {grid or 'not recorded'}" for words, ok in fits if not ok]


def test_every_caption_that_names_a_layout_fits_its_figure():
    """Where a document (report.DOCS) says where to look in a figure ('(left)', 'top row',
    'third column', '2 × 4'), the figure's grid of panels agrees (figures.grid, saved in its PNG
    when drawn). A figure's caption: the paragraph that names it, and the paragraph above where
    that one is the image alone. 'Left' and 'right' on a 2 × 4 grid of maps is the misfit this
    catches."""
    from PIL import Image
    assert layout_misfits("a previous-token head (left) and an induction head (right)", "2 x 4")
    assert layout_misfits("the induction head (top row, third column)", None)
    assert not layout_misfits("the induction head (bottom row, third column)", "2 x 4")
    assert layout_misfits("a 2 × 4 grid", "1 x 2") and not layout_misfits("a 2 × 4 grid", "2 x 4")
    assert not layout_misfits("attention from the query to the token right after it", None)
    import report
    found = []
    for doc in report.DOCS:
        paras = re.split(r"\n\s*\n", open(os.path.join(HERE, doc)).read())
        for i, para in enumerate(paras):
            for name in re.findall(r"plots/([\w.-]+\.(?:png|gif))", para):
                alone = re.fullmatch(r"!\[[^\]]*\]\([^)]*\)", para.strip())
                caption = paras[i - 1] + "\n" + para if alone else para
                path = os.path.join(HERE, "plots", name)
                grid = Image.open(path).text.get("Grid") if name.endswith(".png") else None
                found += [f"{doc}, {name}: the caption says {m}"
                          for m in layout_misfits(caption, grid)]
    assert not found, "\n".join(found)


def test_claim_6s_figure_draws_its_own_setting_at_width_256_where_it_ran(tmp_path, monkeypatch):
    """Claim 6's depth figure draws Table 6b's width-256 rows (c6/add/: Random at 1/√d and at
    the reference's 0.02, MixiT), not Table 6's rows, where neither adds; without them it draws
    nothing. Each row's label says its init and lr, read off its records, and a cell whose seeds
    lie more than 10 points apart is marked †."""
    import figures
    monkeypatch.setattr(figures, "PLOT_DIR", str(tmp_path))

    def runs(variant, width, std, lr, *accs):
        return [{"config": {"task": "add", "task_size": 3, "data_seed": 0, "eval_size": 50,
                            "variant": variant, "n_embd": width, "n_head": 4, "qk_init_std": std,
                            "lr": lr}, "final": {"acc": a, "token_cov": 0.5}} for a in accs]
    cells = {f"t6/add/{v}-L{L}": runs(v, 64, 0.125, 3e-3, 0.3, 0.35)
             for v in ("mixit", "random") for L in (2, 4)}
    assert figures.depth_figure_rows(cells) == []
    for L in (2, 8, 16):
        cells[f"c6/add/random-w256-L{L}"] = runs("random", 256, 1 / 16, 1e-2, 0.99, 0.7)  # †
        cells[f"c6/add/random_ref-w256-L{L}"] = runs("random", 256, 0.02, 1e-2, 0.5, 0.52)
        cells[f"c6/add/mixit-w256-L{L}"] = runs("mixit", 256, 1 / 16, 1e-3, 1.0, 1.0)
    rows = figures.depth_figure_rows(cells)
    assert [label for label, _ in rows] == ["Random, Q/K init 1/√d, lr 0.01",
                                            "Random, Q/K init 0.02, lr 0.01", "MixiT, 4 heads, lr 0.001"]
    assert {c for _, at in rows for c in at.values()} == {c for c in cells if c.startswith("c6/")}
    marked, mark = [], figures.mark_unstable
    monkeypatch.setattr(figures, "mark_unstable",
                        lambda ax, x, m, accs, *a, **k: mark(ax, x, m, accs, *a, **k) and marked.append(accs))
    figures.plot_depth(cells, "quick")
    assert (tmp_path / "depth_quick.png").stat().st_size > 0
    assert marked == [[0.99, 0.7]] * 3  # Random at 1/√d at each depth, and no other cell


def test_claim_4s_figure_draws_every_budget_tried_and_rings_the_one_read(tmp_path, monkeypatch):
    """Claim 4's figure (Table 12 drawn): each doubled cell at every budget it ran, mean over its
    seeds, hollow where fewer than LADDER_SEEDS seeds have run; a ring at the budget a cell is
    read at (its doubling settled); bits per parameter only for the four cells the claim
    compares, with the paper's number; a cell that ran at one budget only is not drawn, and
    without any doubling there is no figure."""
    import matplotlib.pyplot as plt
    import figures
    monkeypatch.setattr(figures, "PLOT_DIR", str(tmp_path))
    monkeypatch.setattr(figures, "floor_pct", lambda cells, prefix: 3.5)
    drawn = {}
    monkeypatch.setattr(figures, "save", lambda name, title=None: drawn.update(name=name, fig=plt.gcf()))

    def runs(steps, *accs):  # (a doubling pairs the seeds by the tag's /s<seed>)
        return [{"config": {"tag": f"made-up/s{s}", "steps": steps, "task_size": 128, "n_embd": 16},
                 "final": {"acc": a, "bits_per_param": 10 * a}} for s, a in enumerate(accs)]
    cells = {"c4/memorize/standard": runs(6000, 0.25, 0.26, 0.27),
             "c4/memorize/frozen_mlp": runs(6000, 0.10, 0.10, 0.11),
             "c4/memorize/mixit_stdblock": runs(6000, 0.18, 0.19, 0.20)}
    figures.plot_capacity(cells, "quick", {"standard": 2.98})
    assert not drawn  # no doubling ran
    cells.update({"c4/memorize/standard-steps12000": runs(12000, 0.30, 0.31, 0.29),
                  "c4/memorize/standard-steps24000": runs(24000, 0.33),
                  "c4/memorize/frozen_mlp-steps12000": runs(12000, 0.105, 0.10, 0.11)})
    figures.plot_capacity(cells, "quick", {"standard": 2.98, "frozen_mlp": 1.13})
    assert drawn["name"] == "capacity_quick.png"
    acc, bits = drawn["fig"].axes[:2]

    def points(ax, size):  # (steps, value, hollow) of each mean drawn with that marker size
        return sorted((float(l.get_xdata()[0]), round(float(l.get_ydata()[0]), 2),
                       l.get_markerfacecolor() in ("white", "none"))
                      for l in ax.lines if l.get_marker() == "o" and l.get_markersize() == size)
    assert points(acc, 6) == [(6000, 10.33, False), (6000, 26.0, False), (12000, 10.5, False),
                              (12000, 30.0, False), (24000, 33.0, True)]  # no MixiT in Standard's block
    assert points(acc, 15) == [(6000, 10.33, True)]  # Frozen-MLP, read at 6000 steps
    assert [p[:2] for p in points(bits, 6)] == [(6000, 1.03), (6000, 2.6), (12000, 1.05), (12000, 3.0),
                                                (24000, 3.3)]
    assert sorted(round(float(l.get_ydata()[0]), 2) for l in bits.lines if l.get_linestyle() == ":") == [1.13, 2.98]
    plt.close(drawn["fig"])


def test_the_claims_table_states_its_cost_without_the_studies():
    """The claims header sums the wall time of the tables' runs (t*, f*, c*), not the studies'."""
    import report
    rec = lambda s: {"final": {"acc": 0.5}, "wall_s": s}  # noqa: E731
    cells = {"t1/needle/mixit": [rec(60), rec(120)], "c3/add/mixit-heads64": [rec(60)],
             "t9/add/mixit_stdblock": [rec(6000)], "s1/add/mixit": [rec(6000)]}
    text = report.verdicts(cells)
    assert "The 3 runs of this scale's tables and figures" in text, text[:600]
    assert "took 4 minutes of run time" in text


def test_draw_strength_reads_the_runs_own_initial_draw():
    """The draw study rebuilds each run's model from its record: the same seed gives the same
    number, another seed another; MixiT's mixing strength lies in the range its sigma_h is drawn
    from (Sec. 3), Frozen-QK's logit scale near 1 (W_Q, W_K ~ N(0, 1/d)). Pearson's r is +1/-1
    on lines and 0 where a side does not vary."""
    import math
    import figures
    base = {"task": "add", "task_size": 2, "n_layer": 2, "n_head": 4, "n_embd": 32,
            "eval_size": 16, "load": "", "save": "", "tag": "x"}
    rec = lambda **kw: {"config": {**base, **kw}}  # noqa: E731
    a, b = figures.draw_strength(rec(variant="mixit", seed=0)), figures.draw_strength(rec(variant="mixit", seed=1))
    assert a == figures.draw_strength(rec(variant="mixit", seed=0)) and a != b
    T = tasks.make_task("add", 2, "cpu", 0, 16).block_size
    assert 0.5 / math.sqrt(T * 8) < a < 1 / math.sqrt(T)
    assert 0.8 < figures.draw_strength(rec(variant="frozen_qk", seed=0)) < 1.2
    assert figures.correlation([1, 2, 3], [2, 4, 6]) == pytest.approx(1)
    assert figures.correlation([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)
    assert figures.correlation([1, 2, 3], [5, 5, 5]) == 0


def test_table_2_shows_where_an_overfitting_model_had_its_lowest_loss():
    """The final validation loss hides overfitting (paper scale's Standard: 1.27 at step 250,
    2.17 at step 2000); the lowest-loss column names each seed's best evaluation and its step."""
    import report
    run = lambda *losses: {"history": [{"step": 100 * i, "loss": x} for i, x in enumerate(losses)]}  # noqa: E731
    assert report.lowest_loss([run(5.0, 1.2, 2.0), run(5.0, 1.5, 1.4)]) == "1.300 ± 0.141 (n=2) (100, 200)"
    assert report.lowest_loss([]) == "–"


# -----------------------------------------------------------------------------
# Homework: the parts that homework.py blanks, each graded by tests that need no other part
#
# A grading test of one part must not fail when a student has blanked another part, so the
# tests below build their modules directly (no mixit.build(), which calls freeze() and draws a
# task) and stand in for any other part they would call with a fixed stand-in of their own.


def rope_tables(T, head_dim, base=10000.0):
    """RoPE's cos and sin tables (T, head_dim/2), written out here so that the tests of
    apply_rotary do not rest on mixit.rotary_tables."""
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(T).float(), inv_freq)
    return angles.cos(), angles.sin()


def test_rotary_preserves_norms():
    """A rotation keeps every query's and key's length (at every position, in every head), and
    at position 0 (angle 0) it changes nothing; at later positions it does change the vector."""
    x = torch.randn(2, 3, 10, 16, generator=torch.Generator().manual_seed(0))
    cos, sin = rope_tables(10, 16)
    r = mixit.apply_rotary(x, cos, sin)
    assert r.shape == x.shape
    assert torch.allclose(r.norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    assert torch.allclose(r[:, :, 0], x[:, :, 0], atol=1e-6)
    assert not torch.allclose(r[:, :, 1:], x[:, :, 1:], atol=1e-3)


def test_rotary_dot_product_depends_only_on_relative_position():
    """RoPE's point: the same query q at position i and key k at position j score
    rot(q, i) . rot(k, j), a function of i - j alone. Pairs at equal distance score alike;
    pairs at other distances score differently (so the rotation is not the identity)."""
    gen = torch.Generator().manual_seed(1)
    T, hd = 12, 16
    q, k = torch.randn(hd, generator=gen), torch.randn(hd, generator=gen)
    cos, sin = rope_tables(T, hd)
    rq = mixit.apply_rotary(q.expand(1, 1, T, hd), cos, sin)[0, 0]  # q at every position
    rk = mixit.apply_rotary(k.expand(1, 1, T, hd), cos, sin)[0, 0]
    scores = rq @ rk.T  # (T, T): query at position i, key at position j
    for offset in range(T):
        diagonal = torch.diagonal(scores, -offset)  # every (i, i - offset)
        assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal), atol=1e-4), offset
    assert not torch.allclose(scores[0, 0], scores[3, 0], atol=1e-3)


def test_rotary_turns_by_the_tables_angles_so_turns_add_up():
    """apply_rotary reads the angle from the tables: angle 0 (cos 1, sin 0) is the identity, an
    angle of pi negates every channel, and turning by a twice equals turning by 2a. (Which
    channels form a pair is the implementation's choice; none of this depends on it.)"""
    x = torch.randn(2, 2, 5, 8, generator=torch.Generator().manual_seed(2))
    a = torch.rand(5, 4, generator=torch.Generator().manual_seed(3)) * 3  # any angles (T, hd/2)
    ones, zeros = torch.ones(5, 4), torch.zeros(5, 4)
    assert torch.allclose(mixit.apply_rotary(x, ones, zeros), x)
    assert torch.allclose(mixit.apply_rotary(x, -ones, zeros), -x)
    twice = mixit.apply_rotary(mixit.apply_rotary(x, a.cos(), a.sin()), a.cos(), a.sin())
    assert torch.allclose(twice, mixit.apply_rotary(x, (2 * a).cos(), (2 * a).sin()), atol=1e-5)


def attention_config(variant, *flags):
    """The config of one attention layer: width 32, 4 heads, at most 8 positions."""
    return make_config("--variant", variant, "--task", "hop", "--block_size", "8", *flags)


def by_heads(t, n_head=4):
    """(B, T, C) -> (B, H, T, C/H)"""
    B, T, C = t.shape
    return t.view(B, T, n_head, C // n_head).transpose(1, 2)


def merge_heads(t):
    """(B, H, T, hd) -> (B, T, H * hd)"""
    B, H, T, hd = t.shape
    return t.transpose(1, 2).reshape(B, T, H * hd)


def softmax_attention(attn, x, causal=True, rotate=None, keep=None):
    """CausalSelfAttention's output and map, computed here step by step: project, (rotate q and
    k), score q.k / sqrt(d_head), hide later keys (causal) and pads (keep), softmax, mix the
    values, merge the heads, project out."""
    T = x.size(1)
    q, k, v = (by_heads(p(x)) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
    if rotate:
        q, k = rotate(q, attn.cos[:T], attn.sin[:T]), rotate(k, attn.cos[:T], attn.sin[:T])
    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5  # (B, H, T, T)
    seen = torch.ones(T, T, dtype=torch.bool).tril() if causal else torch.ones(T, T, dtype=torch.bool)
    if keep is not None:  # a real query sees no pad; a pad sees itself (a row needs a key)
        seen = seen & (keep[:, None, None, :] | torch.eye(T, dtype=torch.bool))
    att = scores.masked_fill(~seen, float("-inf")).softmax(-1)
    return attn.o_proj(merge_heads(att @ v)), att


def pair_rotation(x, cos, sin):
    """A RoPE of the test's own (channels 2i and 2i+1 turned as the complex number
    x[2i] + i x[2i+1]), put in place of mixit.apply_rotary so that the attention's tests
    do not rest on the student's rotation."""
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(z * torch.complex(cos, sin)).flatten(-2).to(x.dtype)


@pytest.mark.parametrize("causal", [True, False])
def test_causal_self_attention_is_softmax_of_q_k_over_sqrt_d_times_v(causal):
    """Without RoPE (--positions learned), the layer is softmax(Q K^T / sqrt(d_head)) V per
    head, causal or bidirectional, then o_proj, by the fused kernel or written out (--sdpa
    false); it returns no map unless asked, and the map it returns (return_att, for the
    figures) is the one it used, with the same output."""
    attn = mixit.CausalSelfAttention(attention_config(
        "standard", "--positions", "learned", "--causal", str(causal).lower()))
    x = torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(0))
    expected, expected_att = softmax_attention(attn, x, causal)
    with torch.no_grad():
        for sdpa in (True, False):  # the fused kernel, then written out (--sdpa false)
            attn.sdpa = sdpa
            y, att = attn(x)
            assert att is None and torch.allclose(y, expected, atol=1e-5), sdpa
        y, att = attn(x, return_att=True)
    assert torch.allclose(y, expected, atol=1e-5) and torch.allclose(att, expected_att, atol=1e-6)


def test_causal_self_attention_rotates_queries_and_keys_but_not_values(monkeypatch):
    """With RoPE, q and k (not v) are turned by apply_rotary with the layer's own cos and sin
    tables, cut to the input's length. apply_rotary is replaced by the test's own rotation."""
    monkeypatch.setattr(mixit, "apply_rotary", pair_rotation)
    attn = mixit.CausalSelfAttention(attention_config("standard"))
    assert attn.rope
    x = torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(1))
    for T in (8, 5):  # the full length and a shorter input
        expected, _ = softmax_attention(attn, x[:, :T], rotate=pair_rotation)
        with torch.no_grad():
            assert torch.allclose(attn(x[:, :T])[0], expected, atol=1e-5), T


def test_causal_self_attention_hides_pads_from_real_tokens():
    """keep marks the real tokens: no real token attends to a pad (its map puts 0 there, each
    row still sums to 1), so changing a pad's input changes no real token's output; the fast
    path, the return_att path and the written-out path (--sdpa false) agree."""
    attn = mixit.CausalSelfAttention(attention_config(
        "standard", "--positions", "learned", "--causal", "false"))
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(2, 8, 32, generator=gen)
    keep = torch.ones(2, 8, dtype=torch.bool)
    keep[0, 5:] = False  # row 0 ends in three pads
    keep[1, 2] = False  # row 1 has a pad inside
    expected, expected_att = softmax_attention(attn, x, causal=False, keep=keep)
    with torch.no_grad():
        fast, _ = attn(x, keep=keep)
        y, att = attn(x, return_att=True, keep=keep)
        moved = x.clone()
        moved[~keep] += torch.randn(int((~keep).sum()), 32, generator=gen)
        after, _ = attn(moved, keep=keep)
        attn.sdpa = False
        written, none = attn(x, keep=keep)
    assert none is None and torch.allclose(written, expected, atol=1e-5)
    assert torch.allclose(fast, expected, atol=1e-5) and torch.allclose(y, expected, atol=1e-5)
    assert torch.allclose(att, expected_att, atol=1e-6)
    real_rows = keep[:, None, :, None] & ~keep[:, None, None, :]  # a real query, a pad key
    assert (att[real_rows.expand_as(att)] == 0).all()
    assert torch.allclose(att.sum(-1), torch.ones(2, 4, 8), atol=1e-5)
    assert torch.allclose(after[keep], fast[keep], atol=1e-5)


def known_mixing(n_head, T, head_dim, gen, sink=True, causal=True):
    """A stand-in for mixit.mixing_matrices: a fixed random (n_head, T, T) of the test's own,
    lower-triangular when causal, so the tests of MixingAttention do not rest on the student's
    matrices (they read it back from the buffer A)."""
    A = torch.randn(n_head, T, T, generator=torch.Generator().manual_seed(7))
    return A.tril() if causal else A


def mixing_layer(monkeypatch, *flags):
    """A MixingAttention of 4 heads, width 32, block 8, whose buffer A is known_mixing's."""
    monkeypatch.setattr(mixit, "mixing_matrices", known_mixing)
    cfg = attention_config("mixit", *flags)
    attn = mixit.MixingAttention(cfg, torch.Generator())
    assert torch.equal(attn.A, known_mixing(4, 8, 8, None, causal=cfg.causal))
    return attn


def test_mixing_attention_is_a_times_v_per_head_then_o(monkeypatch):
    """y_h = A_h V_h: each head's values (v_proj, split into heads) are mixed by its own fixed
    A_h, the heads merged and projected out by o_proj. No queries, no keys: the input changes
    the values, never the mixing. The map it returns on request is A itself, one copy per batch
    row. (--mixit_mult scales v_proj's and o_proj's outputs from outside the layer: a test of
    apply_shipped_factors.)"""
    x = torch.randn(3, 8, 32, generator=torch.Generator().manual_seed(0))
    attn = mixing_layer(monkeypatch)
    v = by_heads(attn.v_proj(x))  # (B, H, T, hd)
    expected = attn.o_proj(merge_heads(torch.einsum("hts,bhsd->bhtd", attn.A, v)))
    with torch.no_grad():
        y, att = attn(x)
        assert att is None and torch.allclose(y, expected, atol=1e-5)
        _, att = attn(x, return_att=True)
    assert att.shape == (3, 4, 8, 8) and all(torch.equal(a, attn.A) for a in att)


def test_mixing_attention_uses_the_top_left_corner_of_a_for_a_shorter_input(monkeypatch):
    """A (H, block, block) is drawn once for the longest input. An input of T < block positions
    is mixed by A[:, :T, :T]; with a causal A its outputs are the first T of the full input's."""
    attn = mixing_layer(monkeypatch)
    x = torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(1))
    v = by_heads(attn.v_proj(x[:, :5]))
    expected = attn.o_proj(merge_heads(torch.einsum("hts,bhsd->bhtd", attn.A[:, :5, :5], v)))
    with torch.no_grad():
        short, full = attn(x[:, :5])[0], attn(x)[0]
    assert short.shape == (2, 5, 32)
    assert torch.allclose(short, expected, atol=1e-5) and torch.allclose(short, full[:, :5], atol=1e-5)


def test_mixing_attention_never_lets_a_pad_reach_a_real_token(monkeypatch):
    """keep marks the real tokens: a pad's value is zeroed before the mixing, so whatever a pad
    holds, no real token's output changes (here with a full, bidirectional A)."""
    attn = mixing_layer(monkeypatch, "--causal", "false")
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(2, 8, 32, generator=gen)
    keep = torch.ones(2, 8, dtype=torch.bool)
    keep[0, 6:] = False
    keep[1, 0] = False
    v = by_heads(attn.v_proj(x) * keep[:, :, None])
    expected = attn.o_proj(merge_heads(torch.einsum("hts,bhsd->bhtd", attn.A, v)))
    moved = x.clone()
    moved[~keep] += 5 * torch.randn(int((~keep).sum()), 32, generator=gen)
    with torch.no_grad():
        y, after = attn(x, keep=keep)[0], attn(moved, keep=keep)[0]
    assert torch.allclose(y, expected, atol=1e-5)
    assert torch.allclose(after[keep], y[keep], atol=1e-5)


def test_freeze_counts_the_numbers_in_the_parts_it_froze():
    """freeze() counts numbers, not tensors: freezing v and head returns (#trainable, #frozen),
    #frozen the size of every layer's v_proj weight and bias and of the head's weight (named
    here), #trainable the rest of the model; the line it prints (exercise 1 hands it in) shows
    both counts."""
    model = mixit.GPT(attention_config("standard"), vocab_size=10)  # not build(): no task drawn
    sizes = {n: p.numel() for n, p in model.named_parameters()}
    named = [f"blocks.{i}.attn.v_proj.{kind}" for i in range(2) for kind in ("weight", "bias")]
    n_frozen = sum(sizes[n] for n in named + ["lm_head.weight"])
    n_train = sum(sizes.values()) - n_frozen
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert mixit.freeze(model, ["v", "head"], label="counts") == (n_train, n_frozen)
    printed = re.findall(r"\d+", out.getvalue().replace(",", ""))
    assert str(n_train) in printed and str(n_frozen) in printed, printed


def test_freeze_of_a_part_the_model_lacks_is_a_usage_error_naming_it():
    """A part with no parameter in this model (a RoPE model has no wpe) is refused."""
    model = mixit.GPT(attention_config("standard"), vocab_size=10)
    with pytest.raises(tasks.UsageError, match="wpe"):
        mixit.freeze(model, ["wpe"], verbose=False)


def test_masked_loss_gradient_reaches_only_the_scored_positions():
    """Training moves the model only through the answers: the loss's gradient is zero on the
    logits of every unscored position and nonzero on every scored one."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 6, 5, generator=gen, requires_grad=True)
    y = torch.randint(0, 5, (3, 6), generator=gen)
    mask = torch.rand(3, 6, generator=gen) < 0.5
    mask[0, 0] = True
    mixit.masked_loss(logits, y, mask).backward()
    per_position = logits.grad.abs().sum(-1)  # (B, T)
    assert (per_position[~mask] == 0).all() and (per_position[mask] > 0).all()


def test_masked_loss_ignores_rows_without_answers_and_scores_uniform_logits_at_log_vocab():
    """Rows whose mask is all False (training rows on the test side of the split) add nothing:
    the loss is the mean over scored positions, not over rows, and 0 (not nan) where no row is
    scored. Uniform logits score ln(vocab)."""
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 4, 7, generator=gen)
    y = torch.randint(0, 7, (2, 4), generator=gen)
    mask = torch.tensor([[True, False, True, True], [False, False, True, False]])
    loss = mixit.masked_loss(logits, y, mask)
    padded = mixit.masked_loss(torch.cat([logits, torch.randn(3, 4, 7, generator=gen)]),
                               torch.cat([y, torch.zeros(3, 4, dtype=torch.long)]),
                               torch.cat([mask, torch.zeros(3, 4, dtype=torch.bool)]))
    assert torch.allclose(padded, loss)
    assert mixit.masked_loss(logits, y, torch.zeros_like(mask)).item() == 0  # no row: 0, not nan
    assert torch.allclose(loss, F.cross_entropy(logits[mask], y[mask]))
    uniform = mixit.masked_loss(torch.zeros(2, 4, 7), y, mask)
    assert uniform.item() == pytest.approx(torch.log(torch.tensor(7.0)).item(), rel=1e-6)


# -----------------------------------------------------------------------------
# Homework: homework.py hands out the parts above and grades them by those tests


def test_homework_blanks_bodies_but_keeps_signatures_and_docstrings():
    """Blanking every part of mixit.py and tasks.py at once leaves files that parse, in which
    each part keeps its decorators, arguments and docstring and its body is the one stub; the
    repository's own files carry no stub. Blanking one part changes no other part."""
    import ast
    import homework
    for name in homework.SOURCES:
        source = open(os.path.join(HERE, name)).read()
        assert "homework:" not in source
        parts = homework.find_parts(source)
        blanked = homework.find_parts(homework.blank(source, list(parts)))
        assert list(blanked) == list(parts)
        for part, node in parts.items():
            new = blanked[part]
            assert ast.dump(new.args) == ast.dump(node.args), part
            assert [ast.dump(d) for d in new.decorator_list] == [ast.dump(d) for d in node.decorator_list]
            assert ast.get_docstring(new) == ast.get_docstring(node), part
            assert ast.dump(new.body[-1]) == ast.dump(ast.parse(homework.stub(part)).body[0])
            assert len(new.body) == 1 + (ast.get_docstring(node) is not None), part
    source = open(os.path.join(HERE, "mixit.py")).read()
    parts = homework.find_parts(source)
    one = homework.find_parts(homework.blank(source, ["MixingAttention.forward"]))
    for part, node in parts.items():
        if part != "MixingAttention.forward":
            assert ast.dump(one[part]) == ast.dump(node), part


def test_homework_grades_with_only_the_grading_tests_each_at_its_own_line():
    """The copy of test_mixit.py that grades some parts (homework.only_tests) keeps every test
    that grades them, with its decorators (parametrize), and every statement that is not a
    test, each at its own line number, so that the feedback's lines are the kit's; every other
    test is blank lines. (pytest then rewrites the asserts of those tests only.)"""
    import ast
    import homework
    source = open(os.path.join(HERE, "test_mixit.py")).read()
    nodes = [*homework.GRADING["sample_hop"][2], *homework.GRADING["masked_loss"][2]]
    keep = {node.split("[")[0] for node in nodes}

    def kept(node):
        return not (isinstance(node, ast.FunctionDef) and node.name.startswith("test")) or node.name in keep
    graded = homework.only_tests(source, nodes)
    want = [(ast.dump(n), n.lineno) for n in ast.parse(source).body if kept(n)]
    assert [(ast.dump(n), n.lineno) for n in ast.parse(graded).body] == want
    assert len(graded.splitlines()) == len(source.splitlines())
    tests = [n for n in ast.parse(graded).body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    assert {n.name for n in tests} == keep and any(n.decorator_list for n in tests)  # parametrized
    assert all(old == new or new == "" for old, new in zip(source.splitlines(), graded.splitlines()))


def test_homework_refuses_each_bad_input_in_one_line_with_a_nonzero_exit(tmp_path, capsys):
    """Every bad command line gets one line on stderr ("error: ..."), no traceback, exit status
    2, and writes nothing: no command, an unknown one, an unknown part (the line lists the parts
    that can be handed out), a part no test grades (get_lr), a folder in use (a student's work
    is never overwritten), a submission that is not a folder or not a handout, an unknown part
    to grade, a bad --jobs."""
    import homework
    used, empty = tmp_path / "used", tmp_path / "empty"
    used.mkdir()
    empty.mkdir()
    (used / "mixit.py").write_text("my work")
    new = str(tmp_path / "new")
    cases = [([], "required"), (["hand", new], "invalid choice"),
             (["handout", new, "freeze", "no_such_part"], "unknown part(s) no_such_part"),
             (["handout", new, "get_lr"], "no test grades get_lr"),
             (["handout", str(used)], "not an empty folder"),
             (["grade"], "required"),
             (["grade", str(used / "mixit.py")], "is not a folder"),
             (["grade", str(empty)], "is not a handout: it has no mixit.py and no tasks.py"),
             (["grade", "--parts", "freeze,get_lr", HERE], "no test grades get_lr"),
             (["grade", "--parts", ",", HERE], "--parts names no part"),
             (["grade", "--jobs", "0", HERE], "--jobs must be 1 or more"),
             (["grade", "--jobs", "two", HERE], "invalid int value"),
             (["answers", new, "--from", str(empty)], "has no records.jsonl")]
    for argv, says in cases:
        assert homework.main(argv) == 2, argv
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1 and lines[0].startswith("error: "), (argv, out, err)
        assert says in lines[0], (argv, lines[0])
        if "unknown part" in says:
            assert "MixingAttention.forward" in lines[0] and "sample_dyck" in lines[0]
            assert "get_lr" not in lines[0]  # only the parts that a test grades
    assert not (tmp_path / "new").exists() and (used / "mixit.py").read_text() == "my work"


def test_homework_grades_a_copy_that_does_not_import_zero_with_one_clear_line(tmp_path, capsys):
    """A syntax error in the student's copy: grade names the file and line, gives every part 0
    out of all its tests (the same count as when they run) and prints no traceback."""
    import homework
    copy = tmp_path / "copy"
    homework.handout(str(copy), ["freeze", "sample_hop"], kit=HERE)
    with open(copy / "mixit.py", "a") as f:
        f.write("\ndef unfinished(:\n")
    assert homework.main(["grade", "--parts", "freeze,sample_hop", str(copy)]) == 0  # graded: 0
    out = capsys.readouterr().out
    assert "does not import: mixit.py, line" in out and "Traceback" not in out
    n = len(homework.GRADING["freeze"][2])
    assert re.search(rf"^freeze +0/{n} +0/15$", out, re.M)
    assert re.search(r"^total +0/30$", out, re.M)


# A student's plausible mistakes in each part of GRADING, each an edit {old: new} of the
# repository's own part, with the share of the part's points it may keep: half, or nothing
# where it breaks what an exercise hands in (homework.HAND_IN).
CENTRE = "Z = (Z - Z.sum(-1, keepdim=True) / support.sum(-1, keepdim=True)) * support"
ROTATE = "x1 * cos - x2 * sin, x1 * sin + x2 * cos"
LOSS = "(ce * m).sum() / m.sum().clamp(min=1)"
MUTANTS = [
    ("freeze", "counts tensors, not numbers", {
        "sum(p.numel() for p in model.parameters() if p.requires_grad)":
        "sum(1 for p in model.parameters() if p.requires_grad)"}, 0),
    ("freeze", "never refuses a part the model lacks", {"if not matched:": "if False:"}, 0.5),
    ("freeze", "freezes weights, not biases",
     {'in "." + n]': 'in "." + n and n.endswith("weight")]'}, 0),
    ("freeze", "freezes the first layer only",
     {'in "." + n]': 'in "." + n and "blocks.1." not in n]'}, 0),
    ("freeze", "returns (frozen, trainable)",
     {"return n_train, n_frozen": "return n_frozen, n_train"}, 0),
    ("mixing_matrices", "rows that do not sum to 1", {CENTRE: "pass"}, 0.5),
    ("mixing_matrices", "rows centred over all T positions",
     {"/ support.sum(-1, keepdim=True)": "/ T"}, 0.5),
    ("mixing_matrices", "a transposed matrix",
     {"ones(T, T).tril() if": "ones(T, T).triu() if"}, 0.5),
    ("mixing_matrices", "one strength for every head",
     {"torch.rand(n_head, 1, 1,": "torch.rand(1, 1, 1,"}, 0.5),
    ("mixing_matrices", "the sink on row 0", {"A[0, :, 0] += 0.5": "A[0, 0, :] += 0.5"}, 0.5),
    ("mixing_matrices", "noise not drawn from gen", {"T, T, generator=gen)": "T, T)"}, 0.5),
    ("mixing_matrices", "causal whatever causal says",
     {"if causal else torch.ones(T, T)": "if True else 0"}, 0.5),
    ("MixingAttention.forward", "a transposed A", {"(A @ v)": "(A.transpose(-1, -2) @ v)"}, 0.5),
    ("MixingAttention.forward", "heads split without the transpose", {
        "v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)":
        "v.view(B, self.n_head, T, C // self.n_head)"}, 0.5),
    ("MixingAttention.forward", "pads mixed in",
     {"v if keep is None else v * keep[:, :, None]": "v"}, 0.5),
    ("MixingAttention.forward", "A's bottom-right corner",
     {"self.A[:, :T, :T]": "self.A[:, -T:, -T:]"}, 0.5),
    ("MixingAttention.forward", "heads merged without o_proj",
     {"return self.o_proj(y),": "return y,"}, 0.5),
    ("apply_rotary", "cos and sin swapped",
     {ROTATE: "x1 * sin - x2 * cos, x1 * cos + x2 * sin"}, 0.5),
    ("apply_rotary", "halves in, pairs out", {"x[..., 0::2], x[..., 1::2]": "x.chunk(2, -1)"}, 0.5),
    ("apply_rotary", "not a rotation", {ROTATE: "x1 * cos - x2 * sin, x2 * sin + x1 * cos"}, 0.5),
    ("CausalSelfAttention.forward", "no 1/sqrt(d_head)", {"/ math.sqrt(q.size(-1))": ""}, 0.5),
    ("CausalSelfAttention.forward", "a mask off by one",
     {"seen.tril() if": "seen.tril(1) if"}, 0.5),
    ("CausalSelfAttention.forward", "no causal mask",
     {"seen.tril() if": "seen if", "is_causal=self.causal and": "is_causal=False and"}, 0.5),
    ("CausalSelfAttention.forward", "values rotated too",
     {"q, k = apply_rotary(": "v = apply_rotary(v, self.cos[:T], self.sin[:T])\n"
                             "            q, k = apply_rotary("}, 0.5),
    ("CausalSelfAttention.forward", "pads seen",
     {"if keep is not None:  # no": "if False:  #"}, 0.5),
    ("CausalSelfAttention.forward", "softmax over the queries",
     {".softmax(-1)": ".softmax(-2)"}, 0.5),
    ("masked_loss", "the mean over every position", {LOSS: "ce.mean()"}, 0),
    ("masked_loss", "divided by the rows", {LOSS: "(ce * m).sum() / len(mask)"}, 0),
    ("masked_loss", "the mean of each row's mean",
     {LOSS: "((ce * m).view(mask.shape).sum(1) / mask.sum(1).clamp(min=1)).mean()"}, 0),
    ("masked_loss", "nan where nothing is scored", {LOSS: "(ce * m).sum() / m.sum()"}, 0.5),
    ("sample_hop", "a hop lands on the occurrence, not after it",
     {"prev >= 0, prev + 1, T": "prev >= 0, prev, T"}, 0),
    ("sample_hop", "one hop whatever k", {"k = hops": "k = 1"}, 0),
    ("sample_hop", "adjacent repeats", {"step = _randint(1, V,": "step = _randint(0, V,"}, 0),
    ("sample_hop", "every position scored",
     {"return x, y, defined": "return x, y, torch.ones_like(defined)"}, 0),
    ("sample_hop", "the first token drawn without gen",
     {"_randint(0, V, (B, 1), gen)": "torch.randint(0, V, (B, 1))"}, 0.5),
    ("sample_hop", "16 + k positions", {"hop_length(hops), gen.device": "16 + hops, gen.device"},
     0.5),
    ("sample_add", "the sum most-significant digit first",
     {"// pow10) % 10": "// pow10.flip(0)) % 10"}, 0.5),
    ("sample_add", "leading zeros", {"a_digits[:, -1] = _randint(1, 10, (B,), gen)": "pass"}, 0.5),
    ("sample_needle", "the next pair's value", {"values.gather(1, which[:, None])":
                                                "values.gather(1, (which[:, None] + 1) % N)"}, 0.5),
    ("sample_induction", "the query itself, not its follower",
     {"ctx.gather(1, where + 1)": "ctx.gather(1, where)"}, 0.5),
    ("sample_dyck", "yes and no swapped",
     {"torch.where(balanced, 4, 5)": "torch.where(balanced, 5, 4)"}, 0.5),
]


def mutant(part, edits, blanked=False):
    """The repository's part (a function or method of mixit.py or tasks.py) with each edit
    {old: new} made to its source, or blanked as its handout blanks it (homework.blank), compiled
    in its module's namespace: (module, function)."""
    import homework
    module = {"mixit.py": mixit, "tasks.py": tasks}[homework.all_parts(HERE)[part]]
    source = open(module.__file__).read()
    source = homework.blank(source, [part]) if blanked else source
    node = homework.find_parts(source)[part]
    text = ast.get_source_segment(source, node)
    for old, new in edits.items():
        assert text.count(old) == 1, f"{part} holds {old!r} {text.count(old)} times, not once"
        text = text.replace(old, new)
    made = {}  # (a method's lines lose their class's indentation)
    exec(text.replace("\n" + " " * node.col_offset, "\n"), vars(module), made)
    return module, made[node.name]


def graded_here(node):
    """Run the grading test `node` (a node id of homework.GRADING) in this process, as pytest
    runs it: the parameters its id names, a monkeypatch of its own. True if it passed."""
    name, _, param = node.partition("[")
    test, args = globals()[name], {}
    for mark in getattr(test, "pytestmark", []):
        names = [n.strip() for n in mark.args[0].split(",")]
        values = [v if isinstance(v, tuple) else (v,) for v in mark.args[1]]
        args.update(zip(names, next(v for v in values if "-".join(map(str, v)) == param[:-1])))
    with pytest.MonkeyPatch.context() as monkeypatch:
        if "monkeypatch" in test.__code__.co_varnames[:test.__code__.co_argcount]:
            args["monkeypatch"] = monkeypatch
        try:
            test(**args)
        except (Exception, pytest.fail.Exception):
            return False
    return True


def test_homework_grade_takes_half_a_part_for_each_plausible_mistake_and_all_for_a_hand_in():
    """Each of MUTANTS, in place of its part, run through that part's grading tests in this
    process and scored as the grader scores (homework.earned), keeps at most half the part's
    points, and none where it breaks an exercise's hand-in (a freeze that counts tensors loses
    freeze); the repository's own parts keep every point."""
    import homework
    for part in {part for part, *_ in MUTANTS}:
        passed = {node: graded_here(node) for node in homework.GRADING[part][2]}
        assert homework.earned(part, passed) == homework.GRADING[part][0], (part, passed)
    kept_too_much = []
    for part, mistake, edits, most in MUTANTS:
        module, wrong = mutant(part, edits)
        owner, _, name = part.rpartition(".")
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setattr(getattr(module, owner) if owner else module, name, wrong)
            passed = {node: graded_here(node) for node in homework.GRADING[part][2]}
        kept = homework.earned(part, passed) / homework.GRADING[part][0]
        if kept > most:
            kept_too_much.append((part, mistake, kept, [n for n in passed if not passed[n]]))
    assert kept_too_much == []


def test_a_part_blanked_alone_fails_its_own_grading_tests_and_no_others():
    """Each default part, blanked as its handout blanks it and put in place of the repository's,
    run through every grading test in this process (as the grader scores them): exactly that
    part's tests fail, so it earns 0 and every other part full marks; the repository's own parts
    pass them all. (The class's `grade` below runs the same in subprocesses for one part.)"""
    import homework
    graded = homework.GRADING
    nodes = list(dict.fromkeys(node for _, _, tests in graded.values() for node in tests))
    assert [node for node in nodes if not graded_here(node)] == []
    for part in homework.DEFAULT_PARTS:
        module, stubbed = mutant(part, {}, blanked=True)
        owner, _, name = part.rpartition(".")
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setattr(getattr(module, owner) if owner else module, name, stubbed)
            passed = {node: graded_here(node) for node in nodes}
        assert {node for node in nodes if not passed[node]} == set(graded[part][2]), part
        scores = {p: homework.earned(p, {node: passed[node] for node in graded[p][2]})
                  for p in graded}
        assert scores == {**{p: points for p, (points, _, _) in graded.items()}, part: 0}, part


# Edits a student could make outside mixit.py and tasks.py, each of which would move the grade
# if grading read it: every test passes, or none is collected, or nothing imports, or the parts
# list leaves the unfinished part out.
PLANTED = {
    "test_mixit.py": "def test_frozen_mlp_freezes_exactly_the_mlps():\n    pass\n",
    "conftest.py": ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
                    "def pytest_runtest_makereport(item, call):\n"
                    "    (yield).get_result().outcome = 'passed'\n"),
    "pytest.ini": "[pytest]\npython_functions = nothing_is_a_test\n",
    "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '--collect-only'\n",
    "setup.cfg": "[tool:pytest]\naddopts = --collect-only\n",
    "tox.ini": "[pytest]\naddopts = --collect-only\n",
    "homework_parts.txt": "sample_hop\n",
    "homework.py": "print('total 100/100')\n",
    "runtime.py": "raise SystemExit('no import for you')\n",
    "test_homework.py": "def test_nothing():\n    assert False\n",
}


def test_homework_grades_a_class_trusting_only_the_graded_files(tmp_path, capsys):
    """One `grade` of a whole class, a CSV row each, on every part of GRADING (two at a time):
    the repository scores full marks; the untouched handout 0 on each part handed out and full
    marks on the others; freeze blanked alone 0 on freeze and full marks on every other part,
    even where the copy holds an edit of each kind outside mixit.py and tasks.py (PLANTED); the
    other parts blanked together likewise (that copy's masked_loss is wrong too, and scores 0); a
    mixit.py that fails on import 0 everywhere, naming file and line; a folder that is not a
    handout is named in its row, and the others are graded. The feedback lists each failed
    test by its full name, with its line and the values compared, and every part counts all
    its tests."""
    import csv
    import io
    import homework
    graded, defaults = homework.GRADING, homework.DEFAULT_PARTS
    extras = [part for part in graded if part not in defaults]
    folders = {"repository": HERE}
    handouts = {"defaults": defaults, "freeze": ["freeze"], "extras": extras}
    for name, parts in handouts.items():
        folders[name] = str(tmp_path / name)
        homework.handout(folders[name], parts, kit=HERE)
    wrong = tmp_path / "extras" / "mixit.py"
    wrong.write_text(wrong.read_text().replace(LOSS, "ce.mean()"))  # over every position
    for name, text in PLANTED.items():
        (tmp_path / "freeze" / name).write_text(text)
    # the edits are live: pytest run in that copy itself reads them (and collects no test)
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                         cwd=folders["freeze"], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 5, ran.stdout + ran.stderr
    folders["broken"] = str(tmp_path / "broken")
    os.makedirs(folders["broken"])
    for source in homework.SOURCES:
        text = open(os.path.join(HERE, source)).read()
        if source == "mixit.py":
            text += "\nraise RuntimeError('half-written')\n"
        (tmp_path / "broken" / source).write_text(text)
    folders["nothing"] = str(tmp_path / "nothing")
    os.makedirs(folders["nothing"])
    feedback = tmp_path / "feedback"
    argv = ["grade", "--parts", ",".join(graded), "--jobs", "2", "--feedback", str(feedback)]
    assert homework.main(argv + list(folders.values())) == 1  # some could not be graded
    out = capsys.readouterr().out
    rows = {row["submission"]: row for row in csv.DictReader(io.StringIO(out))}
    assert list(rows) == list(folders.values())
    full = {part: f"{points:g}" for part, (points, _, _) in graded.items()}

    def row(name):
        return {part: rows[folders[name]][part] for part in graded}

    assert row("repository") == full
    assert rows[HERE]["total"] == f"{sum(points for points, _, _ in graded.values()):g}"
    assert row("defaults") == {**full, **{p: "0" for p in defaults}}
    assert row("extras") == {**full, **{p: "0" for p in extras}, "masked_loss": "0"}
    assert row("freeze") == {**full, "freeze": "0"} and rows[folders["freeze"]]["problem"] == ""
    assert row("broken") == {part: "0" for part in graded}
    assert re.fullmatch(r"does not import: mixit\.py, line \d+: RuntimeError: half-written",
                        rows[folders["broken"]]["problem"])
    assert set(row("nothing").values()) == {""}
    assert "is not a handout" in rows[folders["nothing"]]["problem"]

    reports = {name: (feedback / homework.feedback_name(folder, set())).read_text()
               for name, folder in folders.items()}
    for name in ("repository", "defaults", "extras"):  # every part counts all its tests
        for part, (points, _, tests) in graded.items():
            assert re.search(rf"^{re.escape(part)} +\d+/{len(tests)} ", reports[name], re.M), name
    failed = reports["extras"].split("test(s) failed:\n")[1].splitlines()
    i = failed.index("test_mixit.py::test_masked_loss_only_looks_at_masked_positions")
    assert re.fullmatch(r" +test_mixit\.py:\d+: assert torch\.allclose\(mixit\.masked_loss\("
                        r"logits, y, mask\), expected\)", failed[i + 1])
    line, source = re.match(r" +test_mixit\.py:(\d+): (.*)", failed[i + 1]).groups()
    assert open(os.path.join(HERE, "test_mixit.py")).read().splitlines()[int(line) - 1].strip() == source
    assert failed[i + 2].strip().startswith("E ") and "tensor(" in "".join(failed[i + 2:i + 5])
    assert "E   NotImplementedError: homework: sample_dyck;" in reports["extras"]
    assert re.match(r"not graded: .* is not a handout", reports["nothing"])


def test_homework_handout_stands_on_its_own_and_gives_no_solution_away(tmp_path):
    """The handout of the default parts holds the blanked sources, runtime.py, the public tests
    and a README that is the assignment: each part with its points and its public tests' -k,
    the test command, and no link to a file it lacks. No grading test, no homework.py, and no
    code that computes what a blanked part does: no call of cross_entropy, softmax, the fused
    attention or einsum outside the blanked bodies. Its own test command fails exactly the
    public tests of the parts handed out, each with its part's NotImplementedError, and passes
    once mixit.py and tasks.py are the repository's."""
    import ast
    import concurrent.futures
    import homework
    copy, filled = tmp_path / "copy", tmp_path / "filled"
    parts = homework.handout(str(copy), kit=HERE)
    homework.handout(str(filled), kit=HERE)
    for source in homework.SOURCES:
        shutil.copyfile(os.path.join(HERE, source), filled / source)
    handed = sorted(os.listdir(copy))
    assert handed == sorted([*homework.SOURCES, *homework.HANDOUT_FILES, "README.md"])
    # (no test_mixit.py, no homework.py: the grading tests stay with the teacher)
    readme = (copy / "README.md").read_text()
    for link in re.findall(r"\]\(([^)\s]+)\)", readme):
        assert link.startswith("https://") or (copy / link).exists(), link
    assert homework.PUBLIC_COMMAND in readme
    for part in parts:
        points, keyword = homework.GRADING[part][0], homework.keyword(part)
        assert re.search(rf"\| `{re.escape(part)}\(.*\| {points} \| `-k {keyword}` \|", readme)
    solutions = {"cross_entropy", "softmax", "scaled_dot_product_attention", "einsum",
                 "softmax_attention", "k_hop", "pair_rotation", "rope_tables"}  # grading's own
    for name in os.listdir(copy):
        if name.endswith(".py"):
            tree = ast.parse((copy / name).read_text())
            names = {getattr(node, "attr", getattr(node, "id", None)) for node in ast.walk(tree)}
            assert not names & solutions, name

    def public(folder):
        """The handout's own test command in folder: {test: None if it passed, else why not}."""
        report = tmp_path / f"{os.path.basename(folder)}.xml"
        command = homework.PUBLIC_COMMAND.split()[1:] + [  # (--tb=native: what read_report reads)
            "--tb=native", "-p", "no:cacheprovider", f"--junitxml={report}"]
        subprocess.run([sys.executable, *command], cwd=folder, capture_output=True, timeout=300)
        return homework.read_report(str(report), folder)[0]

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        blank, done = pool.map(public, [str(copy), str(filled)])
    names = homework.defined_tests(HERE, homework.PUBLIC_TESTS)  # each part's public tests
    mine = {part: [n for n in names if n.startswith(f"test_{homework.keyword(part)}_")]
            for part in homework.GRADING}
    assert all(mine[part] for part in homework.GRADING)  # every part has public tests
    failed = {test.split("[")[0]: why for test, why in blank.items() if why}
    assert set(failed) == {test for part in parts for test in mine[part]}
    for part in parts:
        for test in mine[part]:
            assert any(f"NotImplementedError: homework: {part};" in s for s in failed[test]), test
    assert len(done) == len(blank) > 30
    assert not any(done.values()), {test: why for test, why in done.items() if why}


def test_save_steps_saves_the_model_after_each_listed_step_and_refuses_a_bad_list(tmp_path, capsys):
    """--save_steps 0,2,4 with --save m.pt: m_step0.pt is the model at init, m_step4.pt the one
    --save writes at the end, m_step2.pt neither; no other step is saved. A list that is not of
    steps from 0 to --steps, or one without --save, is a one-line error."""
    base = BASE_FLAGS + ["--task", "add", "--task_size", "2", "--variant", "frozen_qk",
                         "--steps", "4", "--warmup", "0", "--lr", "1e-2", "--out", ""]
    mixit.main(base + ["--save", str(tmp_path / "m.pt"), "--save_steps", "0, 2,4"])
    weights = {s: runtime.load_checkpoint(str(tmp_path / f"m_step{s}.pt"))["model"] for s in (0, 2, 4)}
    init = mixit.build(make_config("--task", "add", "--task_size", "2", "--variant", "frozen_qk"),
                       verbose=False)[1].state_dict()
    final = runtime.load_checkpoint(str(tmp_path / "m.pt"))["model"]
    same = lambda a, b: all(torch.equal(a[k], b[k]) for k in a)  # noqa: E731
    assert same(weights[0], init) and same(weights[4], final)
    assert not same(weights[2], init) and not same(weights[2], final)
    assert sorted(os.listdir(tmp_path)) == ["m.pt", "m_step0.pt", "m_step2.pt", "m_step4.pt"]
    for flags, says in ((["--save", "x.pt", "--save_steps", "1,a"], "--save_steps takes steps"),
                        (["--save", "x.pt", "--save_steps", "5"], "from 0 to --steps (4)"),
                        (["--save_steps", "2"], "needs --save")):
        with pytest.raises(SystemExit):
            mixit.main(base + flags)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0], err


def test_attention_forming_data_comes_from_the_checkpoints_at_the_steps_it_names(tmp_path):
    """figures.forming_data reads each step's scores off that step's checkpoint: a tiny Standard
    run on induction saved at steps 0, 3 and 6 gives the scores of the model at init, of the
    model --save wrote at the end, and of neither at step 3; the committed data
    (results/forming_quick.json) names one run's checkpoints at the steps it shows."""
    import figures
    path = str(tmp_path / "m.pt")
    mixit.main(BASE_FLAGS + ["--task", "induction", "--task_size", "6", "--variant", "standard",
                             "--steps", "6", "--warmup", "0", "--lr", "3e-2", "--out", "",
                             "--save", path, "--save_steps", "0,3,6"])
    steps = [0, 3, 6]
    data = figures.forming_data({s: str(tmp_path / f"m_step{s}.pt") for s in (6, 0, 3)})
    assert data["steps"] == steps
    assert data["checkpoints"] == [str(tmp_path / f"m_step{s}.pt") for s in steps]

    def scores(state):  # a model of the run's config holding these weights, scored
        task, model = figures.load_model(path)
        model.load_state_dict(state)
        return figures.induction_scores(model, task)
    init = mixit.build(make_config("--task", "induction", "--task_size", "6", "--variant",
                                   "standard"), verbose=False)[1].state_dict()
    at = dict(zip(steps, data["scores"]))
    assert at[0] == scores(init) and at[6] == scores(runtime.load_checkpoint(path)["model"])
    assert at[3] != at[0] and at[3] != at[6]
    committed = json.load(open(os.path.join(HERE, figures.FORMING_DATA)))
    assert list(committed) == list(figures.FORMING_ROWS)
    for v, d in committed.items():
        assert d["steps"] == figures.FORMING_STEPS
        assert d["checkpoints"] == [figures.forming_path(v, s) for s in figures.FORMING_STEPS]
        assert len(d["scores"]) == len(d["steps"])


def test_homework_answers_at_smoke_size_write_every_section_from_its_own_records(tmp_path):
    """`answers --smoke` writes a section per exercise, each citing records of its own exercise
    that the run wrote. It reads its numbers from them: with ex1's records changed and its section
    removed, a second call trains nothing (it resumes) and shows the changed number in ex1 only."""
    import homework
    folder = str(tmp_path / "key")
    assert homework.main(["answers", folder, "--smoke"]) == 0
    key = open(os.path.join(folder, "ANSWERS.md")).read()
    sections = re.split(r"^## Exercise (\d+)\n", key, flags=re.M)[1:]
    assert [int(n) for n in sections[::2]] == list(range(1, len(homework.EXERCISES) + 1))
    records = [json.loads(line) for line in open(os.path.join(folder, "records.jsonl"))]
    tags = [r["config"]["tag"] for r in records]
    for n, text in zip(sections[::2], sections[1::2]):
        cited = re.findall(r"`(ex\d+/[^`*]+)/(?:s|d)\*`", text)
        assert cited and all(c.startswith(f"ex{n}/") for c in cited), (n, cited)
        assert all(any(t.startswith(c + "/") for t in tags) for c in cited), (n, cited)
        assert {t.rsplit("/", 1)[0] for t in tags if t.startswith(f"ex{n}/")} == set(cited), n
    times = json.load(open(os.path.join(folder, "times.json")))
    assert sorted(times, key=int) == [str(i) for i in range(1, len(homework.EXERCISES) + 1)]
    with open(os.path.join(folder, "records.jsonl"), "w") as f:
        for r in records:
            if r["config"]["tag"].startswith("ex1/copy/frozen_qk+vo/"):
                r["final"]["acc"] = 0.4242
            f.write(json.dumps(r) + "\n")
    others = {i: open(os.path.join(folder, f"ex{i}.md")).read() for i in range(2, 9)}
    os.remove(os.path.join(folder, "ex1.md"))
    assert "42.4" not in sections[1]
    assert homework.main(["answers", folder, "--smoke"]) == 0
    assert len(open(os.path.join(folder, "records.jsonl")).readlines()) == len(records)
    again = open(os.path.join(folder, "ex1.md")).read()
    assert "42.4" in again and "42.4" in open(os.path.join(folder, "ANSWERS.md")).read()
    assert all(open(os.path.join(folder, f"ex{i}.md")).read() == t for i, t in others.items())


def test_homework_exercise_1_prints_the_counts_of_the_answer_key(tmp_path, capsys):
    """A one-step run of each of exercise 1's commands, as the handout prints them, prints the
    trainable and frozen counts that the answer key (rebuilt from the committed records, no
    training) gives, and the key's section names the settings those counts depend on."""
    import homework
    source = os.path.join(HERE, homework.COMMITTED)
    key = open(homework.answers(str(tmp_path), source=source, draw=False)).read()
    capsys.readouterr()
    section = key.split("## Exercise 1\n")[1].split("## Exercise 2\n")[0]
    assert "Rebuilt from the records in `results/answers`" in key and "no run was trained" in key
    for command in homework.EXERCISES[0].commands:
        args = homework.mixit_args(command)
        mixit.main(args + ["--steps", "1", "--warmup", "1", "--eval_size", "8", "--out", "",
                           "--examples", "0"])
        printed = capsys.readouterr().out
        n_train, n_frozen = re.search(r": ([\d,]+) trainable parameters, ([\d,]+) frozen",
                                      printed).groups()
        assert re.search(rf"\| {n_train} \| {n_frozen} \|", section), (command, n_train, section)
        given = dict(zip(args[::2], args[1::2]))
        assert f"width {given['--n_embd']}," in section and f"{given['--steps']} steps" in section
        assert f"{given['--dtype']} on" in section


def test_homework_answer_key_records_come_from_the_exercises_commands(monkeypatch):
    """Every training record of the committed answer key is an exercise's own command: its
    settings equal those the command resolves to (the student's choice, a word in capitals,
    read from the record), apart from the bookkeeping flags; each setting has seeds 0, 1, 2."""
    import homework
    monkeypatch.setattr(tasks, "TASKS", dict(tasks.TASKS))  # exercise 4's tasks, for this test
    homework.register_pointer_tasks()
    records = [json.loads(line) for line in open(os.path.join(HERE, homework.COMMITTED,
                                                               "records.jsonl"))]
    trained = [r for r in records if "final" in r]
    assert trained
    cells = {}
    for r in trained:
        tag, config = r["config"]["tag"], r["config"]
        i = int(tag.split("/")[0][2:])
        cells.setdefault(tag.rsplit("/", 1)[0], set()).add(config["seed"])
        matched = False
        for command in homework.EXERCISES[i - 1].commands:
            if not command.startswith("python mixit.py"):
                continue
            words = shlex.split(command)[2:]
            chosen = {w: str(config[f.lstrip("-")]) for f, w in zip(words, words[1:])
                      if w.isupper()}
            args = homework.mixit_args(command, **chosen) + ["--out", ""]
            expected = dataclasses.asdict(mixit.resolve_config(mixit.parse_args(args)))
            expected["task_size"] = expected["task_size"] or tasks.TASKS[config["task"]][1]
            differ = {k for k in expected if k in config and k not in homework.BOOKKEEPING
                      and k != "block_size" and expected[k] != config[k]}  # (set by the task)
            matched = matched or not differ
        assert matched, (tag, differ)
    assert all(seeds == {0, 1, 2} for seeds in cells.values()), cells


def test_homework_answers_stop_on_ctrl_c_keep_their_state_in_dir_and_resume(tmp_path):
    """SIGINT to the process group of a running `answers DIR` while runs train: it exits 130
    within seconds with one line that names what was kept (the finished records and the state of
    each run stopped midway) and the command that continues, no traceback; the runs' state is
    under DIR (none in results/ckpt), and so is the stopped sitting's time (times.json). The same
    command resumes them from their saved step and says so, and that sitting's time adds to it. (Which runs are training at the signal depends on the machine's speed: the test
    reads that from their logs.)"""
    folder = str(tmp_path / "key")
    resume, logs = os.path.join(folder, "resume"), os.path.join(folder, "logs")
    ckpt = os.path.join(HERE, "results", "ckpt")
    before = set(os.listdir(ckpt)) if os.path.isdir(ckpt) else set()

    def start():
        return subprocess.Popen([sys.executable, "homework.py", "answers", folder], cwd=HERE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    def texts():  # each run's log so far
        return {f[:-4]: open(os.path.join(logs, f)).read()
                for f in (os.listdir(logs) if os.path.isdir(logs) else [])}

    def training():  # the runs whose log shows their first evaluation and no final line
        return {name for name, text in texts().items()
                if "step     0 |" in text and "final test accuracy" not in text}

    p = start()
    deadline = time.time() + 120
    while not training():
        assert p.poll() is None and time.time() < deadline, "no run started training"
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGINT)
    t0 = time.time()
    out, err = p.communicate(timeout=60)
    code, took = p.returncode, time.time() - t0
    assert code == 130 and took < 20, (code, took, out, err)
    assert "Traceback" not in out + err
    kept = len(open(os.path.join(folder, "records.jsonl")).readlines()) if os.path.isfile(
        os.path.join(folder, "records.jsonl")) else 0
    states = sorted(os.listdir(resume))
    assert err.strip().count("\n") == 0 and err.strip().startswith(
        f"interrupted: kept {kept} finished records in {folder}/records.jsonl and the saved "
        f"state of {len(states)} unfinished run(s)"), err
    assert f"continue with: python homework.py answers {folder}" in err
    # a state for each run stopped midway, and for no finished one
    stopped, kept_states = training(), {s[:-3] for s in states}
    assert stopped and stopped <= kept_states, (stopped, states)
    finished = {name for name, text in texts().items() if "final test accuracy" in text}
    assert not kept_states & finished, (states, finished)
    after = set(os.listdir(ckpt)) if os.path.isdir(ckpt) else set()
    assert not {f for f in after - before if "ex1" in f}
    saved = {s: runtime.load_checkpoint(os.path.join(resume, s)) for s in states}
    steps = {s: st["step"] for s, st in saved.items()}
    times = os.path.join(folder, "times.json")  # the stopped sitting's time, kept for the next
    [(ex, first)] = [(i, t["stopped_s"]) for i, t in json.load(open(times)).items()
                     if "stopped_s" in t]
    assert first > 0

    p = start()  # the same command again: it resumes each
    lines = []
    reader = threading.Thread(target=lambda: [lines.append(line) for line in p.stdout],
                              daemon=True)
    reader.start()
    deadline = time.time() + 120
    said = [f"resumed from {os.path.join(resume, s)} at step {step}" for s, step in steps.items()]
    while sum("resumed from its saved step" in line for line in lines) < len(steps) or not all(
            line in open(os.path.join(logs, s[:-3] + ".log")).read()
            for s, line in zip(steps, said)):  # each run, too, says it continued
        if p.poll() is not None or time.time() > deadline:
            p.terminate()  # (homework.py stops its runs on SIGTERM too)
            p.wait(60)
            raise AssertionError(f"no resumption said: {lines}")
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGINT)
    p.wait(60)
    reader.join(10)
    out, err = "".join(lines), p.stderr.read()
    code = p.returncode
    assert code == 130 and "Traceback" not in out + err, (out, err)
    for s, step in steps.items():
        run = saved[s]["config"]["tag"]
        assert f"  run {run}: resumed from its saved step {step}: python mixit.py" in "".join(lines)
    after = json.load(open(times))[ex]  # both sittings count in the exercise's time
    assert after.get("stopped_s", after.get("seconds")) > first, (first, after)


def test_homework_grade_of_a_class_exits_0_when_every_submission_got_a_grade(tmp_path, capsys):
    """A class in which one copy does not import: each gets its row (that one 0 points, naming
    file and line), and the exit status is 0. The grades are kept as they are made: the same
    command again grades nothing and says so."""
    import csv
    import homework
    for name in ("alice", "bob"):
        homework.handout(str(tmp_path / name), ["sample_hop"], kit=HERE)
    with open(tmp_path / "bob" / "tasks.py", "a") as f:
        f.write("\ndef unfinished(:\n")
    argv = ["grade", "--parts", "sample_hop", "--feedback", str(tmp_path / "feedback"),
            str(tmp_path / "alice"), str(tmp_path / "bob")]
    assert homework.main(argv) == 0
    out = capsys.readouterr().out
    rows = {row["submission"]: row for row in csv.DictReader(io.StringIO(out))}
    assert rows[str(tmp_path / "alice")]["total"] == "0"
    assert rows[str(tmp_path / "bob")]["total"] == "0"
    assert rows[str(tmp_path / "bob")]["problem"].startswith("does not import: tasks.py, line")
    assert homework.main(argv) == 0
    again, err = capsys.readouterr()
    assert again == out and "reused the kept grades of 2 submission(s)" in err


def test_homework_grade_of_a_class_says_on_stderr_why_it_exits_1(tmp_path, capsys):
    """A class with folders that are not handouts: each has its CSV row, and stderr says for
    each why the grade exits 1."""
    import homework
    empty, half = tmp_path / "empty", tmp_path / "half"
    empty.mkdir(), half.mkdir()
    (half / "mixit.py").write_text("")
    assert homework.main(["grade", "--parts", "sample_hop", str(empty), str(half)]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 3 and err.splitlines() == [
        f"not graded (exit status 1): {empty} is not a handout: it has no mixit.py and no tasks.py",
        f"not graded (exit status 1): {half} is not a handout: it has no tasks.py"]


def test_handout_has_no_answer_key_and_shows_the_readmes_list_of_exercises(tmp_path):
    """No file of the handout holds the answer key or names the `answers` command; the handout's
    README and this repository's documents give the same list of exercises (homework.EXERCISES)."""
    import homework
    dest = tmp_path / "hw"
    homework.handout(str(dest))
    for path in dest.rglob("*"):  # every file, corpus/'s compressed texts too (as bytes)
        data = path.read_bytes() if path.is_file() else b""
        for secret in ("homework.py answers", "answer key", "ANSWERS", "A good answer",
                       homework.KEY_TITLE):
            assert secret.encode() not in data, (path, secret)
    listed = homework.exercise_list()
    assert listed in (dest / "README.md").read_text()
    import report  # the document whose template has the list renders it whole, as one block
    where = [doc for doc, template in report.DOCS.items()
             if "\n<!-- exercises -->\n" in open(os.path.join(HERE, template)).read()]
    assert len(where) == 1 and f"\n{listed}\n" in open(os.path.join(HERE, where[0])).read()
    for i, ex in enumerate(homework.EXERCISES, 1):
        flat = " ".join(listed.split())  # (the list is wrapped at 96 characters)
        assert f"{i}. {ex.question}" in flat and ex.hand_in in flat
        assert all(f"`{c}`" in flat for c in ex.commands)


# -----------------------------------------------------------------------------
# MixiT as the reference ships it (--mixit_shipped, issue 49)


def test_mixit_shipped_gives_the_reference_factors_per_task_family():
    """The reference's ScaledLinear multiplies by sqrt(base / fan_in): base 512 in its algorithmic
    and LM drivers (1 in the Yelp classifier's), and down_proj's base is never set (1); its LM
    trainer weights the residual 0.5 / 0.866. Off, MixiT keeps only the sqrt(1/2) residual."""
    half = math.sqrt(0.5)
    cases = [(("--task", "add", "--n_embd", "32"), (4.0, 1 / math.sqrt(128), half, half)),
             (("--task", "add", "--n_embd", "512", "--n_head", "8"), (1.0, 1 / math.sqrt(2048), half, half)),
             (("--task", "memorize", "--n_embd", "64"), (math.sqrt(8), 1 / 16, half, half)),
             (("--task", "lm", "--n_embd", "64"), (math.sqrt(8), 1 / 16, 0.5, math.sqrt(0.75))),
             (("--task", "classify", "--n_embd", "64"), (1 / 8, 1 / 16, half, half))]
    for flags, want in cases:
        cfg = make_config("--variant", "mixit", "--mixit_shipped", *flags)
        assert mixit.shipped_factors(cfg) == pytest.approx(want), flags
        off = make_config("--variant", "mixit", *flags)
        assert mixit.shipped_factors(off) == pytest.approx((1.0, 1.0, half, half)), flags
    assert mixit.shipped_factors(make_config("--variant", "standard")) == (1.0, 1.0, 1.0, 1.0)


def test_mixit_shipped_block_computes_the_reference_block():
    """One block at width 32 with the switch on, against the reference's block written out:
    h <- s h + r c o(A c v(n1 h)); h <- s h + r c_down down(g lrelu(c gate(n2 h)) * c up(n2 h))
    with c = sqrt(512/32) = 4, c_down = sqrt(1/128), s = r = sqrt(1/2); the same weights without
    the switch give another output. The factors are put on a built GPT (apply_shipped_factors):
    its parameters and buffers keep their names, and a Block built alone is the paper's."""
    torch.manual_seed(0)
    flags = ["--variant", "mixit", "--task", "add", "--n_embd", "32", "--n_head", "4",
             "--block_size", "8", "--n_layer", "1"]
    cfg = make_config(*flags, "--mixit_shipped")
    block = mixit.GPT(cfg, vocab_size=10).blocks[0]
    for p in block.parameters():  # biases too: the reference scales W x + b as a whole
        torch.nn.init.normal_(p, std=0.1)
    off = mixit.GPT(make_config(*flags), vocab_size=10)  # the same model without the factors
    assert off.state_dict().keys() == mixit.GPT(cfg, vocab_size=10).state_dict().keys()
    off = off.blocks[0]
    off.load_state_dict(block.state_dict())  # its weights, and the shipped sink's A
    x = torch.randn(2, 8, 32)
    c, c_down, s = 4.0, 1 / math.sqrt(128), math.sqrt(0.5)
    at, mlp = off.attn, off.mlp  # layers without factors: the factors are written out below
    norm1, norm2 = off.norm1, off.norm2
    v = (c * at.v_proj(norm1(x))).view(2, 8, 4, 8).transpose(1, 2)  # (B, H, T, hd)
    mixed = (at.A @ v).transpose(1, 2).reshape(2, 8, 32)
    h = s * x + s * c * at.o_proj(mixed)
    n2 = norm2(h)
    F, slope = torch.nn.functional, 1 - 1 / math.sqrt(32)  # the shaped leaky ReLU, written out
    g = math.sqrt(2 / (1 + slope ** 2)) * F.leaky_relu(c * mlp.gate_proj(n2), slope)
    want = s * h + s * c_down * mlp.down_proj(g * c * mlp.up_proj(n2))
    with torch.no_grad():
        got = block(x)[0]
        assert not torch.allclose(off(x)[0], want, atol=1e-3)
        alone = mixit.Block(cfg, torch.Generator())  # built alone: the paper's block, no factor
        alone.load_state_dict(block.state_dict())
        assert torch.allclose(alone(x)[0], off(x)[0], atol=1e-6)
        # --mixit_mult alone scales the same layers: v_proj's and o_proj's outputs here
        two = mixit.GPT(make_config(*flags, "--mixit_mult", "2"), vocab_size=10).blocks[0].attn
        two.load_state_dict(at.state_dict())
        xs = torch.randn(2, 8, 32)
        assert torch.allclose(two.v_proj(xs), 2 * F.linear(xs, at.v_proj.weight, at.v_proj.bias))
    assert torch.allclose(got, want, atol=1e-5)


def test_mixit_shipped_logits_are_the_reference_models():
    """A 1-layer MixiT with --mixit_shipped, logits against the reference's model written out
    (REFERENCE_NOTES 1.7; shipped_factors' table): x = wte + wpe; the block as in the test above,
    with the LM trainer's residual weights s = 0.5, r = sqrt(3/4); logits = c lm_head(norm_f(x)).
    Head 0 is the reference's sink: 0.5 on the diagonal, 0.5 in column 0 below it, so row 0 is
    [0.5, 0, ...] (issue 53); heads 1-3 are the model's own draws (their law: another test).
    Our default sink's row 0, [1, 0, ...], moves the logits: the default model is not this one."""
    T, C, H = 8, 32, 4
    flags = ["--variant", "mixit", "--task", "lm", "--n_embd", str(C), "--n_head", str(H),
             "--n_layer", "1", "--block_size", str(T)]
    torch.manual_seed(0)
    model = mixit.GPT(make_config(*flags, "--mixit_shipped"), vocab_size=256)
    for p in model.parameters():  # biases too: the reference scales W x + b as a whole
        torch.nn.init.normal_(p, std=0.1)
    plain = mixit.GPT(make_config(*flags), vocab_size=256)  # its layers without the factors
    plain.load_state_dict(model.state_dict())
    idx = torch.randint(0, 256, (2, T))
    c, c_down, s, r = math.sqrt(512 / C), math.sqrt(1 / (4 * C)), 0.5, math.sqrt(0.75)
    sink = 0.5 * torch.eye(T)
    sink[1:, 0] = 0.5  # row i > 0: itself and the first token; row 0: 0.5 on itself only
    block, F = plain.blocks[0], torch.nn.functional

    def logits(head0):
        A = torch.cat([head0[None], block.attn.A[1:]])  # (H, T, T)
        x = plain.wte(idx) + plain.wpe(torch.arange(T))  # (B, T, C)
        v = (c * block.attn.v_proj(block.norm1(x))).view(2, T, H, C // H).transpose(1, 2)
        h = s * x + r * c * block.attn.o_proj((A @ v).transpose(1, 2).reshape(2, T, C))
        n2, slope = block.norm2(h), 1 - 1 / math.sqrt(C)
        g = math.sqrt(2 / (1 + slope ** 2)) * F.leaky_relu(c * block.mlp.gate_proj(n2), slope)
        h = s * h + r * c_down * block.mlp.down_proj(g * c * block.mlp.up_proj(n2))
        return c * plain.lm_head(plain.norm_f(h))  # (B, T, vocab)

    with torch.no_grad():
        got, want = model(idx), logits(sink)
        ours = sink.clone()
        ours[0, 0] = 1.0  # the default sink's row 0
        assert not torch.allclose(got, logits(ours), atol=1e-3)
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
    default = mixit.GPT(make_config(*flags), 256)
    assert default.blocks[0].attn.A[0, 0, 0] == 1.0 and model.blocks[0].attn.A[0, 0, 0] == 0.5


def test_a_shipped_run_of_the_old_sink_row_is_rerun_and_still_citable(tmp_path, monkeypatch):
    """A --mixit_shipped record without sink_row0 ran the sink's old row 0 (before issue 53): its
    rerun supersedes it in the tables and in the marked numbers, and FINDINGS can still cite it
    by the record field, [sink_row0=None], beside the rerun's [sink_row0=0.5]."""
    import report
    monkeypatch.chdir(tmp_path)
    os.makedirs("results")
    with open("results/quick.jsonl", "w") as f:
        for acc, row in ((0.25, {}), (0.75, {"sink_row0": 0.5})):
            f.write(json.dumps({"config": {"tag": "t3/add/mixit-shipped/s0", "mixit_shipped": True},
                                "final": {"acc": acc}, "history": [], **row}) + "\n")
    doc = " ".join(f"<!--= quick t3/add/mixit-shipped{c} acc -->"
                   for c in ("", "[sink_row0=None]", "[sink_row0=0.5]"))
    assert report.fill_numbers(doc) == "75.0 25.0 75.0"


def test_mixit_shipped_refuses_a_variant_or_factor_it_would_override():
    for flags in (("--variant", "standard"), ("--variant", "mixit", "--mixit_mult", "2"),
                  ("--variant", "mixit", "--mixit_sink", "false"),
                  ("--variant", "mixit", "--residual", "plain")):
        with pytest.raises(mixit.UsageError, match="mixit_shipped"):
            make_config("--mixit_shipped", *flags)


# -----------------------------------------------------------------------------
# The prose types no number and no verdict that no marker renders: records.unsourced, on every
# surface report.py --check reads (report.surfaces)


@pytest.fixture(scope="module")
def surfaces():
    import report
    cwd = os.getcwd()
    os.chdir(HERE)
    try:
        return report.surfaces()
    finally:
        os.chdir(cwd)


# (kind the check names, sentence), planted
PLANTED_PROSE = [
    # typed numbers: without a unit, a count of runs, a percentage
    ("typed number", "Its seeds end near 94.1 on average."),
    ("typed number", "At width 512 (one seed) the figure is final."),
    ("typed number", "Its seeds sit near a plateau of 35-40%."),
    # a verdict typed by hand (the claims table renders each row's)
    ("typed verdict", 'On memorization MixiT is below Standard: "partly".'),
]


def test_markers_read_a_graphs_check_and_give_words_as_they_are():
    """A marker reads a graphs check's figures (bench.py --graphs-check's record): `check:RUN`
    is that run's accuracy at its end, in percent; its loss gaps and verdict, and a record's
    device name, are given as they are (a word is not a number to round)."""
    import records
    record = {"config": {"tag": "gpu/graphs-check-x"}, "device_name": "NVIDIA H100",
              "graphs_check": {"same": True, "loss_gap": 0.000171, "steps": 1000,
                               "acc": {"graphs": [[0, 0.03], [1000, 0.172]],
                                       "eager": [[0, 0.03], [1000, 0.279]]}}}

    def number(spec):
        return records.number(spec, lambda name, every=False: [record])
    assert number("gpu gpu/graphs-check-* check:graphs") == "17.2"
    assert number("gpu gpu/graphs-check-* check:eager mean:0") == "28"
    assert number("gpu gpu/graphs-check-* loss_gap mean:5") == "0.00017"
    assert number("gpu gpu/graphs-check-* steps mean:0") == "1000"
    assert number("gpu gpu/graphs-check-* same seeds") == "True"
    assert number("gpu gpu/graphs-check-* device_name range") == "NVIDIA H100"


@pytest.mark.parametrize("kind,sentence", PLANTED_PROSE)
def test_check_catches_each_planted_kind_on_every_surface(surfaces, kind, sentence):
    """report.py --check's prose rule (records.unsourced): each kind planted into a copy of
    README, FINDINGS and run_all.sh's comments is named with its kind, once, and no mark (a
    hypothesis) excuses it."""
    import report
    for name, text in surfaces.items():
        doc = text + "\n\n## Planted\n\n" + sentence + "\n"
        found = report.overclaims({name: doc})
        planted = [line for line in found if sentence[-20:] in line]
        assert len(planted) == 1 and f"{name}: {kind} " in planted[0], (name, found[-3:])
        hedged = doc.replace(sentence, "Hypothesis (untested): " + sentence)
        assert len([line for line in report.overclaims({name: hedged}) if "untested" in line]) == 1


def test_the_committed_surfaces_pass_and_every_surface_is_read(surfaces):
    """The templates of the documents and run_all.sh's comments type no number and no verdict;
    report.py --check reads every one of them."""
    import report
    assert {*report.DOCS.values(), "run_all.sh (comments)"} <= set(surfaces)
    assert report.overclaims(surfaces) == []


def test_numbers_with_a_marker_and_settings_pass():
    """What the rule lets through: numbers a marker renders, numbers that name a thing or a
    setting, the paper's numbers; the Exercises section is not read."""
    import records
    ok = ["Its needle cell is <!--= quick t1/needle/frozen_qk_ref acc floor --> and "
          "<!--= quick t1/needle/frozen_qk_ref acc vs:t1/needle/frozen_qk --> the 1/d init "
          "(Table 1, n = <!--= quick t1/needle/* acc n -->).",
          "**Method.** MixiT runs at width 64, 2 layers, 4 heads, lr 3e-3 for 4000 steps on add-4.",
          "MixiT fails retrieval (paper: 11.2% on needle).",
          "Table 10 (hybrid schedules) is in tables_quick.md."]
    assert records.unsourced("\n\n".join(ok)) == []
    assert records.unsourced("## Exercises\n\nFind a hop setting whose floor is above 50%.\n") == []
    assert records.unsourced("## Other\n\nFind a hop setting whose floor is above 50%.\n")


def test_markers_keep_the_tables_marks_and_name_the_machines_they_pool():
    """A rendered number keeps its cell's † (unstable seeds) and ° (an earlier recipe); `n` counts
    each cell's seeds; a benchmark figure over records of two machines names them, and one
    filtered to a machine does not."""
    import records
    runs = [{"config": {"tag": f"t1/copy/mixit/s{s}"}, "final": {"acc": a}}
            for s, a in enumerate((0.24, 0.24, 0.64))]
    runs.append({"config": {"tag": "t1/copy/standard/s0"}, "final": {"acc": 1.0},
                 "superseded": True})
    bench = [{"config": {"tag": "t7/bench/s0"}, "device_name": name, "final": {},
              "bench": [{"variant": "mixit", "ms_per_step": ms}]}
             for name, ms in (("NVIDIA H100", 10.0), ("NVIDIA H200", 8.0))]

    def of(name, every=False):
        return [r for r in runs + bench if every or not r.get("superseded")] if name == "q" else []
    assert records.number("q t1/copy/mixit acc", of) == "37.3 ± 23.1 †"
    assert records.number("q t1/copy/mixit acc seeds", of) == "24.0, 24.0, 64.0 †"
    assert records.number("q t1/copy/standard[tag=*] acc", of) == "100.0 °"
    assert records.number("q t1/* acc n", of) == "3"
    assert records.number("q t7/bench ms:mixit", of) == \
        "9 ± 1 (pooled over NVIDIA H100, NVIDIA H200)"
    assert records.number("q t7/bench[device_name=*H200*] ms:mixit", of) == "8"


def test_a_share_word_is_judged_over_the_spread():
    """`share` earns its word only where every end of the three cells' spreads earns it (as the
    verdicts are read): 48% of a gap whose ends give 33-62% has no one word."""
    import records
    assert records.compare([0.5, 0.5], [[0.0, 0.0], [1.0, 1.0]], "share") == "50% (most)"
    wide = records.compare([0.3, 0.66], [[0.0, 0.0], [1.0, 1.0]], "share")
    assert wide == "48% (23 to 73% over the spread: no one word)"


def test_claim_7_reads_every_session_of_its_machine(tmp_path, monkeypatch):
    """A verdict that reads benchmarks reads every session of Table 7's machine and shape
    (report.same_machine): a session in results/extra.jsonl on that machine joins it, one of
    another shape or that times fewer variants does not; with it Frozen-QK's speed-up straddles
    half the paper's figure and the row is 'inconclusive: at the threshold', where Table 7's
    alone read 'partly', naming that test."""
    import report

    def bench(tag, qk_ms, batch=100, variants=("standard", "frozen_qk", "mixit")):
        ms = {"standard": 100, "frozen_qk": qk_ms, "mixit": 80}
        return {"config": {"tag": tag, "task": "add", "n_embd": 128, "n_layer": 2,
                           "batch_size": batch},
                "device_name": "x86_64", "device": "cpu", "dtype": "float32", "threads": 2,
                "torch": "2.13", "time": "2026-11-21T00:00:00",
                "bench": [{"variant": v, "ms_per_step": ms[v], "samples_per_s": 100_000 / ms[v]}
                          for v in variants]}
    monkeypatch.chdir(tmp_path)
    cells = {"t7/bench": [bench(f"t7/bench/s{i}", 99) for i in range(3)]}  # +1% each
    row = lambda: next(l for l in report.verdicts(cells).splitlines() if l.startswith("| 7. "))  # noqa: E731
    assert row().split(" | ")[3] == "partly (fails: Frozen-QK ≥ half the paper's (11.95%))"
    os.makedirs("results")
    with open("results/extra.jsonl", "w") as f:
        for r in [bench("x/a/s0", 90), bench("x/a/s1", 85), bench("x/b/s0", 50, batch=256),
                  bench("x/c/s0", 50, variants=("standard", "mixit"))]:
            f.write(json.dumps(r) + "\n")
    assert [r["config"]["tag"] for r in report.same_machine(cells["t7/bench"])] == ["x/a/s0", "x/a/s1"]
    assert "(x86_64, 5 benchmarks, with every session of that machine" in row()
    assert row().split(" | ")[3] == "inconclusive: at the threshold"


def test_claim_7_reads_direction_and_size_and_shows_frozen_qks_flops_bound(tmp_path, monkeypatch):
    """Claim 7's rule reads each speed-up in direction (faster than Standard over the spread) and
    in size (at or above half the paper's figure, +11.95% / +16%, over the spread), 'partly'
    from two tests, naming those that fail: speed-ups well above half the paper's reproduce it,
    one below half fails its size test, and none faster is not reproduced. The row shows how much
    of a step's FLOPs freezing W_Q and W_K can save (bench.frozen_qk_bound)."""
    import bench
    import report
    monkeypatch.chdir(tmp_path)  # no results/extra.jsonl: Table 7's benchmarks alone

    def cells(qk_ms, mx_ms):  # three benchmarks, Standard at 100, 101, 99 ms per step
        return {"t7/bench": [
            {"config": {"tag": f"t7/bench/s{i}", "task": "add", "n_embd": 128, "n_layer": 2,
                        "batch_size": 100},
             "device_name": "x86_64", "device": "cpu", "dtype": "float32", "threads": 2,
             "torch": "2.13", "time": f"2026-11-2{i}T00:00:00",
             "bench": [{"variant": v, "ms_per_step": t + d, "samples_per_s": 100_000 / (t + d)}
                       for v, t in (("standard", 100), ("frozen_qk", qk_ms), ("mixit", mx_ms))]}
            for i, d in enumerate((0, 1, -1))]}
    row = lambda c: next(l for l in report.verdicts(c).splitlines() if l.startswith("| 7. "))  # noqa: E731
    verdict = lambda c: row(c).split(" | ")[3]  # noqa: E731
    fq_size, mx_size = "Frozen-QK ≥ half the paper's (11.95%)", "MixiT ≥ half the paper's (16%)"
    assert verdict(cells(75, 70)) == "reproduced"  # +33% / +43%: above half the paper's
    assert verdict(cells(95, 70)) == f"partly (fails: {fq_size})"  # +5%: faster, below half
    assert verdict(cells(95, 95)) == f"partly (fails: {fq_size}, {mx_size})"  # direction only
    assert verdict(cells(110, 70)) == "partly (fails: Frozen-QK faster, " + fq_size + ")"
    assert verdict(cells(110, 110)) == "not reproduced"  # both slower
    ours, tests, partly, *_ = report.faster_per_sample(report.Reader(cells(95, 70)))
    assert partly == 2 and tests == [True, True, False, True]
    assert tests.names == ["Frozen-QK faster", "MixiT faster", fq_size, mx_size]
    bound = bench.frozen_qk_bound(cells(75, 70)["t7/bench"][0]["config"])
    assert 0 < bound < 1 / 3  # 2 of a weight's 6 FLOPs, of W_Q and W_K only
    assert (f"Frozen-QK's FLOPs bound: at most {100 * bound:.1f}% of a step's FLOPs, "
            f"+{100 * (1 / (1 - bound) - 1):.1f}% samples/s") in row(cells(75, 70))


def test_run_all_comments_are_read_as_paragraphs():
    """records.comments: a shell script's comments, a paragraph per run of comment lines (the
    shebang and code are not prose), so a typed result in a comment is caught."""
    import records
    script = "#!/usr/bin/env bash\n# add: 2000 steps\n# (MixiT: 94%)\nx=1  # then 3 runs\n"
    text = records.comments(script)
    assert text == "add: 2000 steps (MixiT: 94%)\n\nthen 3 runs"
    assert [k for k, _ in records.unsourced(text)] == ["typed number"] * 2


def test_floor_and_share_words_are_the_records_and_most_needs_half():
    """`floor` says 'at the floor' only where the cell's mean ± std comes within a point of its
    task's floor, else how far above; `share` earns "most" only from 50% of the gap."""
    import records
    assert records.floor_words([0.004, 0.006], ("needle", "rule", 0.004), "acc") == "at the floor"
    assert records.floor_words([0.42, 0.43], ("needle", "rule", 0.004), "acc") == \
        "42.1 points above the floor"
    assert records.floor_words([2.30, 2.30], ("lm", "bigram", 2.326), "loss") == \
        "0.026 nats below the floor"
    assert records.share_words(28) == "28% (about a quarter)"
    assert records.share_words(49) == "49% (under half)" and records.share_words(50) == "50% (most)"
    assert records.share_words(-3) == "-3% (none)" and records.share_words(100) == "100% (all)"


def test_a_threshold_passes_only_over_the_spread_and_an_open_test_is_settled_both_ways():
    """over_spread reads a rule across the cells' mean ± std: claim 4ˢ's "within 25%
    of Frozen-QK" with MixiT as shipped at 1.234 ± 0.03 against 1.639 ± 0.04 passes on the means
    (0.405 < 0.41) but not over the spread, so the test is open; the claim is then
    'inconclusive: at the threshold' where settling it either way changes the verdict, and keeps
    its verdict where it does not. A test left open because its cells wait for runs
    (Tests(..., waiting)) makes it 'not yet run' instead; 'partly' names the tests that fail
    (not the open ones) where the tests have names."""
    import records
    within = lambda q, x: abs(q - x) < 0.25 * q  # noqa: E731
    fq, shipped = [1.60, 1.64, 1.68], [1.20, 1.234, 1.268]
    assert within(sum(fq) / 3, sum(shipped) / 3)  # the means pass...
    assert records.over_spread(within, fq, shipped) is None  # ...the spread straddles the line
    assert records.over_spread(within, fq, [1.50, 1.52, 1.54]) is True
    assert records.over_spread(within, fq, [1.00, 1.02, 1.04]) is False
    at, waits = "inconclusive: at the threshold", "not yet run"
    assert (records.AT_THRESHOLD, records.NOT_RUN) == (at, waits)
    assert records.outcome([True, None, True], partly=2) == at  # reproduced or partly
    assert records.outcome([True, None, False], partly=1) == "partly"  # partly either way
    assert records.outcome([False, None, False], partly=2) == "not reproduced"
    named = lambda waiting=(): records.Tests({"a": True, "b": None, "c": True}, waiting)  # noqa: E731
    assert records.outcome(named(), partly=2) == at
    assert records.outcome(named(["b"]), partly=2) == waits  # its cells wait: not a straddle
    for waiting in ((), ["b"]):  # partly either way: a verdict, waiting or not; the open test
        assert records.outcome(records.Tests({"a": True, "b": None, "c": False}, waiting),
                               partly=1) == "partly (fails: c)"  # is not named as failing
    assert records.outcome(records.Tests({"a": False, "b": True, "c": False}), partly=1) == \
        "partly (fails: a, c)"
    assert records.outcome(records.Tests({"a": True, "b": True}), partly=1) == "reproduced"
    assert records.both(True, None) is None and records.either(False, None) is None
    assert records.both(False, None) is False and records.either(True, None) is True


def test_a_rereading_row_reads_its_parents_cells_with_only_mixit_changed():
    """Claims 3ˢ-5ˢ read the very cells of claims 3-5 with each MixiT cell replaced by its
    -shipped twin: where claim 3 reads the 64-head long runs, 3ˢ waits ('not yet run') for their
    twins instead of reading the 4-head cells of Table 3, and reads them once they exist; its
    memorize reads the twin of Table 4's cell at the budget where MixiT's doubling settled."""
    import report
    runs = lambda *accs: [{"final": {"acc": a}} for a in accs]  # noqa: E731
    cells = {f"{c}/{v}": runs(1.0, 0.99, 1.0) for c in ("t3/add", "t3/modadd", "t3/dyck")
             for v in ("standard", "mixit")}
    cells.update({f"{c}/mixit-shipped": runs(0.4, 0.41, 0.42) for c in ("t3/add", "t3/modadd",
                                                                       "t3/dyck")})
    # Table 4's cells and MixiT's twin, doubled (1200 steps moves nothing): read at 600 steps
    for v, accs in (("standard", (1.0, 0.99, 1.0)), ("mixit", (1.0, 0.99, 1.0)),
                    ("mixit-shipped", (0.4, 0.41, 0.42))):
        for rung, steps, n in (("", 600, 5), ("-steps1200", 1200, 3)):
            cells[f"t4/memorize/{v}{rung}"] = [
                {"config": {"tag": f"t4/memorize/{v}{rung}/s{i}", "steps": steps, "task_size": 8},
                 "final": {"acc": a}} for i, a in enumerate((accs + accs)[:n])]
    cells["c3/add/mixit-heads64"] = runs(1.0, 1.0, 0.99)
    row = lambda: next(l for l in report.verdicts(cells).splitlines() if l.startswith("| 3ˢ"))  # noqa: E731
    assert "add (MixiT 64 heads) – vs" in row() and row().split(" | ")[3] == "not yet run"
    cells["c3/add/mixit-heads64-shipped"] = runs(1.0, 0.99, 1.0)
    assert "add (MixiT 64 heads) 99.7 ± 0.6 vs" in row() and "memorize 40.8 ± 0.8 vs" in row()
    # add matches; the 4-head shipped cells, and the shipped memorize, do not
    assert row().split(" | ")[3] == "partly (fails: modadd, dyck, memorize)"


# -----------------------------------------------------------------------------
def test_readme_task_table_renders_each_size_from_tasks_py_and_the_records():
    """The README's task table shows three sizes of each task, each a marker report.py fills:
    `python mixit.py --task X`'s default and the paper's from tasks.TASKS, the quick tables' from
    their records; a marker naming no task is reported, never filled with a guess."""
    import report
    readme = open(os.path.join(HERE, report.DOCS["README.md"])).read()
    ours = open(os.path.join(HERE, "tasks.py")).read()  # (homework.py registers tasks of its own)
    for name in [n for n in tasks.TASKS if f'"{n}":' in ours]:
        assert f"<!--= tasks {name} cpu -->" in readme and f"<!--= tasks {name} paper -->" in readme
    problems = []
    assert report.fill_numbers("<!--= tasks add cpu -->", problems) == str(tasks.TASKS["add"][1])
    report.fill_numbers("<!--= tasks nosuch cpu -->", problems)
    assert len(problems) == 1 and "nosuch" in problems[0]


def test_covariance_at_init_reads_its_json_and_draws_models_only_when_asked(monkeypatch):
    """report.py renders the covariance-at-init tables from results/covariance_at_init*.json
    (seconds on a fresh clone); only recompute (report.py --recompute-init) builds the models."""
    import figures

    def no_models(*args, **kwargs):
        raise AssertionError("a model was built")
    monkeypatch.setattr(mixit, "build", no_models)
    for setting in figures.INIT_SETTINGS:
        saved = json.load(open(os.path.join(HERE, setting[5])))
        text = figures.covariance_at_init(setting, draw=False)
        assert f"{saved['mixit'][0][0]:.3f} ± {saved['mixit'][0][1]:.3f}" in text
    with pytest.raises(AssertionError, match="a model was built"):
        figures.covariance_at_init(figures.INIT_SETTINGS[0], draw=False, recompute=True)


# The README a student reads in ten minutes (issue 47)


def test_readme_is_short_and_every_relative_link_resolves():
    """README stays at 160 lines or fewer (290 until issue 86 moved the course to docs/COURSE.md,
    the GPU and timing notes to docs/OPERATIONS.md and the claims table to FINDINGS); every
    document report.py renders (report.DOCS) exists, and every relative link of each (Markdown
    links and images) names a file or folder that exists, relative to the document."""
    import report
    readme = open(os.path.join(HERE, "README.md")).read()
    assert len(readme.splitlines()) <= 160, len(readme.splitlines())
    assert {"README.md", "results/FINDINGS.md", "docs/COURSE.md", "docs/OPERATIONS.md",
            "docs/METHODS.md", "docs/ENGINEERING.md"} <= set(report.DOCS)
    for doc in report.DOCS:
        text = open(os.path.join(HERE, doc)).read()
        links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
        assert links, doc
        for link in links:
            if "://" in link:
                continue
            path = os.path.normpath(os.path.join(HERE, os.path.dirname(doc), link))
            assert os.path.exists(path), f"{doc}: the link {link} leads nowhere"


def code_lines(path):
    """{name: lines of code} for every function and method (`Class.method`) of the Python file at
    path: the lines of its source that hold code, so neither blank lines, nor lines that hold
    only a comment, nor its docstring count. A nested function counts in its parent too."""
    source = open(path).read()
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER)
    code = set()  # the numbers of the lines that hold a token of code
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            code.update(range(tok.start[0], tok.end[0] + 1))
    counts = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, prefix)  # (a def inside an if or a with)
                continue
            name = prefix + child.name
            if not isinstance(child, ast.ClassDef):
                lines = code & set(range(child.lineno, child.end_lineno + 1))
                if ast.get_docstring(child) is not None:
                    doc = child.body[0]
                    lines -= set(range(doc.lineno, doc.end_lineno + 1))
                counts[name] = len(lines)
            visit(child, name + ".")
    visit(ast.parse(source), "")
    return counts


def test_no_function_of_mixit_or_tasks_has_over_60_lines_of_code_nor_mixit_over_900(tmp_path):
    """A student reads each function on one screen (issue 53): no function or method of mixit.py
    or tasks.py has more than 60 lines of code (code_lines: blank lines, comments and docstrings
    aside), and mixit.py has at most 900 lines. The counter is checked first on a planted file."""
    body = "".join(f"    x{i} = {i}  # a comment\n" for i in range(59))
    planted = tmp_path / "planted.py"
    planted.write_text(f'@property\ndef long(self):\n    """A docstring\n    of two lines."""\n'
                       f'    # a comment line\n\n{body}    return (1,\n            2)\n\n\n'
                       'class K:\n    def short(self):\n        def inner():\n'
                       '            return 1\n        return inner\n\n\n'
                       'try:\n    pass\nexcept OSError:\n    def fallback():\n        pass\n')
    assert code_lines(planted) == {"long": 62, "K.short": 4, "K.short.inner": 2, "fallback": 2}
    for name in ("mixit.py", "tasks.py"):
        long = {f: n for f, n in code_lines(os.path.join(HERE, name)).items() if n > 60}
        assert not long, f"{name}: functions over 60 lines of code: {long}"
    assert len(open(os.path.join(HERE, "mixit.py")).read().splitlines()) <= 900


def test_a_paused_runs_step_time_prices_its_shape_until_a_record_has_one(tmp_path):
    """A run paused before it wrote its record leaves its ms/step in <records>-paused.jsonl
    (run_all.sh); the queue prices that run's shape by it, not by the FLOPs model, so that a run
    far longer than a GPU call is not started again in one (its state would be lost again)."""
    import bench
    joblist, records = tmp_path / "jobs", tmp_path / "paper.jsonl"
    joblist.write_text("t1/copy/standard/s0 --task copy --task_size 4 --n_embd 32 --steps 1000\n")
    records.write_text("")
    [(_, modelled)] = bench.queue(str(joblist), str(records), price=True)
    (tmp_path / "paper-paused.jsonl").write_text(json.dumps(
        {"config": {"tag": "t1/copy/standard/s0"}, "ms_per_step": 600.0}) + "\n")
    [(_, minutes)] = bench.queue(str(joblist), str(records), price=True)
    assert minutes == pytest.approx((bench.RUN_START_S + 600.0 * 1000 / 1000) / 60)
    assert minutes > 5 * modelled


def test_a_compiled_run_is_priced_by_compiled_runs_of_its_shape_where_one_ran(tmp_path):
    """CPU_COMPILE=1 adds --compile true to each quick line; such a run is priced by the newest
    compiled run of its shape (faster than an eager one), an eager line by the newest eager one,
    so that run_all.sh --minutes neither refuses a compiled run a call it fits nor starts an
    eager one that it does not."""
    import bench
    joblist, records = tmp_path / "jobs", tmp_path / "quick.jsonl"
    run = "--task copy --task_size 4 --n_embd 32 --steps 1000"
    joblist.write_text(f"a/s0 {run} --compile true\nb/s0 {run}\n")
    cfg = lambda *f: dataclasses.asdict(mixit.resolve_config(mixit.parse_args(run.split() + list(f))))  # noqa: E731
    records.write_text("".join(json.dumps(r) + "\n" for r in [
        {"config": {**cfg("--compile", "true"), "tag": "c/s0"}, "ms_per_step": 10.0, "time": "1"},
        {"config": {**cfg(), "tag": "d/s0"}, "ms_per_step": 30.0, "time": "2"},
        {"config": {**cfg("--compile", "true"), "tag": "e/s0"}, "ms_per_step": 12.0, "time": "3"}]))
    priced = dict((line.split()[0], minutes) for line, minutes in
                  bench.queue(str(joblist), str(records), price=True))
    at = lambda ms: (bench.RUN_START_S + ms * 1000 / 1000) / 60  # noqa: E731
    assert priced == {"a/s0": pytest.approx(at(12.0)), "b/s0": pytest.approx(at(30.0))}
