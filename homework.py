"""
A course's homework from this repository: hand out functions without their bodies, then grade
what the students hand back, with tests that stay with the teacher.

    python homework.py handout DIR [PART ...]             # a student's copy, written into DIR
    python homework.py grade SUBMISSION                    # one: marks per part, each failure
    python homework.py grade SUB1 SUB2 ... > marks.csv     # a class: one CSV row a submission
    python homework.py answers DIR                         # the answer key (TA): DIR/ANSWERS.md
    python homework.py answers DIR --from results/answers  # the same from the committed records

A part is a function or a method (`freeze`, `MixingAttention.forward`) of mixit.py or tasks.py
that a grading test grades (GRADING below). Handing it out keeps its signature and docstring,
which is the specification, and replaces its body with `raise NotImplementedError(...)`. The
parts are found by Python's own parser (`ast`): the sources carry no markers. A student receives
the blanked sources, HANDOUT_FILES and a README.md written here (readme()), the assignment.

Grading trusts only the graded files: from each submission it takes mixit.py and tasks.py, puts
them in a fresh folder beside this repository's runtime.py, test_mixit.py (its grading tests)
and a pytest.ini written here, and runs the grading tests of each part. The parts and points
come from here, never from the submission (no test file, conftest.py or configuration of it is
read); code in mixit.py and tasks.py themselves runs, trusted like any code.

The rule that keeps the handout from giving a solution away: no file of the handout computes
what a handed-out part computes. A test that needs a reference implementation of a part is a
grading test (test_mixit.py, not handed out); the public tests (test_homework.py) check
properties and small examples worked out by hand; code that needs what a part computes calls
the part (evaluate() calls masked_loss), so blanking the part blanks every copy of it.

The exercises (EXERCISES) are written once, here, and rendered in the handout's README and this
repository's documents (exercise_list()). The answer key (`answers`, the TA's, never handed out)
runs each exercise's own commands (three seeds wherever settings are compared) and writes the
numbers, a figure and the reasoning a good answer gives into DIR/ANSWERS.md. It resumes: a
finished exercise (DIR/ex<N>.md) is not run again, a finished run not trained again, and a run
stopped by Ctrl-C continues from its saved state (DIR/resume/).

Handing out and grading need only the standard library (pytest runs in a subprocess); the
answer key imports mixit.py, torch and matplotlib when it runs.
"""

import argparse
import ast
import collections
import concurrent.futures
import contextlib
import csv
import functools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))

# -----------------------------------------------------------------------------
# The tables: what each part is worth, what it prepares, which tests grade it

TEST_FILE = "test_mixit.py"  # the grading tests (the teacher's)
PUBLIC_TESTS = "test_homework.py"  # the public tests (the student's too)
SOURCES = ["mixit.py", "tasks.py"]  # the files whose parts can be handed out: the graded files
# what the grading folder takes from the kit: what test_mixit.py imports, besides the sources
GRADER_FILES = ["runtime.py", TEST_FILE]
# what a student receives besides the blanked sources and the README written here
HANDOUT_FILES = ["runtime.py", PUBLIC_TESTS, "requirements.txt", "corpus"]  # corpus/: lm's texts
GRADE_TIMEOUT_S = 600  # an endless loop in a student's code must not hang the grader
KEEP = ".grades"  # where a class's grades are kept as they are made, without --feedback

# part: (points, the exercises it prepares, {test that grades it: its weight}). Each test is a
# full node id of TEST_FILE, one per parameter, and exercises that part alone (standing in for
# any other part it would call), so a blanked part fails its own tests and no other's.
GRADING = {
    "mixing_matrices": (15, "exercises 2 and 6: MixiT's fixed map, its heads of different "
                            "strengths", {
        "test_mixing_matrices_are_causal_and_rows_sum_to_one": 3,
        "test_sink_head_is_half_self_half_first_token": 2,
        "test_no_sink_head_when_sink_is_off": 1,
        "test_mixing_strength_differs_between_heads_and_stays_in_range": 2,
        "test_mixing_matrices_depend_on_seed_only": 1,
        "test_bidirectional_mixing_matrix_is_full_and_its_rows_sum_to_one": 1,
    }),
    "MixingAttention.forward": (15, "exercises 2 and 4: what an input-independent mixing can "
                                    "express", {
        "test_mixing_attention_is_a_times_v_per_head_then_o": 3,
        "test_mixing_attention_uses_the_top_left_corner_of_a_for_a_shorter_input": 1,
        "test_mixing_attention_never_lets_a_pad_reach_a_real_token": 1,
    }),
    "apply_rotary": (10, "exercise 3: a q.k score that depends on relative position only", {
        "test_rotary_preserves_norms": 1,
        "test_rotary_dot_product_depends_only_on_relative_position": 2,
        "test_rotary_turns_by_the_tables_angles_so_turns_add_up": 1,
    }),
    "CausalSelfAttention.forward": (20, "exercises 3 and 5: retrieval by q.k/sqrt(d), and that "
                                        "score's spread", {
        "test_causal_self_attention_is_softmax_of_q_k_over_sqrt_d_times_v[True]": 2,
        "test_causal_self_attention_is_softmax_of_q_k_over_sqrt_d_times_v[False]": 1,
        "test_causal_self_attention_rotates_queries_and_keys_but_not_values": 1,
        "test_causal_self_attention_hides_pads_from_real_tokens": 1,
    }),
    "freeze": (15, "exercise 1: what a variant trains, and the counts it prints", {
        "test_frozen_qk_freezes_exactly_query_and_key_weights_and_biases": 1,
        "test_frozen_mlp_freezes_exactly_the_mlps": 1,
        "test_random_transformer_trains_only_embeddings_and_head": 1,
        "test_freeze_counts_the_numbers_in_the_parts_it_froze": 3,
        "test_freeze_of_a_part_the_model_lacks_is_a_usage_error_naming_it": 1,
    }),
    "masked_loss": (10, "exercises 8 and 4: which positions a task scores, the loss in nats", {
        "test_masked_loss_only_looks_at_masked_positions": 2,
        "test_masked_loss_gradient_reaches_only_the_scored_positions": 1,
        "test_masked_loss_ignores_rows_without_answers_and_scores_uniform_logits_at_log_vocab": 1,
    }),
    "sample_hop": (15, "exercises 7 and 4: a task's answers, its floors and shortcuts", {
        "test_hop_answers_match_a_python_loop[1]": 2,
        "test_hop_answers_match_a_python_loop[3]": 2,
        "test_hop_has_no_adjacent_repeats_and_no_constant_shortcut[1]": 1,
        "test_task_batches_have_the_right_shapes_and_tokens[hop]": 1,
        "test_training_batches_follow_the_generator_seed[hop]": 1,
        "test_test_set_is_fixed_by_the_data_seed[hop]": 1,
    }),
    # more tasks, handed out and graded when named (not by default)
    "sample_add": (10, "exercises 6 and 4: addition, which the paper finds MixiT learns", {
        "test_add_answer_is_the_reversed_sum": 2,
        "test_task_batches_have_the_right_shapes_and_tokens[add]": 1,
        "test_training_batches_follow_the_generator_seed[add]": 1,
    }),
    "sample_needle": (10, "exercises 3 and 5: retrieval, which the paper finds MixiT cannot "
                          "learn", {
        "test_needle_answer_is_the_value_of_the_queried_key": 2,
        "test_task_batches_have_the_right_shapes_and_tokens[needle]": 1,
        "test_training_batches_follow_the_generator_seed[needle]": 1,
    }),
    "sample_induction": (10, "exercises 2 and 4: the task an induction head solves", {
        "test_induction_query_appears_once_and_answer_is_its_follower": 2,
        "test_task_batches_have_the_right_shapes_and_tokens[induction]": 1,
        "test_training_batches_follow_the_generator_seed[induction]": 1,
    }),
    "sample_dyck": (10, "exercise 4: nesting, and the rules that only count", {
        "test_dyck_label_matches_the_brackets": 2,
        "test_task_batches_have_the_right_shapes_and_tokens[dyck]": 1,
        "test_training_batches_follow_the_generator_seed[dyck]": 1,
    }),
}

# The tests that an exercise's hand-in rests on: a part that fails one earns nothing (earned)
HAND_IN = {
    "test_freeze_counts_the_numbers_in_the_parts_it_froze": "exercise 1 hands in these counts",
    "test_masked_loss_only_looks_at_masked_positions": "exercise 8 hands in this loss",
    "test_hop_answers_match_a_python_loop[1]": "exercise 7's floors are scored on these answers",
    "test_hop_answers_match_a_python_loop[3]": "exercise 7's floors are scored on these answers",
    "test_hop_has_no_adjacent_repeats_and_no_constant_shortcut[1]": "exercise 7 hands in the "
                                                                     "shortcut this rules out",
}

# A first assignment, in the order to write it: MixiT's matrices and its attention, RoPE and
# softmax attention, which parameters train, the loss, one task.
DEFAULT_PARTS = ["mixing_matrices", "MixingAttention.forward", "apply_rotary",
                 "CausalSelfAttention.forward", "freeze", "masked_loss", "sample_hop"]

# The exercises the parts prepare. `answers` measures each (ANSWERS, below) by running these
# very commands: each is the one source of its exercise's settings. A word in capitals (N, W, S,
# H, X, YOURS) is the value the student chooses; the key puts its sweep there (mixit_args) and
# adds only flags that change no number. Each command states --dtype float32, so that every CPU
# computes alike, and settings small enough that the whole key fits a 2-core CPU.
Exercise = collections.namedtuple("Exercise", "question commands hand_in")
F32 = "--dtype float32"
EXERCISES = [
    Exercise("Freeze V and O as well as Q and K: what is left to learn, and does copy still work?",
             (f"python mixit.py --task copy --variant frozen_qk --freeze v,o --n_embd 64 "
              f"--steps 600 {F32}",
              f"python mixit.py --task copy --variant frozen_qk --n_embd 64 --steps 600 {F32}"),
             "its trainable and frozen counts (printed first) beside those of `--variant "
             "frozen_qk` alone, both runs' test accuracy, and which parts still learn"),
    Exercise("Look at MixiT's attention: why can no choice of V and O make it an induction head?",
             ("python -c \"import torch, mixit; print(mixit.mixing_matrices(4, 8, 8, "
              "torch.Generator().manual_seed(0))[1])\"",
              f"python mixit.py --task induction --task_size 12 --variant mixit --n_embd 64 "
              f"--steps 400 {F32}",
              f"python mixit.py --task induction --task_size 12 --variant frozen_qk --n_embd 64 "
              f"--steps 400 {F32}"),
             "the argument in a few lines (what a row of A weights, and what an induction head "
             "must weight), and both variants' test accuracy on induction"),
    Exercise("How many needle pairs can Frozen-QK hold as the width grows? Try a few numbers "
             "of pairs N and widths W.",
             (f"python mixit.py --task needle --variant frozen_qk --task_size N --n_embd W "
              f"--steps 400 --batch_size 128 {F32}",),
             "a plot of test accuracy against N, a line per width, and what limits the pairs"),
    Exercise("Make a task MixiT cannot do but Standard can, and one that both can (a `sample_...` "
             "function and a line of `TASKS` in tasks.py).",
             (f"python mixit.py --task YOURS --variant standard --n_embd 64 --steps 400 "
              f"--batch_size 128 {F32}",
              f"python mixit.py --task YOURS --variant mixit --n_embd 64 --steps 400 "
              f"--batch_size 128 {F32}"),
             "the two sampling functions, each variant's accuracy on each, and the difference "
             "in terms of what a fixed, input-independent mixing matrix can express"),
    Exercise("Sweep `--qk_init_std` from 0.005 to 0.5 for Frozen-QK on needle at width 64: where "
             "does retrieval switch on, and how does that relate to the scores' spread sigma^2 d?",
             (f"python mixit.py --task needle --task_size 6 --variant frozen_qk --n_embd 64 "
              f"--qk_init_std S --steps 400 --batch_size 128 {F32}",),
             "accuracy against S (or sigma^2 d), and why the spread of q.k/sqrt(d_head) is "
             "sigma^2 d at init"),
    Exercise("Give MixiT 1, 4, 16 and 64 heads on addition and compare the learning curves (each "
             "run's history is a line of results/runs.jsonl): why would more fixed random "
             "matrices help addition?",
             (f"python mixit.py --task add --task_size 4 --n_embd 64 --variant mixit --n_head H "
              f"--steps 1000 --eval_interval 100 {F32}",),
             "the four learning curves on one plot, and an explanation marked as tested or not"),
    Exercise("Find a setting of `hop` whose floor (the best trivial rule) is above 50%, and "
             "explain the shortcut.",
             ("python -c \"import tasks; print(tasks.baselines(tasks.make_task('hop', 2)))\"",),
             "the floors for a few k, and the shortcut, checked on the test set"),
    Exercise("Rank every variant (standard, frozen_qk, frozen_mlp, mixit, random) by validation "
             "loss on language modeling: is Frozen-QK closer to Standard or to MixiT?",
             (f"python mixit.py --task lm --task_size 64 --variant X --n_embd 64 --steps 400 "
              f"{F32}",),
             "the ranking with each variant's validation loss (nats/byte) and bits per byte"),
]
# What each exercise took in the answer key's run on a 2-core CPU
TIMES = os.path.join(HERE, "results", "answers", "times.json")


def exercise_list(times=TIMES):
    """The exercises as Markdown, numbered: question, command, what to hand in, and the time
    the answer key's measurement of it took."""
    took = json.load(open(times)) if os.path.exists(times) else {}
    items = []
    for i, ex in enumerate(EXERCISES, 1):
        seconds = took.get(str(i), {}).get("seconds")
        time = "" if seconds is None else (
            f" (Time: {'under a minute' if seconds < 60 else f'{round(seconds / 60)} min'}.)")
        run = "; ".join(f"`{c}`" for c in ex.commands)
        text = f"{i}. {ex.question} Run: {run}. Hand in: {ex.hand_in}.{time}"
        items.append(textwrap.fill(text, 100, subsequent_indent="   ", break_long_words=False,
                                   break_on_hyphens=False))
    return "\n".join(items)


class HomeworkError(Exception):
    """A problem with what was asked (unknown part, folder in the way): printed as one line."""


# -----------------------------------------------------------------------------
# Finding and blanking a part


@functools.lru_cache(maxsize=8)
def parsed(source):
    """ast.parse(source), once per text: test_mixit.py takes a tenth of a second to parse."""
    return ast.parse(source)


def find_parts(source):
    """The functions of a module's source: {"name" or "Class.method": its ast.FunctionDef}. Only
    top-level functions and the methods of top-level classes: a function nested in another is
    part of its parent, and blanking the parent blanks it too."""
    parts = {}
    for node in parsed(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    parts[f"{node.name}.{item.name}"] = item
    return parts


def stub(part):
    """The statement that replaces a blanked body."""
    return f'raise NotImplementedError("homework: {part}; README, What to write")'


def blank(source, parts):
    """The source with each named part's body replaced by stub(part); its decorators, signature
    and docstring are kept, and so is every other line of the file. The body is cut by line,
    after the docstring, so that the comments inside it, which explain the solution, go too."""
    lines = source.splitlines(keepends=True)
    found = find_parts(source)
    # from the bottom of the file up, so that the line numbers of the parts above stay right
    for part in sorted(set(parts), key=lambda p: found[p].lineno, reverse=True):
        node = found[part]
        docstring = node.body[0] if ast.get_docstring(node) is not None else None
        first, last = node.body[0], node.end_lineno  # (ast counts lines from 1)
        if first.lineno == node.lineno:  # a one-line function: cut inside the `def` line
            line = lines[node.lineno - 1].encode()  # ast's columns count bytes, not characters
            cut = docstring.end_col_offset if docstring else first.col_offset
            head = line[:cut].decode() + ("; " if docstring else "")
            lines[node.lineno - 1:last] = [head + stub(part) + "\n"]
            continue
        text = lines[first.lineno - 1]
        indent = text[:len(text) - len(text.lstrip())]  # the body's own indentation
        # lines[start] is the first line cut (lines counts from 0, ast from 1)
        start = docstring.end_lineno if docstring else first.lineno - 1
        lines[start:last] = [indent + stub(part) + "\n"]
    blanked = "".join(lines)
    ast.parse(blanked)  # the copy must still import: a wrong cut is our bug, caught here
    return blanked


def read(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return f.read()


def all_parts(kit=HERE):
    """{part: the file that defines it}, over SOURCES, in the order of the files."""
    return {part: name for name in SOURCES for part in find_parts(read(kit, name))}


def defined_tests(kit, name):
    """The names of the test functions of the file `name` in the kit."""
    return [node.name for node in parsed(read(kit, name)).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]


def check_parts(parts, kit=HERE):
    """Refuse a part that is not a function of SOURCES or that no test grades. Returns {part:
    its file}."""
    known = all_parts(kit)
    gradable = [p for p in known if p in GRADING]
    unknown = [p for p in parts if p not in known]
    if unknown:
        raise HomeworkError(f"unknown part(s) {', '.join(unknown)}; the parts that can be handed "
                            f"out: {', '.join(gradable)}")
    tests = set(defined_tests(kit, TEST_FILE))
    ungraded = [p for p in parts if p not in GRADING or not GRADING[p][2]
                or any(node.split("[")[0] not in tests for node in GRADING[p][2])]
    if ungraded:
        raise HomeworkError(f"no test grades {', '.join(ungraded)} (homework.py's GRADING, "
                            f"{TEST_FILE}); the parts that can be handed out: "
                            f"{', '.join(gradable)}")
    return known


# -----------------------------------------------------------------------------
# The handout


def keyword(part):
    """The name that the public tests of a part start with, after test_ (`pytest -k`):
    MixingAttention.forward -> mixing_attention, sample_hop -> sample_hop."""
    name = part[:-len(".forward")] if part.endswith(".forward") else part
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace(".", "_")


PUBLIC_COMMAND = f"python -m pytest -q --tb=short {PUBLIC_TESTS}"  # the student's test command


def readme(parts, kit=HERE):
    """The handout's README.md: the assignment. It names only files that the handout holds."""
    where = all_parts(kit)
    found = {p: node for name in SOURCES for p, node in find_parts(read(kit, name)).items()}
    total = sum(GRADING[p][0] for p in parts)
    count = f"{len(parts)} part" + ("s" if len(parts) > 1 else "")
    rows = []
    for i, part in enumerate(parts, 1):
        node = found[part]
        signature = f"{part}({ast.unparse(node.args)})"
        rows.append(f"| {i} | `{signature}` | {where[part]} | {GRADING[part][0]} | "
                    f"`-k {keyword(part)}` | {GRADING[part][1]} |")
    exercises = exercise_list()
    width = len(PUBLIC_COMMAND + " -k masked_loss")  # the commands' comments in one column
    return f"""# Homework: does a Transformer need to *learn* its attention?

This folder is a small decoder Transformer and the tasks it is trained on, from a reproduction of
Dong, Noci, Khodak & Li, "Attention Retrieves, MLP Memorizes"
([arXiv 2506.01115](https://arxiv.org/abs/2506.01115)). The paper trains the model in
variants: **standard**; **mixit**, whose attention is a fixed random matrix, the same for every
input (`MixingAttention`); **frozen_qk**, whose queries and keys stay at their random start;
**frozen_mlp**; **random** (only embeddings and head learn). Some functions have lost their
body: writing them back is the homework, {count} for {total} points.

## What to write

Each part below keeps its signature and its docstring; its body is
`raise NotImplementedError("homework: PART; ...")`. The docstring is the specification: the
arguments and their shapes, what the function returns, the errors it raises. Write the parts in
this order; each is graded on its own, so one left unfinished costs only its own points.

| # | part | file | points | its public tests | prepares |
|---|---|---|---|---|---|
{chr(10).join(rows)}

## Checking your work

```bash
{"pip install -r requirements.txt":<{width}}  # torch, and pytest for the tests
{PUBLIC_COMMAND:<{width}}  # every part
{PUBLIC_COMMAND + " -k masked_loss":<{width}}  # one part: the keyword of its row above
```

The tests of a part fail with `NotImplementedError: homework: PART` until it is written; when
every part is written, every test passes. A failing test shows its name, the line that failed and
the values it compared. These public tests check properties (shapes, causality, rows that sum to
one) and a few small examples worked out by hand. The grade comes from the course's own tests,
which check more, so passing the public tests is needed but not enough: read the docstring.

## What is graded

Only `mixit.py` and `tasks.py`: hand back this folder, or those two files. Nothing else in it is
read (tests you change or add, configuration, this README). Write every part, and any helper it
needs, in those two files. A file that does not import scores 0 on every part. A part earns its
points by the weight of its grading tests that pass, at most half of them if any test fails, and
none if a test fails that an exercise's hand-in rests on (the counts that `freeze` prints, say).

## Experiments

Once the parts are written the model trains (`python mixit.py --help` lists every flag):

```bash
python mixit.py --variant frozen_qk --task copy    # frozen random Q, K: does it copy?
python mixit.py --variant mixit --task copy        # the same budget; the paper: MixiT cannot retrieve
python mixit.py --variant mixit --task modadd --task_size 59   # a task that needs no retrieval
```

Each run prints its test accuracy and appends a record (its settings and learning curve) to
`results/runs.jsonl`. The exercises that the parts prepare (each time: what measuring it in full,
every setting with three seeds, took on a 2-core CPU):

{exercises}
"""


def handout(dest, parts=None, kit=HERE):
    """Write a student's copy into dest (new or empty), with parts blanked. Returns the parts."""
    parts = list(dict.fromkeys(parts or DEFAULT_PARTS))  # in order, each once
    known = check_parts(parts, kit)
    if os.path.exists(dest) and (not os.path.isdir(dest) or os.listdir(dest)):
        raise HomeworkError(f"{dest} exists and is not an empty folder; hand out into a new one")
    os.makedirs(dest, exist_ok=True)
    for name in SOURCES:
        mine = [p for p in parts if known[p] == name]
        with open(os.path.join(dest, name), "w", encoding="utf-8") as f:
            f.write(blank(read(kit, name), mine))
    for name in HANDOUT_FILES:
        src, dst = os.path.join(kit, name), os.path.join(dest, name)
        shutil.copytree(src, dst) if os.path.isdir(src) else shutil.copyfile(src, dst)
    with open(os.path.join(dest, "README.md"), "w", encoding="utf-8") as f:
        f.write(readme(parts, kit))
    return parts


# -----------------------------------------------------------------------------
# Grading: a fresh folder per submission, with the kit's tests and the submission's sources


def not_a_handout(submission):
    """Why a submission cannot be graded at all, in one line; None if it can."""
    if not os.path.isdir(submission):
        return f"{submission} is not a folder"
    missing = [name for name in SOURCES if not os.path.isfile(os.path.join(submission, name))]
    if missing:
        return f"{submission} is not a handout: it has no {' and no '.join(missing)}"
    return None


def syntax_error(folder):
    """The first graded file that does not compile, with the line; None if both do."""
    for name in SOURCES:
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8") as f:
                compile(f.read(), name, "exec")
        except SyntaxError as e:
            return f"{name}, line {e.lineno}: {e.msg}"
        except (UnicodeDecodeError, ValueError) as e:  # not UTF-8 text, a null byte
            return f"{name}: {e}"
    return None


def grading_env():
    """No pytest options or plugins from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def run_tests(folder, nodes, scratch, timeout=GRADE_TIMEOUT_S):
    """Run the tests `nodes` (names in TEST_FILE) in folder, in one pytest subprocess, under the
    pytest.ini there. Returns ({node: None if it passed, else the lines that say where and why
    it failed, or why it did not run}, why the sources do not import or None)."""
    report = os.path.join(scratch, "report.xml")
    # --tb=native: --tb=short parses test_mixit.py again for every frame of every failure
    cmd = [sys.executable, "-m", "pytest", "-q", "--tb=native", "-p", "no:cacheprovider",
           "-c", os.path.join(folder, "pytest.ini"), "--rootdir", folder,
           f"--junitxml={report}", f"--basetemp={os.path.join(scratch, 'tmp')}",
           *(f"{TEST_FILE}::{node}" for node in nodes)]
    p = start(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
              env=grading_env())
    try:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise
        finally:
            CHILDREN.discard(p)
        said = (stdout.strip() or stderr.strip() or "pytest said nothing").splitlines()
        not_run = ["did not run: " + next((s for s in said if s.startswith("ERROR")), said[-1])]
        results, broken = read_report(report, folder) if os.path.isfile(report) else ({}, None)
    except subprocess.TimeoutExpired:
        results, broken = {}, None
        not_run = [f"did not run: the tests ran past {timeout} s (an endless loop?)"]
    except ET.ParseError:  # pytest died while writing its report (a crash in the student's code)
        results, broken = {}, None
    return {node: results.get(node, not_run) for node in nodes}, broken


FRAME = re.compile(r'^  File "(.+)", line (\d+), in (.+)$')  # a frame of a Python traceback


def traceback_of(text, folder):
    """A Python traceback -> ([(file, line, function, source line)] for the frames of files in
    folder (not pytest's or torch's), the lines of the error itself)."""
    lines = text.split("ERROR: found no collectors")[0].splitlines()  # (pytest appends this)
    frames, end = [], 0
    for i, line in enumerate(lines):
        m = FRAME.match(line)
        if not m:
            continue
        has_source = i + 1 < len(lines) and lines[i + 1].startswith("    ")
        source = lines[i + 1].strip() if has_source else ""
        end = i + 1 + bool(source)
        if end < len(lines) and lines[end].strip() and not lines[end].strip(" ^~"):
            end += 1  # the line of carets under the source
        if os.path.realpath(os.path.dirname(m[1])) == os.path.realpath(folder):
            frames.append((os.path.basename(m[1]), m[2], m[3], source))
    return frames, [line for line in lines[end:] if line.strip()]


def read_report(path, folder):
    """pytest's JUnit XML report of a run in folder -> ({test name: None if it passed, else
    where and why it failed (skipped: failed)}, why the sources do not import or None)."""
    results, broken = {}, None
    for case in ET.parse(path).getroot().iter("testcase"):
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if problem is None:
            results[case.get("name", "")] = None
            continue
        message = problem.get("message") or problem.tag
        frames, error = traceback_of(problem.text or "", folder)
        error = error or [message]
        if not case.get("classname"):  # the test file did not import: where in our sources?
            ours = [f for f in frames if f[0] in SOURCES]
            broken = (f"{ours[-1][0]}, line {ours[-1][1]}: " if ours else "") + error[0]
            continue
        results[case.get("name", "")] = where_and_why(case.get("name", ""), frames, error)
    return results, broken


def where_and_why(name, frames, error):
    """The lines that show the failure of test `name`: its own line that failed (and the line
    where the error was raised, if elsewhere), then the error with the values compared, at
    most 4 lines of 300 characters (a tensor's repr can run to thousands)."""
    own = [f for f in frames if f[2] == name.split("[")[0]][-1:]
    raised = frames[-1:] if frames[-1:] != own else []
    if error[0].startswith("NotImplementedError: homework:"):
        raised = []  # a part not written yet: where the test called it is enough
    shown = [f"{file}:{line}: {source}" for file, line, _, source in own + raised]
    error = ["E   " + s for s in error if " where <built-in method" not in s][:4]
    return shown + [s if len(s) <= 300 else s[:297] + "..." for s in error]


def only_tests(source, nodes):
    """The test file's source with only the tests of `nodes`, every other test function blank
    lines (each line keeps its number, which the feedback cites): pytest rewrites the asserts
    of every test it imports, at a price per test."""
    keep, lines = {node.split("[")[0] for node in nodes}, source.splitlines(keepends=True)
    for node in parsed(source).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test") and node.name not in keep:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            lines[first - 1:node.end_lineno] = ["\n"] * (node.end_lineno - first + 1)
    return "".join(lines)


def grade(submission, parts, kit=HERE, timeout=GRADE_TIMEOUT_S):
    """Grade one submission on parts. Returns a dict: submission; rows [(part, tests passed,
    tests, points earned, points)], or None when it is not a handout; failures [(test, lines)];
    problem, one line or None (sources that do not import earn nothing)."""
    problem = not_a_handout(submission)
    if problem:
        return {"submission": submission, "rows": None, "failures": [], "problem": problem}
    scratch = tempfile.mkdtemp(prefix="homework-grade-")
    folder = os.path.join(scratch, "copy")
    try:
        os.makedirs(folder)
        nodes = [node for part in parts for node in GRADING[part][2]]
        for name in GRADER_FILES:  # the kit's own tests (those that grade) and what they import
            text = read(kit, name)
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(only_tests(text, nodes) if name == TEST_FILE else text)
        for name in SOURCES:  # and only the graded files of the submission
            shutil.copyfile(os.path.join(submission, name), os.path.join(folder, name))
        with open(os.path.join(folder, "pytest.ini"), "w") as f:
            f.write("[pytest]\n# homework.py's: grading reads no configuration but this one\n")
        results, problem = {}, syntax_error(folder)
        if not problem:
            results, problem = run_tests(folder, nodes, scratch, timeout)
        problem = problem and f"does not import: {problem}"
    except OSError as e:  # an unreadable file: this submission is not graded, the others are
        return {"submission": submission, "rows": None, "failures": [], "problem": str(e)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows, failures = [], []
    for part in parts:
        passed = {node: not problem and results[node] is None for node in GRADING[part][2]}
        rows.append((part, sum(passed.values()), len(passed), earned(part, passed),
                     GRADING[part][0]))
        failures += [(node, results[node]) for node in passed if not passed[node] and not problem]
    return {"submission": submission, "rows": rows, "failures": failures, "problem": problem}


def earned(part, passed):
    """The points a part earns from {its test: passed}: its points times the weight of the tests
    passed over the weight of all, at most half of them if any test failed (one plausible bug
    costs half the part), and 0 if a test that an exercise's hand-in rests on failed (HAND_IN)."""
    points, _, weights = GRADING[part]
    if any(node in HAND_IN for node in weights if not passed[node]):
        return 0
    share = sum(w for node, w in weights.items() if passed[node]) / sum(weights.values())
    return round(points * (share if share == 1 else min(share, 0.5)), 1)


def report(marks):
    """One submission's marks as text: a line per part, the total, then every failed test."""
    if marks["rows"] is None:
        return f"not graded: {marks['problem']}\n"
    lines = [f"{marks['submission']}: mixit.py and tasks.py, graded by the course's tests"]
    if marks["problem"]:
        lines.append(f"0 on every part: {marks['problem']}")
    lines.append(f"{'part':<28} {'tests':>6} {'points':>9}")
    for part, passed, n, got, points in marks["rows"]:
        lines.append(f"{part:<28} {f'{passed}/{n}':>6} {f'{got:g}/{points}':>9}")
    got, points = total(marks), sum(r[4] for r in marks["rows"])
    lines.append(f"{'total':<28} {'':>6} {f'{got:g}/{points}':>9}")
    if marks["failures"]:
        lines.append(f"\n{len(marks['failures'])} test(s) failed:")
        for node, why in marks["failures"]:
            hand_in = [f"    (its part scores 0: {HAND_IN[node]})"] if node in HAND_IN else []
            lines += [f"{TEST_FILE}::{node}"] + [f"    {s}" for s in why] + hand_in
    return "\n".join(lines) + "\n"


def total(marks):
    return round(sum(r[3] for r in marks["rows"]), 1)


def write_csv(out, parts, all_marks):
    """One row per submission: its name, each part's points, the total, and any problem."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", *parts, "total", "problem"])
    for marks in all_marks:
        if marks["rows"] is None:
            writer.writerow([marks["submission"], *[""] * len(parts), "", marks["problem"]])
        else:
            writer.writerow([marks["submission"], *(f"{r[3]:g}" for r in marks["rows"]),
                             f"{total(marks):g}", marks["problem"] or ""])


def feedback_name(submission, taken):
    """A file name for a submission's feedback, unique among those taken."""
    name = re.sub(r"[^\w.-]+", "_", os.path.normpath(submission)).strip("._")
    name = name[-80:] or "submission"
    unique, i = name, 1
    while unique in taken:
        i += 1
        unique = f"{name}-{i}"
    taken.add(unique)
    return unique + ".txt"


# -----------------------------------------------------------------------------
# The answer key (the teaching assistant's; never in the handout): each exercise measured

# --smoke: every run 2 steps, every sweep its ends, one seed (for the tests)
SMOKE = ["--steps", "2", "--warmup", "1", "--eval_size", "64", "--eval_interval", "1"]
JOBS = 2  # runs at once: one per core of a 2-core laptop
# a run of the key: python mixit.py with the worked example's tasks (exercise 4) added to tasks.py's
RUN = ("import sys\ntry:\n    import homework, mixit\nexcept KeyboardInterrupt:  # Ctrl-C as it starts\n"
       "    sys.exit(130)\nhomework.register_pointer_tasks()\nmixit.main(sys.argv[1:])")
KEY_TITLE = "# Answer key (the teaching assistant's copy; do not hand it out)"
COMMITTED = os.path.join("results", "answers")  # the key's records, in the repository
# the record's settings that say nothing about the measurement
BOOKKEEPING = ("seed", "out", "tag", "resume", "save", "examples", "log_interval", "compile")


def mixit_args(command, **values):
    """The flags of an exercise's `python mixit.py ...` command, with each word in capitals
    replaced by its value: mixit_args("python mixit.py --n_embd W", W=16) -> ["--n_embd", "16"]."""
    words = shlex.split(command)
    if words[:2] != ["python", "mixit.py"]:
        raise ValueError(f"not a python mixit.py command: {command}")
    args = [str(values.get(w, w)) for w in words[2:]]
    left = [w for w in args if w.isupper()]
    if left:
        raise ValueError(f"{command}: no value for {', '.join(left)}")
    return args


def runs_command(i, j=None):
    """Exercise i's (1-based) mixit.py command: its j-th command, or the only one it has."""
    mine = [c for c in EXERCISES[i - 1].commands if c.startswith("python mixit.py")]
    if j is None and len(mine) != 1:
        raise ValueError(f"exercise {i} has {len(mine)} mixit.py commands: say which")
    return mine[j or 0]


class Stopped(Exception):
    """A run of the key ended by a signal (Ctrl-C): its state is saved, the key stops."""


# Ctrl-C: the key's runs and the graders' pytest start in a session of their own, so that a
# terminal's Ctrl-C reaches this process alone, which asks each to stop once (stop_children).
CHILDREN = set()  # the subprocesses running now
STOPPING = threading.Event()  # set once Ctrl-C arrived: no new subprocess starts
SAYING = threading.Lock()  # the key's runs report from several threads: one whole line at a time


def say(line):
    """Print one line whole (print() writes the text and its newline apart: threads)."""
    with SAYING:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def start(cmd, **kw):
    """subprocess.Popen(cmd) in a session of its own, known to stop_children."""
    if STOPPING.is_set():
        raise Stopped("stopping")
    p = subprocess.Popen(cmd, start_new_session=True, **kw)
    CHILDREN.add(p)
    return p


def stop_children(grace=30):
    """Ask every subprocess still running to stop: SIGINT, then after 5 s SIGTERM (one still
    starting may not listen to SIGINT yet), and after `grace` s SIGKILL."""
    STOPPING.set()
    for sig, wait in ((signal.SIGINT, 5), (signal.SIGTERM, grace), (signal.SIGKILL, None)):
        alive = [p for p in list(CHILDREN) if p.poll() is None]
        for p in alive:
            with contextlib.suppress(OSError):
                p.send_signal(sig)
        for p in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(wait)


@contextlib.contextmanager
def stop_on_signal():
    """`with stop_on_signal():` SIGTERM acts as Ctrl-C, and on either the subprocesses are
    stopped before it goes on up; a second Ctrl-C while they stop is ignored."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, interrupt)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it
    try:
        yield
    except BaseException:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop_children()
        raise
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
        STOPPING.clear()
        CHILDREN.clear()


def run_all(jobs, work, n=JOBS):
    """work(job) for each job, n at a time in threads; the first exception cancels the jobs not
    started and goes on up."""
    pool = concurrent.futures.ThreadPoolExecutor(n)
    futures = [pool.submit(work, job) for job in jobs]
    try:
        return [f.result() for f in futures]
    except BaseException:
        STOPPING.set()
        for f in futures:
            f.cancel()
        raise
    finally:
        pool.shutdown(wait=False)


class Key:
    """The runs of an answer key in one folder: records.jsonl, logs/ (each run's printout),
    resume/ (an unfinished run's state), ckpt/ (exercise 2's checkpoints), ex<N>.md (a finished
    exercise's section), times.json. With `source` (--from), the records are read from source
    and nothing is trained; with draw=False figures are not saved (their links are written)."""

    def __init__(self, folder, smoke=False, source=None, draw=True):
        self.dir, self.smoke, self.source, self.draw = folder, smoke, source, draw
        self.seeds = [0] if smoke else [0, 1, 2]
        self.records = os.path.join(source or folder, "records.jsonl")
        if source and not os.path.isfile(self.records):
            raise HomeworkError(f"--from {source}: it has no records.jsonl")
        os.makedirs(folder, exist_ok=True)
        for sub in ([] if source else ["logs", "ckpt", "resume"]):
            os.makedirs(os.path.join(folder, sub), exist_ok=True)

    def done(self):
        from records import read_records
        return {r["config"]["tag"]: r for r in read_records(self.records)}

    def sweep(self, values):
        """A sweep's values; at smoke size only its two ends."""
        return [values[0], values[-1]] if self.smoke else list(values)

    def state(self, tag):
        """Where the run `tag` keeps its training state while it is unfinished (--resume)."""
        return os.path.join(self.dir, "resume", tag.replace("/", "_") + ".pt")

    def missing(self, tag):
        raise HomeworkError(f"the records in {self.source} lack the run {tag}: "
                            f"python homework.py answers DIR (without --from) trains it")

    def cells(self, settings):
        """{tag: args} -> {tag: its records, a seed each}. Every run tag/s<seed> that the records
        do not hold yet is trained: JOBS at a time, each a process with one thread."""
        todo, done = [], self.done()
        for tag, args in settings.items():
            for s in self.seeds:
                run = f"{tag}/s{s}"
                if run in done:
                    if not self.source and os.path.exists(self.state(run)):
                        os.remove(self.state(run))  # the record holds the run now
                    continue
                if self.source:
                    self.missing(run)
                todo.append((run, [a.replace("{seed}", str(s)) for a in args] + ["--seed", str(s)]))
        if self.smoke:  # 2-step runs, one after another in this process (train)
            for job in todo:
                self.train(job)
        else:
            run_all(todo, self.train)
        done = self.done()
        return {tag: [done[f"{tag}/s{s}"] for s in self.seeds] for tag in settings}

    def train(self, job):
        """One run, its printout added to logs/; a run that fails stops the key, naming its log;
        one stopped by a signal raises Stopped."""
        tag, args = job
        state = self.state(tag)
        argv = args + (SMOKE if self.smoke else []) + ["--out", self.records, "--tag", tag,
                                                        "--resume", state]
        shown = " ".join(shlex.quote(a) for a in args)
        if os.path.exists(state):
            from runtime import load_checkpoint
            step = load_checkpoint(state).get("step", "?")
            say(f"  run {tag}: resumed from its saved step {step}: python mixit.py {shown}")
        else:
            say(f"  run {tag}: python mixit.py {shown}")
        log = os.path.join(self.dir, "logs", tag.replace("/", "_") + ".log")
        with open(log, "a") as f:  # an interrupted run's printout stays, its sequel follows
            if self.smoke:  # what RUN does, here: a 2-step run costs less than a Python start
                import mixit
                import tasks
                import torch
                known = dict(tasks.TASKS)  # as it was: the worked example's tasks leave with the run
                register_pointer_tasks()
                threads = torch.get_num_threads()
                torch.set_num_threads(1)  # one thread, as the key's processes have
                with contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
                    try:
                        mixit.main(argv)
                        code = 0
                    except SystemExit as e:  # a bad command line: mixit's one-line error
                        code = e.code or 0
                    finally:
                        torch.set_num_threads(threads)
                        tasks.TASKS.clear()
                        tasks.TASKS.update(known)
            else:
                p = start([sys.executable, "-c", RUN, *argv], cwd=HERE, stdout=f,
                          stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"})
                code = p.wait()
                CHILDREN.discard(p)
        if code and (STOPPING.is_set() or code in (130, 143)):
            raise Stopped(tag)
        if code:
            raise HomeworkError(f"the run {tag} failed (exit {code}); see {log}")
        record = self.done()[tag]
        say(f"    {tag}: test accuracy {record['final']['acc']:.3f}, {record['wall_s']:.0f} s")

    def write(self, name, text):
        """DIR/name, written whole or not at all (a Ctrl-C never leaves half a section)."""
        atomic_write(os.path.join(self.dir, name), text)

    def figure(self, name):
        """Save the current matplotlib figure as DIR/name; returns its Markdown."""
        import matplotlib.pyplot as plt
        if self.draw:  # (the tests want the text alone: a PNG costs a second to lay out)
            plt.gcf().tight_layout()
            plt.savefig(os.path.join(self.dir, name), dpi=100, bbox_inches="tight")
        plt.close("all")
        return f"![{name}]({name})"


def atomic_write(path, text):
    """Write text to path through a temporary file beside it: the file is whole, or unchanged."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def settings_line(runs):
    """The settings a hand-in depends on, as the records of `runs` hold them (values that
    differ joined by /)."""
    def each(get):
        values = []
        for r in runs:
            if str(get(r)) not in values:
                values.append(str(get(r)))
        return "/".join(values)
    c = lambda k: each(lambda r: r["config"][k])  # noqa: E731
    return (f"task size {c('task_size')}, width {c('n_embd')}, {c('n_layer')} layers, "
            f"{c('n_head')} heads, {each(lambda r: r['dtype'])} on "
            f"{each(lambda r: r['device'])}, {c('steps')} steps of {c('batch_size')} sequences, "
            f"lr {c('lr')}, tested on {c('eval_size')} held-out sequences")


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def final_of(runs, key="acc"):
    return [r["final"][key] for r in runs]


def compared(a, b, accuracies=True):
    """How cell a (values over seeds) stands to cell b, by records.differ: 'above', 'below' or
    'within the spread of'; for accuracies, no verdict on an unstable cell (the tables' †)."""
    from records import differ, mean_std, unstable
    if accuracies and (unstable(a) or unstable(b)):  # a fact about the seeds, not a verdict
        side = "below" if max(a) < min(b) else "above" if min(a) > max(b) else None
        return (f"{side} (seed for seed; a † cell, so no verdict)" if side else
                "not comparable (†: seeds more than 10 points apart) with")
    if not differ(a, b):
        return "within the spread of"
    return "above" if mean_std(a)[0] > mean_std(b)[0] else "below"


def cite(*tags):
    return "records " + ", ".join(f"`{t}/s*`" for t in tags)


def shown(values, scale=100, digits=1):
    from records import stat
    return stat(values, scale, digits)


def table(header, rows):
    from records import table as md
    return md(header, rows)


def curves(cells, ylabel, **legend):
    """{label: runs}: a line each, the mean test accuracy (%) over seeds against the step, the
    seeds' spread shaded."""
    from records import mean_std
    plt = pyplot()
    for i, (label, runs) in enumerate(cells.items()):
        steps = [h["step"] for h in runs[0]["history"]]
        acc = [[100 * r["history"][j]["acc"] for r in runs] for j in range(len(steps))]
        m, sd = zip(*(mean_std(a) for a in acc))
        plt.plot(steps, m, color=f"C{i}", label=f"{label} (n={len(runs)})")
        plt.fill_between(steps, [a - b for a, b in zip(m, sd)], [a + b for a, b in zip(m, sd)],
                         color=f"C{i}", alpha=0.2)
    plt.gca().set(xlabel="step", ylabel=ylabel)
    plt.legend(**legend)


def answer_1(key):
    """Exercise 1: Frozen-QK with V and O frozen too, on copy."""
    runs = key.cells({"ex1/copy/frozen_qk": mixit_args(runs_command(1, 1)),
                      "ex1/copy/frozen_qk+vo": mixit_args(runs_command(1, 0))})
    qk, vo = runs.values()
    curves({t.split("/")[-1]: rs for t, rs in runs.items()}, "copy test accuracy (%)")
    rows = [[f"`{t}`", f"{rs[0]['n_trainable']:,}", f"{rs[0]['n_frozen']:,}", shown(final_of(rs)),
             shown(final_of(rs, "exact"))] for t, rs in runs.items()]
    word = compared(final_of(vo), final_of(qk))
    return f"""**Measured** ({cite(*runs)}): copy; {settings_line(qk + vo)}. The counts are
those the command prints first; they depend on the width and the task's vocabulary.

{table(["setting", "trainable", "frozen", "accuracy (%)", "exact (%)"], rows)}

{key.figure("ex1.png")}

**A good answer.** Freezing V and O as well leaves {vo[0]['n_trainable']:,} of
{vo[0]['n_trainable'] + vo[0]['n_frozen']:,} parameters to train: the token embeddings, the
norms' gains, the MLPs and the head (the counts are the runs' own, {cite(*runs)}; which
tensors each part covers: `test_freeze_counts_the_numbers_in_the_parts_it_froze`).
Its copy accuracy is {word} that of Frozen-QK alone ({shown(final_of(vo))} against
{shown(final_of(qk))}, {cite(*runs)}). What can still choose where to look, from the
architecture (not measured here): the scores q.k are a fixed random bilinear form, but of
RMSNorm(x), and x is built from the learned embeddings, so the embeddings and the norms' gains
choose what the frozen form favours; the values are a fixed random image of each token, which
the MLPs and the head can learn to read.
Hypothesis (not tested here): what the frozen V and O cost is the freedom to choose what each
head writes, so the heads' outputs land in directions the model did not pick.
"""


def answer_2(key):
    """Exercise 2: MixiT's fixed map, beside Frozen-QK's learned heads, on induction."""
    import figures
    import mixit
    from runtime import append_record
    ckpt = os.path.join(key.dir, "ckpt", "ex2-{variant}-s{seed}.pt")
    settings = {f"ex2/induction/{v}": mixit_args(runs_command(2, j))
                + ["--save", ckpt.replace("{variant}", v)]
                for j, v in enumerate(("mixit", "frozen_qk"))}
    runs = key.cells(settings)
    # each run's heads, measured once from its checkpoint and kept as a record of their own
    # (ex2/heads/<variant>/s<seed>), so that the key renders again without the checkpoints
    for tag, args in settings.items():
        v = tag.split("/")[-1]
        for s in key.seeds:
            path = ckpt.format(variant=v, seed=s)
            if f"ex2/heads/{v}/s{s}" in key.done():
                continue
            if key.source:
                key.missing(f"ex2/heads/{v}/s{s}")
            if not os.path.exists(path):  # measured from a checkpoint that is gone: train again
                key.train((f"{tag}/s{s}", [a.replace("{seed}", str(s)) for a in args]
                           + ["--seed", str(s)]))
            task, model = figures.load_model(path)
            heads = figures.induction_scores(model, task)
            measured = {"config": {"tag": f"ex2/heads/{v}/s{s}", "checkpoint": path},
                        "best_induction": max(max(layer["induction"]) for layer in heads)}
            if v == "mixit":  # the trained A against the A a fresh model of that seed draws
                cfg = mixit.resolve_config({"load": path, "seed": s, "device": "cpu", "out": ""})
                fresh = mixit.build(cfg, verbose=False)[1]
                measured["A_moved"] = max(float((b.attn.A - f.attn.A).abs().max())
                                          for b, f in zip(model.blocks, fresh.blocks))
            append_record(key.records, measured)
    done = key.done()
    scores = {v: [done[f"ex2/heads/{v}/s{s}"]["best_induction"] for s in key.seeds]
              for v in ("mixit", "frozen_qk")}
    moved = [done[f"ex2/heads/mixit/s{s}"]["A_moved"] for s in key.seeds]
    # MixiT's matrices as seed 0 draws them (training leaves them so: A_moved), for the figure
    cfg = mixit.resolve_config(mixit.parse_args(mixit_args(runs_command(2, 0)) + ["--out", ""]))
    A = mixit.build(cfg, verbose=False)[1].blocks[-1].attn.A  # (H, T, T), the last block's
    T = A.size(-1)
    mx, fq = runs.values()
    plt = pyplot()
    fig, axes = plt.subplots(1, A.size(0) + 1, figsize=(2.4 * (A.size(0) + 1), 2.6))
    for h in range(A.size(0)):
        axes[h].imshow(A[h].numpy(), cmap="viridis")
        axes[h].set_title(f"MixiT seed 0, last block, head {h}", fontsize=7)
    from records import mean_std
    for i, s in enumerate(scores.values()):
        m, sd = mean_std(s)
        axes[-1].bar(i, m, yerr=sd, color=f"C{i}", capsize=3)
    axes[-1].axhline(1 / T, color="gray", linestyle="--", label=f"1/{T}")
    axes[-1].set_xticks(range(len(scores)), ["MixiT", "Frozen-QK"])
    axes[-1].set_title(f"best induction score (n={len(key.seeds)})", fontsize=7)
    last_row = ", ".join(f"{w:.2f}" for w in A[1, -1].tolist())
    expected = float(A[1, -1, 1:T - 1].mean())  # the follower p+1 is never the query itself
    measured = cite(*runs, "ex2/heads/mixit", "ex2/heads/frozen_qk")
    return f"""**Measured** ({measured}; induction: {settings_line(mx + fq)}; the
induction score is figures.induction_scores' on each run's checkpoint: the attention from the
query to the token after its earlier occurrence, best head of each run, kept in ex2/heads).

{table(["variant", "test accuracy (%)", "best induction score"],
       [["MixiT", shown(final_of(mx)), shown(scores["mixit"], 1, 2)],
        ["Frozen-QK", shown(final_of(fq)), shown(scores["frozen_qk"], 1, 2)]])}

After training, MixiT's matrices differ from those a fresh model of the same seed draws by at
most {max(moved):g} (every entry, every block, each of the {len(moved)} runs).

{key.figure("ex2.png")}

**A good answer.** Head h's output at the query position is sum_j A_h[T-1, j] V x_j: the weight
on position j is a number fixed at initialization, the same for every input; here the last
block's head 1 weights positions 0..{T - 1} by [{last_row}]. An induction head must put its
weight on p+1, where p is wherever the query appeared before, and p changes from one sequence to
the next. V and O act on each token alone, before and after the mixing, so they choose *what*
each position contributes but never *which* positions are weighted. Averaged over sequences a
fixed row puts on the right token the mean of its weights over the places p+1 can be
(positions 1 to {T - 2}), where p is equally likely anywhere: {expected:.3f} for the row above,
which puts {A[1, -1, -1]:.2f} on the query itself. Measured ({measured}): MixiT's
best induction score is {shown(scores["mixit"], 1, 2)} against Frozen-QK's
{shown(scores["frozen_qk"], 1, 2)}, and its test accuracy is
{compared(final_of(mx), final_of(fq))} Frozen-QK's ({shown(final_of(mx))} against
{shown(final_of(fq))}). That training leaves A as drawn is measured above and tested by
`test_training_changes_exactly_the_trainable_parameters[mixit]`.
Hypothesis (not tested here): what accuracy MixiT does reach comes from its MLPs reading the
fixed mixture of every token, not from any head that looks back.
"""


def answer_3(key):
    """Exercise 3: Frozen-QK's needle accuracy against the pairs, per width."""
    sizes, widths = key.sweep([4, 12]), key.sweep([16, 64])
    cells = key.cells({f"ex3/needle{n}/w{w}": mixit_args(runs_command(3), N=n, W=w)
                       for w in widths for n in sizes})
    runs = {(w, n): cells[f"ex3/needle{n}/w{w}"] for w in widths for n in sizes}
    from records import mean_std
    plt = pyplot()
    for i, w in enumerate(widths):
        ms = [mean_std([100 * a for a in final_of(runs[w, n])]) for n in sizes]
        plt.errorbar(sizes, [m for m, _ in ms], yerr=[s for _, s in ms], fmt="o-", capsize=3,
                     color=f"C{i}", label=f"width {w} (n={len(key.seeds)})")
    plt.gca().set(xlabel="key-value pairs N (task_size)", ylabel="test accuracy (%)")
    plt.legend()
    rows = [[f"width {w}"] + [shown(final_of(runs[w, n])) for n in sizes] for w in widths]
    lo, hi = sizes[0], sizes[-1]
    narrow, wide = widths[0], widths[-1]
    gain = lambda rs: mean_std([r["history"][-1]["acc"] - r["history"][-2]["acc"]  # noqa: E731
                                for r in rs])[0]
    climbing = [f"width {w}, N = {n}" for (w, n), rs in runs.items() if gain(rs) > 0.01]
    acc = {wn: final_of(rs) for wn, rs in runs.items()}
    tags = [f"ex3/needle{n}/w{w}" for w in widths for n in sizes]
    return f"""**Measured** ({cite(*tags)}): Frozen-QK on needle; {settings_line(
        [r for rs in runs.values() for r in rs])}. Test accuracy (%) by width (rows) and pairs N
(columns).

{table(["width"] + [f"N = {n}" for n in sizes], rows)}

{key.figure("ex3.png")}

**A good answer.** At width {narrow}, N = {hi} is {compared(acc[narrow, hi], acc[narrow, lo])}
N = {lo}; at width {wide} it is {compared(acc[wide, hi], acc[wide, lo])} N = {lo}. At N = {hi}
width {wide} is
{compared(acc[wide, hi], acc[narrow, hi])} width {narrow} ({cite(*tags)}). Still climbing at
the end of the budget (the mean gain over the last evaluation above 1 point):
{", ".join(climbing) or "none"}; a cell still climbing measures the
budget, not the capacity. Why width should matter: with W_Q and W_K frozen, the query's score for
each key is a fixed random bilinear form of the two tokens' (normalised) embeddings, and the
learned embeddings must make the right key win against N - 1 others; a width of d gives d
numbers per token to do it with. That is an explanation, not a tested one here (hypothesis):
testing it would need the accuracy at a fixed budget past the plateau.
"""


# The worked example of exercise 4: one sampler, two tasks. A string of L letters, then a
# pointer token that names a position i, then the answer: the letter at i.
#   pointer: i is drawn per sequence; first: i is always 0.
# A fixed mixing matrix can route position 0 to the end (MixiT's sink head does exactly that), so
# `first` needs no input-dependent attention; `pointer` needs to look where the pointer says,
# which differs from sequence to sequence.
def sample_pointer(B, gen, length, fixed=False):
    """Tokens 0-25 are a..z, 26 + i the pointer @i. With L = 4, the string "dbca" and i = 2:

        seq:  d b c a @2 c
        x:    d b c a @2
        y:    b c a @2 c
        mask: . . . .  X       (only the letter pointed at is scored)
    """
    import torch
    import tasks
    string = tasks._randint(0, 26, (B, length), gen)
    where = tasks._randint(0, length, (B, 1), gen)
    if fixed:
        where = torch.zeros_like(where)
    seq = torch.cat([string, 26 + where, string.gather(1, where)], 1)  # (B, L + 2)
    answer = torch.zeros_like(seq, dtype=torch.bool)
    answer[:, -1] = True
    return tasks.shift(seq, answer)


def register_pointer_tasks():
    """Add `pointer` and `first` to tasks.TASKS in this process (a student writes them into
    tasks.py)."""
    import functools
    import tasks
    import torch

    def make(fixed, length, device, data_seed, n_test):
        gen = torch.Generator(device).manual_seed(data_seed)
        sample = functools.partial(sample_pointer, length=length, fixed=fixed)
        itos = [chr(ord("a") + i) for i in range(26)] + [f"@{i}" for i in range(length)]
        name = "first" if fixed else "pointer"
        return tasks.Task(name, length, vocab_size=26 + length, block_size=length + 1, itos=itos,
                          test=tasks.held_out_test(sample, n_test, gen, name, 2), sample=sample,
                          note=f"{length} letters, a pointer, the letter it points at")
    for name, fixed in (("pointer", False), ("first", True)):
        tasks.TASKS.setdefault(name, (functools.partial(make, fixed), 16, 16, "string length",
                                      dict(steps=400, lr=3e-3, batch_size=256)))


def answer_4(key):
    """Exercise 4: a task Standard learns and MixiT does not, and one both learn. (Its runs
    add the tasks `pointer` and `first` in their own process: RUN, Key.train.)"""
    cells = key.cells({f"ex4/{t}/{v}": mixit_args(runs_command(4, j), YOURS=t)
                       for t in ("first", "pointer") for j, v in enumerate(("standard", "mixit"))})
    runs = {(t, v): cells[f"ex4/{t}/{v}"] for t in ("first", "pointer")
            for v in ("standard", "mixit")}
    curves({f"{t}, {v}": rs for (t, v), rs in runs.items()}, "test accuracy (%)", fontsize=7)
    rows = [[t, shown(final_of(runs[t, "standard"])), shown(final_of(runs[t, "mixit"]))]
            for t in ("first", "pointer")]
    tags = [f"ex4/{t}/{v}" for t, v in runs]
    f_s, f_m = final_of(runs["first", "standard"]), final_of(runs["first", "mixit"])
    p_s, p_m = final_of(runs["pointer", "standard"]), final_of(runs["pointer", "mixit"])
    return f"""**Method: the worked example**, one sampler, two tasks (homework.py, `sample_pointer`; a
student writes them into tasks.py). A string of 16 letters, a pointer token `@i`, and the answer,
the letter at position i. In `pointer` i is drawn for each sequence; in `first` it is always 0.
Chance is 1/26 (3.8%).

**Measured** ({cite(*tags)}): {settings_line([r for rs in runs.values() for r in rs])}; test
accuracy (%).

{table(["task", "Standard", "MixiT"], rows)}

{key.figure("ex4.png")}

**A good answer.** On `first` MixiT is {compared(f_m, f_s)} Standard ({shown(f_m)} against
{shown(f_s)}); on `pointer` it is {compared(p_m, p_s)} Standard ({shown(p_m)} against {shown(p_s)})
({cite(*tags)}). The difference is not "position versus content": both tasks read a letter by its
position. In `first` the position is the same for every sequence, and a fixed row of A can
weight it (MixiT's sink head puts half of every row on position 0:
`test_sink_head_is_half_self_half_first_token`). In `pointer` the position to read is named by
the input, and a row of A weights every sequence's positions alike: the mixing cannot follow the
pointer, while softmax attention's q.k can (a query made from `@i` that scores the key at
distance 16 - i highest). Hypothesis (not tested here): given a much longer budget MixiT could
climb on `pointer` through its MLPs, which can bind each letter to its position before a later
block mixes them.
"""


def answer_5(key):
    """Exercise 5: Frozen-QK's init scale on needle, at width 64."""
    import math
    import mixit
    import torch
    stds = key.sweep([0.005, 0.02, 0.125, 0.5])
    cells = key.cells({f"ex5/needle/qk{s:g}": mixit_args(runs_command(5), S=f"{s:g}")
                       for s in stds})
    runs = {s: cells[f"ex5/needle/qk{s:g}"] for s in stds}
    spread = {}  # the measured spread of the first block's logits at init (no RoPE turn: a turn
    for s in stds:  # keeps each vector's length), on the test set of the run's task
        cfg = mixit.resolve_config(mixit.parse_args(mixit_args(runs_command(5), S=f"{s:g}")
                                                    + ["--out", ""]))
        task, model, *_ = mixit.build(cfg, verbose=False)
        with torch.no_grad():
            attn, x = model.blocks[0].attn, model.blocks[0].norm1(model.wte(task.test[0][:200]))
            B, T, C = x.shape
            H = cfg.n_head
            q, k = (p(x).view(B, T, H, C // H).transpose(1, 2) for p in (attn.q_proj, attn.k_proj))
            spread[s] = float((q @ k.transpose(-2, -1) / math.sqrt(C // H)).std())
    d = cfg.n_embd
    from records import differ, mean_std
    plt = pyplot()
    ms = [mean_std([100 * a for a in final_of(runs[s])]) for s in stds]
    plt.errorbar([s * s * d for s in stds], [m for m, _ in ms], yerr=[sd for _, sd in ms],
                 fmt="o-", capsize=3, label=f"Frozen-QK, needle-6 (n={len(key.seeds)})")
    plt.xscale("log")
    plt.gca().set(xlabel="sigma^2 d (the logits' spread at init)", ylabel="test accuracy (%)")
    plt.legend()
    rows = [[f"{s:g}", f"{s * s * d:.3g}", f"{spread[s]:.3g}", shown(final_of(runs[s]))]
            for s in stds]
    on = [s for s in stds if mean_std(final_of(runs[s]))[0] >= 0.9]
    tags = [f"ex5/needle/qk{s:g}" for s in stds]
    switch = (f"the mean accuracy reaches 90% at sigma = {' and '.join(f'{s:g}' for s in on)} "
              f"(sigma^2 d = {' and '.join(f'{s * s * d:.3g}' for s in on)}) and at no other "
              "init measured" if on else "no init reaches 90% at this budget")
    depends = any(differ(final_of(runs[a]), final_of(runs[b])) for a in stds for b in stds)
    best = max(stds, key=lambda s: mean_std(final_of(runs[s]))[0])
    too_large = "" if best == stds[-1] else (
        f" The largest init, sigma^2 d = {stds[-1] ** 2 * d:.3g}, is "
        f"{compared(final_of(runs[stds[-1]]), final_of(runs[best]))} the best one, sigma = "
        f"{best:g} ({shown(final_of(runs[stds[-1]]))} against {shown(final_of(runs[best]))}). "
        "Hypothesis (not tested here): a spread far above 1 makes the frozen softmax nearly "
        "one-hot on whichever key the random form favours, and a saturated softmax passes little "
        "gradient back to the embeddings that would have to move it.")
    everything = settings_line([r for rs in runs.values() for r in rs])
    return f"""**Measured** ({cite(*tags)}): Frozen-QK on needle; {everything}.
The logits' spread is measured on an untrained model of each init (the first block, 200 test
sequences).

{table(["qk_init_std sigma", "sigma^2 d", "logits' std at init", "test accuracy (%)"], rows)}

{key.figure("ex5.png")}

**A good answer.** The accuracy {"depends" if depends else "does not measurably depend"} on the
init's scale (records.differ between some two inits): {switch} ({cite(*tags)}). The
spread: at init the input of q_proj is RMS-normalised, each of its d entries about 1; a query
entry is a sum of d products with weights of variance sigma^2, so its variance is sigma^2 d, and
so is a key entry's; q.k sums d_head products of two such entries (variance (sigma^2 d)^2 d_head),
and dividing by sqrt(d_head) leaves a standard deviation of sigma^2 d. The table measures it (the
third column against the second). With a spread far below 1 the frozen softmax is nearly uniform
whatever the input, so the heads average instead of selecting; the paper's N(0, 1/d) gives a
spread of 1. Hypothesis (not tested here): the norms' trainable gains can scale the input of
q_proj up, so a small init slows retrieval more than it forbids it; a longer budget would
tell.{too_large}
"""


def answer_6(key):
    """Exercise 6: MixiT's heads on addition, the learning curves."""
    heads = key.sweep([1, 4, 16, 64])
    cells = key.cells({f"ex6/add/heads{h}": mixit_args(runs_command(6), H=h) for h in heads})
    runs = {h: cells[f"ex6/add/heads{h}"] for h in heads}
    curves({f"{h} heads": runs[h] for h in heads}, "add test accuracy (%)")
    mid = len(runs[heads[0]][0]["history"]) // 2
    rows = [[str(h), shown([r["history"][mid]["acc"] for r in runs[h]]), shown(final_of(runs[h]))]
            for h in heads]
    tags = [f"ex6/add/heads{h}" for h in heads]
    lo, hi = final_of(runs[heads[0]]), final_of(runs[heads[-1]])
    at = runs[heads[0]][0]["history"][mid]["step"]
    everything = settings_line([r for rs in runs.values() for r in rs])
    return f"""**Measured** ({cite(*tags)}): MixiT on add; {everything}.

{table(["heads", f"accuracy at step {at} (%)", "final accuracy (%)"], rows)}

{key.figure("ex6.png")}

**A good answer.** With {heads[-1]} heads MixiT's final accuracy is {compared(hi, lo)} that
with {heads[0]} ({shown(hi)} against {shown(lo)}; {cite(*tags)}). Each answer digit needs the two operand digits
at fixed positions (digit i of a and of b), and those positions are the same in every sequence,
so a fixed matrix can serve, if some head weights them enough to be read apart from the rest.
One random matrix per block rarely does; every added head is another random draw, so more heads
make it likelier that some head (and the sink) separates the positions the answer needs. That is
a hypothesis, not tested here; the repo's Table 5 measures the same sweep at 4000 steps, and a
test of the hypothesis would read each head's weight on the operand digits (A[answer, i] and
A[answer, N+1+i]) against whether the run learns.
"""


def answer_7(key):
    """Exercise 7: the floors of hop, and its shortcut (no training)."""
    import tasks
    hops, data_seeds = key.sweep([1, 2, 3, 4]), [12345 + s for s in key.seeds]
    done = key.done()
    for k in hops:
        for d in data_seeds:
            tag = f"ex7/hop{k}/d{d}"
            if tag in done:
                continue
            if key.source:
                key.missing(tag)
            n_test = 64 if key.smoke else 2000  # make_task's default, as the command has it
            task = tasks.make_task("hop", k, "cpu", d, n_test)
            x, y, mask = task.test
            record = {"config": {"tag": tag, "task": "hop", "task_size": k, "data_seed": d,
                                 "eval_size": n_test},
                      "baselines": tasks.baselines(task),
                      "answer_is_current": float((y == x)[mask].float().mean())}
            say(f"  floor {tag}: {record['baselines']}")
            from runtime import append_record
            append_record(key.records, record)
    done = key.done()
    cells = {k: [done[f"ex7/hop{k}/d{d}"] for d in data_seeds] for k in hops}
    rules = list(cells[hops[0]][0]["baselines"])
    rows = [[str(k)] + [shown([r["baselines"][rule] for r in cells[k]]) for rule in rules]
            + [shown([r["answer_is_current"] for r in cells[k]])] for k in hops]
    from records import mean_std
    above = [k for k in hops if mean_std([max(r["baselines"].values()) for r in cells[k]])[0] > 0.5]
    plt = pyplot()
    for i, rule in enumerate(rules):
        plt.bar([k + 0.35 * (i - 0.5) for k in hops],
                [100 * mean_std([r["baselines"][rule] for r in cells[k]])[0] for k in hops],
                width=0.35, label=rule, color=f"C{i}")
    plt.axhline(50, color="gray", linestyle="--")
    plt.gca().set(xlabel="hops k", ylabel="floor: test accuracy of the rule (%)")
    plt.legend(fontsize=7)
    tags = [f"ex7/hop{k}" for k in hops]
    sizes = "/".join(sorted({str(r["config"].get("eval_size", "?")) for rs in cells.values()
                             for r in rs}))
    return f"""**Measured** ({", ".join(f"`{t}/d*`" for t in tags)}: each the test set of one
data seed, {sizes} sequences, n = {len(data_seeds)} seeds): the test accuracy (%) of each trivial rule (tasks.baselines),
and the share of scored positions whose answer is the current token itself.

{table(["k"] + rules + ["answer = current token (%)"], rows)}

{key.figure("ex7.png")}

**A good answer.** The settings whose floor is above 50%: {", ".join(f"k = {k}" for k in above) or
"none of those measured"} (records {", ".join(f"`{t}/d*`" for t in tags)}). The shortcut is "answer the current token": the
column on the right is the share of answers it gets right, and the rule "current token +
position" learns it from the training data. At k = 1 it never works: no token equals the one
before it, so the next token after the earlier occurrence is never the current one
(`test_hop_has_no_adjacent_repeats_and_no_constant_shortcut`). At k = 2 the second hop starts
from that follower, goes back to *its* earlier occurrence and steps forward: over 4 symbols that
can land on the token it started from, so the answer is the current token in the share the
table gives. Measuring that share on the test set (the right column) is the check.
"""


def answer_8(key):
    """Exercise 8: language modeling, every variant."""
    variants = ("standard", "frozen_qk", "frozen_mlp", "mixit", "random")
    cells = key.cells({f"ex8/lm/{v}": mixit_args(runs_command(8), X=v) for v in variants})
    runs = {v: cells[f"ex8/lm/{v}"] for v in variants}
    from records import differ, mean_std
    order = sorted(variants, key=lambda v: mean_std(final_of(runs[v], "loss"))[0])
    plt = pyplot()
    for i, v in enumerate(variants):
        for r in runs[v]:
            plt.plot([h["step"] for h in r["history"]], [h["loss"] for h in r["history"]],
                     color=f"C{i}", label=f"{v} (n={len(runs[v])})" if r is runs[v][0] else None)
    plt.gca().set(xlabel="step", ylabel="validation loss (nats/byte)")
    plt.legend()
    rows = [[str(i), v, shown(final_of(runs[v], "loss"), 1, 3),
             shown(final_of(runs[v], "bpb"), 1, 3)] for i, v in enumerate(order, 1)]
    tags = [f"ex8/lm/{v}" for v in variants]
    loss = {v: final_of(runs[v], "loss") for v in variants}
    gap = {v: mean_std(loss[v])[0] - mean_std(loss["standard"])[0] for v in ("frozen_qk", "mixit")}
    closer = "Standard" if abs(gap["frozen_qk"]) < abs(gap["mixit"] - gap["frozen_qk"]) else "MixiT"
    ties = ", ".join(f"{a} and {b}" for a, b in zip(order, order[1:])
                     if not differ(loss[a], loss[b])) or "none"

    def vs(a, b):  # a loss: lower is better
        word = compared(a, b, accuracies=False)
        return {"above": "worse than", "below": "better than"}.get(word, word)
    everything = settings_line([r for rs in runs.values() for r in rs])
    return f"""**Measured** ({cite(*tags)}): byte-level LM on Python's help text (task size: the
context in bytes); {everything}; validation loss (lower is better).

{table(["rank", "variant", "loss (nats/byte)", "bits/byte"], rows)}

{key.figure("ex8.png")}

**A good answer.** The ranking, best first: {", ".join(order)} ({cite(*tags)}); neighbours
whose losses lie within each other's spread are no ranking: {ties}. Frozen-QK's loss
is {gap['frozen_qk']:+.3f} nats/byte from Standard's and {gap['frozen_qk'] - gap['mixit']:+.3f} from
MixiT's, so it is closer to {closer}: its loss is {vs(loss['frozen_qk'], loss['standard'])}
Standard's, and {vs(loss['frozen_qk'], loss['mixit'])} MixiT's.
Why (hypothesis, in the paper's terms, not tested here): predicting the next byte of text leans
on looking back at earlier bytes that depend on the input (a word begun, a name repeated), which
random but input-dependent attention still does and a fixed mixing cannot. The repo's Table 2
measures the same at width 128.
"""


ANSWERS = [answer_1, answer_2, answer_3, answer_4, answer_5, answer_6, answer_7, answer_8]


def answers(folder, smoke=False, source=None, draw=True):
    """Run every exercise's measurement that has not finished (it has no ex<N>.md) and write
    folder/ANSWERS.md. Returns its path. With `source`, a folder of records (--from): train
    nothing, render every section from source's records. draw=False: no PNG. A sitting stopped
    by Ctrl-C keeps its time (times.json, stopped_s), which counts in the exercise's time."""
    import time
    key = Key(folder, smoke, source, draw)
    times_path = os.path.join(source or folder, "times.json")
    times = json.load(open(times_path)) if os.path.exists(times_path) else {}
    t_start, load = time.time(), os.getloadavg()
    rebuilt = {}  # --from: the sections, kept here (an ex<N>.md would say "measured in folder")
    named = source and (os.path.relpath(source, HERE) if os.path.abspath(source).startswith(
        HERE + os.sep) else source)  # how the key names the records' folder
    for i, (ex, measure) in enumerate(zip(EXERCISES, ANSWERS), 1):
        done = os.path.join(folder, f"ex{i}.md")
        if os.path.exists(done) and not source:
            print(f"[{i}/{len(EXERCISES)}] done already ({done})", flush=True)
            continue
        print(f"[{i}/{len(EXERCISES)}] {ex.question}", flush=True)
        trained = lambda: {t for t, r in key.done().items() if "final" in r}  # noqa: E731
        t0, before = time.time(), trained()
        earlier = times.get(str(i), {}).get("stopped_s", 0)  # its sittings stopped by Ctrl-C
        try:
            body = measure(key)
        except (KeyboardInterrupt, Stopped):  # this sitting's time counts in the exercise's
            if not source:
                times[str(i)] = {**times.get(str(i), {}),
                                 "stopped_s": round(earlier + time.time() - t0, 1)}
                atomic_write(times_path, json.dumps(times, indent=1))
            raise
        mine = [r for t, r in key.done().items() if t.startswith(f"ex{i}/")]
        run = "; ".join(f"`{c}`" for c in ex.commands)
        head = f"## Exercise {i}\n\n**{ex.question}**\n\nThe student runs {run}. Hand in: {ex.hand_in}."
        if source:  # a time from the records' own run, said to be so; none of this call's
            took = times.get(str(i), {}).get("seconds")
            when = "" if took is None else (
                f"\n*When its records were made, this measurement took {took / 60:.1f} min "
                f"(`{os.path.join(named, 'times.json')}`; {len(mine)} records).*\n")
            rebuilt[i] = f"{head}\n\n{body}{when}"
            print(f"[{i}/{len(EXERCISES)}] rebuilt from {len(mine)} records", flush=True)
            continue
        # the exercise's time: the wall time of the calls that trained its runs (JOBS at once),
        # with its measuring and drawing, over every sitting (a Ctrl-C and the same command
        # again); a call that only renders keeps the time it finds
        if trained() - before or "seconds" not in times.get(str(i), {}):
            times[str(i)] = {"seconds": round(earlier + time.time() - t0, 1), "runs": len(mine),
                             "run_seconds": round(sum(r.get("wall_s", 0) for r in mine), 1),
                             "load": round(os.getloadavg()[0], 1)}
            atomic_write(times_path, json.dumps(times, indent=1))
        elif times[str(i)].pop("stopped_s", None) is not None:  # a stopped render: no measuring
            atomic_write(times_path, json.dumps(times, indent=1))
        seconds = times[str(i)]["seconds"]
        key.write(f"ex{i}.md", f"{head}\n\n{body}\n*Time of this measurement: {seconds / 60:.1f} "
                  f"min ({len(mine)} records).*\n")
        print(f"[{i}/{len(EXERCISES)}] done in {seconds / 60:.1f} min ({time.strftime('%H:%M')}"
              f", load {os.getloadavg()[0]:.1f})", flush=True)
    sections = [rebuilt[i] if source else read(folder, f"ex{i}.md")
                for i in range(1, len(EXERCISES) + 1)]
    if source:
        key.write("ANSWERS.md", f"""{KEY_TITLE}

Rebuilt from the records in `{named}` by `python homework.py answers DIR --from {named}`:
no run was trained for it. Every number below is read from those records (`records.jsonl`), and
every figure drawn from them; each exercise's records came from the very commands the exercise
gives (the key adds only --seed, --tag, --out, --resume and, in exercise 2, --save), three seeds
per setting wherever settings are compared. A difference inside the seeds' spread is no
difference (records.differ), and each sentence below is a measurement (it cites its records),
an explanation that names its test, or a hypothesis that says so.

{chr(10).join(sections)}""")
        return os.path.join(folder, "ANSWERS.md")
    total = sum(t["seconds"] for t in times.values())
    loads = ", ".join(f"{i}: {times[i]['load']}" for i in sorted(times, key=int)
                      if "load" in times[i]) or "none"
    cores = os.cpu_count()
    smoke_note = "SMOKE SIZE: 2 steps a run and one seed; the words compare nothing. " * smoke
    key.write("ANSWERS.md", f"""{KEY_TITLE}

Written by `python homework.py answers {folder}{" --smoke" if smoke else ""}`. Every number below
is read from the records this run wrote (`records.jsonl`, beside this file; each run's printout
in `logs/`), and every figure drawn from them; each run is the very command its exercise gives
(the key adds only --seed, --tag, --out, --resume and, in exercise 2, --save). The eight
measurements took {total / 60:.1f} minutes in all (each exercise's own time is at its end;
JOBS = {JOBS} runs at once), on {cores} CPU cores; where other work shares them the times grow
(each exercise's load average as it finished, where recorded: {loads}; this call began at
{load[0]:.1f}).
{smoke_note}Three seeds
per setting wherever settings are compared; a difference inside the seeds' spread is no
difference (records.differ), and each sentence below is a measurement (it cites its records),
an explanation that names its test, or a hypothesis that says so.

{chr(10).join(sections)}""")
    return os.path.join(folder, "ANSWERS.md")


def interrupted_key(folder):
    """The line that says what an interrupted `answers folder` kept, and how to continue."""
    from records import read_records
    records = os.path.join(folder, "records.jsonl")
    kept = len(read_records(records)) if os.path.isfile(records) else 0
    resume = os.path.join(folder, "resume")
    states = len(os.listdir(resume)) if os.path.isdir(resume) else 0
    return (f"interrupted: kept {kept} finished records in {records} and the saved state of "
            f"{states} unfinished run(s) in {resume}; continue with: python homework.py answers "
            f"{shlex.quote(folder)}")


# -----------------------------------------------------------------------------
# Command line


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse prints usage and the error: we want one line
        raise HomeworkError(f"{message}; python homework.py -h for help")


def parse(argv):
    parser = Parser(prog="python homework.py", description=__doc__.strip().split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="handout|grade|answers")
    out = commands.add_parser("handout", help="write a student's copy")
    out.add_argument("dest", help="a new or empty folder")
    out.add_argument("parts", nargs="*", help=f"the parts (default: {' '.join(DEFAULT_PARTS)})")
    grading = commands.add_parser("grade", help="grade submissions: a table for one, CSV for more")
    grading.add_argument("submissions", nargs="+", help="folders, each with mixit.py and tasks.py")
    grading.add_argument("--parts", default=",".join(DEFAULT_PARTS),
                         help="the parts handed out, comma-separated (default: the default parts)")
    grading.add_argument("--feedback", default="", help="also write each submission's report "
                         "(the table and every failure) into this folder, a file each")
    grading.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                         help="submissions graded at once (default: one per CPU)")
    grading.add_argument("--keep", default="", help="a class's grades are kept here as each "
                         "submission is graded, so that the same command, run again after "
                         "Ctrl-C, grades only the rest (default: FEEDBACK/.marks with "
                         f"--feedback, else {KEEP})")
    key = commands.add_parser(
        "answers", help="the answer key (the TA's): run every exercise's command, three seeds a "
        "setting, and write DIR/ANSWERS.md; with --from "
        f"{COMMITTED}: rebuild it in seconds from the committed records, training nothing",
        description="Run every exercise's measurement (the very commands the exercises give, "
        "three seeds a setting) and write DIR/ANSWERS.md with its figures; every run's "
        "records, printout and saved state stay in DIR. Ctrl-C stops it within seconds, keeping "
        "every finished run and each unfinished run's state; the same command continues. "
        f"`answers DIR --from {COMMITTED}` rebuilds the key from the repository's committed "
        "records in seconds and trains nothing.")
    key.add_argument("dir", help="a folder; a finished exercise in it is not run again")
    key.add_argument("--from", dest="source", default=None, metavar="RECORDS",
                     help=f"a folder of the key's records (e.g. {COMMITTED}, committed with the "
                     "repository): render the key from them into DIR, training nothing")
    key.add_argument("--smoke", action="store_true", help="2 steps a run, one seed: a test")
    return parser.parse_args(argv)


def kept_grade(submission, parts, keep):
    """Where a class grade keeps the marks of `submission` on `parts`: a file in `keep` named by
    a hash of all they depend on. None for a folder that is not a handout."""
    import hashlib
    if not_a_handout(submission):
        return None
    digest = hashlib.sha256(json.dumps(parts).encode())
    for folder, names in ((HERE, GRADER_FILES), (submission, SOURCES)):
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read() + b"\0")
    digest.update(os.path.abspath(submission).encode())
    return os.path.join(keep, digest.hexdigest()[:32] + ".json")


def grade_class(submissions, parts, jobs, keep):
    """Grade each submission, `jobs` at once; with `keep` (a folder), each grade is saved there as
    soon as it is made, and one kept (kept_grade) is not made again. Returns the marks."""
    reused = []

    def one(submission):
        path = keep and kept_grade(submission, parts, keep)
        if path and os.path.isfile(path):
            with open(path) as f:
                reused.append(submission)
                return {**json.load(f), "submission": submission}
        marks = grade(submission, parts)
        if STOPPING.is_set():  # its pytest may have been stopped half-way: not a grade
            raise Stopped(submission)
        if path and not (marks["problem"] or "").startswith("did not run"):
            os.makedirs(keep, exist_ok=True)
            atomic_write(path, json.dumps(marks))
        return marks
    all_marks = run_all(submissions, one, jobs)
    if reused:
        print(f"reused the kept grades of {len(reused)} submission(s) (files unchanged) from "
              f"{keep}", file=sys.stderr)
    return all_marks


def main(argv=None):
    args = None
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        with stop_on_signal():
            return command(args)
    except (HomeworkError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Stopped):
        if args is not None and args.command == "answers" and not args.source:
            print(f"\n{interrupted_key(args.dir)}", file=sys.stderr)
        elif args is not None and args.command == "grade" and len(args.submissions) > 1:
            parts = list(dict.fromkeys(p.strip() for p in args.parts.split(",") if p.strip()))
            try:
                kept = sum(os.path.isfile(kept_grade(s, parts, grades_kept(args)) or "")
                           for s in args.submissions)
            except OSError:
                kept = "some"
            print(f"\ninterrupted: kept the grades of {kept} of {len(args.submissions)} "
                  f"submissions in {grades_kept(args)}; continue with the same command",
                  file=sys.stderr)
        else:
            print("\ninterrupted: nothing was kept", file=sys.stderr)
        return 130


def grades_kept(args):
    """Where a class's grades are kept (--keep, else FEEDBACK/.marks, else KEEP)."""
    return args.keep or (os.path.join(args.feedback, ".marks") if args.feedback else KEEP)


def command(args):
    """Carry out the parsed command line; returns the exit status."""
    if args.command == "answers":
        path = answers(args.dir, args.smoke, args.source)
        print(f"answer key {'rebuilt from records' if args.source else 'written'}: {path}")
        return 0
    if args.command == "handout":
        parts = handout(args.dest, args.parts)
        print(f"handed out {len(parts)} part(s) in {args.dest}: {', '.join(parts)}")
        if parts != DEFAULT_PARTS:
            print(f"grade with: python homework.py grade --parts {','.join(parts)} "
                  "SUBMISSION ...")
        return 0
    parts = list(dict.fromkeys(p.strip() for p in args.parts.split(",") if p.strip()))
    if not parts:
        raise HomeworkError("--parts names no part")
    check_parts(parts)
    if args.jobs < 1:
        raise HomeworkError(f"--jobs must be 1 or more, got {args.jobs}")
    if len(args.submissions) == 1 and not_a_handout(args.submissions[0]):
        raise HomeworkError(not_a_handout(args.submissions[0]))
    one = len(args.submissions) == 1
    all_marks = grade_class(args.submissions, parts, args.jobs, None if one else grades_kept(args))
    if args.feedback:
        os.makedirs(args.feedback, exist_ok=True)
        taken = set()
        for marks in all_marks:
            path = os.path.join(args.feedback, feedback_name(marks["submission"], taken))
            atomic_write(path, report(marks))
    if one:
        print(report(all_marks[0]), end="")
    else:
        write_csv(sys.stdout, parts, all_marks)
    # 0: every submission got a grade (one that does not import gets 0 points, and its row says
    # why); 1: some folder could not be graded at all (not a handout), named in its row and here
    ungraded = [marks["problem"] for marks in all_marks if marks["rows"] is None]
    for problem in ungraded:
        print(f"not graded (exit status 1): {problem}", file=sys.stderr)
    return 1 if ungraded else 0


if __name__ == "__main__":
    sys.exit(main())
