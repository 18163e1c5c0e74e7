"""
Draw the figures that the documents show into plots/ from the run records, and measure the models
behind three tables (tables_quick.md, FINDINGS): the token covariance of untrained models (with
depth), the attention heads of the models trained on induction (from their checkpoints), and the
strength of each run's random draw (the draw study). report.py calls these while it renders.

Every figure follows one rule: it says no more than its table (see the note above `with_n`).
"""

import dataclasses
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")  # files only, no screen needed
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

import mixit  # noqa: E402
import runtime  # noqa: E402
from records import (CAPACITY, LADDER_SEEDS, LADDERED, NAMES, VARIANTS, at_depths,  # noqa: E402
                     baseline, chosen_lr, final, ladder, lr_grid, lr_text, mean_std, read_budget,
                     shared_lr, swept, table, unstable)

PLOT_DIR = "plots"  # draw_all sets it: the smoke scale draws into results/smoke_plots instead
DRAWN = {}  # name -> what each figure saved since draw_all began shows (see `shown`)


# -----------------------------------------------------------------------------
# Figures


def save(name, title=None):
    """Save the current figure into PLOT_DIR (None: a dry run, only what it shows is kept)."""
    fig = plt.gcf()
    if title:
        fig.suptitle(title)
    if PLOT_DIR and fig.get_layout_engine() is None:  # (a figure with a colour bar lays itself out)
        fig.tight_layout()
    if PLOT_DIR:
        fig.savefig(f"{PLOT_DIR}/{name}", dpi=120, bbox_inches="tight",
                    metadata={"Grid": grid(fig)})
    DRAWN[name] = shown(fig)
    plt.close(fig)


def grid(fig):
    """'rows x columns' of its panels, in the PNG: a test checks a caption's 'left', '2 × 4'."""
    panel = next(ax for ax in fig.axes if ax.get_subplotspec())
    rows, cols = panel.get_subplotspec().get_topmost_subplotspec().get_gridspec().get_geometry()
    return f"{rows} x {cols}"


def shown(fig):
    """What a figure shows, every point (to 4 digits) and text, as a short hash that no matplotlib
    version changes: report.py --check compares it with what the records give now."""
    def points(xy):
        return " ".join(f"{float(x):.4g},{float(y):.4g}" for x, y in xy)
    parts = [t.get_text() for t in fig.texts]
    parts += [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    for ax in fig.axes:
        parts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        parts += [t.get_text() for t in ax.texts]
        parts += [points(zip(line.get_xdata(), line.get_ydata())) for line in ax.lines]
        parts += [points(segment) for c in ax.collections if hasattr(c, "get_segments")
                  for segment in c.get_segments()]  # error bars
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def legend_outside(fig):
    """A legend right of the panels of what each draws; one panel's own goes under it."""
    drawn = []  # per panel: {label: its first handle}, in the order drawn
    for ax in fig.axes:
        handles, labels = ax.get_legend_handles_labels()
        drawn.append({label: handles[labels.index(label)] for label in labels})
    panels = [entries for entries in drawn if entries]
    shared = {k: h for k, h in panels[0].items() if all(k in e for e in panels)}
    small = dict(fontsize=8, title_fontsize=8)
    fig.legend(shared.values(), shared.keys(), loc="center left", bbox_to_anchor=(1.0, 0.5),
               title="in every panel" if len(panels) > 1 else None, **small)
    for ax, entries in zip(fig.axes, drawn):
        own = {k: h for k, h in entries.items() if k not in shared}
        if own:
            fig.legend(own.values(), own.keys(), loc="upper center", bbox_to_anchor=(0.5, -0.2),
                       bbox_transform=ax.transAxes, title="this panel only", **small)


# A figure must not say more than its table: every accuracy axis spans at least from the task's
# floor to 100% (on an axis from 99.4 to 99.9%, a half-point dip between two single runs looks
# like a collapse), every curve says its n, and a spread over seeds is drawn where n > 1.


def with_n(name, ns):
    """A legend entry with its seeds: 'Standard (n=3)', 'n=1–3', or 'one seed'."""
    lo, hi = min(ns), max(ns)
    return f"{name} ({'one seed' if hi == 1 else f'n={lo}' if lo == hi else f'n={lo}–{hi}'})"


def floor_pct(cells, prefix):
    found = baseline(cells, prefix)  # the best trivial rule's test accuracy (%); None: unknown
    return None if found is None else 100 * found[2]


def accuracy_axis(ax, floors, xs=None):
    """Stretch an accuracy axis to span the floor to 100% at least, and draw the floor dashed (along
    xs where it changes with the size)."""
    known = [(x, f) for x, f in zip(floors if xs is None else xs, floors) if f is not None]
    if known:
        style = dict(color="gray", linestyle="--", linewidth=1, label="trivial rule (floor)")
        if xs is None:
            ax.axhline(min(f for _, f in known), **style)
        else:
            ax.plot(*zip(*known), **style)
    lo, hi = ax.get_ylim()
    ax.set_ylim(min([lo] + [f for _, f in known]) - 2, max(hi, 102))


def mark_unstable(ax, x, mean, accs, color, left=False):
    """Draw a cell's mean hollow, marked †, where its seeds lie apart. True if it did."""
    if not unstable(accs):
        return False
    ax.plot(x, mean, "o", color=color, markerfacecolor="white", markersize=9)
    ax.annotate("†", (x, mean), xytext=(-13 if left else 5, 2), textcoords="offset points",
                fontsize=13, fontweight="bold", color=color)
    return True


def seeds_and_spread(ax, xs, seeds, color, name, fmt="o-", percent=False, left=False):
    """At each x its seeds as dots, their mean ± std as a line named with_n; percent: accuracies
    (%), a mean whose seeds lie apart drawn hollow and marked † (on its left: left). Returns the
    means."""
    means = [mean_std(s)[0] for s in seeds]
    ax.errorbar(xs, means, yerr=[mean_std(s)[1] for s in seeds], fmt=fmt, capsize=3, color=color,
                label=with_n(name, [len(s) for s in seeds]))
    for x, s, m in zip(xs, seeds, means):
        ax.plot([x] * len(s), s, ".", color=color, alpha=0.5, markersize=5)
        if percent:
            mark_unstable(ax, x, m, [y / 100 for y in s], color, left)
    return means


def log_axis(ax, ticks, labels, base=2):
    """A log x axis, ticked at the values drawn (not at powers of its base)."""
    ax.set_xscale("log", base=base)
    ax.set_xticks(ticks, labels)
    ax.minorticks_off()


def plot_needle(cells, scale):
    """Needle accuracy against the number of key-value pairs: a line per variant, each seed a dot,
    mean ± std."""
    # per variant, [(task size, cell)] of its needle cells
    curves = {v: sorted((runs[0]["config"]["task_size"], c) for c, runs in cells.items()
                        if final(cells, c) and re.fullmatch(rf"(f1/needle\d+|t1/needle)/{v}", c))
              for v in ("standard", "frozen_qk", "mixit")}
    if not any(len(pts) > 1 for pts in curves.values()):
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for i, (v, pts) in enumerate(curves.items()):
        if pts:  # nudged sideways so that equal curves stay visible
            seeds = [[100 * a for a in final(cells, c)] for _, c in pts]
            seeds_and_spread(ax, [size + 0.08 * (i - 1) for size, _ in pts], seeds, f"C{i}",
                             NAMES[v], percent=True)
    floors = {size: floor_pct(cells, c) for pts in curves.values() for size, c in pts}
    accuracy_axis(ax, [floors[x] for x in sorted(floors)], sorted(floors))
    ax.set(xlabel="max key-value pairs (task_size)",
           ylabel="test accuracy (%), mean ± std over seeds",
           title=f"needle-in-a-haystack ({scale})\neach dot a seed; † (hollow): seeds more than 10 "
           "points apart")
    legend_outside(fig)
    save(f"needle_vs_pairs_{scale}.png")


def plot_lm_curves(cells, scale):
    """Claim 8 (Table 2's rows): each seed's validation loss at each evaluation, a colour per
    variant (a dot per evaluation: the line between two says nothing)."""
    if not any(c.startswith("t2/lm/") for c in cells):
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for i, v in enumerate(VARIANTS):
        for r in (runs := cells.get(f"t2/lm/{v}", [])):
            at = [h for h in r["history"] if "loss" in h]
            ax.plot([h["step"] for h in at], [h["loss"] for h in at], "o-", color=f"C{i}",
                    linewidth=1, markersize=3, label=with_n(NAMES[v], [len(runs)]))
    ax.set(xlabel="step", ylabel="validation loss (nats/byte)",
           title=f"byte-level LM, every seed ({scale})")
    legend_outside(fig)
    save(f"lm_curves_{scale}.png")


def depth_figure_rows(cells):
    """[(label, {depth: cell})] of claim 6's figure, which reads claim 6's own setting: Table 6b's
    rows at width 256 that ran (Random at both of its inits, MixiT)."""
    return [(row_label(cells, at), at) for row in ("random-w256", "random_ref-w256", "mixit-w256")
            if (at := at_depths(cells, f"c6/add/{row}"))]


def row_label(cells, at):
    """What tells a depth row from the others: variant (MixiT: heads), Q/K init, lr."""
    runs = [r for c in at.values() for r in cells[c]]
    cfg = runs[0]["config"]
    std = cfg["qk_init_std"]
    init = "1/√d" if abs(std - 1 / math.sqrt(cfg["n_embd"])) < 1e-4 else f"{std:g}"
    name = (f"MixiT, {cfg['n_head']} heads" if cfg["variant"] == "mixit" else
            f"{NAMES[cfg['variant']]}, Q/K init {init}")
    lrs = sorted({r["config"]["lr"] for r in runs})  # (a row that mixes lrs says so)
    return f"{name}, lr {' and '.join(f'{lr:g}' for lr in lrs)}"


def plot_depth(cells, scale):
    """Claim 6: each seed's accuracy and token covariance by depth, with mean ± std."""
    rows = depth_figure_rows(cells)
    if not rows:
        return
    depths = sorted({d for _, at in rows for d in at})
    shallowest = next(iter(rows[0][1].values()))  # its setting and floor stand for the figure's
    cfg = cells[shallowest][0]["config"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for i, (label, at) in enumerate(rows):
        color, side = f"C{i}", i - (len(rows) - 1) / 2
        xs = [d * 2 ** (0.07 * side) for d in at]  # the rows side by side on the log axis
        for a, key, unit in ((ax[0], "acc", 100), (ax[1], "token_cov", 1)):
            seeds = [[unit * y for y in final(cells, c, key)] for c in at.values()]
            seeds_and_spread(a, xs, seeds, color, label, percent=key == "acc", left=side < 0)
    accuracy_axis(ax[0], [floor_pct(cells, shallowest)])
    ax[0].set_ylim(top=104)  # (a std can reach past 100%; the seeds' dots cannot)
    for a, label in zip(ax, ("add test accuracy (%)", "token covariance, last block")):
        log_axis(a, depths, [str(d) for d in depths])
        a.set(xlabel="n_layer", ylabel=label)
    legend_outside(fig)
    save(f"depth_{scale}.png", f"claim 6, depth on add: Table 6b, claim 6's setting (width "
         f"{cfg['n_embd']}, add-{cfg['task_size']}; {scale})\neach dot a seed, line: mean ± std "
         "over seeds; † (hollow): seeds more than 10 points apart")


def plot_capacity(cells, scale, paper):
    """Claim 4's doubling (Table 12): each capacity cell's accuracy (left) and the four compared
    cells' bits per parameter (right, the paper's dotted) at every budget; hollow: a budget whose
    seeds have not all run; ringed: the budget read."""
    rows = [(v, rungs) for v in LADDERED if len(rungs := ladder(cells, f"c4/memorize/{v}")) > 1]
    if not rows:
        return
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for i, (v, rungs) in enumerate(rows):
        color, steps = f"C{i}", [s for s, _ in rungs]
        read = read_budget(cells, f"c4/memorize/{v}")
        for a, key, unit in ((ax[0], "acc", 100), (ax[1], "bits_per_param", 1)):
            if key == "bits_per_param" and v not in CAPACITY:
                continue  # the claim's rule compares the paper's four variants
            seeds = [[unit * y for y in final(cells, c, key)] for _, c in rungs]
            means = seeds_and_spread(a, steps, seeds, color, NAMES[v], fmt="-")
            for x, s, m in zip(steps, seeds, means):
                a.plot(x, m, "o", color=color, markersize=6,
                       markerfacecolor=color if len(s) >= LADDER_SEEDS else "white")
                if key == "acc":
                    mark_unstable(a, x, m, [y / 100 for y in s], color)
                if read and x == read[1]:
                    a.plot(x, m, "o", color=color, markerfacecolor="none", markersize=15,
                           label="read at (its doubling settled)")
        if v in CAPACITY and v in paper:
            ax[1].axhline(paper[v], color=color, linestyle=":", linewidth=1.2,
                          label="the paper's number (dotted, in its colour)")
    accuracy_axis(ax[0], [floor_pct(cells, "c4/memorize/")])
    ax[1].set_ylim(bottom=0)
    budgets = sorted({s for _, rungs in rows for s, _ in rungs})
    ax[0].set_title("every capacity cell", fontsize=10)
    ax[1].set_title("the four cells claim 4 compares", fontsize=10)
    for a, label in zip(ax, ("memorize test accuracy (%)", "bits per trainable parameter")):
        log_axis(a, budgets, [f"{s // 1000}k" if s % 1000 == 0 else str(s) for s in budgets])
        a.set(xlabel="budget (steps), each a run with its own cosine schedule", ylabel=label)
    _, first = rows[0][1][0]  # the first row's first budget: its setting stands for the figure's
    cfg = cells[first][0]["config"]
    legend_outside(fig)
    save(f"capacity_{scale}.png", f"claim 4's doubling (Table 12: memorize-{cfg['task_size']}, "
         f"width {cfg['n_embd']}; {scale})\neach dot a seed, line: mean ± std; hollow: a budget "
         "whose seeds have not all run")


def plot_lr_sweep(cells, scale):
    """Validation score by lr: a panel per task, a line per swept cell, chosen lr ringed."""
    by_task = {}
    for base in swept(cells):
        if cells.get(base) and lr_grid(cells, base):
            by_task.setdefault(cells[base][0]["config"]["task"], []).append(base)
    if not by_task:
        return
    fig, axes = plt.subplots(1, len(by_task), figsize=(3.3 * len(by_task), 3.4), squeeze=False)
    for ax, (task, bases) in zip(axes[0], sorted(by_task.items())):
        lm = task == "lm"
        for base in bases:  # a variant keeps its colour in every panel
            color = f"C{VARIANTS.index(base.split('/')[2].split('-')[0])}"
            by_lr = lr_grid(cells, base)  # {lr: each seed's score}
            seeds = [[-x if lm else 100 * x for x in v] for v in by_lr.values()]
            name = base.split("/", 1)[1].replace(f"{task}/", "")
            means = seeds_and_spread(ax, list(by_lr), seeds, color, name)
            if pick := chosen_lr(cells, base):
                ax.plot(pick[0], means[list(by_lr).index(pick[0])], "o", markersize=12,
                        markerfacecolor="none", color=color)
            ax.axvline(shared_lr(cells, base), color="gray", linestyle=":", linewidth=1)
        if not lm:  # from the task's floor to 100% at least, as every accuracy axis
            accuracy_axis(ax, [floor_pct(cells, bases[0].rsplit("/", 1)[0] + "/")])
        lrs = sorted({lr for base in bases for lr in lr_grid(cells, base)})
        log_axis(ax, lrs, [lr_text(lr) for lr in lrs], base=10)
        ax.tick_params(axis="x", labelsize=7)
        ax.set(xlabel="learning rate", title=task,
               ylabel="validation loss (nats/byte)" if lm else
               "accuracy on the table (%)" if task == "memorize" else "validation accuracy (%)")
        ax.legend(fontsize=7)
    save(f"lr_sweep_{scale}.png", "Each cell at a grid of learning rates: validation score "
         "(ringed: the lr chosen; dotted: the lr the task shares)")


def draw_all(cells, scale, paper_bits, dry=False):
    """Every figure of the quick scale that its records give, into plots/ (the smoke scale:
    results/smoke_plots; dry: no file), and {name: what it shows}. No document shows a figure of
    the paper scale, so it draws none. A figure cannot mark a record of an earlier recipe (°), so
    it leaves those out. paper_bits: the paper's bits per parameter by variant."""
    global PLOT_DIR
    PLOT_DIR = None if dry else "results/smoke_plots" if scale == "smoke" else "plots"
    if PLOT_DIR:
        os.makedirs(PLOT_DIR, exist_ok=True)
    DRAWN.clear()
    if scale.startswith("paper"):
        return {}
    fresh = {c: rs for c, runs in cells.items() if (rs := [r for r in runs if not r["superseded"]])}
    for plot in (plot_needle, plot_lm_curves, plot_depth, plot_lr_sweep):
        plot(fresh, scale)
    plot_capacity(fresh, scale, paper_bits)
    return dict(DRAWN)


# -----------------------------------------------------------------------------
# Measurements of models: token covariance at init, and the heads of the models trained on induction


INIT_NAMES = {"standard": "Standard (= every softmax variant)", "mixit": "MixiT",
              "standard_ref": "Standard, Q/K at 0.02 (= Random, reference init 0.02)"}
# (title, width, digits of add, MixiT's heads, depths, JSON): a wide sweep of depth, and claim 6's
# setting (Table 6b), so that a trained cell's covariance has its init beside it
INIT_SETTINGS = [
    ("", 64, 4, 4, (1, 2, 4, 8, 16, 32), "results/covariance_at_init.json"),
    (", in claim 6's setting (Table 6b)", 256, 3, 64, (2, 8, 16),
     "results/covariance_at_init_w256.json"),
]


def covariance_at_init(setting, draw=True, seeds=10, recompute=False):
    """How alike are the token representations at the last block of untrained models, as depth grows
    (the paper: softmax attention at init averages tokens together, MixiT does not)? Mean over
    `seeds` seeds in one of INIT_SETTINGS, as a table. The numbers are kept in a JSON file and
    read, not recomputed: the models are slow to draw on a CPU, and another CPU may round the last
    digit otherwise. recompute, or a missing file, draws them again (with draw, into the file)."""
    title, width, digits, mixit_heads, depths, saved = setting

    def shown(curves):
        return [[f"{m:.3f} ± {sd:.3f}" for m, sd in means] for means in curves.values()]

    def covariance(v, L, seed):  # of one untrained model
        cfg = mixit.resolve_config({"task": "add", "task_size": digits, "n_layer": L,
                                    "variant": v.removesuffix("_ref"),
                                    "qk_init_std": 0.02 if v.endswith("_ref") else 0,
                                    "n_embd": width, "n_head": mixit_heads if v == "mixit" else 4,
                                    "seed": seed, "device": "cpu", "out": "", "eval_size": 256})
        task, model, *_ = mixit.build(cfg, verbose=False)
        return mixit.token_covariance(model, task)
    if recompute or not os.path.exists(saved):
        # every softmax variant shares Standard's init; standard_ref: W_Q, W_K at 0.02
        curves = {v: [mean_std([covariance(v, L, s) for s in range(seeds)]) for L in depths]
                  for v in INIT_NAMES}
        if draw and not (os.path.exists(saved) and shown(json.load(open(saved))) == shown(curves)):
            with open(saved, "w") as f:  # (a change in the last digits only is not written)
                json.dump(curves, f, indent=1)
    else:
        curves = json.load(open(saved))
    heads = "4 heads" + (f" (MixiT {mixit_heads})" if mixit_heads != 4 else "")
    return (f"**Token covariance at initialization{title}** (no training; add-{digits} test "
            f"sequences, width {width}, {heads}, mean ± std over {seeds} seeds). "
            "Standard's row stands for every softmax variant: Frozen-QK, Frozen-MLP and Random "
            "share its init exactly (they differ only in what trains); its W_Q, W_K at the "
            "reference's 0.02 instead of 1/√d stand for the reference's Random, and for ours at "
            "that init.\n\n"
            + table(["variant"] + [f"L={d}" for d in depths],
                    [[INIT_NAMES[v]] + row for v, row in zip(curves, shown(curves))]))


@torch.no_grad()
def induction_scores(model, task):
    """Per layer and head, on the induction task's test set (query q at the last position, its
    earlier occurrence at p):
        induction score: attention from the query to p+1, the token after the earlier q
        previous-token score: mean attention from each position t to t-1
    An induction head scores near 1 on the first, a previous-token head on the second."""
    model.eval()
    x = task.test[0][:500]
    _, _, atts = model(x, return_hidden=True)  # list of (B, H, T, T), one per layer
    B, T = x.shape
    p = (x[:, :-1] == x[:, -1:]).float().argmax(1)  # (B,) where the query appeared before
    rows = torch.arange(B, device=x.device)
    t = torch.arange(1, T, device=x.device)
    return [{"induction": att[rows, :, T - 1, p + 1].mean(0).tolist(),  # (H,) each
             "previous": att[:, :, t, t - 1].mean((0, 2)).tolist()}
            for att in (a.float() for a in atts)]


def load_model(path):
    """A checkpoint's task (its fixed test set) and model."""
    cfg = mixit.resolve_config({"load": path, "device": "cpu", "out": ""})
    task, model, _, _, _ = mixit.build(cfg, verbose=False)
    model.load_state_dict(runtime.load_checkpoint(path)["model"])
    return task, model


def best_head(scores, k):
    """(score, layer, head) of the head that scores highest on k ('previous' or 'induction')."""
    return max((s, l, h) for l, layer in enumerate(scores) for h, s in enumerate(layer[k]))


@torch.no_grad()
def one_sequence(task, model):
    """Every head's attention on the first test sequence ([(H, T, T), one per layer]), and where
    its query occurred before."""
    x = task.test[0][:1]
    _, _, atts = model(x, return_hidden=True)
    return [att[0].float() for att in atts], int((x[0, :-1] == x[0, -1]).float().argmax())


def attention_map(ax, att, title, p=None, low=0.0):
    """One head's attention (T, T) on one sequence, coloured from low to 1; a red box where the
    query (the last row) meets the token after its earlier occurrence p: the induction score's."""
    T = att.shape[0]
    image = ax.imshow(att.numpy(), cmap="viridis", vmin=low, vmax=1)
    if p is not None:
        ax.add_patch(plt.Rectangle((p + 0.5, T - 1.5), 1, 1, fill=False, edgecolor="red",
                                   linewidth=1.5))
    ax.set_title(title, fontsize=7)
    ax.set_xlabel("key", fontsize=6, labelpad=1)
    ax.set_ylabel("query", fontsize=6, labelpad=1)
    return image


def scores_caption(fig, T, more=""):
    """Under a figure of maps (sequences of T tokens), what the scores in each map's title measure
    (induction_scores), and `more`."""
    text = ("Each map: row = query position, column = key position, colour = the attention weight "
            "(each row sums to 1; causal, so nothing above the diagonal). ind = the induction "
            "score: the attention from the query (the last position) to the token right after the "
            "query's earlier occurrence, mean over the first 500 test sequences (red box: that "
            f"entry on this sequence); an induction head scores near 1, chance is about 1/{T}. "
            "prev = the previous-token score: the mean attention from each position t to t-1 over "
            "the same sequences; a previous-token head scores near 1." + more)
    fig.text(0.5, 0, "\n".join(textwrap.wrap(text, int(16 * fig.get_figwidth()))), ha="center",
             va="top", fontsize=7)


def plot_attention(scale, draw=True):
    """The attention heads of the 2-layer models trained on induction, as a table; with draw, each
    checkpoint's scores are measured again, and Frozen-QK's maps drawn at the quick scale (the
    only maps a document shows). The checkpoints stay out of git, so the scores are kept in
    results/heads_<scale>.json: a fresh clone renders the table from there."""
    saved = f"results/heads_{scale}.json"
    heads = json.load(open(saved)) if os.path.exists(saved) else {}
    lines = []
    for v in ("standard", "frozen_qk", "frozen_qk_ref", "mixit"):
        path = f"results/ckpt/{scale}_induction_{v}.pt"
        if draw and os.path.exists(path):  # (--check reads the saved scores)
            task, model = load_model(path)
            heads[v] = induction_scores(model, task)
            if (v, scale) == ("frozen_qk", "quick"):
                draw_attention(task, model, heads[v])
        if v in heads:  # the variant's best previous-token and induction heads
            lines.append([NAMES[v]] + ["{:.2f} (L{} H{})".format(*best_head(heads[v], k))
                                       for k in ("previous", "induction")])
    if not lines:
        return ""
    if draw:
        with open(saved, "w") as f:
            json.dump(heads, f, indent=1)
    maps = "; Frozen-QK's maps: `plots/attention_frozen_qk_quick.png`" if scale == "quick" else ""
    return (f"**Attention heads on induction** (2-layer models{maps}): the best previous-token "
            "score (mean attention from t to t-1) and the best induction score (attention from the "
            "query to the token after its earlier occurrence). Chance for the induction score is "
            "about 1/T.\n\n"
            + table(["variant", "previous-token head", "induction head"], lines))


def draw_attention(task, model, scores):
    """Every head's attention on one test sequence of the quick Frozen-QK model: a row per layer, a
    column per head, each titled with its scores (induction_scores)."""
    maps, p = one_sequence(task, model)
    L, H, T = len(maps), maps[0].size(0), maps[0].size(1)
    fig, axes = plt.subplots(L, H, figsize=(2.2 * H + 1, 2.3 * L + 0.4), squeeze=False,
                             layout="constrained")
    for l in range(L):
        for h in range(H):
            ind, prev = scores[l]["induction"][h], scores[l]["previous"][h]
            image = attention_map(axes[l][h], maps[l][h], f"L{l} H{h}: ind {ind:.2f} "
                                  f"prev {prev:.2f}", p)
            axes[l][h].tick_params(labelsize=6)
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight (colour scale of every map)")
    scores_caption(fig, T)
    save("attention_frozen_qk_quick.png", f"Frozen-QK on induction, one seed (seed "
         f"{model.cfg.seed}): attention of one test sequence (quick)")


# -----------------------------------------------------------------------------
# The draw study: one number for a run's random draw


def correlation(xs, ys):
    """Pearson's r of two equal-length lists (0 where either does not vary)."""
    r = float(torch.corrcoef(torch.tensor([xs, ys], dtype=torch.float64))[0, 1])
    return 0.0 if math.isnan(r) else r


def draw_strength(record):
    """One number for a run's random draw, read off its model rebuilt at init from the record's
    config. MixiT: the RMS of A - I over the causal entries of every head but the sink (about
    sigma_h). Frozen-QK: the RMS entry of W_Q^T W_K / sqrt(d_head), times the width (the std of
    the logits for inputs of RMS 1), over heads and blocks."""
    fields = {f.name for f in dataclasses.fields(mixit.Config)}  # older records hold a few more
    given = {k: v for k, v in record["config"].items()
             if k in fields and k not in ("load", "save", "save_steps", "out", "tag", "compile")}
    cfg = mixit.resolve_config({**given, "device": "cpu", "out": ""})
    _, model, *_ = mixit.build(cfg, verbose=False)
    C, H = cfg.n_embd, cfg.n_head
    values = []
    for block in model.blocks:
        if cfg.variant == "mixit":
            A = block.attn.A  # (H, T, T)
            Z = (A - torch.eye(A.size(-1)))[int(cfg.mixit_sink):]  # drop the sink head
            causal = torch.ones_like(Z[0]).tril().bool()
            values.append(float(Z[:, causal].pow(2).mean().sqrt()))
        else:
            Wq = block.attn.q_proj.weight.view(H, C // H, C)  # (H, d_head, C)
            Wk = block.attn.k_proj.weight.view(H, C // H, C)
            M = Wq.transpose(1, 2) @ Wk / math.sqrt(C // H)  # (H, C, C): x^T M y is a logit
            values.append(float(M.pow(2).mean().sqrt() * C))
    return sum(values) / len(values)


# -----------------------------------------------------------------------------
# Attention forming: the heads of one training run on induction, step by step (claim 2's picture)

# One run per variant at Table 1's quick induction setting, seed 0, a checkpoint every 25 steps
FORMING_ARGS = ("--n_embd 64 --n_head 4 --n_layer 2 --eval_size 500 --lr 3e-3 --warmup 100 "
                "--eval_interval 200 --batch_size 256 --steps 400 --task induction --task_size 12 "
                "--seed 0 --dtype float32 --examples 0").split()
FORMING_STEPS = list(range(0, 401, 25))
FORMING_STRIP = (0, 100, 200, 300, 400)  # the PNG's columns; the GIF shows every step
FORMING_ROWS = ("frozen_qk", "standard", "mixit")
FORMING_DATA = "results/forming_quick.json"  # the scores, step by step (checkpoints: not in git)


def forming_path(v, step=None):
    """The run's final checkpoint, or its snapshot after `step` steps (mixit.py --save_steps)."""
    path = f"results/ckpt/forming/quick_induction_{v}.pt"
    return path if step is None else runtime.snapshot_path(path, step)


def forming_data(paths):
    """{step: checkpoint} of one run -> {'steps', 'checkpoints', 'scores' (induction_scores at each
    step), 'heads': the last step's best, {'previous': [layer, head], 'induction': [...]}}."""
    steps = sorted(paths)
    scores = [induction_scores(model, task)
              for task, model in (load_model(paths[s]) for s in steps)]
    heads = {k: list(best_head(scores[-1], k)[1:]) for k in ("previous", "induction")}
    return {"steps": steps, "checkpoints": [paths[s] for s in steps], "scores": scores,
            "heads": heads}


def draw_forming(data):
    """The forming figures of FORMING_DATA's runs, each run's induction score under the maps: the
    PNG strip (a row per head, a column per FORMING_STRIP step) and the GIF (a frame per step)."""
    from matplotlib.animation import FuncAnimation, PillowWriter
    # a row per head drawn, (variant, kind, layer, head): each run's best previous-token and
    # induction heads; MixiT's map is fixed, so only the head its induction score reads
    rows = [(v, k, *data[v]["heads"][k]) for v in data for k in ("previous", "induction")
            if v != "mixit" or k == "induction"]
    maps, scores = {}, {}  # (variant, kind, step) -> the head's map on one test sequence, its score
    for v, k, l, h in rows:
        for step, path, score in zip(data[v]["steps"], data[v]["checkpoints"], data[v]["scores"]):
            atts, p = one_sequence(*load_model(path))
            maps[v, k, step], scores[v, k, step] = atts[l][h], score[l][k][h]
    T = atts[0].size(-1)
    low = min(0.0, *(float(m.min()) for m in maps.values()))

    def draw(fig, grid_rows, upto=None):
        """Maps in rows of (variant, head, step); under them the induction scores (to step upto)."""
        grid = fig.add_gridspec(len(grid_rows) + 1, len(grid_rows[0]),
                                height_ratios=[1] * len(grid_rows) + [1.3])
        axes = []
        for r, row in enumerate(grid_rows):
            for c, (v, k, l, h, step) in enumerate(row):
                axes.append(ax := fig.add_subplot(grid[r, c]))
                title = (f"{NAMES[v]} L{l}H{h}, step {step}\n"
                         f"{'ind' if k == 'induction' else 'prev'} {scores[v, k, step]:.2f}")
                box = p if k == "induction" else None  # (what the induction score reads)
                image = attention_map(ax, maps[v, k, step], title, box, low)
                ax.set(xticks=[], yticks=[])
        fig.colorbar(image, ax=axes, shrink=0.9, label="attention weight")
        ax = fig.add_subplot(grid[-1, :])
        for j, v in enumerate(data):
            ax.plot(data[v]["steps"], [scores[v, "induction", s] for s in data[v]["steps"]],
                    "o-", color=f"C{j}", markersize=3, label=f"{NAMES[v]} (one seed)")
        if upto is not None:
            ax.axvline(upto, color="gray", linewidth=1)
        ax.axhline(1 / T, color="gray", linestyle="--", linewidth=1, label=f"chance ≈ 1/{T}")
        ax.set(xlabel="training step", ylabel="induction score", ylim=(-0.02, 1.02))
        ax.set_title("the induction score of each run's induction head (its maps above), at "
                     "every checkpoint", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")

    fig = plt.figure(figsize=(1.9 * len(FORMING_STRIP) + 1, 1.9 * len(rows) + 2.6),
                     layout="constrained")
    draw(fig, [[(*row, step) for step in FORMING_STRIP] for row in rows])
    scores_caption(fig, T, " Every map on the colour bar's scale. MixiT's map is a fixed random "
                   "mixing matrix, not a softmax: its entries go below 0 (so 0 is not the darkest "
                   "colour), and it stays as drawn.")
    save("attention_forming_quick.png", "induction heads forming (quick, one seed each): a row "
         "per head, a column per training step")

    fig = plt.figure(figsize=(2.0 * len(rows) + 1, 5.2), layout="constrained")

    def frame(step):  # every head at that step, side by side
        fig.clear()
        draw(fig, [[(*row, step) for row in rows]], step)
        fig.suptitle(f"induction heads forming (quick scale, one seed each): step {step}")
    animation = FuncAnimation(fig, frame, frames=FORMING_STEPS)
    animation.save(f"{PLOT_DIR}/attention_forming_quick.gif", writer=PillowWriter(fps=3), dpi=80)
    plt.close(fig)


def forming():
    """Run what is missing of the forming runs, write FORMING_DATA, draw the figures."""
    for v in FORMING_ROWS:
        if not all(os.path.exists(forming_path(v, s)) for s in FORMING_STEPS):
            subprocess.run([sys.executable, "mixit.py", *FORMING_ARGS, "--variant", v, "--out",
                            "results/extra.jsonl", "--tag", f"x/forming/induction/{v}/s0", "--save",
                            forming_path(v), "--save_steps", ",".join(map(str, FORMING_STEPS))],
                           check=True)
    data = {v: forming_data({s: forming_path(v, s) for s in FORMING_STEPS}) for v in FORMING_ROWS}
    with open(FORMING_DATA, "w") as f:
        json.dump(data, f, indent=1)
    draw_forming(data)


if __name__ == "__main__":  # python figures.py forming: the attention-forming figures
    if sys.argv[1:] != ["forming"]:
        sys.exit("usage: python figures.py forming (report.py draws the other figures)")
    forming()
