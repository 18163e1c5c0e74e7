"""
Render the tables and draw the figures from the run records that run_all.sh wrote.

    python report.py --scale quick      # reads results/quick.jsonl
    python report.py --scale paper      # reads results/paper.jsonl
    python report.py --check            # fails where a committed table, number or figure is stale

Nothing here is typed by hand: every number comes from a record (mean ± std over seeds, n = the
number of seeds), with the paper's number beside it. Writes results/tables_<scale>.md, saves
PNGs into plots/ with plots/figures.json (what each figure drawn from the records shows, for
--check), and renders the documents of DOCS (README.md, results/FINDINGS.md, docs/) from their
templates in templates/, which hold the markers of tables and numbers ("The documents", below).
Here: the claims and tables; records.py holds the rules, figures.py the figures, bench.py Table 7.
"""

import argparse
import collections
import dataclasses
import functools
import hashlib
import json
import os
import re
import sys

import bench
import figures
import tasks
from records import (CAP, CAPACITY, CAPACITY_ROWS, HOME, LADDER_SEEDS, LADDERED, LR, NAMES, NOT_RUN,
                     READ_SEEDS, SEEDS_DISAGREE, SETTLED, STEPS, UNSTABLE, VARIANTS, Tests,
                     all_or_nothing, at_depths, baseline, beyond, both, budget_of, capacity_cell,
                     comments, config_of, current, doubled, doubling, either, entry, final, floor,
                     ladder, load, lr_grid, lr_text, mean_std, more_solved, move, number, old,
                     outcome, over_spread, paired, pct, read_budget, read_records, readable,
                     record_values, same, shared_lr, solved, stat, table, tuned_view, unsourced,
                     unstable)

FINDINGS = "results/FINDINGS.md"  # the evidence, claim by claim: the glance, claims, tables
# The documents report.py renders, each from its template, which holds the markers ("The documents")
DOCS = {"README.md": "templates/README.md", FINDINGS: "templates/FINDINGS.md",
        "docs/METHODS.md": "templates/METHODS.md", "docs/ENGINEERING.md": "templates/ENGINEERING.md",
        "docs/COURSE.md": "templates/COURSE.md", "docs/OPERATIONS.md": "templates/OPERATIONS.md"}
BELIEVE_MD = "templates/believe.md"  # the glance table's sentences, written by hand (believe)
CAPTIONS_MD = "templates/captions.md"  # the tables' written captions (CAPTIONS)
T1_ROWS = ["standard", "frozen_qk", "frozen_qk_ref", "frozen_mlp", "mixit", "random"]
RETRIEVAL = ["needle", "induction", "copy", "hop"]
PAPER_RETRIEVAL = ["needle", "induction", "hop"]  # the paper's retrieval tasks (copy is ours)
T3 = ["add", "modadd", "dyck", "memorize"]
FLOOR = "*trivial rule (floor)*"
# The paper's numbers (v3, one run each), for the cells where it reports one.
PAPER = {
    "t1/needle": {"standard": 100, "frozen_qk": 97.0, "mixit": 11.2},
    "t1/hop": {"standard": 99.99, "frozen_qk": 96.7, "mixit": 48.6},
    "t2/lm": {"standard": 2.78, "frozen_qk": 3.07, "mixit": 3.73},  # WikiText-103, nats/token
    "t4/memorize": {"standard": 2.98, "frozen_qk": 2.25, "mixit": 2.18, "frozen_mlp": 1.13},
    "y/yelp": {"standard": 90.55, "mixit": 92.56},  # Yelp polarity, Table 3
}


# -----------------------------------------------------------------------------
# Depth (Tables 6 and 6b, claim 6). A row is a setting, with its cell at each depth: CELL-L<depth>
DEPTH_ROWS = {"random-w256": "Random", "random_ref-w256": NAMES["random_ref"], "mixit-w256": "MixiT",
              "mixit-heads64": "MixiT"}


def add_setting(cfg):
    """'width W, H heads, add-N': what tells Table 6b's depth settings apart."""
    return f"width {cfg['n_embd']}, {cfg['n_head']} heads, add-{cfg['task_size']}"


def depth_rows(cells):
    """{row: {depth: cell}} for Table 6b; the 64-head MixiT row's 2-layer cell is Table 5's."""
    rows = {row: at_depths(cells, f"c6/add/{row}") for row in DEPTH_ROWS}
    if rows["mixit-heads64"] and cells.get("t5/add/heads64"):
        rows["mixit-heads64"][2] = "t5/add/heads64"
    return {row: dict(sorted(at.items())) for row, at in rows.items() if at}


def depth_table(cells, claims=False):
    """([(row name, {depth: cell})], every depth) of Table 6, or of Table 6b where claims."""
    if claims:
        rows = [(f"{DEPTH_ROWS[row]} ({add_setting(r['config'])}, lr {r['config']['lr']:g}, "
                 f"{r['steps']} steps)", at)
                for row, at in depth_rows(cells).items() for r in [cells[at[min(at)]][0]]]
    else:
        variants = {c[7:].rsplit("-L", 1)[0] for c in cells if c.startswith("t6/add/")}
        rows = [(NAMES.get(v) or f"{NAMES[v.split('-')[0]]}, lr {v.split('-lr')[1]}",
                 at_depths(cells, f"t6/add/{v}"))
                for v in sorted(variants, key=lambda v: (not v.startswith("random"), v))]
    return rows, sorted({d for _, at in rows for d in at})


def depth_pairs(cells, init=""):
    """({depth: cell} of Random's shallowest and deepest cells, MixiT's, where) of claim 6:
    Table 6b's (where Random can add at 2 layers, and so can collapse) where it has two depths,
    else Table 6's; None where neither has. init '_ref': Random at the reference's init."""
    def ends(at):
        return {d: at[d] for d in (min(at), max(at))}
    rows = {r: ends(at) for r, at in depth_rows(cells).items() if len(at) >= 2}
    ran, mix = rows.get(f"random{init}-w256"), rows.get("mixit-w256") or rows.get("mixit-heads64")
    if ran and mix:
        return ran, mix, "Table 6b"
    lr = "-lr1e-2" if at_depths(cells, "t6/add/random-lr1e-2") else ""
    ran = at_depths(cells, f"t6/add/random{init}{lr}")
    ran = ends(ran) if len(ran) >= 2 else {}
    mix = {d: f"t6/add/mixit-L{d}" for d in ran}
    if not ran or not all(cells.get(c) for c in [*ran.values(), *mix.values()]):
        return None
    return ran, mix, "Table 6"


def depth_lines(cells, claims=False):
    """Tables 6 and 6b: per row, a line of accuracies and one of token covariances, by depth."""
    rows, depths = depth_table(cells, claims)
    return [[name, metric] + [Cell(at[d], key) if d in at else "–" for d in depths]
            for name, at in rows
            for metric, key in (("accuracy %", "acc"), ("token covariance", "token_cov"))]


# -----------------------------------------------------------------------------
# The claims table: one entry per claim of the paper (CLAIMS): the paper's figure, the rule of its
# verdict, and a `judge` that reads the cells and returns (ours, tests, partly, evidence, reads):
# tests True, False or None (open) each, or None while a cell has not run; partly: how many must
# hold for 'partly'; reads: the cells the verdict rests on.


class Reader:
    """What a judge reads of the cells; base: the cells that decide which cells a row reads."""

    def __init__(self, cells, base=None):
        self.cells, self.base = cells, base or cells
        self.no_dagger = set()  # cells whose † holds no verdict back: read as k of n, or untested

    def __call__(self, cell, key="acc"):  # each seed's final value
        return final(self.cells, cell, key)

    def text(self, cell, key="acc", scale=100, digits=1):  # stat() without n, ° as in the tables
        runs, own = self.cells.get(cell, []), self.base.get(cell, [])
        lr = runs[0].get("config", {}).get("lr") if runs else None  # at an lr its sweep chose
        moved = lr is not None and own and lr != own[0].get("config", {}).get("lr")
        return (stat(self(cell, key), scale, digits, n=False) + old(runs)
                + (f" at lr {lr_text(lr)}" if moved else ""))

    def longest(self, quick, long=None):  # Table 11's run (by default the cell c<N>/...) if run
        long = long or "c" + quick[1:]
        return long if final(self.base, long) else quick

    def runs(self, cell):  # a cell's runs; Table 7's: its benchmarks on one machine (bench_runs)
        return bench.bench_runs(self.cells) if cell == "t7/bench" else self.cells.get(cell, [])


def on_each(A, groups, test, table, vs=False):
    """Claims 1-3, a rule that must hold on each task: groups {task: its cells}, test(*their
    values). Shows each task's first cell (vs: 'first vs second')."""
    def label(t, c):  # the task, and where its cell is a longer run than Table 1's or 3's
        return t + (" (MixiT 64 heads)" if "heads64" in c else " (Table 11)" * c.startswith("c"))
    reads = [c for g in groups.values() for c in g]
    ours = "; ".join(f"{label(t, g[0])} " + " vs ".join(A.text(c) for c in g[:1 + vs])
                     for t, g in groups.items())
    long = any(g[0].startswith("c") for g in groups.values())
    where = f"Tables {table}, 11" if long else f"Table {table}"
    if not all(A(c) for c in reads):
        return ours, None, 1, where, reads
    return ours, Tests({t: test(*(A(c) for c in g)) for t, g in groups.items()}), 1, where, reads


def at_cap(A, c):  # ' (at its cap, not converged)' where a ladder is read at its last budget
    base = STEPS.sub("", c)
    return f" ({CAP})" if doubled(A.cells, base) and capacity_cell(A.cells, base)[1] == CAP else ""


def mixit_fails_retrieval(A):  # (1)
    return on_each(A, {t: (A.longest(f"t1/{t}/mixit"), A.longest(f"t1/{t}/standard"))
                       for t in PAPER_RETRIEVAL},
                   lambda m, s: over_spread(lambda x, y: x < 0.5 * y, m, s), 1)


def copy_by_length(A):  # (1c), ours: does MixiT's copying fall with the length?
    """MixiT and Standard copying 8, 16 and 32 tokens, each read where its doubling settled (copy-8
    is not doubled: at the ceiling). The tests read copy-8 and copy-32; copy-16 is only shown."""
    lengths = {8: "c1/copy", 16: "c1/copy16", 32: "c1/copy32"}  # (8: Table 11's cells)
    cells = {(v, L): f"{c}/{v}" for L, c in lengths.items() for v in ("mixit", "standard")}
    read = {k: capacity_cell(A.cells, c)[0] if doubled(A.cells, c) else c for k, c in cells.items()}
    ours = "; ".join(f"copy-{L} " + " vs ".join(A.text(read[v, L]) + at_cap(A, read[v, L])
                                                if read[v, L] else "–" for v in ("mixit", "standard"))
                     for L in lengths)
    middle = waits(A.cells, [c for k, c in cells.items() if k[1] == 16 and doubled(A.cells, c)])
    ours += f" (copy-16, not tested: {middle})" if middle else ""
    tested = [("mixit", 8), ("mixit", 32), ("standard", 32)]
    laddered = [cells[k] for k in tested if doubled(A.cells, cells[k])]
    shown = [c for k, c in read.items() if k not in tested and A(c)]  # (1c's cost counts them)
    A.no_dagger |= set(shown)
    reads = [read[k] for k in tested] + shown
    if not all(A(read[k]) for k in tested) or not all(readable(A.cells, c) for c in laddered):
        wait = waits(A.cells, laddered) if laddered else "copy-32 not run"
        return f"MixiT vs Standard: {ours} ({wait})", None, 1, "Table 11", reads
    m8, m32, s32 = (A(read[k]) for k in tested)
    tests = Tests({"MixiT falls from copy-8 to copy-32": beyond(m8, m32),
                   "Standard copies at 32 (≥ 90%)": over_spread(lambda x: x >= 0.9, s32)})
    return f"MixiT vs Standard: {ours}", tests, 1, "Table 11", reads


def frozen_qk_retrieves(A):  # (2), W_Q and W_K frozen at N(0, 1/d); the reference's 0.02 beside
    cells = {t: (A.longest(f"t1/{t}/frozen_qk", f"c2/{t}/frozen_qk"),) for t in PAPER_RETRIEVAL}
    ours, *rest = on_each(A, cells, lambda a: over_spread(lambda x: x >= 0.9, a), 1)
    ref = "; ".join(f"{t} {A.text(f't1/{t}/frozen_qk_ref')}" for t in PAPER_RETRIEVAL)
    return (f"at N(0, 1/d): {ours}; at the reference's 0.02 (Table 1, not read): {ref}", *rest)


def mixit_matches_without_retrieval(A):  # (3): add and dyck with the paper's MixiT's 64 heads
    L = A.longest  # (add: Table 11's 64-head cell, else Table 5's, else Table 3's 4-head one)
    # memorize reads Table 4's cells (a table Standard can hold whole) where their doubling
    # settled, not claim 4's (that no variant can hold); its test is open until then
    bases = [f"t4/memorize/{v}" for v in ("mixit", "standard")]
    ours, tests, *rest = on_each(
        A, {"add": (L(L("t3/add/mixit", "t5/add/heads64"), "c3/add/mixit-heads64"), "t3/add/standard"),
            "modadd": (L("t3/modadd/mixit"), L("t3/modadd/standard")),
            "dyck": (L("t3/dyck/mixit", "c3/dyck/mixit-heads64"), "t3/dyck/standard"),
            "memorize": tuple(capacity_cell(A.base, b)[0] or b for b in bases)}, same, 3, vs=True)
    capped = [NAMES[b.split("/")[2]] for b in bases if capacity_cell(A.base, b)[1] == CAP]
    ours += f" (memorize {CAP}: {', '.join(capped)})" if capped else ""
    if not all(readable(A.base, b) for b in bases):
        ours += f" (memorize: {waits(A.base, bases)}; its test left open)"
        tests = tests and Tests({**dict(zip(tests.names, tests)), "memorize": None}, ["memorize"])
    return (ours, tests, *rest)


def capacity_order(A):  # (4), in bits per trainable parameter, each cell read at capacity
    """Claim 4 reads Table 11's capacity cells, each at the budget its doubling settled with
    READ_SEEDS seeds (else the row says where it stands, and gives no verdict); without them (the
    paper scale), Table 4's, at their budget until one is doubled."""
    table = "c4" if A("c4/memorize/standard") else "t4"
    cells = {v: f"{table}/memorize/{v}" for v in CAPACITY}
    where = "Tables 11, 12" if table == "c4" else "Table 4"
    if table == "t4" and not any(doubled(A.cells, c) for c in cells.values()):
        ours = " / ".join(A.text(c, "bits_per_param", 1, 2) for c in cells.values())
        reads = list(cells.values())
        if not all(A(c, "bits_per_param") for c in reads):
            return ours + " bits/param", None, 2, where, reads
        tests, _ = capacity_tests(A.cells, cells)
        return (f"{ours} bits/param (memorize-{config_of(A.cells, 't4/')}, read at a budget)"
                + capacity_said(tests), tests, 2, where, reads)
    read = {v: capacity_cell(A.cells, c)[0] for v, c in cells.items()}
    reads = [c for c in read.values() if c]
    ours = " / ".join(f"{A.text(c, 'bits_per_param', 1, 2)} ({budget_of(A.cells[c])})"
                      for c in reads)
    ours += f" bits/param (steps) (memorize-{config_of(A.cells, table + '/')})"
    if not all(readable(A.cells, c) for c in cells.values()):
        return ours + "; " + waits(A.cells, cells.values()), None, 2, where, reads
    tests, ratio = capacity_tests(A.cells, read)  # (every cell read: each is readable)
    ours += (f"; MixiT / Frozen-QK {stat(ratio, 1, 2, n=False)} paired by seed (n = {len(ratio)}; "
             f"paper {PAPER['t4/memorize']['mixit'] / PAPER['t4/memorize']['frozen_qk']:.2f})")
    return ours + capacity_said(tests), tests, 2, where, reads


def capacity_tests(cells, read):
    """(claim 4's tests, MixiT's bits per parameter over Frozen-QK's seed by seed) of the capacity
    cells read, {variant: cell}."""
    b = {v: final(cells, c, "bits_per_param") for v, c in read.items()}
    q, x = paired(cells, read["frozen_qk"], read["mixit"], "bits_per_param")
    ratio = [m / f for f, m in zip(q, x)]
    tests = Tests(dict(zip(CAPACITY_TESTS, [
        beyond(b["standard"], b["frozen_qk"]),
        over_spread(lambda r: abs(r - 1) < 0.25, ratio) if ratio else None,
        both(beyond(b["frozen_qk"], b["frozen_mlp"]), beyond(b["mixit"], b["frozen_mlp"]))])))
    return tests, ratio


def waits(cells, bases):
    """What the doubled cells a row reads wait for, e.g. 'doubling not settled: MixiT'."""
    moving = [c for c in bases if not capacity_cell(cells, c)[1]]
    few = [c for c in bases if c not in moving and not readable(cells, c)]

    def said(what, cs):  # a variant's cells are named; others (claim 5's 1 head) go without
        names = [NAMES[c.split("/")[-1]] for c in cs if c.split("/")[-1] in NAMES]
        return what + (": " + ", ".join(names) if names else "")
    return "; ".join(said(what, cs) for what, cs in (
        ("doubling not settled", moving), (f"fewer than {READ_SEEDS} seeds at the budget read", few))
        if cs)


def heads_help(A):  # (5)
    """Claim 5 reads MixiT's add cells from 2 heads up (1 head is the sink alone: it cannot see the
    second operand), each where its doubling settled; an all-or-nothing cell as k of n solved."""
    heads = [h for h in heads_of(A.cells) if h >= 2]
    if len(heads) < 2:
        return "fewer than two head counts from 2 heads up", None, 1, "Table 5", []
    bases = [f"t5/add/heads{h}" for h in heads]
    laddered = [b for b in bases if doubled(A.cells, b)]  # (the paper scale doubles none)
    read = {b: capacity_cell(A.cells, b)[0] if b in laddered else b for b in bases}
    low = (baseline(A.base, "t5/") or (None, None, 0.0))[2]  # the task's floor
    kn = {c for c in read.values() if c and all_or_nothing(A(c), low)}
    A.no_dagger |= kn

    def shown(h, c):
        k, n = solved(A(c))
        return f"{h} {A.text(c)}" + (f" ({k} of {n} solved)" if c in kn else "") + at_cap(A, c)
    ours = "heads: " + ", ".join(shown(h, read[b]) for h, b in zip(heads, bases) if read[b])
    flat = [str(h) for h, b in zip(heads, bases) if b not in laddered]  # read at their budget
    ours += f" (at Table 5's budget, not doubled: {', '.join(flat) if laddered else 'each'})" * bool(flat)
    reads = [c for c in read.values() if c]
    if not all(A(c) for c in reads) or not all(readable(A.cells, b) for b in laddered):
        return f"{ours} ({waits(A.cells, laddered) or 'not run'})", None, 1, "Tables 5, 12", reads

    def above(a, b):  # cell a above cell b: by k/n where either is all-or-nothing
        return more_solved(A(a), A(b)) if kn & {a, b} else beyond(A(a), A(b))
    cs = list(read.values())
    tests = Tests({f"{heads[-1]} heads above 2": above(cs[-1], cs[0]),
                   "no head count below a smaller one": not any(
                       above(cs[i], cs[j]) for i in range(len(cs)) for j in range(i + 1, len(cs))),
                   f"{heads[-1]} heads ≥ 90%": over_spread(lambda x: x >= 0.9, A(cs[-1]))})
    return ours, tests, 1, "Tables 5, 12", reads


def depth_collapse(A, init=""):  # (6): read where both add at 2 layers (Table 6b, where run):
    pairs = depth_pairs(A.cells, init)  # a collapse shows only where Random adds to start with
    if pairs is None:
        return "not run yet", None, 1, "Table 6", []
    ran, mix, where = pairs
    (r0, r1), (m0, m1) = ran.values(), mix.values()
    acc = {c: A(c) for c in (r0, r1, m0, m1)}
    c0, c1 = A(r0, "token_cov"), A(r1, "token_cov")
    most = max(len(v) for v in acc.values())

    def setting(c):
        return "" if where == "Table 6" else f" ({add_setting(A.cells[c][0]['config'])})"

    def seeds(c):  # the n of a cell that has fewer seeds than the others
        return A.text(c) + (f" (n={len(acc[c])})" if len(acc[c]) < most else "")
    dr, dm = ("L={}→{}".format(*at) for at in (ran, mix))
    # Random collapses: below halfway to the floor over the spread (slower is not collapsed)
    low = baseline(A.cells, r0)[2]
    tests = [both(beyond(acc[r0], acc[r1]),
                  over_spread(lambda a, b: b < (low + a) / 2, acc[r0], acc[r1])),
             # MixiT keeps it: its deep cell equals its shallow one, or is higher beyond the spread
             either(same(acc[m0], acc[m1]), beyond(acc[m1], acc[m0])),
             bool(c0 and c1) and beyond(c1, c0)]  # Random's tokens grow alike
    mixit_ = f"MixiT{setting(m0)}" + (f" {dm}" if dm != dr else "")
    ours = (f"{dr}: Random{setting(r0)} {seeds(r0)} → {seeds(r1)}, {mixit_} {seeds(m0)} "
            f"→ {seeds(m1)}; Random covariance {A.text(r0, 'token_cov', 1, 3)} → "
            f"{A.text(r1, 'token_cov', 1, 3)}")
    return ours, tests, 1, where, list(acc)


def faster_per_sample(A):  # (7): every session of Table 7's machine (same_machine)
    """Claim 7, with the FLOPs that freezing W_Q, W_K can save at most."""
    runs = A.runs("t7/bench")
    if not runs:
        return "not run yet", None, 2, "Table 7", []
    runs = runs + same_machine(runs)
    fq, mx = bench.speedups(runs, "frozen_qk"), bench.speedups(runs, "mixit")
    more = len(runs) > len(A.runs("t7/bench"))
    bound = bench.frozen_qk_bound(runs[0]["config"])  # a fraction of a Standard step's FLOPs
    speeds = [("Frozen-QK", fq, 23.9), ("MixiT", mx, 32.0)]  # (the paper's % more samples/s)
    tests = Tests({f"{v} faster": over_spread(lambda x: x > 0, s) for v, s, _ in speeds}
                  | {f"{v} ≥ half the paper's ({p / 2:g}%)": over_spread(lambda x: x >= p / 2, s)
                     for v, s, p in speeds})
    return (f"{pct(fq)} / {pct(mx)} ({runs[0]['device_name']}, "
            f"{len(runs)} benchmark{'s' * (len(runs) > 1)}"
            + (", with every session of that machine in results/extra.jsonl" if more else "")
            + f"); Frozen-QK's FLOPs bound: at most {100 * bound:.1f}% of a step's FLOPs, "
            f"+{100 * (1 / (1 - bound) - 1):.1f}% samples/s", tests, 2, "Table 7", ["t7/bench"])


def same_machine(runs, path="results/extra.jsonl"):
    """The benchmarks of other sessions (results/extra.jsonl) on Table 7's machine and shape, timing
    every variant it does: a verdict reads each session of its machine, not the newest."""
    def shape(r):
        c = r["config"]
        return (r.get("device_name"), r.get("cpu_bf16"), r.get("device"), r.get("dtype"),
                r.get("threads"), c.get("task"), c.get("n_embd"), c.get("n_layer"),
                c.get("batch_size"), {x["variant"] for x in r.get("bench", [])})
    if not runs or not os.path.exists(path):
        return []
    return [r for r in current(read_records(path)) if "bench" in r and shape(r) == shape(runs[0])]


def lm_gaps(A):  # (8): Frozen-QK closer to Standard than MixiT
    L = {v: A(f"t2/lm/{v}", "loss") for v in ("standard", "frozen_qk", "mixit")}
    if not all(L.values()):
        return "not run yet", None, 1, "Table 2", []
    gap_qk, gap_mx = (mean_std(L[v])[0] - mean_std(L["standard"])[0] for v in ("frozen_qk", "mixit"))
    marks = old([r for v in L for r in A.cells[f"t2/lm/{v}"]])
    return (f"gaps {gap_qk:+.3f} / {gap_mx:+.3f} nats/byte{marks}",
            [beyond(L["mixit"], L["frozen_qk"]),
             over_spread(lambda s, q, x: q - s < 0.5 * (x - s), *L.values())], 1,
            "Table 2", [f"t2/lm/{v}" for v in L])


def twin(c):  # a MixiT cell's -shipped twin (a budget's: the twin's budget), else None
    base, rung = STEPS.sub("", c), STEPS.search(c)
    if c.count("/") == 2 and c.split("/")[2].startswith(("mixit", "heads")) \
            and not base.endswith("-shipped"):  # (t3/add/mixit, t5/add/heads4, ...; not a twin)
        return base + "-shipped" + (rung[0] if rung else "")


def as_shipped(judge):
    """A claim's judge read with each MixiT cell replaced by its -shipped twin (empty where it has
    not run); its text and reads name the twins (checked for n, †)."""
    def judged(A):
        shipped = {c: A.cells.get(t, []) if (t := twin(c)) else runs for c, runs in A.cells.items()}
        ours, *out, reads = judge(Reader(shipped, A.base))
        twins = {c: t for c in reads if (t := twin(c))}
        ours = re.sub(r"\b[\w/-]+", lambda m: twins.get(m[0], m[0]), ours)
        return (ours, *out, [twins.get(c, c) for c in reads])
    return judged


SPREAD = "over the spread (across each cell's mean ± std)"
# (claim, the paper's figure, the rule of its verdict, its judge): the rules a reviewer checks
CLAIMS = [
    ("1. MixiT fails retrieval (needle, induction, hop)", "needle 11.2 vs Standard 100",
     f"MixiT below half of Standard on each task, {SPREAD}", mixit_fails_retrieval),
    ("1c. copy (ours, not the paper's): MixiT's copying falls with length", "(not in the paper)",
     "MixiT's copy-32 below its copy-8 beyond the spread; Standard's copy-32 ≥ 90% "
     f"{SPREAD}; each cell read where doubling settled; copy-16 shown, not tested", copy_by_length),
    ("2. Frozen-QK retrieves (W_Q, W_K frozen at N(0, 1/d))", "needle 97.0, hop 96.7",
     f"≥ 90% on each task, {SPREAD}; induction heads: figure", frozen_qk_retrieves),
    ("3. MixiT ≈ Standard on add, modadd, dyck, memorize", "about equal",
     f"means within 5 points on each task, {SPREAD}", mixit_matches_without_retrieval),
    ("4. capacity: Standard > Frozen-QK ≈ MixiT > Frozen-MLP", "2.98 > 2.25 ≈ 2.18 > 1.13",
     "each > beyond the spread; ≈: MixiT / Frozen-QK within 25% of 1, seed by seed, over the "
     "spread; partly: 2 of the 3",
     capacity_order),
    ("5. more heads help MixiT on add (from 2 heads)", "35% → 92% (to 256 heads)",
     "the most heads above 2 heads beyond the spread (k of n solved, beyond their 95% intervals, "
     "where a cell is all-or-nothing), and no head count below a smaller one so; reproduced if "
     f"the most heads ≥ 90% {SPREAD}; each cell where its doubling settled (never doubled: at its "
     "budget)", heads_help),
    ("6. with depth, Random collapses on add, MixiT holds", "Random ≈ 23% at 8–16 layers",
     "Random's deepest cell below its shallowest beyond the spread, and below halfway to the "
     f"floor {SPREAD}; MixiT's within 5 points of its shallowest {SPREAD}, or above it beyond "
     "the spread; Random's covariance higher beyond the spread", depth_collapse),
    ("6′. the same, Random's frozen Q, K at the reference's init (0.02)", "(the paper's init)",
     "as claim 6", lambda A: depth_collapse(A, "_ref")),
    ("7. Frozen-QK and MixiT train faster per sample", "+23.9% / +32.0%",
     f"direction: each faster than Standard, {SPREAD}; size: each at or above half the paper's "
     f"figure, {SPREAD}; partly: the direction only, or in size for one", faster_per_sample),
    ("8. LM: Frozen-QK near Standard, MixiT behind", "gaps +0.29 / +0.95 nats/token",
     "MixiT's loss above Frozen-QK's beyond the spread; reproduced if Frozen-QK's gap is under "
     f"half of MixiT's {SPREAD}", lm_gaps),
    # claims 3-5 again with MixiT as the reference ships it: its hidden factor sqrt(1/(4d)) on the
    # MLP's output is the largest untested difference from the paper's MixiT
    ("3ˢ. claim 3, MixiT as shipped", "(the paper's MixiT)", "as claim 3",
     as_shipped(mixit_matches_without_retrieval)),
    ("4ˢ. claim 4, MixiT as shipped", "(the paper's MixiT)", "as claim 4",
     as_shipped(capacity_order)),
    ("5ˢ. claim 5, MixiT as shipped", "(the paper's MixiT)", "as claim 5", as_shipped(heads_help)),
]


def spread_rule(rule):
    """Does a claim's rule compare spreads ('as claim 6': claim 6's)? One run has none."""
    same_as = re.fullmatch(r"as claim (\d+)", rule)
    if same_as:
        rule = next(r for c, _, r, _ in CLAIMS if c.split(".")[0] == same_as[1])
    return bool(re.search(r"spread|within|std", rule))


def verdict(tests, partly, reads, A, rule="", need=1):
    """A rule's outcome (records.outcome), never resting on a † cell, nor on a record of an earlier
    recipe, one run where the rule compares spreads, or fewer than `need` seeds."""
    need = max(need, 2 if spread_rule(rule) else 1)  # (one run has no spread)
    if tests is None or any(old(A.runs(c)) or len(A.runs(c)) < need for c in reads):
        return NOT_RUN
    if any(unstable(A(c)) and c not in A.no_dagger for c in reads):
        return SEEDS_DISAGREE
    return outcome(tests, partly)


def claim_rows(cells, need=1):
    """(n seeds, rows): a row per claim: claim, paper, ours, verdict, rule, evidence, and the
    verdict at the shared lr. A row reads each cell at the lr its sweep chose
    (records.tuned_view), and waits while the sweep has not chosen."""
    tuned, chosen = tuned_view(cells)
    A, shared = Reader(tuned, cells), Reader(cells)
    def span(ns):  # '3', or '2 to 3'
        return f"{min(ns)}" + f" to {max(ns)}" * (min(ns) != max(ns))
    seeds = [len(runs) for c, runs in cells.items()  # (a sweep's runs at other lrs apart)
             if c[:3] in ("t1/", "t2/", "t3/", "t4/") and not LR.search(c)]
    n = span(seeds) if seeds else "0"
    rows = []
    for claim, paper_, rule, judge in CLAIMS:
        ours, tests, partly, where, reads = judge(A)
        n_read = {len(A.runs(c)) for c in reads}  # where the cells it reads have another n
        if n_read and n != "0" and span(n_read) != n:
            ours += f" (n = {span(n_read)})"
        _, tests_shared, partly_shared, _, reads_shared = judge(shared)
        # a cell's sweep, or its ladder's at one of its budgets, that has not chosen
        bases = {STEPS.sub("", c) for c in reads + reads_shared}
        waiting = [c for c, pick in chosen.items() if not pick and STEPS.sub("", c) in bases]
        if waiting:
            ours += f" (lr sweep not finished: {', '.join(waiting)})"
        rows.append([claim, paper_, ours, verdict(tests, partly, reads, A, rule, need), rule, where,
                     verdict(tests_shared, partly_shared, reads_shared, shared, rule, need)])
    return n, rows


def claim_verdicts(rows, scale):
    """FINDINGS' verdict sentence per claim, with its re-reading rows: one piece each."""
    by = collections.defaultdict(list)
    for claim, _, ours, v, rule, where, _ in rows:
        by[claim[0]].append(f"{claim.split('.')[0]} **{v}** ({where}: {ours}; rule: {rule})")
    return "\n\n".join(f"**Claim {k} verdict** ({scale} scale): " + ". Row ".join(lines) + "."
                       for k, lines in by.items())


def sections(path):
    """{heading: its text on one line} of the `## ` sections of a file of hand-written prose that
    report.py places (path: from the repository's root, or absolute)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), path), encoding="utf-8") as f:
        parts = re.split(r"^## (.+)\n", f.read(), flags=re.M)
    return {heading: " ".join(text.split()) for heading, text in zip(parts[1::2], parts[2::2])}


def believe(path=BELIEVE_MD):
    """{(row, verdict): (sentence, caveat)}, the glance table's last two columns, written by hand
    in BELIEVE_MD for one verdict of a row (the file says how)."""
    return {tuple(heading.split(": ", 1)): tuple(text.split(" Caveat: "))
            for heading, text in sections(path).items()}


BELIEVE = believe()


def effect(ours, n):
    """A claims row's 'ours', short: without its notes in brackets (table, budget, lr, why it
    waits), cut after its first clauses, with the seeds per cell (the row's n, else the scale's)."""
    named = re.findall(r"\(n = ([^;)]+)", ours)
    s = re.sub(r" \(n = [^)]*\)", "", ours)
    # the innermost brackets first; a bracket glued to a word, N(0, 1/d), stays
    while (t := re.sub(r" \([^()]*\)", "", s)) != s:
        s = t
    out = []
    for p in s.split("; "):
        if out and len("; ".join(out + [p])) > 140:
            out.append("…")
            break
        out.append(p)
    s = "; ".join(out)
    if not re.search(r"\d\.\d|\d%", s):  # every cell '–' (copy-8 names a size, not a result)
        return NOT_RUN
    return s + f" (n = {named[-1] if named else n})"


def glance(rows, paper_rows, n="", paper_n="", path=FINDINGS):
    """Results at a glance: a row per claims row (claim_rows' rows and n, quick then paper scale),
    with BELIEVE's sentence and caveat ('–' where none). path: the document it goes into."""
    paper = {r[0]: r for r in paper_rows}
    link = os.path.relpath(FINDINGS, os.path.dirname(path) or ".")
    rows_at = ("below" if path == FINDINGS else f"in [results/FINDINGS.md]({link}), whose "
               f"[Words used here]({link}#words-used-here) defines †, °, ˢ, ′")
    out = []
    for r in rows:
        number, word = r[0].split(".")[0], r[3].split(" (")[0]
        p = paper.get(r[0])
        theirs = effect(p[2], paper_n) if p else NOT_RUN
        if p and theirs != NOT_RUN:
            theirs += f"; verdict: {p[3]}"
        out.append([r[0], r[1], effect(r[2], n), theirs, f"**{word}**", r[6].split(" (")[0],
                    *BELIEVE.get((number, r[3]), ("–", "–"))])
    return ("**Results at a glance**: a row per claim. Ours: mean ± std over n seeds per cell "
            f"(n = 1: a single run); the verdict by the rule of its claims row, {rows_at}; the "
            "last two columns are written by hand for that verdict ('–' where the verdict has moved "
            "since they were written).\n\n"
            + table(["claim", "paper", "ours, CPU (quick)", "ours, GPU (paper scale)",
                     "verdict", "verdict at the shared lr", "what to believe", "main caveat"],
                    out))


def claim_costs(cells, paper_cells):
    """What each claims row cost at each scale (its paragraph says how the runs count)."""
    def spent(cells_, reads):
        bases = {LR.sub("", STEPS.sub("", c)) for c in reads}
        runs = {id(r): r for c, rs in cells_.items() for r in rs
                if STEPS.sub("", LR.sub("", c)) in bases}
        return len(runs), sum(r.get("wall_s", 0) for r in runs.values())
    rows = []
    for claim, _, _, judge in CLAIMS:
        (n, s), (pn, ps) = (spent(c_, judge(Reader(c_))[4]) for c_ in (cells, paper_cells))
        rows.append([claim.split(".")[0], n, f"{s / 3600:.1f}", pn, f"{ps / 60:.0f}"])
    return ("**What each claim cost**: the runs of the cells each claims row reads, every budget "
            "and learning rate included (a run two rows read counts in each; no probes or "
            "studies): CPU runs and hours at the quick scale, GPU runs and run-minutes at the "
            "paper scale (each run's own time, packed runs counted in full: not GPU time).\n\n"
            + table(["row", "CPU runs", "CPU-hours", "GPU runs", "GPU run-minutes"], rows))


def verdicts(cells, need=1, claims=None):
    """The claims table (claims: claim_rows'), with the run time of the tables' runs behind it."""
    n, rows = claims or claim_rows(cells, need)
    runs = {id(r): r for c, rs in cells.items()  # a run borrowed by a second cell counts once
            if c.startswith(("t", "f", "c")) and not c.startswith(("t9/", "t10/")) for r in rs}
    minutes = sum(r.get("wall_s", 0) for r in runs.values()) / 60
    return (f"**Claims.** Ours: mean ± std over n = {n} seeds per cell (a row whose cells have "
            f"another n shows it); †: seeds more than {UNSTABLE} points apart; °: a record of an "
            "earlier recipe. The verdict follows the rule in its row, in one of six words "
            "(docs/METHODS.md, 'The verdict words')"
            + (f"; a cell with fewer than {need} seeds is not yet run" if need > 1 else "") + ". "
            f"The {len(runs)} runs of this scale's tables and figures (Tables 1-6, 11, 12 and 14 "
            "and the claims' cells; not the studies, probes or benchmarks) took "
            f"{minutes:.0f} minutes of run time (summed over runs). Each cell is read at the lr "
            "its sweep chose (Table 14); the last column, at the lr its task shares.\n\n"
            + table(["claim", "paper", "ours", "verdict", "rule", "evidence", "at the shared lr"],
                    rows))


# -----------------------------------------------------------------------------
# The tables, as data: each entry of TABLES (and STUDIES) is one table, and a row a list of entries,
# text or Cells. render_table, the one renderer, draws them all.


class Cell(collections.namedtuple("Cell", "cell key show paper", defaults=("acc", "entry", False))):
    """One entry of a table: the field `key` of `cell`'s records, shown by SHOW[show]; paper: the
    paper's number beside it (True: this cell's; or the cell it reports)."""


@dataclasses.dataclass
class Table:
    # each field but the title is data, or a function of the cells giving it
    title: str  # "Table 1. Retrieval": bold, and FINDINGS' marker for it
    header: object
    rows: object  # None: not run, drawn as '–'
    floor: object = ()  # the floor rows: each its label after FLOOR ('' or ' (hop)'), its entries
    when: object = None  # drawn only where when(cells) holds
    note: object = None  # a paragraph between the caption and the table
    caption: object = None  # the text after the title (see caption); None: CAPTIONS[title]


CAPTIONS = {title: text if text.startswith(":") else " " + text  # (after the bold title)
            for title, text in sections(CAPTIONS_MD).items()}


def caption(cells, text):
    """A caption's fields read from the records: {size:PREFIX} (the task size of the cells under
    PREFIX), {steps:CELL} and {KEY:CELL} (a cell's steps and the setting KEY of its config), and
    {SETTLED} and {READ_SEEDS}, the doubling ladder's constants."""
    text = text.replace("{SETTLED}", f"{SETTLED:g}").replace("{READ_SEEDS}", str(READ_SEEDS))
    def field(m):
        kind, arg = m.groups()
        runs = cells.get(arg)
        return (str(config_of(cells, arg)) if kind == "size" else "–" if not runs else
                str(runs[0]["steps"]) if kind == "steps" else f"{runs[0]['config'][kind]:g}")
    return re.sub(r"\{(\w+):([^}]*)\}", field, text)


def shown(cells, x):
    """A table entry as text: a Cell through its show, else str(x)."""
    if not isinstance(x, Cell):
        return str(x)
    text = str(SHOW[x.show](cells, x.cell, x.key))
    if x.paper:  # ' [N]': the paper's number for the cell (e.g. t1/needle/mixit), if it has one
        where, _, variant = (x.cell if x.paper is True else x.paper).rpartition("/")
        text += f" [{PAPER[where][variant]}]" if variant in PAPER.get(where, {}) else ""
    return text


def render_table(cells, t):
    """One entry of TABLES as markdown ('–': no rows yet; '': not drawn where `when` fails)."""
    def of(x):  # a Table's field: data, or a function of the cells
        return x(cells) if callable(x) else x
    if t.when and not t.when(cells):
        return ""
    out = [f"**{t.title}**" + caption(cells, of(t.caption) or CAPTIONS[t.title])]
    if t.note and t.note(cells):
        out.append(t.note(cells))
    rows = of(t.rows)
    if rows is None:
        return "\n\n".join(out + ["–"])
    rows = rows + [[FLOOR + f[0]] + list(f[1:]) for f in of(t.floor)]
    out.append(table(of(t.header), [[shown(cells, x) for x in row] for row in rows]))
    return "\n\n".join(out)


def lowest_loss(runs):
    """Each run's lowest validation loss and its step (the final hides an overfit run's best)."""
    if not runs:
        return "–"
    best = [min((h for h in r["history"] if "loss" in h), key=lambda h: h["loss"]) for r in runs]
    steps = ", ".join(str(h["step"]) for h in best)
    return f"{stat([h['loss'] for h in best], 1, 3)} ({steps}){old(runs)}"


def yelp_heads(cells, cell, key):
    """Table 3b's MixiT with H heads, read from the MixiT row where that row has H heads."""
    h = int(cell.rsplit("heads", 1)[1])
    runs = cells.get(cell) or [r for r in cells.get("y/yelp/mixit", [])
                               if r["config"]["n_head"] == h]
    return stat([r["final"]["acc"] for r in runs])


def seed_spread(cells, v, task):
    """The draw study's entry for a row and task: mean ± std, range and r of its seeds (0-2: the
    main tables', 3-9: s1/; MixiT without its sink: s3/)."""
    runs = (cells.get(f"s3/{task}/{v}", []) if v == "mixit-nosink"
            else cells.get(f"{HOME[task]}/{v}", []) + cells.get(f"s1/{task}/{v}", []))
    vals = [r["final"]["loss"] if task == "lm" else 100 * r["final"]["acc"] for r in runs]
    d = 3 if task == "lm" else 1
    # accuracies through stat() as fractions, so that a spread beyond UNSTABLE is marked † here too
    shown = stat(vals, 1, d) if task == "lm" else stat([v / 100 for v in vals], 100, d)
    text = f"{shown}, {min(vals):.{d}f}–{max(vals):.{d}f}" if vals else "–"
    if v in ("frozen_qk", "mixit") and len(vals) >= 5:
        text += f"; r = {figures.correlation([figures.draw_strength(r) for r in runs], vals):+.2f}"
    return text


# How a Cell can be shown (its `show`): each a function (cells, cell, key) -> text
SHOW = {
    "entry": entry,  # mean ± std (n=N) of the field, ° where an earlier recipe's record is read
    "floor": floor,  # the best trivial rule on the task of the cells under a prefix
    "lowest": lambda cells, c, key: lowest_loss(cells.get(c, [])),
    "trainable": lambda cells, c, key: cells[c][0]["n_trainable"] if cells.get(c) else "–",
    # where the curve stood 1000 steps before its end (Table 11: flat, or still climbing?)
    "1000 steps earlier": lambda cells, c, key: stat([
        next(h["acc"] for h in reversed(r["history"]) if h["step"] <= r["steps"] - 1000)
        for r in cells.get(c, [])]),
    # Table 10: entry() and the runs' mean training seconds
    "with seconds": lambda cells, c, key: entry(cells, c, key) + (
        f" ({sum(r['train_s'] for r in cells[c]) / len(cells[c]):.0f} s)" if cells.get(c) else ""),
    "yelp heads": yelp_heads,
    "seeds": seed_spread,  # the draw study: its Cell's key is the task
}


def floor_of(prefix, key="acc"):  # a floor row's entry (see floor)
    return Cell(prefix, key, "floor")


def heads_of(cells):  # Table 5's head counts, as run (the -shipped twins are a row of their own)
    return sorted({int(c[12:]) for c in cells if re.fullmatch(r"t5/add/heads\d+", c)})


def depth_b_floor(cells):  # Table 6b: one floor row per task size
    at = {cells[c][0]["config"]["task_size"]: c
          for c in (at[min(at)] for at in depth_rows(cells).values())}
    depths = depth_table(cells, True)[1]
    return [[f" (add-{size})", "accuracy %", floor_of(c)] + [""] * (len(depths) - 1)
            for size, c in sorted(at.items())]


def plateau_rows(cells):
    """Table 11: the cells that `run_all.sh --claims` ran past the quick tables' plateau."""
    def steps(c):
        return cells[c][0]["steps"] if cells.get(c) else "–"
    rows = [(NAMES[v] + " (hop)", f"c2/hop/{v}") for v in ("standard", "frozen_qk")]
    # the cells of Tables 1 and 3 that --claims gives more steps (claims 1-3 read these), not a
    # sweep's (Table 14); a doubled cell (row 1c's copies) where its ladder stands
    for c in sorted(cells):
        if c.startswith(("c1/", "c2/induction/", "c3/modadd/")) and not (LR.search(c) or STEPS.search(c)):
            c = capacity_cell(cells, c)[0] if doubled(cells, c) else c
            name = NAMES[STEPS.sub("", c).split("/")[2]]  # (a rung's variant without its -steps<N>)
            rows.append((f"{name} ({c.split('/')[1]}, {steps(c)} steps)", c))
    rows += [(f"MixiT, 64 heads ({t})", f"c3/{t}/mixit-heads64") for t in ("add", "dyck")]
    for v in [v for v in CAPACITY_ROWS if cells.get(f"c4/memorize/{v}")]:  # each at its read budget
        c, settled = capacity_cell(cells, f"c4/memorize/{v}")
        how = (f", {CAP}" if settled == CAP else "" if settled else ", not settled by doubling"
               if v in LADDERED else ", one budget: no doubling run")
        rows.append((f"{NAMES[v]} (memorize, {steps(c)} steps{how})", c))
    return [[name, Cell(c), Cell(c, "bits_per_param", paper="t4/memorize/" + STEPS.sub(
        "", c.split("/")[2])) if c.startswith("c4/") else "–", Cell(c, show="1000 steps earlier")]
            for name, c in rows]


def budgets_tried(cells):  # every budget a capacity cell ran at, in steps
    return sorted({s for v in CAPACITY_ROWS for s, _ in ladder(cells, f"c4/memorize/{v}")})


def budget_rows(cells):
    """Table 12: each capacity cell's accuracy at each budget, its doublings, the budget read."""
    rows = []
    for v in CAPACITY_ROWS:
        rungs = dict(ladder(cells, f"c4/memorize/{v}"))
        if not rungs:
            continue
        row, below = [NAMES[v]], None
        for s in budgets_tried(cells):
            c = rungs.get(s)
            text = entry(cells, c) if c else "–"
            if c and below:
                a, b = paired(cells, below, c)  # the seeds both budgets ran
                moved = doubling(a, b)
                text += f"; {move(a, b)[0]:+.2f}, {moved}" if moved else "; waits for seeds"
            row.append(text)
            below = c
        row.append(read_at(cells, v, rungs))
        rows.append(row)
    if all(ladder(cells, f"c4/memorize/{v}") for v in CAPACITY):
        rows.append([RULE_ROW] + [rule_at(cells, s) for s in budgets_tried(cells)] + ["–"])
    return rows


def read_at(cells, v, rungs):
    """Table 12's last column: the budget read of v's ladder, or what the rule runs next."""
    c, settled = capacity_cell(cells, f"c4/memorize/{v}")
    top = max(rungs)
    if settled:
        short = READ_SEEDS - len(final(cells, c))  # the verdict reads READ_SEEDS seeds there
        more = f"; next: {short} more seed{'s' * (short > 1)}" if short > 0 else ""
        return f"{budget_of(cells[c])} steps{more}" + f" ({CAP})" * (settled == CAP)
    if v not in LADDERED:
        return "no doubling run"
    if len(final(cells, rungs[top])) < LADDER_SEEDS:
        return f"not settled; next: {top} steps' seeds"
    return f"not settled; next: {2 * top} steps"


RULE_ROW = ("*claim 4's rule at this budget: Standard / Frozen-QK / MixiT / Frozen-MLP, bits per "
            "trainable parameter (a reading, not a verdict)*")
CAPACITY_TESTS = ("Standard > Frozen-QK", "Frozen-QK ≈ MixiT", "each > Frozen-MLP")


def rule_at(cells, steps):
    """Table 12's last row: claim 4's rule on the four capacity cells at one budget (a cell settled
    below it at its settled budget): whether the verdict depends on the budget, not a verdict."""
    bits, at = {}, {}
    for v in CAPACITY:
        base = f"c4/memorize/{v}"
        c, read = dict(ladder(cells, base)).get(steps), read_budget(cells, base)
        if (not c or len(final(cells, c)) < LADDER_SEEDS) and read and read[1] <= steps:
            c = read[0]
        if not c or len(final(cells, c)) < LADDER_SEEDS:
            return "waits for seeds"
        bits[v], at[v] = final(cells, c, "bits_per_param"), c
    tests, _ = capacity_tests(cells, at)
    shown = " / ".join("{:.2f} ± {:.2f}".format(*mean_std(b)) for b in bits.values())
    return f"{shown}: {outcome(list(tests), 2)}{capacity_said(tests)}"  # (names the tests itself)


def capacity_said(tests):  # which of claim 4's tests fail, and which the spread straddles
    said = [(kind, [name for name, t in zip(CAPACITY_TESTS, tests) if t is value])
            for kind, value in (("fails", False), ("straddles", None))]
    return "".join(f"; {kind}: {', '.join(names)}" for kind, names in said if names)


def lm_caption(cells):
    """Table 2's caption: the corpus its rows trained on, from their records."""
    corpus = {"": "Python's help text", "stdlib": "Python's standard library sources"}
    rows = collections.defaultdict(list)  # corpus -> the rows trained on it
    for v in VARIANTS + ["frozen_qk_ref"]:
        for data in dict.fromkeys(r["config"].get("data", "") for r in cells.get(f"t2/lm/{v}", [])):
            rows[corpus.get(data, data)].append(NAMES[v])
    said = "; ".join(f"of {name}" + (f": {' / '.join(names)}" if len(rows) > 1 else "")
                     for name, names in rows.items()) or "of Python's help text"
    return (f" (bytes {said}): validation loss in nats per byte and bits per byte; [paper]: "
            "WikiText-103 loss in nats per *token* (a different unit and corpus: compare the "
            "ordering and the gaps).")


def capacity_caption(cells):
    """Table 4's caption: which cells claim 4 reads, and whether this table's budget was doubled."""
    if cells.get("c4/memorize/standard"):
        how = "read at a budget, not tested by doubling; claim 4 reads Tables 11 and 12"
    elif any(doubled(cells, f"t4/memorize/{v}") for v in CAPACITY):
        how = "claim 4 reads each row at the budget its doubling settled, t4/memorize/ROW-steps<N>"
    else:
        how = "read at a budget, until run_all.sh doubles it; claim 4 reads this table"
    return (": bits per trainable parameter = accuracy x n² log2 n / #trainable, 2-layer models "
            "(width {n_embd:t4/memorize/standard}, {steps:t4/memorize/standard} steps: "
            f"{how}); [paper].")


def tuning(cells, rows):
    """What the lr sweep changed, from claim_rows' rows: the swept cells that moved off the shared
    lr, with their test score at each, and the claims rows whose verdict differs at the shared lr."""
    def plain(c):  # t1/hop/mixit -> "MixiT on hop"; c3/dyck/mixit-heads64 -> "64-head MixiT on dyck"
        task, v = c.split("/")[1:3]
        v, _, extra = v.partition("-")
        heads = re.match(r"heads(\d+)", extra)
        return f"{heads[1] + '-head ' if heads else ''}{NAMES.get(v, v)} on {task}"
    view, chosen = tuned_view(cells)
    if not chosen:
        return "**What tuning changed**: the learning-rate sweep has not run at this scale."
    moved = [f"{plain(c)} to {lr_text(pick[0])} (test {stat(final(view, c))} there, "
             f"{stat(final(cells, c))} at {lr_text(shared_lr(cells, c))})"
             for c, pick in chosen.items() if pick and pick[1] != "shared"]
    waiting = [plain(c) for c, pick in chosen.items() if not pick]
    flips = [f"{r[0].split('.')[0]} ({r[6]} at the shared lr, {r[3]} tuned)"
             for r in rows if r[3] != r[6] and NOT_RUN not in (r[3], r[6])]
    return (f"**What tuning changed**: of the {len(chosen)} swept cells, "
            + (f"{len(moved)} moved off the shared lr: {'; '.join(moved)}" if moved
               else "none moved off the shared lr")
            + (f"; {len(waiting)} still {'waits' if len(waiting) == 1 else 'wait'} for runs: "
               f"{', '.join(waiting)}" if waiting else "")
            + ". Claims rows whose verdict, decided both ways, differs from the one at the shared "
            f"lr: {'; '.join(flips) or 'none'}.")


def sweep_rows(cells):
    """Table 14: each swept cell's validation score by lr, the lr chosen, and its test scores."""
    view, chosen = tuned_view(cells)
    rows = []
    for base, pick in chosen.items():
        lm = cells[base][0]["config"]["task"] == "lm" if cells.get(base) else False
        sign, scale, digits, key = (-1, 1, 3, "loss") if lm else (1, 100, 1, "acc")
        grid = " · ".join(f"{lr_text(lr)}: {stat([sign * x for x in v], scale, digits, n=False)}"
                          for lr, v in lr_grid(cells, base).items())
        rows.append([f"`{base}`", lr_text(shared_lr(cells, base)), grid,
                     "waits for runs" if not pick else f"{lr_text(pick[0])} ({pick[1]})",
                     stat(final(view, base, key), scale, digits) if pick else "–",
                     stat(final(cells, base, key), scale, digits)])
    return rows


TABLES = [
    Table("Table 1. Retrieval",
          ["variant"] + RETRIEVAL,
          [[NAMES[v]] + [Cell(f"t1/{t}/{v}", paper=True) for t in RETRIEVAL] for v in T1_ROWS],
          [[""] + [floor_of(f"t1/{t}/") for t in RETRIEVAL]]),
    Table("Table 2. Language modelling",
          ["variant", "val loss (nats/byte)", "bits/byte", "lowest val loss (at step)"],
          [[NAMES[v], Cell(f"t2/lm/{v}", "loss", paper=True), Cell(f"t2/lm/{v}", "bpb"),
            Cell(f"t2/lm/{v}", show="lowest")] for v in VARIANTS + ["frozen_qk_ref"]],
          [["", floor_of("t2/lm/", "loss"), floor_of("t2/lm/", "bpb"), ""]], caption=lm_caption),
    Table("Table 3. Tasks that need no input-dependent attention",
          ["variant"] + T3,
          [[NAMES[v]] + [Cell(f"{HOME[t]}/{v}") for t in T3] for v in VARIANTS + ["mixit-shipped"]],
          [[""] + [floor_of(HOME[t] + "/") for t in T3]]),
    Table("Table 4. Memorization capacity",
          ["variant", "bits / trainable param", "accuracy (%)", "trainable params"],
          [[NAMES[v], Cell(c, "bits_per_param", paper=True), Cell(c), Cell(c, show="trainable")]
           for v in VARIANTS + ["mixit-shipped"] for c in [f"t4/memorize/{v}"]],
          [["", "–", floor_of("t4/"), "–"]], caption=capacity_caption),
    Table("Table 5. MixiT with more heads",
          lambda cells: ["n_head"] + [str(h) for h in heads_of(cells)],
          lambda cells: [[name] + [Cell(f"t5/add/heads{h}{twin}") for h in heads_of(cells)]
                         for name, twin in (("MixiT", ""), (NAMES["mixit-shipped"], "-shipped"))],
          lambda cells: [[""] + [floor_of("t5/")] * len(heads_of(cells))]),
    Table("Table 3b. Yelp review polarity", ["variant", "Yelp"],
          [[NAMES[v], Cell(f"y/yelp/{v}", paper=True)] for v in VARIANTS[:4]]
          + [[f"MixiT, {h} heads", Cell(f"y/yelp/mixit-heads{h}", show="yelp heads")]
             for h in (4, 64)],
          [["", floor_of("y/yelp/")]]),
    Table("Table 6. Depth",
          lambda cells: ["variant", "metric"] + [f"L={d}" for d in depth_table(cells)[1]],
          depth_lines,
          lambda cells: [["", "accuracy %"] + [floor_of("t6/")] * len(depth_table(cells)[1])]),
    Table("Table 6b. Depth, where Random adds",
          lambda cells: ["cell", "metric"] + [f"L={d}" for d in depth_table(cells, True)[1]],
          lambda cells: depth_lines(cells, True), depth_b_floor,
          when=lambda cells: "random-w256" in depth_rows(cells)),
    Table("Table 11. Claims 1-5 given more steps",
          ["cell", "accuracy (%)", "bits / trainable param", "1000 steps before the end"],
          plateau_rows,
          [[f" ({t})", floor_of(prefix), "–", "–"] for t, prefix in
           (("hop", "c2/"), ("add", "c3/add/"), ("dyck", "c3/dyck/"), ("memorize", "c4/"))],
          when=lambda cells: any(c.startswith(("c1/", "c2/", "c3/", "c4/")) for c in cells)),
    Table("Table 12. Capacity budgets by doubling",
          lambda cells: ["cell"] + [f"{s} steps" for s in budgets_tried(cells)] + ["read at"],
          budget_rows, when=lambda cells: bool(budgets_tried(cells))),
    Table("Table 14. Learning rate, chosen per cell on validation data",
          ["cell", "shared lr", "validation score at each lr (seeds 0-1)", "chosen lr",
           "test at the chosen lr", "test at the shared lr"],
          sweep_rows, when=lambda cells: any(LR.search(c) for c in cells)),
    Table("Table 7. Training speed",
          ["variant", "ms/step", "samples/s", "vs Standard"], bench.bench_rows, note=bench.bench_note),
]


def render(cells, scale):
    """Tables 1-7 and 11-14 of a scale, from its cells (the studies: render_studies)."""
    records = {r["config"]["tag"]: r for runs in cells.values() for r in runs}  # borrowed once
    minutes = sum(r.get("wall_s", 0) for r in records.values()) / 60
    # (the total goes first: a paragraph after the last table would be placed with it)
    out = [f"This scale's records: {len(records)} runs, {minutes:.0f} minutes of run time in total "
           "(summed over parallel runs). Accuracies are mean ± std over n seeds; **†**: the seeds "
           f"lie more than {UNSTABLE} points apart, so the cell is unstable at its budget: read "
           "its spread, not its mean."
           + (" **°**: a record of an earlier recipe, which run_all.sh reruns (no verdict rests "
              "on it)." if any(old(runs) for runs in cells.values()) else "")]
    out += [text for t in TABLES if (text := render_table(cells, t))]
    return "\n\n".join(out)


# Tables 9-10 and the two studies beyond the paper (`run_all.sh --studies`)
STUDY_TASKS = ["add", "modadd", "dyck", "memorize", "needle", "copy", "lm"]
DRAW_ROWS = ("standard", "frozen_qk", "mixit", "mixit-nosink")  # the draw study's
CONFOUNDS = [("Standard", "{home}/standard"),
             ("Standard, learned positions", "t9/{t}/standard_learnedpos"),
             (NAMES["standard_mixblock"], "t9/{t}/standard_mixblock"),
             (NAMES["mixit_stdblock"], "t9/{t}/mixit_stdblock"), ("MixiT", "{home}/mixit")]
# (variant, schedule, its cell): unfrozen from the start (Standard), at 25/50/75%, never
SCHEDULES = [(v, when, cell) for v in ("frozen_qk", "frozen_mlp") for when, cell in
             [("unfrozen at 0% (= Standard)", "{home}/standard")]
             + [(f"unfrozen at {p}%", "t10/{t}/" + f"{v}-u{p}") for p in (25, 50, 75)]
             + [("never unfrozen", "{home}/" + v)]]


def study_cell(c, t, show="entry"):  # a study's cell pattern c on task t: lm's loss, else accuracy
    return Cell(c.format(home=HOME[t], t=t), "loss" if t == "lm" else "acc", show)


def contexts(cells):  # the longer-context study's context lengths
    return sorted({int(c.split("/")[1][2:]) for c in cells if c.startswith("s2/")})


STUDIES = [
    Table("Table 9. MixiT's confounds",
          ["row"] + STUDY_TASKS,
          [[name] + [study_cell(c, t) for t in STUDY_TASKS] for name, c in CONFOUNDS]),
    Table("Table 10. Hybrid schedules",
          ["schedule", "needle", "add", "lm"],
          [[f"{NAMES[v]}, {when}"]
           + [study_cell(c, t, "with seconds") for t in ("needle", "add", "lm")]
           for v, when, c in SCHEDULES]),
    Table("How much does the random draw matter?",
          ["variant", "needle", "add", "lm (loss)"],
          # a Cell's key here is the task (seed_spread reads the row's draws itself)
          [[NAMES.get(v, "MixiT without its sink head")]
           + [Cell(v, t, "seeds") for t in ("needle", "add", "lm")] for v in DRAW_ROWS],
          # (here, not in CAPTIONS_MD: it types the critical |r| of ten seeds)
          caption=" Seeds 0-9 (init, mixing matrices, frozen Q/K and batch order change together); "
          "mean ± std, the range, and r: the correlation across seeds between the result and one "
          "number read off the draw at initialization (`draw_strength`: MixiT's mean mixing "
          "strength, Frozen-QK's mean logit scale; with 10 seeds |r| < 0.63 is no evidence of a "
          "link)."),
    Table("Longer context",
          lambda cells: ["variant", f"context {config_of(cells, 't2/lm/')}"]
          + [f"context {T}" for T in contexts(cells)],
          lambda cells: [[NAMES[v]] + [Cell(c, "bpb") for c in [f"t2/lm/{v}"]
                                       + [f"s2/lm{T}/{v}" for T in contexts(cells)]]
                         for v in ("standard", "frozen_qk", "mixit")]),
]


def render_studies(cells):
    """The STUDIES' tables, from the `--studies` cells; '' if none ran."""
    if not any(c.startswith(("t9/", "t10/", "s1/", "s2/")) for c in cells):
        return ""
    return "\n\n".join(render_table(cells, t) for t in STUDIES)


# -----------------------------------------------------------------------------
# The documents. Each is rendered from its template (DOCS), which alone holds the markers:
#   <!-- NAME -->     a line of its own: a block, one of render_scale's (`quick-verdicts`,
#                     `paper: Table 1`, `quick: Claim 1 verdict`, ...) or `exercises` (homework.py)
#   <!--= SPEC -->    inline: a number or words from the records (fill_numbers; SPEC: records.py,
#                     "Numbers in prose")
# The document is its template with every marker replaced, under one comment line (invisible on
# GitHub) naming the template, so that its raw text reads clean: edit the template, then run
# python report.py (either scale renders every document); --check renders them and compares.

BLOCK = re.compile(r"^<!-- ([^=].*?) -->$", re.M)
MARK = re.compile(r"<!--= ([^>]*?) -->")
HEAD = "<!-- Rendered from {} by report.py: edit that file, then run python report.py -->\n"


def bench_values(r, key):  # the KEYs read with bench.py; records.record_values reads the rest
    kind, _, arg = key.partition(":")
    if kind == "speedup":  # a benchmark's % more samples/s than Standard
        return bench.speedups([r], arg)
    if kind == "qk_bound":  # % of a Standard step's FLOPs that freezing W_Q, W_K can save
        return [100 * bench.frozen_qk_bound(r["config"])]
    return record_values(r, key)


def task_size(spec):
    """A task's size as tasks.py sets it: 'tasks NAME cpu' (mixit.py's default) or '... paper'."""
    _, name, which = spec.split()
    if name not in tasks.TASKS or which not in ("cpu", "paper"):
        raise ValueError(f"'{spec}': expected tasks NAME cpu|paper, NAME one of tasks.TASKS")
    return str(tasks.TASKS[name][1 if which == "cpu" else 2])


def fill_numbers(text, problems=None):
    """text with each marked number (MARK) replaced by its value from the records. A number that
    no record gives keeps its bare marker and is named in problems (a list), never guessed."""
    @functools.cache
    def records_of(name, every=False):  # every: superseded records too (a CELL[KEY=VALUE])
        records = read_records(f"results/{name}.jsonl")
        return records if every else current(records)

    def one(m):
        try:
            return (task_size(m[1]) if m[1].startswith("tasks ")
                    else number(m[1], records_of, bench_values))
        except ValueError as e:
            if problems is not None:
                problems.append(str(e) if m[1] in str(e) else f"'{m[1]}': {e}")
            return m[0]  # the bare marker says which
    return MARK.sub(one, text)


def pieces(md):
    """The rendered tables one by one, by their bold title: {"Table 1": "**Table 1. ...", ...}.
    FINDINGS puts each where its claim is discussed, at its `<!-- quick: Table 1 -->` line."""
    return {m[1]: piece.strip() for piece in re.split(r"\n\n(?=\*\*)", md)
            if (m := re.match(r"\*\*(.+?)[.?*]", piece))}


def scale_cells(scale):  # a scale's cells from its records, superseded runs marked
    return load(f"results/{scale}.jsonl", bench.superseded_tags(scale))


# FIGURES lists what each figure drawn from the records shows (figures.shown) and its PNG's hash,
# so that --check can tell a committed figure that the records would no longer draw
FIGURES = "plots/figures.json"


def png_hash(path):  # None where the file is not there
    if os.path.exists(path):
        return hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]


def figure_index(drawn):
    """FIGURES' text, with the figures just drawn into plots/ ({name: what it shows})."""
    index = json.load(open(FIGURES)) if os.path.exists(FIGURES) else {}
    index.update({name: {"shows": shows, "png": png_hash(f"plots/{name}")}
                  for name, shows in drawn.items()})
    return json.dumps(dict(sorted(index.items())), indent=1) + "\n"


def stale_figures(scale):
    """A line for each figure whose PNG or what it shows is not what FIGURES or the records say."""
    index = json.load(open(FIGURES)) if os.path.exists(FIGURES) else {}
    kept = figures.PLOT_DIR  # (a dry draw_all leaves it None)
    drawn = figures.draw_all(scale_cells(scale), scale, PAPER["t4/memorize"], dry=True)
    figures.PLOT_DIR = kept
    return [f"plots/{name} ({scale}): not the figure its records draw now"
            for name, shows in drawn.items()
            if index.get(name) != {"shows": shows, "png": png_hash(f"plots/{name}")}]


def render_scale(scale, draw=True, recompute_init=False):
    """({path: text} of a scale's own files, its tables file and, where it draws, FIGURES; {name:
    text} of its blocks for the templates). recompute_init: measure the covariance at init again."""
    cells = scale_cells(scale)
    drawn = figures.draw_all(cells, scale, PAPER["t4/memorize"]) if draw else {}
    parts = [render(cells, scale), figures.plot_attention(scale, draw), render_studies(cells)]
    if scale == "quick":  # the covariance at init, and the efficiency tables (ENGINEERING)
        parts += [figures.covariance_at_init(setting, draw, recompute=recompute_init)
                  for setting in figures.INIT_SETTINGS]
        parts.append("**Efficiency** (`bench.efficiency`; docs/ENGINEERING.md, 'Efficiency')\n\n"
                     + bench.efficiency())
    md = "\n\n".join(p for p in parts if p)
    need = 3 if scale.startswith("paper") else 1  # seeds a cell needs for a verdict
    rows = claim_rows(cells, need)
    claims = verdicts(cells, need, rows)
    out = {f"results/tables_{scale}.md": claims + "\n\n" + md + "\n"}
    if drawn and scale in ("quick", "paper"):
        out[FIGURES] = figure_index(drawn)
    # the blocks: whole parts (the claims table, the glance, the cost, what tuning changed), or
    # one table where the text needs it (pieces), with each claim's verdict sentence
    blocks = {"verdicts": claims, "tuning": tuning(cells, rows[1])}
    if scale == "quick":  # (both scales' verdicts)
        paper = scale_cells("paper")
        paper_n, paper_rows = claim_rows(paper, need=3)
        blocks["glance"] = functools.partial(glance, rows[1], paper_rows, rows[0], paper_n)
        blocks["cost"] = claim_costs(cells, paper)
    placed = pieces("\n\n".join([claims, md, claim_verdicts(rows[1], scale)]))
    return out, {**{f"{scale}-{name}": text for name, text in blocks.items()},
                 **{f"{scale}: {title}": text for title, text in placed.items()}}


def render_docs(blocks):
    """({path: text} of every document, each rendered from its template with blocks {name:
    text}; [a line for each marker that nothing fills])."""
    import homework  # here, not at the top: report.py renders without it
    blocks = {**blocks, "exercises": homework.exercise_list()}
    out, problems = {}, []
    for path, template in DOCS.items():
        if not os.path.exists(template):
            problems.append(f"{template}: missing (the template of {path})")
            continue

        def block(m):
            if m[1] in blocks:  # (a callable block words its links for the document's place)
                return blocks[m[1]](path) if callable(blocks[m[1]]) else blocks[m[1]]
            problems.append(f"{template}: nothing renders the block '{m[0]}'")
            return m[0]
        found = []
        text = fill_numbers(BLOCK.sub(block, open(template).read()), found)
        problems += [f"{template}: {p}" for p in found]
        out[path] = HEAD.format(template) + text
    return out, problems


def render_all(scale, draw=True, recompute_init=False):
    """{path: text} of every file report.py writes for a scale: its own (render_scale) and, for
    quick and paper, every document (with the other scale's blocks, its figures not drawn)."""
    out, blocks = render_scale(scale, draw, recompute_init)
    if scale in ("quick", "paper"):
        blocks.update(render_scale("paper" if scale == "quick" else "quick", draw=False)[1])
        docs, problems = render_docs(blocks)
        out.update(docs)
        for p in problems:
            print(f"report.py: {p}", file=sys.stderr)
    return out


def surfaces():
    """{name: text} of the prose that states results: the documents' templates (a number that a
    marker renders reads as the marker, a typed one as itself), the glance table's sentences
    (BELIEVE_MD), the tables' captions (CAPTIONS_MD) and run_all.sh's comments."""
    out = {t: open(t).read() for t in [*DOCS.values(), BELIEVE_MD, CAPTIONS_MD]
           if os.path.exists(t)}
    if os.path.exists("run_all.sh"):
        out["run_all.sh (comments)"] = comments(open("run_all.sh").read())
    return out


def overclaims(docs=None):
    """A line per sentence of each surface (docs: {name: text}) that types a number or verdict."""
    docs = surfaces() if docs is None else docs
    return [f"{name}: {kind} (records.unsourced): {s[:240]}"
            for name, text in docs.items() for kind, s in unsourced(text)]


def check():
    """Re-render everything from the records, in memory, compare it with the committed files and
    redraw the figures dry (stale_figures): a number typed by hand into a template or edited in a
    document, a marker nothing renders, or a number or figure left stale, fails here."""
    stale, blocks, files = [], {}, {}
    for scale in ("quick", "paper"):
        stale += stale_figures(scale)
        own, more = render_scale(scale, draw=False)
        files.update(own)
        blocks.update(more)
    docs, problems = render_docs(blocks)
    for path, text in {**files, **docs}.items():
        old = open(path).read() if os.path.exists(path) else ""
        if old != text:
            diff = [f"    - {a}\n    + {b}" for a, b in zip(old.splitlines(), text.splitlines())
                    if a != b]
            stale.append(f"{path}: differs from what its template and the records give; first "
                         "change:\n" + (diff[0] if diff else "    (lines added or removed)"))
    stale += problems + bench.queue_price_stale() + overclaims()
    for s in stale:
        print(s)
    print("report.py --check: " + ("stale: run python report.py --scale quick and --scale paper"
                                   if stale else "every rendered document, block, number and "
                                   "figure matches its template and the records"))
    return not stale


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print its usage and the error: one line is enough
        print(f"error: {message} (see python report.py --help)", file=sys.stderr)
        sys.exit(2)


def main():
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="quick", choices=["quick", "paper", "smoke", "paper-smoke"])
    p.add_argument("--check", action="store_true", help="compare the committed README, FINDINGS, "
                   "tables and figures with what the records give; exit 1 where they differ; "
                   "write nothing")
    p.add_argument("--recompute-init", action="store_true", help="draw the untrained models of "
                   "the covariance-at-init study again (minutes on a CPU) instead of reading "
                   "results/covariance_at_init*.json, and rewrite those files where a digit moved")
    args = p.parse_args()
    if args.check:
        sys.exit(0 if check() else 1)
    files = render_all(args.scale, recompute_init=args.recompute_init)
    for path, text in files.items():
        with open(path, "w") as f:
            f.write(text)
    print(files[f"results/tables_{args.scale}.md"])


if __name__ == "__main__":
    main()
