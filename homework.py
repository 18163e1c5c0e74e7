"""
A course's homework from this repository, in one command each way.

    python homework.py handout DIR [PART ...]   # a student's copy in DIR, the parts blanked
    python homework.py grade DIR                # run each part's tests in DIR, print the marks

A part is a function or a method (`freeze`, `MixingAttention.forward`) of mixit.py or tasks.py.
Handing it out keeps its signature and its docstring, which is the assignment, and replaces its
body with `raise NotImplementedError("homework: PART; README, Homework")`. The parts are found
in the code itself (Python's own parser, `ast`), so mixit.py and tasks.py carry no homework
markers. Grading runs, for each part, the tests that the table GRADING below assigns to it.

Sections: the grading table | finding and blanking a part | handing out | grading | command line.
Only the standard library; pytest runs the tests in a subprocess, in the student's copy.
"""

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))

# -----------------------------------------------------------------------------
# The grading table: which tests grade which part, and for how many points

TEST_FILE = "test_mixit.py"  # the file that holds the tests named below

# part: (points, the tests that grade it). A node id without [...] takes every parameter of its
# test. Each part's tests exercise that part alone: they build their modules directly and stand
# in for any other part they would call, so a blanked part fails its own tests and no other's.
GRADING = {
    # the fixed random attention of MixiT (README: "MixiT's matrix")
    "mixing_matrices": (15, [
        "test_mixit.py::test_mixing_matrices_are_causal_and_rows_sum_to_one",
        "test_mixit.py::test_sink_head_is_half_self_half_first_token",
        "test_mixit.py::test_no_sink_head_when_sink_is_off",
        "test_mixit.py::test_mixing_strength_differs_between_heads_and_stays_in_range",
        "test_mixit.py::test_mixing_matrices_depend_on_seed_only",
        "test_mixit.py::test_bidirectional_mixing_matrix_is_full_and_its_rows_sum_to_one",
    ]),
    # y_h = A_h V_h: attention without queries or keys
    "MixingAttention.forward": (15, [
        "test_mixit.py::test_mixing_attention_is_a_times_v_per_head_then_o",
        "test_mixit.py::test_mixing_attention_uses_the_top_left_corner_of_a_for_a_shorter_input",
        "test_mixit.py::test_mixing_attention_never_lets_a_pad_reach_a_real_token",
    ]),
    # rotary position embeddings: a rotation whose angle grows with the position
    "apply_rotary": (10, [
        "test_mixit.py::test_rotary_preserves_norms",
        "test_mixit.py::test_rotary_dot_product_depends_only_on_relative_position",
        "test_mixit.py::test_rotary_turns_by_the_tables_angles_so_turns_add_up",
    ]),
    # softmax(Q K^T / sqrt(d_head)) V, the attention that MixiT replaces
    "CausalSelfAttention.forward": (20, [
        "test_mixit.py::test_causal_self_attention_is_softmax_of_q_k_over_sqrt_d_times_v",
        "test_mixit.py::test_causal_self_attention_rotates_queries_and_keys_but_not_values",
        "test_mixit.py::test_causal_self_attention_hides_pads_from_real_tokens",
    ]),
    # which parameters a variant trains
    "freeze": (15, [
        "test_mixit.py::test_frozen_qk_freezes_exactly_query_and_key_weights_and_biases",
        "test_mixit.py::test_frozen_mlp_freezes_exactly_the_mlps",
        "test_mixit.py::test_random_transformer_trains_only_embeddings_and_head",
        "test_mixit.py::test_each_variant_is_its_preset_of_parts",
        "test_mixit.py::test_freeze_counts_what_it_froze_and_refuses_a_part_the_model_lacks",
    ]),
    # the loss reads the answer positions only
    "masked_loss": (10, [
        "test_mixit.py::test_masked_loss_only_looks_at_masked_positions",
        "test_mixit.py::test_masked_loss_gradient_reaches_only_the_scored_positions",
        "test_mixit.py::test_masked_loss_ignores_rows_without_answers_and_scores_uniform_logits_at_log_vocab",
    ]),
    # the data of one task: k-hop induction
    "sample_hop": (15, [
        "test_mixit.py::test_hop_answers_match_a_python_loop",
        "test_mixit.py::test_hop_has_no_adjacent_repeats_and_no_constant_shortcut[1]",
        "test_mixit.py::test_task_batches_have_the_right_shapes_and_tokens[hop]",
        "test_mixit.py::test_training_batches_follow_the_generator_seed[hop]",
        "test_mixit.py::test_test_set_is_fixed_by_the_data_seed[hop]",
    ]),
    # more tasks, graded when named on the command line (not handed out by default)
    "sample_add": (10, [
        "test_mixit.py::test_add_answer_is_the_reversed_sum",
        "test_mixit.py::test_task_batches_have_the_right_shapes_and_tokens[add]",
        "test_mixit.py::test_training_batches_follow_the_generator_seed[add]",
    ]),
    "sample_needle": (10, [
        "test_mixit.py::test_needle_answer_is_the_value_of_the_queried_key",
        "test_mixit.py::test_task_batches_have_the_right_shapes_and_tokens[needle]",
        "test_mixit.py::test_training_batches_follow_the_generator_seed[needle]",
    ]),
    "sample_induction": (10, [
        "test_mixit.py::test_induction_query_appears_once_and_answer_is_its_follower",
        "test_mixit.py::test_task_batches_have_the_right_shapes_and_tokens[induction]",
        "test_mixit.py::test_training_batches_follow_the_generator_seed[induction]",
    ]),
    "sample_dyck": (10, [
        "test_mixit.py::test_dyck_label_matches_the_brackets",
        "test_mixit.py::test_task_batches_have_the_right_shapes_and_tokens[dyck]",
        "test_mixit.py::test_training_batches_follow_the_generator_seed[dyck]",
    ]),
}

# A first assignment: the model's two attentions and RoPE, the freezing, the loss, one task.
DEFAULT_PARTS = ["mixing_matrices", "MixingAttention.forward", "apply_rotary",
                 "CausalSelfAttention.forward", "freeze", "masked_loss", "sample_hop"]

SOURCES = ["mixit.py", "tasks.py"]  # the files whose functions can be handed out
# what a student needs: the code, its tests (which import mixit, runtime and tasks), this file
HANDOUT_FILES = SOURCES + ["runtime.py", TEST_FILE, "homework.py", "README.md", "requirements.txt"]
ASSIGNMENT = "homework_parts.txt"  # written into the copy: the parts handed out, for grading
GRADE_TIMEOUT_S = 600  # an endless loop in a student's code must not hang the grader


class HomeworkError(Exception):
    """A problem with what was asked (unknown part, folder in the way): printed as one line."""


# -----------------------------------------------------------------------------
# Finding and blanking a part


def find_parts(source):
    """The parts of a module's source: {"name" or "Class.method": its ast.FunctionDef}. Only
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


def all_parts(folder=HERE):
    """{part: the file that defines it}, over SOURCES, in the order of the files."""
    where = {}
    for name in SOURCES:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for part in find_parts(f.read()):
                where[part] = name
    return where


def stub(part):
    """The statement that replaces a blanked body."""
    return f'raise NotImplementedError("homework: {part}; README, Homework")'


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


# -----------------------------------------------------------------------------
# Handing out


def check_parts(parts, folder=HERE):
    """Refuse, in one line, a part that is neither a function nor a method of SOURCES."""
    known = all_parts(folder)
    unknown = [p for p in parts if p not in known]
    if unknown:
        raise HomeworkError(f"unknown part(s) {', '.join(unknown)}; the parts of "
                            f"{' and '.join(SOURCES)} are: {', '.join(known)}")
    return known


def handout(dest, parts=None, repo=HERE):
    """Write a student's copy of the project into dest (new or empty), with parts blanked.
    Returns the parts, in the order given."""
    parts = list(dict.fromkeys(parts or DEFAULT_PARTS))  # in order, each once
    known = check_parts(parts, repo)
    if os.path.exists(dest) and (not os.path.isdir(dest) or os.listdir(dest)):
        raise HomeworkError(f"{dest} exists and is not an empty folder; hand out into a new one")
    os.makedirs(dest, exist_ok=True)
    for name in HANDOUT_FILES:
        with open(os.path.join(repo, name), encoding="utf-8") as f:
            text = f.read()
        mine = [p for p in parts if known[p] == name]
        with open(os.path.join(dest, name), "w", encoding="utf-8") as f:
            f.write(blank(text, mine) if mine else text)
    with open(os.path.join(dest, ASSIGNMENT), "w", encoding="utf-8") as f:
        f.write("# the parts of this homework, one a line; `python homework.py grade .` grades "
                "these\n" + "".join(p + "\n" for p in parts))
    return parts


# -----------------------------------------------------------------------------
# Grading


def assignment(folder):
    """The parts a copy was handed out with (its ASSIGNMENT file); every part of the grading
    table where there is none (the teacher's own repository)."""
    path = os.path.join(folder, ASSIGNMENT)
    if not os.path.isfile(path):
        return list(GRADING)
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def quiet_env():
    """The environment of a subprocess that runs in the copy: it leaves no __pycache__ there."""
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def check_copy(folder):
    """None if the copy's code imports, else why not, in one line. Without this, a syntax error
    would fail every test at once with a long traceback; here it is one file and one line."""
    for name in SOURCES + ["runtime.py", TEST_FILE]:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            return f"{name} is missing"
        try:
            with open(path, encoding="utf-8") as f:
                compile(f.read(), path, "exec")
        except SyntaxError as e:
            return f"{name}, line {e.lineno}: {e.msg}"
        except ValueError as e:  # not UTF-8 text, a null byte
            return f"{name}: {e}"
    # an error when the modules run: a name used at import time, an import that fails
    try:
        done = subprocess.run([sys.executable, "-c", "import mixit, tasks"], cwd=folder,
                              capture_output=True, text=True, env=quiet_env(), timeout=120)
    except subprocess.TimeoutExpired:
        return "importing mixit and tasks ran past 120 s"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return f"importing mixit and tasks fails: {last}"
    return None


def run_tests(folder, node_ids, timeout=GRADE_TIMEOUT_S):
    """Run the tests node_ids in the copy at folder, in one pytest subprocess whose working
    folder is the copy (so the copy's modules are the ones imported). Returns {node id: None if
    it passed, else the first line of why not}: one entry per test that ran (a test with
    parameters gives one per parameter) and one per asked node id that did not run at all."""
    # a node id that names no test makes pytest run none at all: ask only for tests that exist
    present = defined_tests(folder)
    results = {node: f"no such test in {TEST_FILE}" for node in node_ids
               if node.split("::")[-1].split("[")[0] not in present}
    node_ids = [node for node in node_ids if node not in results]
    if not node_ids:  # (pytest without a node id would run every test it finds)
        return results
    scratch = tempfile.mkdtemp(prefix="homework-")  # pytest's report and tmp_path: not in the copy
    report = os.path.join(scratch, "report.xml")
    # --tb=line: a full traceback per failure costs seconds when a whole part fails; the student
    # gets it from pytest itself (README, Homework)
    cmd = [sys.executable, "-m", "pytest", "-q", "--tb=line", "-p", "no:cacheprovider",
           f"--junitxml={report}", f"--basetemp={os.path.join(scratch, 'tmp')}", *node_ids]
    try:
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=timeout,
                              env=quiet_env())
        said = (done.stderr.strip() or done.stdout.strip() or "pytest said nothing").splitlines()
        not_run = "did not run: " + next((line for line in said if "ERROR" in line), said[-1])
        results.update(read_report(report) if os.path.isfile(report) else {})
    except subprocess.TimeoutExpired:
        not_run = f"the tests ran past {timeout} s (an endless loop?)"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for node in node_ids:
        if not any(ran == node or ran.startswith(node + "[") for ran in results):
            results[node] = not_run
    return results


def defined_tests(folder):
    """The names of the test functions in the copy's TEST_FILE."""
    with open(os.path.join(folder, TEST_FILE), encoding="utf-8") as f:
        return {node.name for node in ast.parse(f.read()).body if isinstance(node, ast.FunctionDef)}


def read_report(path):
    """pytest's JUnit XML report -> {node id: None if the test passed, else the first line of
    its failure's message}. A skipped test did not pass."""
    results = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        node = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if problem is None:
            results[node] = None
        else:
            message = (problem.get("message") or "").strip() or problem.tag
            results[node] = " ".join(message.splitlines()[0].split())
    return results


def tests_of(part, results):
    """[(node id, None or why it failed)] of the part's tests, in the table's order."""
    return [(node, why) for pattern in GRADING[part][1] for node, why in results.items()
            if node == pattern or node.startswith(pattern + "[")]


def grade(folder):
    """Grade the parts that the copy at folder was handed out with. Returns (rows, broken):
    a row per part (part, tests passed, tests, points earned, points, the first failure), and
    why the copy does not import (None if it does). A part earns its points in proportion to
    its tests passed; a copy that does not import earns nothing."""
    parts = assignment(folder)
    broken = check_copy(folder)
    nodes = [node for part in parts if part in GRADING for node in GRADING[part][1]]
    results = run_tests(folder, nodes) if nodes and not broken else {}
    rows = []
    for part in parts:
        if part not in GRADING:
            rows.append((part, 0, 0, 0, 0, "no tests in homework.py's GRADING: run them all"))
            continue
        points, mine = GRADING[part][0], tests_of(part, results)
        passed = sum(why is None for _, why in mine)
        first = next((f"{why}  ({node.split('::')[-1]})" for node, why in mine if why), "")
        if broken:
            first, mine = "not graded: the copy does not import", GRADING[part][1]
        earned = round(points * passed / len(mine), 1) if mine else 0
        rows.append((part, passed, len(mine), earned, points, first))
    return rows, broken


def show(rows, width=120):
    """The marks as a table, a part a line; the first failure is cut to fit the line."""
    lines = [f"{'part':<28} {'tests':>6} {'points':>9}  first failure"]
    for part, passed, n, earned, points, first in rows:
        line = f"{part:<28} {f'{passed}/{n}':>6} {f'{earned:g}/{points}':>9}  "
        room = width - len(line)
        lines.append(line + (first if len(first) <= room else first[:room - 3] + "..."))
    earned, points = round(sum(r[3] for r in rows), 1), sum(r[4] for r in rows)
    lines.append(f"{'total':<28} {'':>6} {f'{earned:g}/{points}':>9}")
    return "\n".join(lines)


# -----------------------------------------------------------------------------
# Command line

USAGE = """usage: python homework.py handout DIR [PART ...]   write a student's copy into DIR
       python homework.py grade DIR                grade the copy in DIR, part by part
default parts: """ + ", ".join(DEFAULT_PARTS)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if len(argv) >= 2 and argv[0] == "handout":
            parts = handout(argv[1], argv[2:])
            print(f"handed out {len(parts)} part(s) in {argv[1]}: {', '.join(parts)}")
            print(f"the student runs: cd {argv[1]} && python homework.py grade .")
            return 0
        if len(argv) == 2 and argv[0] == "grade":
            if not os.path.isdir(argv[1]):
                raise HomeworkError(f"{argv[1]} is not a folder")
            rows, broken = grade(argv[1])
            if broken:
                print(f"the copy in {argv[1]} does not import, so no test can run: {broken}")
            print(show(rows))
            full = not broken and all(passed == n for _, passed, n, _, points, _ in rows if points)
            return 0 if full else 1
        print(USAGE, file=sys.stderr)
        return 2
    except HomeworkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
