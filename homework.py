"""
A course's homework from this repository: hand out functions without their bodies, then grade
what the students hand back, with tests that stay with the teacher.

    python homework.py handout DIR [PART ...]             # a student's copy, written into DIR
    python homework.py grade SUBMISSION                    # one: marks per part, each failure
    python homework.py grade SUB1 SUB2 ... > marks.csv     # a class: one CSV row a submission

A part is a function or a method (`freeze`, `MixingAttention.forward`) of mixit.py or tasks.py
that a grading test grades (the table GRADING below). Handing it out keeps its signature and
its docstring, which is the specification (arguments with their shapes, what it returns, the
errors it raises), and replaces its body with `raise NotImplementedError("homework: PART; ...")`.
The parts are found in the code itself (Python's own parser, `ast`): the sources carry no markers.

What a student receives: mixit.py and tasks.py with the parts blanked, runtime.py (mixit.py
imports it), requirements.txt, test_homework.py (the public tests) and a README.md written here
(readme()), which is the assignment. What the teacher keeps: this repository, whose
test_mixit.py holds the grading tests, and this file.

Grading trusts only the graded files. From each submission it takes mixit.py and tasks.py and
nothing else, puts them into a fresh folder next to this repository's own runtime.py and
test_mixit.py and a pytest.ini written here, and runs there the grading tests of each part.
The parts and their points come from here (`--parts`, by default DEFAULT_PARTS), never from the
submission: a test file, a conftest.py, a pytest.ini, pyproject.toml, setup.cfg or tox.ini, a
parts list or a homework.py in the submission is never read. (Code in mixit.py and tasks.py
themselves runs when they are graded: what a student writes there is trusted like any code.)

The rule that keeps the handout from giving a solution away: no file of the handout computes
what a handed-out part computes.
  - A test that needs a reference implementation of a part (softmax attention with its masks,
    a RoPE rotation, MixiT's A V, the masked cross-entropy, a k-hop solver) is a grading test:
    it lives in test_mixit.py, which is not handed out.
  - test_homework.py, the public tests, checks properties (shapes, causality, rows that sum to
    one) and small examples worked out by hand, and nothing else.
  - Code that needs what a part computes calls the part and does not repeat it (evaluate() calls
    masked_loss; build() calls freeze), so blanking the part blanks every copy of it.
  - Only a part that a grading test grades can be handed out.

Sections: the tables | finding and blanking a part | the handout | grading | command line.
Only the standard library; pytest runs the tests in a subprocess.
"""

import argparse
import ast
import concurrent.futures
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
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

# part: (points, the exercises it prepares, the tests that grade it). Each test is a full node
# id of TEST_FILE, one per parameter, so a part counts the same tests on every run. Each part's
# tests exercise that part alone: they build their modules directly and stand in for any other
# part they would call, so a blanked part fails its own tests and no other's.
GRADING = {
    "mixing_matrices": (15, "exercises 2 and 6: MixiT's fixed map, its heads of different "
                            "strengths", [
        "test_mixing_matrices_are_causal_and_rows_sum_to_one",
        "test_sink_head_is_half_self_half_first_token",
        "test_no_sink_head_when_sink_is_off",
        "test_mixing_strength_differs_between_heads_and_stays_in_range",
        "test_mixing_matrices_depend_on_seed_only",
        "test_bidirectional_mixing_matrix_is_full_and_its_rows_sum_to_one",
    ]),
    "MixingAttention.forward": (15, "exercises 2 and 4: what an input-independent mixing can "
                                    "express", [
        "test_mixing_attention_is_a_times_v_per_head_then_o",
        "test_mixing_attention_uses_the_top_left_corner_of_a_for_a_shorter_input",
        "test_mixing_attention_never_lets_a_pad_reach_a_real_token",
    ]),
    "apply_rotary": (10, "exercise 3: a q.k score that depends on relative position only", [
        "test_rotary_preserves_norms",
        "test_rotary_dot_product_depends_only_on_relative_position",
        "test_rotary_turns_by_the_tables_angles_so_turns_add_up",
    ]),
    "CausalSelfAttention.forward": (20, "exercises 3 and 5: retrieval by q.k/sqrt(d), and that "
                                        "score's spread", [
        "test_causal_self_attention_is_softmax_of_q_k_over_sqrt_d_times_v[True]",
        "test_causal_self_attention_is_softmax_of_q_k_over_sqrt_d_times_v[False]",
        "test_causal_self_attention_rotates_queries_and_keys_but_not_values",
        "test_causal_self_attention_hides_pads_from_real_tokens",
    ]),
    "freeze": (15, "exercise 1: what a variant trains, and the counts it prints", [
        "test_frozen_qk_freezes_exactly_query_and_key_weights_and_biases",
        "test_frozen_mlp_freezes_exactly_the_mlps",
        "test_random_transformer_trains_only_embeddings_and_head",
        "test_each_variant_is_its_preset_of_parts[frozen_qk-q,k]",
        "test_each_variant_is_its_preset_of_parts[frozen_mlp-mlp]",
        "test_each_variant_is_its_preset_of_parts[random-q,k,v,o,mlp,norm]",
        "test_freeze_counts_what_it_froze_and_refuses_a_part_the_model_lacks",
    ]),
    "masked_loss": (10, "exercises 8 and 4: which positions a task scores, the loss in nats", [
        "test_masked_loss_only_looks_at_masked_positions",
        "test_masked_loss_gradient_reaches_only_the_scored_positions",
        "test_masked_loss_ignores_rows_without_answers_and_scores_uniform_logits_at_log_vocab",
    ]),
    "sample_hop": (15, "exercises 7 and 4: a task's answers, its floors and shortcuts", [
        "test_hop_answers_match_a_python_loop[1]",
        "test_hop_answers_match_a_python_loop[3]",
        "test_hop_has_no_adjacent_repeats_and_no_constant_shortcut[1]",
        "test_task_batches_have_the_right_shapes_and_tokens[hop]",
        "test_training_batches_follow_the_generator_seed[hop]",
        "test_test_set_is_fixed_by_the_data_seed[hop]",
    ]),
    # more tasks, handed out and graded when named (not by default)
    "sample_add": (10, "exercises 6 and 4: addition, which MixiT learns", [
        "test_add_answer_is_the_reversed_sum",
        "test_task_batches_have_the_right_shapes_and_tokens[add]",
        "test_training_batches_follow_the_generator_seed[add]",
    ]),
    "sample_needle": (10, "exercises 3 and 5: retrieval, which MixiT cannot learn", [
        "test_needle_answer_is_the_value_of_the_queried_key",
        "test_task_batches_have_the_right_shapes_and_tokens[needle]",
        "test_training_batches_follow_the_generator_seed[needle]",
    ]),
    "sample_induction": (10, "exercises 2 and 4: the task an induction head solves", [
        "test_induction_query_appears_once_and_answer_is_its_follower",
        "test_task_batches_have_the_right_shapes_and_tokens[induction]",
        "test_training_batches_follow_the_generator_seed[induction]",
    ]),
    "sample_dyck": (10, "exercise 4: nesting, and the rules that only count", [
        "test_dyck_label_matches_the_brackets",
        "test_task_batches_have_the_right_shapes_and_tokens[dyck]",
        "test_training_batches_follow_the_generator_seed[dyck]",
    ]),
}

# A first assignment, in the order to write it: MixiT's matrices and its attention, RoPE and
# softmax attention, which parameters train, the loss, one task.
DEFAULT_PARTS = ["mixing_matrices", "MixingAttention.forward", "apply_rotary",
                 "CausalSelfAttention.forward", "freeze", "masked_loss", "sample_hop"]

# The exercises the parts prepare, as the handout's README gives them: every command runs in
# the handout itself (python mixit.py --help lists every flag).
EXERCISES = [
    "Freeze V and O as well as Q and K: what is left to learn, and does copy still work? "
    "`python mixit.py --task copy --variant frozen_qk --freeze v,o`; compare the trainable counts "
    "it prints with those of `--variant frozen_qk` alone.",
    "Look at MixiT's attention: `python -c \"import torch, mixit; print(mixit.mixing_matrices("
    "4, 8, 8, torch.Generator().manual_seed(0))[1])\"` prints one head's matrix (a model's own "
    "maps: `logits, hidden, maps = model(x, return_hidden=True)`). Why can no choice of V and O "
    "make it an induction head?",
    "How many needle pairs can Frozen-QK hold as the width grows? `python mixit.py --task needle "
    "--variant frozen_qk --task_size N --n_embd W` for a few N and W; plot accuracy against N per "
    "width.",
    "Make a task MixiT cannot do but Standard can, and one that both can (a `sample_...` function "
    "and a line of `TASKS` in tasks.py). Explain the difference in terms of what a fixed, "
    "input-independent mixing matrix can express.",
    "Sweep `--qk_init_std` from 0.005 to 0.5 for `--variant frozen_qk --task needle --n_embd 64`: "
    "where does retrieval switch on, and how does that relate to the scores' spread sigma^2 d?",
    "Give MixiT 1, 4, 16 and 64 heads (`--variant mixit --task add --task_size 4 --n_embd 64 "
    "--n_head H`) and compare the learning curves (each run's history is a line of "
    "results/runs.jsonl): why would more fixed random matrices help addition?",
    "Find a setting of `hop` whose floor is above 50% and explain the shortcut: `python -c "
    "\"import tasks; print(tasks.baselines(tasks.make_task('hop', 2)))\"` prints how far each "
    "trivial rule gets at k = 2.",
    "Run `python mixit.py --task lm --variant X` for every variant (standard, frozen_qk, "
    "frozen_mlp, mixit, random) and rank them by validation bits per byte. Is Frozen-QK closer "
    "to Standard or to MixiT?",
]


class HomeworkError(Exception):
    """A problem with what was asked (unknown part, folder in the way): printed as one line."""


# -----------------------------------------------------------------------------
# Finding and blanking a part


def find_parts(source):
    """The functions of a module's source: {"name" or "Class.method": its ast.FunctionDef}. Only
    top-level functions and the methods of top-level classes: a function nested in another is
    part of its parent, and blanking the parent blanks it too."""
    parts = {}
    for node in ast.parse(source).body:
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
    and docstring are kept, and so is every other line of the file.

    The body is cut by line: from the line after the docstring (or the body's first line, where
    there is no docstring) to the function's last line, so that the comments inside the body,
    which explain the solution, go with it. A body that starts on the `def` line itself
    (`def f(x): return x`) is cut from its first statement instead."""
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
    return [node.name for node in ast.parse(read(kit, name)).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]


def check_parts(parts, kit=HERE):
    """Refuse, in one line, a part that is not a function of SOURCES or that no test grades.
    Returns {part: its file}."""
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
    """The name that the public tests of a part start with, after test_, and that `pytest -k`
    picks them by: MixingAttention.forward -> mixing_attention, sample_hop -> sample_hop."""
    name = part[:-len(".forward")] if part.endswith(".forward") else part
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace(".", "_")


def public_tests(kit=HERE):
    """{part: the names of its public tests}, for every part of GRADING."""
    names = defined_tests(kit, PUBLIC_TESTS)
    return {part: [n for n in names if n.startswith(f"test_{keyword(part)}_")] for part in GRADING}


PUBLIC_COMMAND = f"python -m pytest -q --tb=short {PUBLIC_TESTS}"  # the student's test command


def readme(parts, kit=HERE):
    """The handout's README.md: the assignment. It names only files that the handout holds."""
    where, found = all_parts(kit), {}
    for name in SOURCES:
        found.update(find_parts(read(kit, name)))
    total = sum(GRADING[p][0] for p in parts)
    count = f"{len(parts)} part" + ("s" if len(parts) > 1 else "")
    rows = []
    for i, part in enumerate(parts, 1):
        node = found[part]
        signature = f"{part}({ast.unparse(node.args)})"
        rows.append(f"| {i} | `{signature}` | {where[part]} | {GRADING[part][0]} | "
                    f"`-k {keyword(part)}` | {GRADING[part][1]} |")
    exercises = "\n".join(f"{i}. {text}" for i, text in enumerate(EXERCISES, 1))
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
needs, in those two files. A file that does not import scores 0 on every part; a part earns its
points in proportion to its grading tests that pass.

## Experiments

Once the parts are written the model trains (`python mixit.py --help` lists every flag):

```bash
python mixit.py --variant frozen_qk --task copy    # a minute or two on a laptop CPU: it copies
python mixit.py --variant mixit --task copy        # the same budget: it fails, it cannot retrieve
python mixit.py --variant mixit --task modadd --task_size 59   # but it adds mod p
```

Each run prints its test accuracy and appends a record (its settings and learning curve) to
`results/runs.jsonl`. The exercises that the parts prepare:

{exercises}
"""


def handout(dest, parts=None, kit=HERE):
    """Write a student's copy into dest (new or empty), with parts blanked. Returns the parts,
    in the order given."""
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
    """The environment of the grading subprocess: no pytest options or plugins from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def run_tests(folder, nodes, scratch, timeout=GRADE_TIMEOUT_S):
    """Run the tests `nodes` (names in TEST_FILE) in folder, in one pytest subprocess whose
    working folder and rootdir it is, under the pytest.ini there. Returns ({node: None if it
    passed, else the lines that say where and why it failed}, why the sources do not import or
    None). A node that did not run gets the reason."""
    report = os.path.join(scratch, "report.xml")
    # --tb=native: Python's own traceback, which still carries pytest's explanation of a failed
    # assert; --tb=short parses test_mixit.py again for every frame of every failure, seconds
    # when a whole part fails
    cmd = [sys.executable, "-m", "pytest", "-q", "--tb=native", "-p", "no:cacheprovider",
           "-c", os.path.join(folder, "pytest.ini"), "--rootdir", folder,
           f"--junitxml={report}", f"--basetemp={os.path.join(scratch, 'tmp')}",
           *(f"{TEST_FILE}::{node}" for node in nodes)]
    try:
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=timeout,
                              env=grading_env())
        said = (done.stdout.strip() or done.stderr.strip() or "pytest said nothing").splitlines()
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
    where and why it failed}, why the sources do not import or None). A skipped test did not
    pass."""
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


def grade(submission, parts, kit=HERE, timeout=GRADE_TIMEOUT_S):
    """Grade one submission on parts. Returns a dict: submission; rows [(part, tests passed,
    tests, points earned, points)], or None when it is not a handout; failures [(test, lines)];
    problem, one line or None. A part earns its points in proportion to its tests passed; a
    submission whose sources do not import earns nothing."""
    problem = not_a_handout(submission)
    if problem:
        return {"submission": submission, "rows": None, "failures": [], "problem": problem}
    scratch = tempfile.mkdtemp(prefix="homework-grade-")
    folder = os.path.join(scratch, "copy")
    try:
        os.makedirs(folder)
        for name in GRADER_FILES:  # the kit's own tests and what they import
            shutil.copyfile(os.path.join(kit, name), os.path.join(folder, name))
        for name in SOURCES:  # and only the graded files of the submission
            shutil.copyfile(os.path.join(submission, name), os.path.join(folder, name))
        with open(os.path.join(folder, "pytest.ini"), "w") as f:
            f.write("[pytest]\n# homework.py's: grading reads no configuration but this one\n")
        nodes = [node for part in parts for node in GRADING[part][2]]
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
        points, mine = GRADING[part][0], GRADING[part][2]
        passed = 0 if problem else sum(results[node] is None for node in mine)
        rows.append((part, passed, len(mine), round(points * passed / len(mine), 1), points))
        failures += [] if problem else [(node, results[node]) for node in mine if results[node]]
    return {"submission": submission, "rows": rows, "failures": failures, "problem": problem}


def report(marks):
    """One submission's marks as text: a line per part, the total, then every failed test by
    its full name, where it failed and the values it compared."""
    if marks["rows"] is None:
        return f"not graded: {marks['problem']}\n"
    lines = [f"{marks['submission']}: mixit.py and tasks.py, graded by the course's tests"]
    if marks["problem"]:
        lines.append(f"0 on every part: {marks['problem']}")
    lines.append(f"{'part':<28} {'tests':>6} {'points':>9}")
    for part, passed, n, earned, points in marks["rows"]:
        lines.append(f"{part:<28} {f'{passed}/{n}':>6} {f'{earned:g}/{points}':>9}")
    earned, points = total(marks), sum(r[4] for r in marks["rows"])
    lines.append(f"{'total':<28} {'':>6} {f'{earned:g}/{points}':>9}")
    if marks["failures"]:
        lines.append(f"\n{len(marks['failures'])} test(s) failed:")
        for node, why in marks["failures"]:
            lines += [f"{TEST_FILE}::{node}"] + [f"    {s}" for s in why]
    return "\n".join(lines) + "\n"


def total(marks):
    return round(sum(r[3] for r in marks["rows"]), 1)


def write_csv(out, parts, all_marks):
    """One row per submission: its name, each part's points, the total, and why it was not
    graded or scored 0 (empty if it imported)."""
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
# Command line


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse prints usage and the error: we want one line
        raise HomeworkError(f"{message}; python homework.py -h for help")


def parse(argv):
    parser = Parser(prog="python homework.py", description=__doc__.strip().split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="handout|grade")
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
    return parser.parse_args(argv)


def main(argv=None):
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
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
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:  # each waits on pytest
            all_marks = list(pool.map(lambda s: grade(s, parts), args.submissions))
        if args.feedback:
            os.makedirs(args.feedback, exist_ok=True)
            taken = set()
            for marks in all_marks:
                path = os.path.join(args.feedback, feedback_name(marks["submission"], taken))
                with open(path, "w", encoding="utf-8") as f:
                    f.write(report(marks))
        if len(all_marks) == 1:
            print(report(all_marks[0]), end="")
        else:
            write_csv(sys.stdout, parts, all_marks)
        return 1 if any(marks["problem"] for marks in all_marks) else 0
    except (HomeworkError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
