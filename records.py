"""
Read the run records, and compare cells by the rules that every table, verdict and figure uses.

Each run appends one record to results/<scale>.jsonl (mixit.py, runtime.append_record), tagged
table/task/variant/seed. A cell is a tag without its seed (t1/needle/mixit); `load` gives
{cell: [record per seed]}. A cell's seeds are shown as mean ± std (n); two cells are compared
only beyond their seeds' spread (`differ`, `same`), a cell whose seeds lie far apart is marked
† (`unstable`), and each task has a floor, the best trivial rule on its test set (`baseline`).
report.py renders the tables and claims with these, figures.py draws with them. The claims'
thresholds are read across each cell's spread (`over_spread`, `outcome`); the prose's numbers and
words of comparison come from markers (`number`), and `unruled` finds those typed by hand.
"""

import collections
import fnmatch
import itertools
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
    """Are two cells of accuracies equal, within `points`, over the spread (over_spread, below)?
    True, False, or None where the spread straddles the line: a noisier cell can only make a pass
    harder, never easier."""
    return over_spread(lambda x, y: 100 * abs(x - y) <= points, a, b)


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
    number, a cell, record, test or table: SOURCE) and no mark of a hypothesis (HEDGE). The
    sections that ask rather than state (UNREAD: the homework and its exercises) are skipped."""
    return [s for s in prose(readable(doc))
            if CERTAIN.search(s) and not SOURCE.search(s) and not HEDGE.search(s)]


# -----------------------------------------------------------------------------
# Verdicts that noise cannot pass (issue 54). A rule with a band or a threshold ("within 5
# points", "≥ 90%", "below half of") is read across its cells' mean ± std (over_spread): it holds
# (True) where it holds at all of them, fails (False) where at none, and is open (None) where the
# spread straddles its line. A claim's verdict settles each open test both ways; where the two
# ways give different verdicts, the claim is unsettled.


def over_spread(test, *cells):
    """test(*values) read over the cells' mean ± std: True where it holds at every point read,
    False where at none, None (open) otherwise. Each band is read at its ends, its mean, eight
    steps between, and the other bands' ends and means that fall inside it (where two bands
    overlap, their values can meet)."""
    bands = [(m - s, m, m + s) for m, s in map(mean_std, cells)]
    ends = {x for b in bands for x in b}
    points = [{lo + (hi - lo) * i / 8 for i in range(9)} | {m} | {x for x in ends if lo <= x <= hi}
              for lo, m, hi in bands]
    held = {bool(test(*p)) for p in itertools.product(*points)}
    return held.pop() if len(held) == 1 else None


def beyond(a, b):
    """Is cell a above cell b beyond the spread (differ)? True or False."""
    return bool(differ(a, b)) and mean_std(a)[0] > mean_std(b)[0]


def both(*tests):  # and, for True / False / None (open)
    return False if False in tests else None if None in tests else True


def either(*tests):  # or, for True / False / None (open)
    return True if True in tests else None if None in tests else False


def outcome(tests, partly=1):
    """A claim's verdict from its tests: 'reproduced' where all hold, 'partly' where at least
    `partly` hold, else 'not reproduced'; each open test (None) is settled both ways, and where
    the ways disagree the verdict is 'unsettled'."""
    open_ = [i for i, t in enumerate(tests) if t is None]
    seen = set()
    for fill in itertools.product((True, False), repeat=len(open_)):
        t = list(tests)
        for i, f in zip(open_, fill):
            t[i] = f
        seen.add("reproduced" if all(t) else "partly" if sum(t) >= partly else "not reproduced")
    return seen.pop() if len(seen) == 1 else "unsettled"


# -----------------------------------------------------------------------------
# Budgets chosen by doubling (issue 65). Under a schedule that decays to 0 (cosine), a run's last
# evaluations come at a learning rate near 0, so "flat at its end" holds for any budget and says
# nothing about capacity or convergence. A claim about capacity reads a cell at a budget B only
# where the same cell given 2B steps (a run of its own, with its own schedule) moves its mean by
# less than its seeds' spread (or SETTLED points, for seeds that agree). The budgets of a ladder
# are cells of their own: CELL at its base budget, CELL-steps<N> at each doubling.
LADDER_SEEDS = 3  # seeds at each budget tried; the budget a verdict reads gets READ_SEEDS
READ_SEEDS = 5
SETTLED = 1.0  # points: a doubling that moves the mean less than this (or the spread) settles it
STEPS = re.compile(r"-steps(\d+)$")


def ladder(cells, base):
    """[(steps, cell)] of a cell's budgets that ran, smallest first: the base cell, then each
    base-steps<N> cell."""
    rungs = [(runs[0]["config"]["steps"], c) for c, runs in cells.items()
             if runs and (c == base or (STEPS.search(c) and STEPS.sub("", c) == base))]
    return sorted(rungs)


def doubling(a, b):
    """What doubling a cell's budget did, from its seeds' final accuracies at B (a) and 2B (b):
    'settled' (the mean moved less than the larger spread, or SETTLED points), 'moved', 'noisy'
    (a side is unstable, †: a verdict may not rest on it, so it is no evidence of settling), or
    None while either side has fewer than LADDER_SEEDS seeds."""
    if min(len(a), len(b)) < LADDER_SEEDS:
        return None
    if unstable(a) or unstable(b):
        return "noisy"
    (ma, sa), (mb, sb) = mean_std(a), mean_std(b)
    return "settled" if 100 * abs(mb - ma) < max(100 * sa, 100 * sb, SETTLED) else "moved"


def read_budget(cells, base, key="acc"):
    """(cell, steps) of the budget a verdict reads: the first B of the ladder whose doubling (to
    2B) settled; None where none has settled yet (the ladder goes on, run_all.sh --claims)."""
    rungs = ladder(cells, base)
    for (s, c), (s2, c2) in zip(rungs, rungs[1:]):
        if s2 == 2 * s and doubling(final(cells, c, key), final(cells, c2, key)) == "settled":
            return c, s
    return None


def capacity_cell(cells, base):
    """(cell, settled) that a capacity claim reads of a ladder: its read_budget, settled; where
    no doubling has settled, the largest budget that ran, not settled (None where nothing ran)."""
    read = read_budget(cells, base)
    if read:
        return read[0], True
    rungs = ladder(cells, base)
    return (rungs[-1][1], False) if rungs else (None, False)


def budget_wanted(cells, base, budgets, steps, seed):
    """Does the doubling rule want this run of a ladder? budgets: the ladder's steps, the base
    cell's first (run_all.sh lists them all). A budget's first LADDER_SEEDS seeds run once the
    budget below it has finished its seeds and every doubling below that one moved (or was
    noisy); seeds up to READ_SEEDS run at the budget whose doubling settled, the one a verdict
    reads."""
    names = [base] + [f"{base}-steps{b}" for b in budgets[1:]]
    fin = [final(cells, c) for c in names]
    i = budgets.index(steps)
    if any(doubling(fin[j], fin[j + 1]) not in ("moved", "noisy") for j in range(i - 1)):
        return False  # a smaller budget settled (the verdict reads it), or one has not finished
    if i > 0 and len(fin[i - 1]) < LADDER_SEEDS:
        return False  # the budget below has not finished: its doubling waits for it
    if seed < LADDER_SEEDS:
        return True
    return (seed < READ_SEEDS and i + 1 < len(budgets)
            and doubling(fin[i], fin[i + 1]) == "settled")


# -----------------------------------------------------------------------------
# Words of comparison and typed numbers (issue 54). In a sentence about records (one that cites a
# marked number, a cell, a table, a seed or n), a word that compares or counts (COMPARE) comes
# from a marker that computes it (`vs:`, `share:`, `trend`, `floor`: "Numbers in prose", below),
# or the sentence is marked as a hypothesis (HYPOTHESIS). And no sentence types a measured
# number (TYPED): a percentage, a size, a count of points or bits, "two to four times". What a
# marker renders, code, link targets and the paper's own figures ("(paper: ...)") are not read.
# The Homework and Exercises sections set tasks; they state no result, and are not read.

COMPARE = re.compile(r"\b(higher|lower|same|most|all|every|none|nothing|stays?|stayed|flat|"
                     r"climb\w*|near|floors?|half|quarter|third|fraction|share|above|below|"
                     r"better|worse|faster|slower|beyond|more than|less than|as much)\b|[≈<>]",
                     re.I)
TYPED = re.compile(r"\d\s*(%|[KMG]B\b|ms\b|points?\b|bits?\b|±|→)|\d+(\.\d+)?x\b|"
                   r"\b(twice|half as|(two|three|four|five|ten)( to \w+)? times)\b", re.I)
HYPOTHESIS = re.compile(r"\b(hypothes[ie]s|untested|we think|not tested)\b", re.I)
ABOUT = re.compile(r"⟦marked⟧|\b(?:[a-z]\d*|gpu|queue)/[a-z_]+|\bTables? \d|\bn = \d|"
                   r"\bseeds?\b|\brecords?\b|\bclaims? \d", re.I)
UNREAD = ("Homework", "Exercises")


def bare(sentence, code=False):
    """A sentence without what it may hold: rendered markers (a sentence that holds one is about
    records), code and link targets (kept with code=True: a cell in code is cited), the paper's
    quoted figures."""
    s = re.sub(r"<!--=.*?<!--/-->", " ⟦marked⟧ ", sentence)
    s = s if code else re.sub(r"`[^`]*`|\]\([^)]*\)", " ", s)
    return re.sub(r"\(paper\b[^)]*\)|\bpaper: [^;.)]*", " ", s)


def readable(doc):
    """doc without its UNREAD sections (a "## " heading to the next), which no rule reads."""
    return re.sub(rf"^## ({'|'.join(UNREAD)})\b.*?(?=^## |\Z)", "", doc, flags=re.S | re.M)


def unruled(doc):
    """(kind, sentence) for each sentence of doc that types a number ('typed number') or
    compares without a marker or a hypothesis mark ('comparison'), as above."""
    found = []
    for s in prose(readable(doc)):
        word = bare(s)
        if TYPED.search(word):
            found.append(("typed number", s))
        elif ABOUT.search(bare(s, code=True)) and COMPARE.search(word) and not HYPOTHESIS.search(s):
            found.append(("comparison", s))
    return found


# -----------------------------------------------------------------------------
# Numbers in prose. A number that README.md or FINDINGS.md states outside a rendered table sits
# between two markers that say where it comes from, and report.py rewrites it from the records:
#     MixiT stores <!--= quick c4/memorize/mixit bits_per_param -->1.08 ± 0.05<!--/--> bits
# The spec is `FILE CELL KEY [FORMAT]`: FILE is results/FILE.jsonl; CELL a tag without its seed
# (shell wildcards allowed, e.g. t1/*; or a whole tag with /sN for one run; a,b for both; with
# [KEY=VALUE&KEY=VALUE] at its end, only the runs whose config (else record) has those values,
# superseded runs too: the way to cite a run of an earlier recipe, e.g.
# t6/add/mixit-L2[lr=1e-3&n_head=64] or t4/memorize/mixit-shipped[sink_row0=None]); KEY a
# number of the record's `final`, of the record itself, of its `profile` or `pack` (bench.py
# --profile, --pack) or of its config (acc, loss, bits_per_param, wall_s, steps, mixit_mult,
# ...), `runs` (how many distinct runs), `minutes` (their summed wall time), `acc@STEP` (the
# accuracy at that evaluation), `reached:PCT` (the first evaluation at PCT% or more), `qk_bound`
# (the % of the run's Standard step FLOPs that freezing W_Q, W_K can save: bench.frozen_qk_bound),
# `speedup:VARIANT` (a benchmark's % more samples/s than Standard) or `ms:VARIANT` and
# `samples:VARIANT` (a benchmark's ms/step and samples/s); FORMAT
# is pm (mean ± std, the default), mean, seeds (each run's value) or range, with `:DIGITS`.
# Words of comparison are marked too, and rendered by the rule the verdicts use (differ: a
# difference inside the seeds' spread is no difference), so a sentence cannot say more than its
# records: FORMAT `vs:CELL2` gives "above", "below" or "within the spread of" (this cell's KEY
# against CELL2's, or CELL2's KEY2 with `vs:CELL2=KEY2`; "(n = 1)" after it where a side has one
# run, so no spread to be beyond), `share:LO,HI` the percentage of the gap from LO's mean to HI's
# that this cell's mean covers and the word it earns (share_words: "most" only from 50%), `trend`
# what its runs did over their last evaluation interval: "still rising" (the accuracy rose by more
# than a point, CLIMBING, on average) or "level", with where that was the schedule's tail (a
# learning rate near 0, where level is no test of convergence: doubling is, read_budget), or
# "stopped at its target" (--stop_acc), and `floor` where the cell stands against its task's floor
# ("at the floor" where its mean ± std comes within a point of it, else "N points above the
# floor"; for a loss, "N below the floor"). records.unruled: a word of comparison in prose about
# records comes from one of these, or its sentence is marked as a hypothesis.
CLIMBING = 0.01  # `trend`: a mean gain above this over the last evaluation interval is rising
TAIL = 0.1  # `trend`: a learning rate under this fraction of its peak is the schedule's tail
NUMBER = re.compile(r"<!--= ([^>]*?) -->(.*?)<!--/-->", re.S)


def record_values(r, key):
    """The values of a KEY (see above, but for runs and minutes, and speedup and qk_bound, which
    report.bench_values reads with bench.py) in one record."""
    base, _, at = key.partition("@")
    kind, _, arg = base.partition(":")
    if kind in ("ms", "samples"):
        field = "ms_per_step" if kind == "ms" else "samples_per_s"
        return [x[field] for x in r["bench"] if x["variant"] == arg]
    if kind == "reached":
        hit = first_at(r, float(arg) / 100)
        return [hit["step"] if hit else math.nan]
    if at:
        return [h[base] for h in r["history"] if h["step"] == int(at)]
    # a run's final result, the record itself, a profile's or a --pack's figures, the config
    v = next((d[base] for d in (r.get("final", {}), r, r.get("profile", {}), r.get("pack", {}),
                                r["config"]) if base in d), None)
    return [] if v is None else [v]


def same_value(x, text):
    """Does a config value equal the VALUE of a marker's CELL[KEY=VALUE] (1e-3 == 0.001)?"""
    try:
        return float(x) == float(text)
    except (TypeError, ValueError):
        return str(x) == text


def number(spec, records_of, record_values=record_values):
    """The text of one marked number (see NUMBER); records_of(FILE) gives a file's records,
    record_values(record, KEY) a KEY's values in one of them."""
    parts = spec.split()
    if len(parts) not in (3, 4):
        raise ValueError(f"'{spec}': expected FILE CELL KEY [FORMAT]")
    name, pattern, key = parts[:3]
    fmt, _, digits = (parts[3] if len(parts) == 4 else "pm").partition(":")

    def runs_of(pattern):  # CELL may list several patterns: a,b; and end in [KEY=VALUE&...]
        pattern, _, where = pattern.partition("[")
        conds = [c.partition("=")[::2] for c in where.rstrip("]").split("&") if c]
        runs = [r for r in records_of(name, every=bool(conds)) if any(
            fnmatch.fnmatchcase(r["config"]["tag"], p) or fnmatch.fnmatchcase(
                cell_of(r["config"]["tag"]), p) for p in pattern.split(","))
            and all(same_value(r["config"].get(k, r.get(k)), v) for k, v in conds)]
        if not runs:
            raise ValueError(f"'{spec}': no record in results/{name}.jsonl matches {pattern}")
        return runs

    def values_of(pattern, key=key):  # KEY's values over the runs of a cell
        return [v for r in runs_of(pattern) for v in record_values(r, key)]
    runs = runs_of(pattern)
    if fmt == "trend":
        return trend(runs)
    if fmt == "floor":
        return floor_words(values_of(pattern), baseline({"c": runs}, "c"), key)
    if fmt in ("vs", "share"):
        others = [digits] if fmt == "vs" else digits.split(",")  # vs: one CELL2, maybe a,b
        return compare(values_of(pattern), [values_of(*c.split("=")) for c in others], fmt)
    if key == "runs":
        return str(len({r["config"]["tag"] for r in runs}))
    if key == "minutes":
        return f"{sum(r.get('wall_s', 0) for r in runs) / 60:.{digits or 0}f}"
    values = [v for r in runs for v in record_values(r, key)]
    if not values:
        raise ValueError(f"'{spec}': the matching records have no {key}")
    base = key.partition("@")[0]
    d = int(digits) if digits else DIGITS.get(base.partition(":")[0], 1)
    values = [v * 100 if base in PERCENT else v for v in values]

    def show(v):
        return "not reached" if math.isnan(v) else f"{v:.{d}f}"
    if fmt == "seeds":
        return ", ".join(map(show, values))
    if fmt == "range":
        lo, hi = min(values), max(values)
        return show(lo) if show(lo) == show(hi) else f"{show(lo)}-{show(hi)}"
    m, sd = mean_std(values)
    if fmt == "mean" or len(values) == 1:
        return show(m)
    if fmt != "pm":
        raise ValueError(f"'{spec}': unknown format {fmt} (pm, mean, seeds or range)")
    return f"{show(m)} ± {show(sd)}"


def compare(mine, others, how):
    """The words of a marked comparison (see NUMBER): vs one cell, or a share of a gap."""
    if how == "vs":
        [other] = others
        word = {True: "above" if mean_std(mine)[0] > mean_std(other)[0] else "below",
                False: "within the spread of"}[differ(mine, other)]
        return word + (" (n = 1)" if min(len(mine), len(other)) < 2 else "")
    lo, hi = (mean_std(v)[0] for v in others)
    return share_words(100 * (mean_std(mine)[0] - lo) / (hi - lo))


def share_words(p):
    """'P% (word)': the word a share of a gap earns; "most" only at 50% or more."""
    for top, word in ((0, "none"), (20, "a small part"), (30, "about a quarter"),
                      (40, "about a third"), (50, "under half"), (99.5, "most"), (100.5, "all")):
        if p < top or (top == 0 and p <= 0):
            return f"{p:.0f}% ({word})"
    return f"{p:.0f}% (more than the whole gap)"


def floor_words(values, found, key):
    """A cell against its task's floor (baseline): 'at the floor' where its mean ± std comes
    within a point (0.01 nats for a loss) of it, else the distance, in points or nats."""
    if found is None:
        raise ValueError("no floor for this cell's task")
    m, sd = mean_std(values)
    loss = key == "loss"
    d = (found[2] - m) if loss else 100 * (m - found[2])
    if d - (sd if loss else 100 * sd) <= (0.01 if loss else 1):
        return "at the floor"
    return f"{d:.3f} nats below the floor" if loss else f"{d:.1f} points above the floor"


def trend(runs):
    """What a cell's runs did over their last evaluation interval (see NUMBER): 'stopped at its
    target' (--stop_acc), else 'still rising' (a mean gain above CLIMBING) or 'level', and where
    the schedule had decayed there (the learning rate under TAIL of its peak, as cosine to 0 leaves
    every run's end), that the words read its tail: level there is no test of convergence."""
    if all(r.get("stop", {}).get("reason", "").startswith("test accuracy") for r in runs):
        return "stopped at its target"
    gains = [r["history"][-1]["acc"] - r["history"][-2]["acc"] for r in runs]
    climbing = sum(gains) / len(gains) > CLIMBING
    tail = all(lr_fraction(r["config"], r["history"][-2]["step"]) < TAIL for r in runs)
    words = ("still rising" if climbing else "level") + " over its last evaluation interval"
    if not tail:
        return words
    return words + (", at its schedule's tail" if climbing else
                    " (its schedule's tail, where the learning rate is near 0: no test of "
                    "convergence)")


def lr_fraction(config, step):
    """The learning rate at a step as a fraction of its peak: mixit.get_lr's warm-up and cosine
    to 0 (written again here so that reading records needs no model code)."""
    warmup, steps = config["warmup"], config["steps"]
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, steps - warmup))))