"""
Read the run records, and compare cells by the rules that every table, verdict and figure uses.

Each run appends one record to results/<scale>.jsonl (mixit.py, runtime.append_record), tagged
table/task/variant/seed. A cell is a tag without its seed (t1/needle/mixit); `load` gives
{cell: [record per seed]}. A cell's seeds are shown as mean ± std (n); two cells are compared
only beyond their seeds' spread (`differ`, `same`), a cell whose seeds lie far apart is marked
† (`unstable`), and each task has a floor, the best trivial rule on its test set (`baseline`).
report.py renders the tables and claims with these, figures.py draws with them. The claims'
thresholds are read across each cell's spread (`over_spread`, `outcome`); the prose's numbers and
words of comparison come from markers (`number`), and `unsourced` finds a number typed by hand.
"""

import collections
import fnmatch
import functools
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
         # Random at the same init: its frozen attention starts near uniform (claim 6)
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
          "steps": 0, "threads": 0, "ms": 0, "samples": 0, "reached": 0, "mixit_mult": 2}
# Where each task's cells of the main tables live: t1/needle/<variant>, ...
HOME = {"needle": "t1/needle", "induction": "t1/induction", "copy": "t1/copy", "hop": "t1/hop",
        "lm": "t2/lm", "add": "t3/add", "modadd": "t3/modadd", "dyck": "t3/dyck",
        "memorize": "t4/memorize"}
_FLOORS = {}  # baseline's answer for each task's settings, made once


# -----------------------------------------------------------------------------
# Records


def read_records(path):
    """Every record of a .jsonl file; a line that is not one is named on stderr and skipped."""
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


@functools.lru_cache(maxsize=None)  # (a render asks for the cells of the same tags often)
def cell_of(tag):
    return re.sub(r"/s\d+$", "", tag)


def corpus_of(r):
    """The text an lm record trained on: its corpus_sha256, else what its Python 3.11.7 gave."""
    data = r["config"].get("data", "")
    if "corpus_sha256" in r:
        return r["corpus_sha256"]
    if data not in tasks.CORPORA:
        return data  # a file of the user's, by its path
    if r.get("python") == "3.11.7":
        return tasks.CORPORA[data][1]
    return f"Python {r.get('python')}'s {data or 'help'} text"


def stale(r):
    """Did a record run a recipe that has since changed under the same flags (a --mixit_shipped run
    before the reference's sink row 0, an lm run on another text)? Marked ° until it is rerun."""
    c = r["config"]
    if c.get("mixit_shipped") and r.get("sink_row0") != 0.5:
        return True
    shipped = tasks.CORPORA.get(c.get("data", ""))  # (file, digest), None for a file of the user's
    return c.get("task") == "lm" and shipped is not None and corpus_of(r) != shipped[1]


def one_recipe(runs):
    """The records a cell pools: never a stale one with a fresh one, never two texts (lm)."""
    runs = [r for r in runs if not stale(r)] or runs
    corpus = corpus_of(runs[-1]) if runs[-1]["config"].get("task") == "lm" else None
    return [r for r in runs if corpus is None or corpus_of(r) == corpus]


def current(records):
    """The records that count, in file order: a rerun supersedes its earlier record (benchmarks keep
    every one), and a cell keeps what it may pool (one_recipe)."""
    latest = {r["config"]["tag"]: r for r in records if "history" in r}
    runs = [r for r in records if "history" not in r or latest[r["config"]["tag"]] is r]
    cells = collections.defaultdict(list)
    for r in runs:
        cells[cell_of(r["config"]["tag"])].append(r)
    kept = {id(r) for cell in cells.values() for r in one_recipe(cell)}
    return [r for r in runs if id(r) in kept]


def load(path, earlier=()):
    """{cell: its records} of a results file; earlier: the tags to mark superseded (as is stale)."""
    cells = collections.defaultdict(list)
    for r in current(read_records(path)):
        r["superseded"] = r["config"]["tag"] in earlier or stale(r)
        cells[cell_of(r["config"]["tag"])].append(r)
    # Table 3's add runs are Table 6's 2-layer cells (run_all.sh runs a configuration once)
    for v in ("mixit", "random"):
        for r in cells.get(f"t3/add/{v}", []):
            cell = f"t6/add/{v}-L{r['config']['n_layer']}"
            if not any(x["config"]["tag"].startswith(cell + "/") for x in cells[cell]):
                cells[cell].append(r)
    # and, where Table 6's MixiT has 64 heads (the paper scale), its 2-layer cell is Table 5's
    same = [r for r in cells.get("t6/add/mixit-L2", []) if r["config"].get("n_head") == 64]
    if same:
        cells["t5/add/heads64"] = same
    return cells


def final(cells, cell, key="acc"):
    """Each seed's final value of `key` in a cell; [] where it did not run."""
    return [r["final"][key] for r in cells.get(cell, []) if key in r.get("final", {})]


def config_of(cells, prefix, key="task_size"):
    """A setting of the runs under `prefix` (their task size, by default); '?' if none ran."""
    found = (runs[0]["config"][key] for c, runs in cells.items() if c.startswith(prefix) and runs)
    return next(found, "?")


def at_depths(cells, row):  # {depth: cell} of the cells ROW-L<depth> that ran, by depth
    return dict(sorted((int(c.rsplit("-L", 1)[1]), c) for c in cells if c.startswith(row + "-L")))


# -----------------------------------------------------------------------------
# A cell's seeds as text, and the rules that compare two cells


def mean_std(values):
    """(mean, sample std) of a list; std 0 for a single value."""
    m = sum(values) / len(values)
    if len(values) == 1:
        return m, 0.0
    return m, math.sqrt(sum((x - m) ** 2 for x in values) / (len(values) - 1))


def unstable(accs):
    """Do a cell's seeds (accuracies) lie more than UNSTABLE points apart (†: no verdict)?"""
    return len(accs) > 1 and 100 * (max(accs) - min(accs)) > UNSTABLE


def stat(values, scale=100, digits=1, n=True):
    """'mean ± std (n=N)' of a list, '–' for none (n=False: no n); unstable accuracies get †."""
    if not values:
        return "–"
    m, sd = mean_std([x * scale for x in values])
    spread = f" ± {sd:.{digits}f}" if len(values) > 1 else ""
    count = f" (n={len(values)})" if n else ""
    dagger = " †" if scale == 100 and unstable(values) else ""
    return f"{m:.{digits}f}{spread}{count}{dagger}"


def entry(cells, cell, key="acc"):
    """A table's entry: stat() of a cell's final `key`, with ° and k of n solved where due."""
    values = final(cells, cell, key)
    text = (stat(values, 100 if key in PERCENT else 1, DIGITS.get(key, 1))
            + old(cells.get(cell, [])))
    if key == "acc" and unstable(values):
        low = baseline(cells, cell)
        if low and all_or_nothing(values, low[2]):
            text += " ({} of {} solved)".format(*solved(values))
    return text


def old(runs):  # ' °' where a run ran an earlier recipe (superseded), else ''
    return " °" if any(r.get("superseded") for r in runs) else ""


def pct(values):  # '+mean ± std%' of percentages (one without the ±)
    m, sd = mean_std(values)
    return f"{m:+.0f}%" if len(values) == 1 else f"{m:+.0f} ± {sd:.0f}%"


def same(a, b, points=5):
    """Are two cells of accuracies within `points` of each other, over the spread (over_spread)?"""
    return over_spread(lambda x, y: 100 * abs(x - y) <= points, a, b)


def differ(a, b):
    """Do two cells differ by more than the larger of their std (or 1 point)? None: one missing."""
    if not a or not b:
        return None
    (ma, sa), (mb, sb) = mean_std(a), mean_std(b)
    return abs(ma - mb) > max(sa, sb, 0.01)


def baseline(cells, prefix):
    """(task, rule, score): the best trivial rule on the test set of the cells under `prefix`."""
    r = next((runs[0] for c, runs in sorted(cells.items()) if c.startswith(prefix) and runs), None)
    if r is None or "task" not in r["config"]:
        return None
    c = r["config"]
    k = (c["task"], c.get("task_size", 0), "cpu", c.get("data_seed", 12345),
         c.get("eval_size", 2000), c.get("data", ""))  # (make_task's defaults: an older record)
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
# The rule for the prose: no sentence types a number that no marker renders (`<!--= ... -->`,
# "Numbers in prose" below), but for one that names a thing (NAMED: Table 4, claim 3, a date, a
# version, an expression) or a setting (a width, an lr, a count of steps, heads, layers,
# pairs...). A count of runs, seeds, benchmarks, machines or threads is a result (COUNT), and so
# is every number with a unit of measure: it comes from a marker. Nor does prose type a verdict
# word in quotes: the claims table renders each row's. UNREAD sections set exercises.

UNREAD = ("Homework", "Exercises")
NUMBER_WORDS = r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
COUNT = re.compile(rf"(?<![\w.-])(\d+|{NUMBER_WORDS})\s+(seeds?|runs?|benchmarks?|records?|"
                   r"threads?|machines?|GPUs?|CPUs?|kinds?|sessions?)\b|(?<![\w.-])\d+ of\b|"
                   r"\bn\s*=\s*\d+", re.I)
DIGITS_RE = re.compile(r"(?<![\w.,/-])\d+(?:[.,]\d+)*(?![\w/])")
_SEP = r"(?:\s*(?:,|and|or|to|-|–|→|/)\s*)"
NAMED = re.compile(
    rf"\b(?:Tables?|claims?|issues?|rows?|exercises?|parts?|steps?|seeds?|layers?|depths?|"
    rf"sections?|items?|arXiv|n_head|k|T|p|d|L|H)\s*(?:=\s*)?\d+(?:\.\d+)*[a-z′ˢ]*"
    rf"(?:{_SEP}\d+[a-z′ˢ]*)*|\*\*\(\d+\)\*\*|\d{{4}}-\d\d-\d\d|\d+(?:\.\d+)?e-?\d+|"
    rf"§\s*\d+(?:\.\d+)*|N\([^)]*\)|\[[\d½, …]+\]|(?:torch|python|version)\s*[≥>=]*\s*"
    rf"\d+(?:\.\d+)*|\d+\s*[−+*/^]\s*\S+|[−+*/=]\s*\d+(?:\.\d+)?", re.I)
SETTING_BEFORE = re.compile(r"\b(width|lr|batch|context|length|size|init|warm-up|decay|mod|"
                            r"head|cosine to|up to|at|over|with)\s*\(?\s*$", re.I)
SETTING_AFTER = re.compile(
    rf"^(?:{_SEP}\d+(?:\.\d+)?)*\s*(steps?|heads?|layers?|pairs?|hops?|digits?|tokens?|bytes?|"
    r"symbols?|cores?|letters?|positions?|characters?|calls?|parts?|operands?|dimensions?)\b",
    re.I)
UNIT = re.compile(r"^\s*(%|±|x\b|×|points?\b|bits?\b|nats?\b|ms\b|[KMG]B\b|minutes?\b|"
                  r"seconds?\b|s\b|times\b)")
TYPED_VERDICT = re.compile(r"[\"“'‘](reproduced|partly|not reproduced|inconclusive|not yet run)"
                           r"[.,]?[\"”'’]", re.I)


def prose(doc):
    """The sentences of a Markdown section's text, without tables, headings, images, comments."""
    lines = ["" if not line.strip() or line.lstrip().startswith(("|", "#", "![")) or
             re.fullmatch(r"\s*<!--[^=].*-->\s*", line) else line for line in doc.splitlines()]
    # a paragraph, and a list item, starts a sentence of its own, whatever came before it ended with
    text = " ".join("\n" + line if not line or re.match(r"\s*([-*]|\d+\.) ", line) else line
                    for line in lines)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*(\[`])|\n", text) if s.strip()]


def bare(sentence):
    """A sentence with each marker as ⟦m⟧, without code, links or addresses (names, not renders)."""
    s = re.sub(r"<!--=.*?-->", " ⟦m⟧ ", sentence, flags=re.S)
    s = re.sub(r"\[[^\]]*\]\(https?:[^)]*\)", " ", s)  # a link out: a citation, text and all
    return re.sub(r"`[^`]*`|\]\([^)]*\)|https?://\S+", " ", s)


def typed_numbers(text):
    """The numbers of a bare sentence that name neither a thing nor a setting, and its COUNTs."""
    named = [m.span() for m in NAMED.finditer(text)]
    out = [m.span() for m in COUNT.finditer(text)]
    for m in DIGITS_RE.finditer(text):
        a, b = m.span()
        if any(x <= a and b <= y for x, y in named + out):
            continue
        after, before = text[b:], text[:a]
        if UNIT.match(after) or not (
                m[0] in ("0", "1")  # a constant: sums to 1, a learning rate near 0
                or SETTING_AFTER.match(after) or SETTING_BEFORE.search(before)
                or re.search(r"[A-Za-z]-$", before)  # copy-8, needle-30: a task's size
                or re.match(r"-(hop|head|layer|step|digit|core|bit|seed)", after)):
            out.append((a, b))
    return [text[a:b] for a, b in sorted(out)]

def unsourced(doc):
    """(kind, sentence) for each sentence of a Markdown doc that breaks the rule above: 'typed
    number' or 'typed verdict'. The paper's numbers, in '(paper ...)', are the paper's."""
    doc = re.sub(r"```.*?```", "", doc, flags=re.S)  # code blocks
    parts = re.split(r"^#{1,6} (.*)$", doc, flags=re.M)
    found = []
    for heading, text in zip([""] + parts[1::2], parts[::2]):
        if heading.startswith(UNREAD):
            continue
        for s in prose(text):
            b = bare(re.sub(r"\(paper\b(?!-)[^)]*\)", " ", s))
            if typed_numbers(b):
                found.append(("typed number", s))
            elif TYPED_VERDICT.search(b):
                found.append(("typed verdict", s))
    return found


def comments(script):
    """A shell script's comments as Markdown paragraphs (a blank comment or code ends one)."""
    paras, cur = [], []
    for line in script.splitlines():
        whole = re.match(r"\s*#(?!!)\s?(.*)$", line)
        tail = None if whole else re.search(r"\s#\s(.*)$", line)  # a comment after code
        if (tail or not whole or not whole[1].strip()) and cur:
            paras.append(" ".join(cur))
            cur = []
        if whole and whole[1].strip():
            cur.append(whole[1].strip())
        elif tail:
            paras.append(tail[1].strip())
    return "\n\n".join(paras + [" ".join(cur)] * bool(cur))


# -----------------------------------------------------------------------------
# Verdicts that noise cannot pass. A rule with a band or a threshold ("within 5 points", "≥ 90%")
# is read across its cells' mean ± std (over_spread), and open (None) where the spread straddles
# its line; a verdict that an open test decides is inconclusive at the threshold.


def over_spread(test, *cells):
    """test(*values) read over the cells' mean ± std: True where it holds at every point read, False
    where at none, None (open) otherwise. Each band is read at its ends, its mean, eight steps
    between, and the other bands' points inside it (where bands overlap, their values can meet)."""
    bands = [(m - s, m, m + s) for m, s in map(mean_std, cells)]
    ends = {x for b in bands for x in b}
    points = [{lo + (hi - lo) * i / 8 for i in range(9)} | {m} | {x for x in ends if lo <= x <= hi}
              for lo, m, hi in bands]
    held = {bool(test(*p)) for p in itertools.product(*points)}
    return held.pop() if len(held) == 1 else None


def beyond(a, b):
    """Is cell a above cell b beyond the spread (differ)? True or False."""
    return bool(differ(a, b)) and mean_std(a)[0] > mean_std(b)[0]


# All-or-nothing cells: each seed solves the task (SOLVED) or stays within 10 points of its floor,
# and the seeds lie apart (†). A mean ± std describes such a cell badly: it is read as k of n
# seeds solved, with the 95% (Wilson) interval of k/n.
SOLVED = 0.9


def all_or_nothing(accs, low):
    """Is a cell (accuracies in [0, 1]) all-or-nothing, given its task's floor `low`?"""
    return unstable(accs) and all(a >= SOLVED or a <= low + 0.1 for a in accs)


def solved(accs):  # (k seeds that solved, n seeds)
    return sum(a >= SOLVED for a in accs), len(accs)


def wilson(k, n, z=1.96):
    """The 95% (Wilson score) interval of a fraction k of n."""
    p, d = k / n, 1 + z * z / n
    mid, half = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return mid - half, mid + half


def more_solved(a, b):
    """Do more of a's seeds solve the task than b's, beyond the 95% intervals of their k/n?"""
    return wilson(*solved(a))[0] > wilson(*solved(b))[1]


def both(*tests):  # and, for True / False / None (open)
    return False if False in tests else None if None in tests else True


def either(*tests):  # or, for True / False / None (open)
    return True if True in tests else None if None in tests else False


# The verdict words (docs/METHODS.md defines them)
REPRODUCED, PARTLY, NOT_REPRODUCED = "reproduced", "partly", "not reproduced"
SEEDS_DISAGREE, AT_THRESHOLD, NOT_RUN = ("inconclusive: seeds disagree",
                                         "inconclusive: at the threshold", "not yet run")


class Tests(list):
    """A rule's tests (True, False or None: open), each with a name so that 'partly' can say which
    failed; waiting: the open tests whose cells have not run enough yet."""

    def __init__(self, named, waiting=()):
        super().__init__(named.values())
        self.names, self.waiting = list(named), set(waiting)


def outcome(tests, partly=1):
    """A claim's verdict from its tests, `partly` of them for PARTLY; each open test is settled both
    ways, and where the ways disagree, AT_THRESHOLD."""
    seen = set()
    for fill in itertools.product((True, False), repeat=list(tests).count(None)):
        ways = iter(fill)  # a way to settle each open test
        t = [next(ways) if x is None else x for x in tests]
        seen.add(REPRODUCED if all(t) else PARTLY if sum(t) >= partly else NOT_REPRODUCED)
    names = getattr(tests, "names", None)
    waiting = getattr(tests, "waiting", ())
    word = seen.pop() if len(seen) == 1 else NOT_RUN if waiting else AT_THRESHOLD
    if word == PARTLY and names:
        word += f" (fails: {', '.join(n for n, t in zip(names, tests) if t is False)})"
    return word


# -----------------------------------------------------------------------------
# Budgets chosen by doubling. Under a schedule that decays to 0, a run's last evaluations come at
# a learning rate near 0, so "flat at its end" holds for any budget and says nothing about
# convergence. A capacity claim reads a cell at a budget B only where the same cell given 2B
# steps (a run with its own schedule) moves its mean by less than its seeds' spread (or SETTLED
# points). A ladder's budgets are cells: CELL at its base budget, CELL-steps<N> at each doubling.
LADDER_SEEDS = 3  # seeds at each budget tried; the budget a verdict reads gets READ_SEEDS
READ_SEEDS = 5
SETTLED = 1.0  # points: a doubling that moves the mean less than this (or the spread) settles it
STEPS = re.compile(r"-steps(\d+)$")
CAP = "at its cap, not converged"  # capacity_cell: a ladder read at its last budget
# claim 4's cells, in the paper's order, then the other rows of Tables 11 and 12; run_all.sh
# doubles each (LADDERED) but the last
CAPACITY = ("standard", "frozen_qk", "mixit", "frozen_mlp")
CAPACITY_ROWS = CAPACITY + ("mixit-shipped", "mixit_stdblock", "standard_mixblock")
LADDERED = CAPACITY_ROWS[:-1]


def budget_of(runs):  # a cell's budget in steps: its --steps (a record's own steps if older)
    return runs[0]["config"].get("steps", runs[0].get("steps"))


def ladder(cells, base):
    """[(steps, cell)] of a cell's budgets that ran, smallest first: base, then base-steps<N>."""
    return sorted((budget_of(runs), c) for c, runs in cells.items()
                  if runs and (c == base or (STEPS.search(c) and STEPS.sub("", c) == base)))


def doubled(cells, base):  # has a doubling of the cell run (a base-steps<N> cell with runs)?
    return any(runs and STEPS.search(c) and STEPS.sub("", c) == base for c, runs in cells.items())


def paired(cells, c, c2, key="acc"):
    """The final `key` of cells c (B) and c2 (2B) of a ladder, over the seeds that ran at both."""
    def by_seed(cell):
        return {r["config"]["tag"].rsplit("/s", 1)[1]: r["final"][key]
                for r in cells.get(cell, []) if key in r.get("final", {})}
    a, b = by_seed(c), by_seed(c2)
    both = sorted(a.keys() & b.keys(), key=int)  # (a tag ends in /s<seed>)
    return [a[s] for s in both], [b[s] for s in both]


def doubling(a, b):
    """What doubling a budget did to the same seeds' accuracies, a at B and b at 2B: 'settled' (the
    mean moved less than the larger spread, or SETTLED points), 'moved', 'noisy' (a side is †: no
    evidence of settling), or None while a side has fewer than LADDER_SEEDS seeds."""
    if min(len(a), len(b)) < LADDER_SEEDS:
        return None
    if unstable(a) or unstable(b):
        return "noisy"
    gain, spread = move(a, b)
    return "settled" if abs(gain) < max(spread, SETTLED) else "moved"


def move(a, b):  # (the change of the mean from a to b, the larger of their std), in points
    (ma, sa), (mb, sb) = mean_std(a), mean_std(b)
    return 100 * (mb - ma), 100 * max(sa, sb)


def doubling_words(a, b):
    """What settled (or moved) a doubling, in words: the mean's change against the spread."""
    gain, spread = move(a, b)
    if abs(gain) < spread:
        return f"{gain:+.2f} points, within the spread ({spread:.2f})"
    how = "but under" if abs(gain) < SETTLED else "and"
    return (f"{gain:+.2f} points, beyond the spread ({spread:.2f}) {how} the {SETTLED:g}-point "
            "tolerance")


def read_budget(cells, base, key="acc"):
    """(cell, steps) that a verdict reads: the first B whose doubling to 2B settled, or None."""
    rungs = ladder(cells, base)
    for (s, c), (s2, c2) in zip(rungs, rungs[1:]):
        if s2 == 2 * s and doubling(*paired(cells, c, c2, key)) == "settled":
            return c, s
    return None


def capacity_cell(cells, base):
    """(cell, settled) that a capacity claim reads of a ladder: its read_budget (True); else the
    largest budget whose seeds have all run (False), or CAP where that budget has READ_SEEDS
    seeds (budget_wanted gives them only at an unconverged cap). (None, False): nothing ran."""
    read = read_budget(cells, base)
    if read:
        return read[0], True
    rungs = ladder(cells, base)  # where it stands: the largest budget whose seeds have all run
    done = [c for _, c in rungs if len(final(cells, c)) >= LADDER_SEEDS] or [c for _, c in rungs]
    if not done:
        return None, False
    # the cap is a doubled budget (a base given READ_SEEDS seeds by hand is not the cap)
    at_cap = STEPS.search(done[-1]) and len(final(cells, done[-1])) >= READ_SEEDS
    return done[-1], CAP if at_cap else False

def readable(cells, base):
    """May a verdict read this ladder: settled (or at its cap), with READ_SEEDS seeds there?"""
    c, settled = capacity_cell(cells, base)
    return settled and len(final(cells, c)) >= READ_SEEDS


def budget_wanted(cells, base, budgets, steps, seed):
    """Does the doubling rule want this run of a ladder (budgets: its steps, base first)? A budget's
    first LADDER_SEEDS seeds run once the budget below has its seeds and every doubling below
    that moved; seeds up to READ_SEEDS run at the budget that settled, or at the cap where the
    doubling into it still moved."""
    names = [base] + [f"{base}-steps{b}" for b in budgets[1:]]
    doubling_at = lambda j: doubling(*paired(cells, names[j], names[j + 1]))  # noqa: E731
    i = budgets.index(steps)
    if any(doubling_at(j) not in ("moved", "noisy") for j in range(i - 1)):
        return False  # a smaller budget settled (the verdict reads it), or one has not finished
    if i > 0 and len(final(cells, names[i - 1])) < LADDER_SEEDS:
        return False  # the budget below has not finished: its doubling waits for it
    if seed < LADDER_SEEDS:
        return True
    if i + 1 == len(budgets):  # the cap: read there where the doubling into it did not settle
        return seed < READ_SEEDS and i > 0 and doubling_at(i - 1) in ("moved", "noisy")
    return seed < READ_SEEDS and doubling_at(i) == "settled"


# -----------------------------------------------------------------------------
# Each variant at its own learning rate (run_all.sh --lr-sweep). A claims table's CELL ran at the
# lr its task shares; CELL-lr<LR> is the same cell at another lr, scored at its end on a
# validation set (the record's 'val') too. Where that set is held out of training (modadd, lm),
# CELL-lr<LR>-val chooses and CELL-lr<LR> trains as CELL does; memorize chooses by its table.
# The rule (chosen_lr): the best mean validation score over SWEEP_SEEDS seeds, unless the shared
# lr is within its spread. Selection reads no test score.
LR = re.compile(r"-lr(\d+(?:\.\d+)?e-\d+)(-val)?$")
SWEEP_SEEDS = 2
# The grid of each shared lr: its inner lrs in brackets, and the edge lr either side, which runs
# only where the best inner lr lies next to it. run_all.sh reads these lines (sed): keep one a line.
SWEEP_GRIDS = {
    "3e-3": "1e-4 [3e-4 1e-3 3e-3 1e-2] 3e-2",
    "2e-3": "6e-5 [2e-4 6e-4 2e-3 6e-3] 2e-2",
    "1e-2": "1e-3 [3e-3 1e-2 3e-2] 1e-1",
    # the paper scale: three lrs where a variant fails at width 512, no edges
    "1e-3": "[3e-4 1e-3 3e-3]",
    "5e-4": "[2e-4 5e-4 2e-3]",
    "1e-4": "[3e-5 1e-4 3e-4]",
}


def sweep_grid(shared):
    """(every lr of the grid of a shared lr, its inner lrs), as floats; ([], []) where none."""
    words = next((g for k, g in SWEEP_GRIDS.items() if float(k) == shared), "")
    inner = re.search(r"\[(.*)\]", words)
    return (sorted(float(w) for w in words.replace("[", "").replace("]", "").split()),
            sorted(float(w) for w in inner.group(1).split()) if inner else [])


def lr_text(lr):  # 0.003 -> '3e-3', as run_all.sh writes a grid's lrs
    return f"{lr:.0e}".replace("e-0", "e-")


def lr_score(r):
    """A sweep's score, higher is better: validation accuracy (lm: -loss; memorize: final acc)."""
    c = r["config"]
    if c["task"] == "memorize":
        return r["final"]["acc"]
    if "val" not in r:
        return None
    return -r["val"]["loss"] if c["task"] == "lm" else r["val"]["acc"]


def lr_cells(cells, base, val=False):
    """{lr: cell} of a cell's sweep: its CELL-lr<LR> cells (val: its CELL-lr<LR>-val cells)."""
    return {float(m.group(1)): c for c in cells for m in [LR.search(c)]
            if m and c[:m.start()] == base and bool(m.group(2)) == val}


def lr_grid(cells, base):
    """{lr: [lr_score of seeds below SWEEP_SEEDS]} of a cell's sweep (CELL-lr<LR>-val where it ran,
    else CELL-lr<LR>), and CELL at its shared lr where its records carry the score (memorize)."""
    at = {**lr_cells(cells, base), **lr_cells(cells, base, val=True)}
    at.setdefault(shared_lr(cells, base), base)
    scores = {lr: [lr_score(r) for r in cells.get(c, [])
                   if int(r["config"]["tag"].rsplit("/s", 1)[1]) < SWEEP_SEEDS]
              for lr, c in sorted(at.items())}
    return {lr: [x for x in v if x is not None] for lr, v in scores.items()
            if any(x is not None for x in v)}


def shared_lr(cells, base):  # the lr the claims table's cell ran at (None: it has not run)
    runs = cells.get(base)
    return runs[0]["config"]["lr"] if runs else None


def best_inner(cells, base):
    """(the grid's lrs, the best inner lr, the edge lr beyond it or None); None: seeds missing."""
    grid = lr_grid(cells, base)
    lrs, inner = sweep_grid(shared_lr(cells, base))
    if not inner or any(len(grid.get(lr, [])) < SWEEP_SEEDS for lr in inner):
        return None
    shared = shared_lr(cells, base)  # (a tie keeps the shared lr: no edge to try beyond it)
    best = max(inner, key=lambda lr: (mean_std(grid[lr])[0], lr == shared))
    i = lrs.index(best)
    beyond = (lrs[i - 1] if best == inner[0] and i > 0 else
              lrs[i + 1] if best == inner[-1] and i + 1 < len(lrs) else None)
    return lrs, best, beyond


def chosen_lr(cells, base):
    """(lr, why) that a cell's sweep chooses, or None while a run it needs is missing. why: 'shared'
    (best, or the best is within its spread), 'best', or 'edge' (the grid's outermost lr: a wider
    grid might do better)."""
    found = shared_lr(cells, base) is not None and best_inner(cells, base)
    if not found:
        return None
    lrs, best, beyond = found
    grid, shared = lr_grid(cells, base), shared_lr(cells, base)
    if beyond is not None:
        if len(grid.get(beyond, [])) < SWEEP_SEEDS:
            return None
        if mean_std(grid[beyond])[0] > mean_std(grid[best])[0]:
            best = beyond
    (mb, sb), (ms, ss) = mean_std(grid[best]), mean_std(grid[shared])
    if best == shared or mb - ms <= max(sb, ss):
        return shared, "shared"
    return best, "edge" if best in (lrs[0], lrs[-1]) else "best"


def swept(cells):
    """The cells that a learning-rate sweep ran for (the CELL of each CELL-lr<LR>)."""
    return sorted({c[:m.start()] for c in cells for m in [LR.search(c)] if m})


def tuned_view(cells):
    """(the cells with each swept cell read at its chosen lr, {CELL: chosen_lr}); empty while the
    sweep has not chosen, or where a ladder's lr moved (it has not run there)."""
    view, chosen = dict(cells), {}
    for base in swept(cells):
        chosen[base] = choice = chosen_lr(cells, base)
        if choice and choice[1] == "shared":
            continue
        if STEPS.search(base):  # every budget of the ladder
            view.update({c: [] for _, c in ladder(cells, STEPS.sub("", base))})
            continue
        view[base] = cells.get(lr_cells(cells, base).get(choice[0]), []) if choice else []
    return view, chosen


def lr_wanted(cells, base, lr, seed, final_only=False):
    """Does the sweep want this run of CELL-lr<LR> (bench.py --todo)? The choosing seeds at every
    inner lr and at an edge lr next to the best; final_only, or seeds up to 3, at the chosen lr
    where it is not the shared one."""
    shared = shared_lr(cells, base)
    if shared is None:
        return False  # the cell the sweep is of has not run: its shared lr is unknown
    if final_only or seed >= SWEEP_SEEDS:
        chosen = chosen_lr(cells, base)
        return bool(chosen) and chosen[0] == lr != shared and seed < 3
    if lr in sweep_grid(shared)[1]:
        return True
    found = best_inner(cells, base)
    return bool(found) and found[2] == lr


# -----------------------------------------------------------------------------
# Numbers in prose. A number that a document states outside a rendered table is a marker in its
# template that says where the number comes from, and report.py writes it from the records:
#     MixiT stores <!--= quick c4/memorize/mixit bits_per_param --> bits
# The spec is `FILE CELL KEY [FORMAT]`, FILE being results/FILE.jsonl.
# CELL: a tag without its seed (shell wildcards allowed), or a whole tag with /sN; a,b: both;
#   a,!c: a's runs but c's; CELL@read: the budget claim 4 reads of a ladder (capacity_cell);
#   a trailing [KEY=VALUE&...]: only the runs whose config (else record) has those values,
#   superseded runs too (how to cite a run of an earlier recipe).
# KEY: a number of the record's `final`, the record, its `profile`, `pack`, `graphs_check` or
#   config; table_bits[_per_param] (memorize's n^2 log2 n); check:RUN (a graphs check's last
#   accuracy); runs, minutes; acc@STEP; reached:PCT (the first evaluation at PCT%); qk_bound and
#   speedup:VARIANT (bench.py); ms:VARIANT, samples:VARIANT; compiled:VARIANT, written:VARIANT
#   (TWO_WAYS).
# FORMAT: pm (mean ± std, the default), mean, seeds, range, each with :DIGITS; n (the seeds of
#   each matching cell, "3" or "3-5"). Words of comparison, by the rules the verdicts use, so
#   that a sentence cannot say more than its records: vs:CELL2[=KEY2] (compare), share:LO,HI
#   (share_words), floor (floor_words), gain (the doubling that settled a ladder, or the one into
#   its cap).
# A rendered number keeps the table's marks: † (unstable) and ° (an earlier recipe).

# A setting timed both ways (bench.py --compile-vs-eager, --sdpa-vs-written): the setting, and
# its two values, the one expected slower first (the ratio reads slower / faster)
TWO_WAYS = {"compiled": ("compile", ("false", "true")), "written": ("sdpa", (True, False))}


def record_values(r, key):
    """The values of a KEY in one record (runs, minutes, speedup, qk_bound: elsewhere)."""
    base, _, at = key.partition("@")
    kind, _, arg = base.partition(":")
    if kind in ("ms", "samples"):
        field = "ms_per_step" if kind == "ms" else "samples_per_s"
        return [x[field] for x in r["bench"] if x["variant"] == arg]
    if kind in TWO_WAYS:  # the two runs took turns, so their ratio is read within the record
        flag, (slow, fast) = TWO_WAYS[kind]
        ms = {x[flag]: x["ms_per_step"] for x in r["bench"] if x["variant"] == arg}
        return [ms[slow] / ms[fast]]
    if kind == "reached":  # the step of the first evaluation at PCT% test accuracy
        return [next((h["step"] for h in r["history"] if h.get("acc", 0) >= float(arg) / 100),
                     math.nan)]
    if at:
        return [h[base] for h in r["history"] if h["step"] == int(at)]
    if kind == "check":  # a graphs check's (bench.py --graphs-check) run: its last accuracy
        return [r["graphs_check"]["acc"][arg][-1][1]]
    if kind in ("table_bits", "table_bits_per_param"):  # memorize: the whole table, n^2 log2 n
        n = r["config"]["task_size"]
        return [n * n * math.log2(n) / (r["n_trainable"] if kind.endswith("param") else 1)]
    # else a run's final result, the record itself, its profile, pack or graphs check, its config
    v = next((d[base] for d in (r.get("final", {}), r, r.get("profile", {}), r.get("pack", {}),
                                r.get("graphs_check", {}), r["config"]) if base in d), None)
    return [] if v is None else [v]


def same_value(x, text):
    """Does a config value equal a marker's VALUE (1e-3 == 0.001; or as a shell pattern)?"""
    try:
        return float(x) == float(text)
    except (TypeError, ValueError):
        return fnmatch.fnmatchcase(str(x), text)


def number(spec, records_of, record_values=record_values):
    """The text of one marked number; records_of(FILE): a file's records."""
    parts = spec.split()
    if len(parts) not in (3, 4):
        raise ValueError(f"'{spec}': expected FILE CELL KEY [FORMAT]")
    name, pattern, key = parts[:3]
    fmt, _, digits = (parts[3] if len(parts) == 4 else "pm").partition(":")
    cells = collections.defaultdict(list)  # the file's current runs by cell
    for r in records_of(name):
        cells[cell_of(r["config"]["tag"])].append(r)

    def read(p):  # CELL@read: the budget a capacity claim reads of the ladder CELL (capacity_cell)
        c = capacity_cell(cells, p[:-len("@read")])[0] if p.endswith("@read") else p
        if c is None:
            raise ValueError(f"'{spec}': no record in results/{name}.jsonl matches {p}")
        return c

    def runs_of(pattern):  # CELL may list several patterns: a,b or a,!c; and end in [KEY=VALUE&...]
        pattern, _, where = pattern.partition("[")
        conds = [c.partition("=")[::2] for c in where.rstrip("]").split("&") if c]
        keep = [read(p) for p in pattern.split(",") if p[:1] != "!"]
        leave = [read(p[1:]) for p in pattern.split(",") if p[:1] == "!"]

        def matches(patterns, tag):  # does a whole tag (with its seed) or its cell match one?
            return any(fnmatch.fnmatchcase(t, p) for p in patterns for t in (tag, cell_of(tag)))
        runs = [r for r in records_of(name, every=bool(conds))
                if matches(keep, r["config"]["tag"]) and not matches(leave, r["config"]["tag"])
                and all(same_value(r["config"].get(k, r.get(k)), v) for k, v in conds)]
        if not runs:
            raise ValueError(f"'{spec}': no record in results/{name}.jsonl matches {pattern}")
        return runs

    def values_of(pattern, key=key):  # KEY's values over the runs of a cell
        return [v for r in runs_of(pattern) for v in record_values(r, key)]
    runs = runs_of(pattern)
    if fmt == "gain":  # a ladder's (CELL: its base) doubling that settled it, or the one into its cap
        rungs, read = ladder(cells, pattern), read_budget(cells, pattern, key)
        if not read and capacity_cell(cells, pattern)[1] != CAP:
            raise ValueError(f"'{spec}': the ladder {pattern} has neither settled nor reached its cap")
        i = [s for s, _ in rungs].index(read[1]) if read else len(rungs) - 2
        return doubling_words(*paired(cells, rungs[i][1], rungs[i + 1][1], key))
    if fmt == "floor":
        return floor_words(values_of(pattern), baseline({"c": runs}, "c"), key)
    if fmt in ("vs", "share"):
        others = [digits] if fmt == "vs" else digits.split(",")  # vs: one CELL2, maybe a,b
        return compare(values_of(pattern), [values_of(*c.split("=")) for c in others], fmt)
    if key == "runs":
        return str(len({r["config"]["tag"] for r in runs}))
    if fmt == "n":  # the runs a cell's mean pools (its seeds; a benchmark's or a [KEY=VALUE]
        # selection's repeats too): one count where every matching cell has it, else a range
        per = collections.Counter(cell_of(r["config"]["tag"]) for r in runs)
        lo, hi = min(per.values()), max(per.values())
        return str(lo) if lo == hi else f"{lo}-{hi}"
    if key == "minutes":
        return f"{sum(r.get('wall_s', 0) for r in runs) / 60:.{digits or 0}f}"
    values = [v for r in runs for v in record_values(r, key)]
    if not values:
        raise ValueError(f"'{spec}': the matching records have no {key}")
    kind = key.partition("@")[0].partition(":")[0]  # (acc@STEP, ms:VARIANT, check:RUN)
    d = int(digits) if digits else DIGITS.get(kind, 1)
    percent = kind in PERCENT or kind == "check"
    marks = (" †" if percent and unstable(values) else "") + old(runs)
    values = [v * 100 if percent else v for v in values]
    # a benchmark's figure is per machine: one that pools machines names them
    machines = sorted({r.get("device_name") or "?" for r in runs})
    if kind in ("speedup", "ms", "samples", *TWO_WAYS) and len(machines) > 1:
        marks += f" (pooled over {', '.join(machines)})"

    def show(v):  # (a word, or None, as a record's device_name or a check's verdict, as it is)
        word = isinstance(v, (bool, str)) or v is None
        return str(v) if word else "not reached" if math.isnan(v) else f"{v:.{d}f}"
    if fmt == "seeds":
        return ", ".join(map(show, values)) + marks
    if fmt == "range":
        lo, hi = show(min(values)), show(max(values))
        return (lo if lo == hi else f"{lo}-{hi}") + marks
    m, sd = mean_std(values)
    if fmt == "mean" or len(values) == 1:
        return show(m) + marks
    if fmt != "pm":
        raise ValueError(f"'{spec}': unknown format {fmt} (pm, mean, seeds, range, n, floor, vs, "
                         "share or gain)")
    return f"{show(m)} ± {show(sd)}{marks}"


def compare(mine, others, how):
    """The words of a marked comparison (see NUMBER): vs one cell, or a share of a gap."""
    if how == "vs":
        [other] = others
        word = {True: "above" if mean_std(mine)[0] > mean_std(other)[0] else "below",
                False: "within the spread of"}[differ(mine, other)]
        return word + (" (n = 1)" if min(len(mine), len(other)) < 2 else "")
    lo, hi = (mean_std(v)[0] for v in others)
    # the share at each end of the three spreads: its word holds only where every end earns it
    mine_ends, lo_ends, hi_ends = ((m - sd, m + sd) for m, sd in map(mean_std, [mine, *others]))
    ends = [100 * (x - a) / (b - a) for x in mine_ends for a in lo_ends for b in hi_ends if b != a]
    return share_words(100 * (mean_std(mine)[0] - lo) / (hi - lo), min(ends), max(ends))


def share_words(p, lo=None, hi=None):
    """'P% (word)' of a share of a gap; no one word where the spread's ends (lo, hi) differ."""
    if lo is not None and share_word(lo) != share_word(hi):
        return f"{p:.0f}% ({lo:.0f} to {hi:.0f}% over the spread: no one word)"
    return f"{p:.0f}% ({share_word(p)})"


def share_word(p):
    for top, word in ((0, "none"), (20, "a small part"), (30, "about a quarter"),
                      (40, "about a third"), (50, "under half"), (99.5, "most"), (100.5, "all")):
        if p < top or (top == 0 and p <= 0):
            return word
    return "more than the whole gap"


def floor_words(values, found, key):
    """'at the floor' within a point (0.01 nats) over the spread, else how far from it."""
    if found is None:
        raise ValueError("no floor for this cell's task")
    m, sd = mean_std(values)
    loss = key == "loss"
    d = (found[2] - m) if loss else 100 * (m - found[2])
    if d - (sd if loss else 100 * sd) <= (0.01 if loss else 1):
        return "at the floor"
    return f"{d:.3f} nats below the floor" if loss else f"{d:.1f} points above the floor"
