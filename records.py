"""
Read the run records, and compare cells by the rules that every table, verdict and figure uses.

Each run appends one record to results/<scale>.jsonl (mixit.py, runtime.append_record), tagged
table/task/variant/seed. A cell is a tag without its seed (t1/needle/mixit); `load` gives
{cell: [record per seed]}. A cell's seeds are shown as mean ± std (n); two cells are compared
only beyond their seeds' spread (`differ`, `same`), a cell whose seeds lie far apart is marked
† (`unstable`), and each task has a floor, the best trivial rule on its test set (`baseline`).
report.py renders the tables and claims with these, figures.py draws with them.
"""

import collections
import json
import math
import os
import re
import sys

import tasks


VARIANTS = ["standard", "frozen_qk", "frozen_mlp", "mixit", "random"]
NAMES = {"standard": "Standard", "frozen_qk": "Frozen-QK", "frozen_mlp": "Frozen-MLP",
         "mixit": "MixiT", "random": "Random",
         # Frozen-QK whose frozen W_Q, W_K start N(0, 0.02^2) as in the reference code, instead
         # of the paper's N(0, 1/d)
         "frozen_qk_ref": "Frozen-QK, reference init 0.02",
         # Random at the same init: its frozen attention starts (and stays) near uniform (claim 6)
         "random_ref": "Random, reference init 0.02",
         # a variant in the other's block (Table 9, and the capacity rows of Table 11). MixiT
         # cannot take RoPE, which rotates queries and keys: in Standard's block it keeps its
         # learned positions, so that swap is the MLP and the residuals only
         "standard_mixblock": "Standard in MixiT's block",
         "mixit_stdblock": "MixiT in Standard's block (learned positions kept)",
         # MixiT as the reference ships it: its width multipliers and hidden down_proj factor
         # (mixit.py --mixit_shipped, shipped_factors)
         "mixit-shipped": "MixiT as shipped"}
UNSTABLE = 10  # points: seeds further apart than this mark their cell "†", unstable at its budget
PERCENT = {"acc", "exact", "best_acc"}  # fractions, shown in %
DIGITS = {"loss": 3, "bpb": 3, "token_cov": 3, "bits_per_param": 2, "wall_s": 0, "train_s": 0,
          "steps": 0, "ms": 0, "samples": 0, "reached": 0, "mixit_mult": 2}
# Where each task's cells of the main tables live: t1/needle/<variant>, ...
HOME = {"needle": "t1/needle", "induction": "t1/induction", "copy": "t1/copy", "hop": "t1/hop",
        "lm": "t2/lm", "add": "t3/add", "modadd": "t3/modadd", "dyck": "t3/dyck",
        "memorize": "t4/memorize"}


# -----------------------------------------------------------------------------
# Records: each run appends one to results/<scale>.jsonl, tagged table/task/variant/seed.
# A cell is a tag without its seed (t1/needle/mixit): records[cell] = [record per seed].


def read_records(path):
    """Every record of a .jsonl file, in order. A line that is not one (a run killed while
    writing, a full disk) is named on stderr and skipped: one bad line hides no other."""
    if not os.path.exists(path):
        return []
    records = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            try:
                if line.strip():
                    r = json.loads(line)
                    if not isinstance(r["config"]["tag"], str):  # every run record has one
                        raise TypeError
                    records.append(r)
            except (ValueError, KeyError, TypeError) as e:
                print(f"warning: {path} line {i} skipped: not a run record "
                      f"({type(e).__name__})", file=sys.stderr)
    return records


def cell_of(tag):
    return re.sub(r"/s\d+$", "", tag)


def corpus_of(r):
    """The text an lm record trained on: its corpus_sha256 (records since issue 53), else what
    its Python gave. The quick records were made on Python 3.11.7, whose help text and stdlib are
    the very bytes tasks.py ships (corpus/README.md), so theirs is the shipped digest; any other
    Python's text is named by its version (the help text changes even between patch releases)."""
    data = r["config"].get("data", "")
    if "corpus_sha256" in r:
        return r["corpus_sha256"]
    if data not in tasks.CORPORA:
        return data  # a file of the user's, by its path
    if r.get("python") == "3.11.7":
        return tasks.CORPORA[data][1]
    return f"Python {r.get('python')}'s {data or 'help'} text"


def stale(r):
    """Did a record run a recipe that has changed under the same flags? run_all.sh reruns it
    (bench.py, same_recipe) and report.py marks it ° until then: a --mixit_shipped run before its
    sink's row 0 was the reference's (sink_row0, issue 53), an lm run on a text other than the
    shipped one (corpus_of)."""
    c = r["config"]
    if c.get("mixit_shipped") and r.get("sink_row0") != 0.5:
        return True
    shipped = tasks.CORPORA.get(c.get("data", ""))  # (file, digest), None for a file of the user's
    return c.get("task") == "lm" and shipped is not None and corpus_of(r) != shipped[1]


def one_recipe(runs):
    """The records of one cell that it pools: never a stale record with a fresh one (the stale
    ones count, marked °, only until a rerun gives the cell a fresh record), never two texts
    (lm: the text of its newest record)."""
    runs = [r for r in runs if not stale(r)] or runs
    corpus = corpus_of(runs[-1]) if runs[-1]["config"].get("task") == "lm" else None
    return [r for r in runs if corpus is None or corpus_of(r) == corpus]


def current(records):
    """The records that count, in file order: a rerun (run_all.sh reruns a cell whose recipe
    changed) supersedes its earlier record; benchmarks keep every record (one per machine); and
    a cell keeps the records it may pool (one_recipe)."""
    latest = {r["config"]["tag"]: r for r in records if "history" in r}
    runs = [r for r in records if "history" not in r or latest[r["config"]["tag"]] is r]
    cells = collections.defaultdict(list)
    for r in runs:
        cells[cell_of(r["config"]["tag"])].append(r)
    kept = {id(r) for cell in cells.values() for r in one_recipe(cell)}
    return [r for r in runs if id(r) in kept]


def load(path, earlier=()):
    """{cell: its records} of a results file; earlier: the tags to mark superseded (above), as
    are stale records (stale)."""
    cells = collections.defaultdict(list)
    for r in current(read_records(path)):
        r["superseded"] = r["config"]["tag"] in earlier or stale(r)
        cells[cell_of(r["config"]["tag"])].append(r)
    # Table 3's add runs are also Table 6's cells at their depth (2 layers): run_all.sh does not
    # run the same configuration twice, so those cells borrow them.
    for v in ("mixit", "random"):
        for r in cells.get(f"t3/add/{v}", []):
            cell = f"t6/add/{v}-L{r['config']['n_layer']}"
            if not any(x["config"]["tag"].startswith(cell + "/") for x in cells[cell]):
                cells[cell].append(r)
    return cells


def final(cells, cell, key="acc"):
    """Each seed's final value of `key` in a cell; [] where it did not run."""
    return [r["final"][key] for r in cells.get(cell, []) if key in r.get("final", {})]


def first_at(run, target):
    """A run's first evaluation (its history entry) with test accuracy >= target; None if none."""
    return next((h for h in run["history"] if h.get("acc", 0) >= target), None)


def config_of(cells, prefix, key="task_size"):
    """A setting of the runs under `prefix` (their task size, by default); '?' if none ran."""
    return next((runs[0]["config"][key] for c, runs in cells.items() if c.startswith(prefix)), "?")

# -----------------------------------------------------------------------------
# A cell's seeds as text, and the rules that compare two cells


def mean_std(values):
    """(mean, sample std) of a list; std 0 for a single value."""
    m = sum(values) / len(values)
    if len(values) == 1:
        return m, 0.0
    return m, math.sqrt(sum((x - m) ** 2 for x in values) / (len(values) - 1))


def unstable(accs):
    """Do a cell's seeds (accuracies in [0, 1]) lie more than UNSTABLE points apart? Such a cell
    is marked †, and no verdict of the claims table may rest on it."""
    return len(accs) > 1 and 100 * (max(accs) - min(accs)) > UNSTABLE


def stat(values, scale=100, digits=1, n=True):
    """'mean ± std (n=N)' of a list of numbers, '–' when there are none (a missing cell); with
    n=False without the n (the claims and timing tables state it once). Unstable accuracies are
    marked †."""
    if not values:
        return "–"
    m, sd = mean_std([x * scale for x in values])
    count = f" (n={len(values)})" if n else ""
    if len(values) == 1:
        return f"{m:.{digits}f}{count}"
    dagger = " †" if scale == 100 and unstable(values) else ""
    return f"{m:.{digits}f} ± {sd:.{digits}f}{count}{dagger}"


def entry(cells, cell, key="acc"):
    """A table's entry for a cell: stat() of its final `key`, accuracies in %, ° where a record
    of an earlier recipe is read."""
    return (stat(final(cells, cell, key), 100 if key in PERCENT else 1, DIGITS.get(key, 1))
            + old(cells.get(cell, [])))


def old(runs):  # ' °' where a run ran an earlier recipe (superseded), else ''
    return " °" if any(r.get("superseded") for r in runs) else ""


def pct(values):  # '+mean ± std%' of percentages (one without the ±)
    m, sd = mean_std(values)
    return f"{m:+.0f}%" if len(values) == 1 else f"{m:+.0f} ± {sd:.0f}%"


def same(a, b, points=5):
    """Are two cells of accuracies equal? Their means lie within `points` of each other AND each
    cell's std is under `points`: a noisier cell can only make this harder to pass, never easier."""
    (ma, sa), (mb, sb) = mean_std(a), mean_std(b)
    return 100 * abs(ma - mb) <= points and 100 * max(sa, sb) < points


def differ(a, b):
    """Do two cells differ by more than the larger of their standard deviations (or 1 point, for
    seeds that agree exactly)? True / False; None if either is missing."""
    if not a or not b:
        return None
    (ma, sa), (mb, sb) = mean_std(a), mean_std(b)
    return abs(ma - mb) > max(sa, sb, 0.01)


_FLOORS = {}


def baseline(cells, prefix):
    """(task, rule, score): the best trivial rule on the test set of the cells under `prefix`
    (tasks.py, `baselines`), computed from the first record's task settings; None if no cell."""
    r = next((runs[0] for c, runs in sorted(cells.items()) if c.startswith(prefix)), None)
    if r is None:
        return None
    c = r["config"]
    k = (c["task"], c["task_size"], "cpu", c["data_seed"], c["eval_size"], c.get("data", ""))
    if k not in _FLOORS:
        try:
            task = tasks.make_task(*k, c.get("test_data", ""))
        except tasks.UsageError:  # a data file that is gone since the run (Yelp): no floor
            return None
        _FLOORS[k] = (c["task"],) + tuple(tasks.best_baseline(task))
    return _FLOORS[k]


def floor(cells, prefix, key="acc"):
    """The floor row's entry: 'score (rule)' of the best trivial rule (see baseline)."""
    found = baseline(cells, prefix)
    if found is None:
        return "–"
    task, rule, score = found
    if task == "lm":
        return f"{score:.3f} ({rule})" if key == "loss" else f"{score / math.log(2):.3f}"
    return f"{100 * score:.1f} ({rule})"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# -----------------------------------------------------------------------------
# Cells that several tables and figures read


def at_depths(cells, row):  # {depth: cell} of the cells ROW-L<depth> that ran, by depth
    return dict(sorted((int(c.rsplit("-L", 1)[1]), c) for c in cells if c.startswith(row + "-L")))


# The draw study (how much does a run's random draw matter?): its rows, on needle, add and lm
DRAW_ROWS = ("standard", "frozen_qk", "mixit", "mixit-nosink")


def draw_runs(cells):
    """{(row, task): runs} of the draw study: each variant's seeds 0-2 (the main tables) with
    its seeds 3-9 (s1/), and MixiT without its sink head (s3/)."""
    return {(v, t): cells.get(f"s3/{t}/{v}", []) if v == "mixit-nosink"
            else cells.get(f"{HOME[t]}/{v}", []) + cells.get(f"s1/{t}/{v}", [])
            for v in DRAW_ROWS for t in ("needle", "add", "lm")}


def draw_values(runs, task):
    """The draw study's number per run: accuracy in % (needle, add) or validation loss (lm)."""
    return [r["final"]["loss"] if task == "lm" else 100 * r["final"]["acc"] for r in runs]


# -----------------------------------------------------------------------------
# The rule for the prose: a sentence of README or FINDINGS that states a cause or a certainty
# is one of three kinds (issue 46): a result (it carries a marked number, `<!--= ... -->`, or
# names the cells, records or tables it reads), a tested explanation (it names its experiment:
# a record tag such as `x/c6-...`, or a test), or a hypothesis (it says so). report.py --check
# lists every such sentence that is none of the three. It reads words, not meaning: it keeps the
# marks in place, and a reviewer still reads what they say.

CERTAIN = re.compile(r"\b(because|is why|explains?|explained|explanation|rules? out|ruled out|"
                     r"never|always|stable|no different|fails?|failed|collapses?|collapsed|"
                     r"cannot|can't|however long|proves?|proven|so the|therefore|thus|"
                     r"the reason|due to|caused?|causes|only because|does not depend|"
                     r"guarantees?|certainly|clearly|must be)\b", re.I)
SOURCE = re.compile(r"<!--=|`[a-z][a-z0-9]*/[^`\s]+`|\b[a-z]\d*/[a-z_]+[\w./*-]*|\brecords?\b|"
                    r"\btest_\w+|\bTables? \d|\bclaims table\b|\(n = \d|\bn = \d|"
                    r"\bresults/\w|REFERENCE_NOTES", re.I)
HEDGE = re.compile(r"\b(untested|hypothes[ie]s|we think|we guess|we expect|may|might|perhaps|"
                   r"possibly|likely|probably|presumably|suggests?|could|not tested|is open|"
                   r"open question|unknown)\b", re.I)


def prose(doc):
    """The sentences of a Markdown document's running text: without code blocks, tables,
    rendered blocks (between `<!-- scale: ... -->` lines), headings, images and comments."""
    doc = re.sub(r"```.*?```", "", doc, flags=re.S)
    doc = re.sub(r"^(<!-- [^=].*? -->)$.*?^\1$", "", doc, flags=re.S | re.M)
    lines = ["" if not line.strip() or line.lstrip().startswith(("|", "#", "![")) or
             re.fullmatch(r"\s*<!--[^=].*-->\s*", line) else line for line in doc.splitlines()]
    # a paragraph, and a list item, starts a sentence of its own, whatever came before it ended with
    text = " ".join("\n" + line if not line or re.match(r"\s*([-*]|\d+\.) ", line) else line
                    for line in lines)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*(\[`])|\n", text) if s.strip()]


def unsupported(doc):
    """The sentences of doc that state a cause or a certainty (CERTAIN) with no source (a marked
    number, a cell, record, test or table: SOURCE) and no mark of a hypothesis (HEDGE)."""
    return [s for s in prose(doc)
            if CERTAIN.search(s) and not SOURCE.search(s) and not HEDGE.search(s)]
