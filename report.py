"""
Render the tables and draw the figures from the run records that run_all.sh wrote.

    python report.py --scale quick      # reads results/quick.jsonl
    python report.py --scale paper      # reads results/paper.jsonl

Nothing here is typed by hand: every number comes from a record (mean +- std over seeds, n = the
number of seeds), with the paper's number beside it. Writes results/tables_<scale>.md, replaces the
README's block between `<!-- <scale>-tables -->` markers, and saves PNGs into plots/.
"""

import argparse
import json
import math
import os
import re
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # files only, no screen needed
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

import mixit  # noqa: E402

PLOT_DIR = "plots"  # the smoke test draws into results/smoke_plots instead
VARIANTS = ["standard", "frozen_qk", "frozen_mlp", "mixit", "random"]
NAMES = {"standard": "Standard", "frozen_qk": "Frozen-QK", "frozen_mlp": "Frozen-MLP",
         "mixit": "MixiT", "random": "Random",
         # Table 1's extra row: frozen_qk whose frozen W_Q, W_K start N(0, 1/d), not N(0, 0.02^2)
         "frozen_qk_qk1d": "Frozen-QK, W_Q,K ~ N(0, 1/d)"}
T1_ROWS = ["standard", "frozen_qk", "frozen_qk_qk1d", "frozen_mlp", "mixit", "random"]
# The paper's numbers (v3, one run each), for the cells where it reports one.
PAPER = {
    ("t1", "needle"): {"standard": 100, "frozen_qk": 97.0, "mixit": 11.2},
    ("t1", "hop"): {"standard": 99.99, "frozen_qk": 96.7, "mixit": 48.6},
    ("t2", "lm"): {"standard": 2.78, "frozen_qk": 3.07, "mixit": 3.73},  # WikiText-103, nats/token
    ("t4", "memorize"): {"standard": 2.98, "frozen_qk": 2.25, "mixit": 2.18, "frozen_mlp": 1.13},
}


def load(path):
    """records[cell] = [record per seed]; cell = the tag without its seed, e.g. t1/needle/mixit."""
    cells = defaultdict(list)
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    cells[re.sub(r"/s\d+$", "", r["config"]["tag"])].append(r)
    # Table 3's add runs are also Table 6's cells at their depth (2 layers): run_all.sh does not
    # run the same configuration twice, so those cells borrow them.
    for v in ("mixit", "random"):
        for r in cells.get(f"t3/add/{v}", []):
            cell = f"t6/add/{v}-L{r['config']['n_layer']}"
            if not any(x["config"]["tag"].startswith(cell + "/") for x in cells[cell]):
                cells[cell].append(r)
    return cells


def stat(values, scale=1.0, digits=1):
    """'mean ± std (n)' of a list of numbers; '–' when there are none (a missing cell)."""
    if not values:
        return "–"
    v = [x * scale for x in values]
    mean = sum(v) / len(v)
    if len(v) == 1:
        return f"{mean:.{digits}f} (n=1)"
    std = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1))
    return f"{mean:.{digits}f} ± {std:.{digits}f} (n={len(v)})"


def final(cells, cell, key="acc"):
    return [r["final"][key] for r in cells.get(cell, []) if key in r["final"]]


def first_reaching(runs, target):
    """'step (seconds)' of the first evaluation with acc >= target, per seed; '–' if none ran."""
    if not runs:
        return "–"
    per_seed = []
    for r in runs:
        hit = next((h for h in r["history"] if h.get("acc", 0) >= target), None)
        best = max(h.get("acc", 0) for h in r["history"])
        per_seed.append(f"{hit['step']} ({hit['train_s']:.0f} s)" if hit else f"– ({100 * best:.1f}%)")
    return ", ".join(per_seed)


def eval_interval(cells):
    """The evaluation interval of the Table 1 runs (Table 8's step resolution)."""
    return next((runs[0]["config"]["eval_interval"] for c, runs in cells.items()
                 if c.startswith("t1/")), "?")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def paper(table_id, task, variant):
    v = PAPER.get((table_id, task), {}).get(variant)
    return f" [{v}]" if v is not None else ""


def size_of(cells, prefix):
    for cell, runs in cells.items():
        if cell.startswith(prefix):
            return runs[0]["config"]["task_size"]
    return "?"


def render(cells, scale):
    out = []
    # Table 1: retrieval
    tasks1 = ["needle", "induction", "copy", "hop"]
    out.append("**Table 1. Retrieval**: test accuracy (%) per answer token; [paper] where it "
               "reports one. Sizes: " + ", ".join(f"{t} {size_of(cells, f't1/{t}/')}" for t in tasks1))
    out.append(table(["variant"] + tasks1, [[NAMES[v]] + [
        stat(final(cells, f"t1/{t}/{v}"), 100) + paper("t1", t, v) for t in tasks1] for v in T1_ROWS]))
    # Table 2: language modelling
    out.append("**Table 2. Language modelling** (bytes of Python's help text): validation loss in "
               "nats per byte and bits per byte; [paper]: WikiText-103 loss in nats per *token* "
               "(a different unit and corpus: compare the ordering and the gaps).")
    out.append(table(["variant", "val loss (nats/byte)", "bits/byte"], [[NAMES[v],
        stat(final(cells, f"t2/lm/{v}", "loss"), 1, 3) + paper("t2", "lm", v),
        stat(final(cells, f"t2/lm/{v}", "bpb"), 1, 3)] for v in VARIANTS]))
    # Table 3: tasks that need no input-dependent attention
    tasks3 = ["add", "modadd", "dyck"]
    out.append("**Table 3. Tasks that need no input-dependent attention**: test accuracy (%). "
               "memorize: accuracy on the table itself. Sizes: "
               + ", ".join(f"{t} {size_of(cells, f't3/{t}/')}" for t in tasks3)
               + f", memorize n={size_of(cells, 't4/')}")
    out.append(table(["variant"] + tasks3 + ["memorize"], [[NAMES[v]] + [
        stat(final(cells, f"t3/{t}/{v}"), 100) for t in tasks3]
        + [stat(final(cells, f"t4/memorize/{v}"), 100)] for v in VARIANTS]))
    # Table 4: memorization capacity
    out.append("**Table 4. Memorization capacity**: bits per trainable parameter = accuracy x "
               "n² log2 n / #trainable, 2-layer models; [paper].")
    out.append(table(["variant", "bits / trainable param", "accuracy (%)", "trainable params"], [[
        NAMES[v], stat(final(cells, f"t4/memorize/{v}", "bits_per_param"), 1, 2) + paper("t4", "memorize", v),
        stat(final(cells, f"t4/memorize/{v}"), 100),
        cells[f"t4/memorize/{v}"][0]["n_trainable"] if cells.get(f"t4/memorize/{v}") else "–"]
        for v in VARIANTS]))
    # Table 5: MixiT heads
    heads = sorted({int(c.split("heads")[1]) for c in cells if c.startswith("t5/")})
    out.append("**Table 5. MixiT with more heads** on add: test accuracy (%) "
               "(paper, width 512: 35% with few heads, 92% with 256 heads).")
    out.append(table(["n_head"] + [str(h) for h in heads],
                     [["MixiT"] + [stat(final(cells, f"t5/add/heads{h}"), 100) for h in heads]]))
    # Table 6: depth
    depths = sorted({int(c.split("-L")[1]) for c in cells if c.startswith("t6/")})
    out.append("**Table 6. Depth** on add: test accuracy (%) and the covariance (correlation) "
               "between token representations at the last block (paper: Random collapses to "
               "about 23% at 8-16 layers while its covariance grows; MixiT stays near 100%).")
    out.append(table(["variant", "metric"] + [f"L={d}" for d in depths], [
        [NAMES[v], m] + [stat(final(cells, f"t6/add/{v}-L{d}", key), scale_, digits)
                         for d in depths]
        for v in ("random", "mixit") for m, key, scale_, digits in
        (("accuracy %", "acc", 100, 1), ("token covariance", "token_cov", 1, 3))]))
    # Table 7: speed
    bench = cells.get("t7/bench", [])
    out.append("**Table 7. Training speed** (`python mixit.py --bench`); paper: Frozen-QK 23.9% "
               "and MixiT 32.0% faster per sample than Standard.")
    if bench:
        b = bench[-1]
        rows = {r["variant"]: r for r in b["bench"]}
        ref = rows["standard"]["samples_per_s"]
        out.append(f"{b['device_name']} ({b['device']}, {b['dtype']}, {b['threads']} threads, "
                   f"torch {b['torch']}, {b['time'][:10]}), " + ", ".join(
                       f"{k} {b['config'][k]}" for k in ("task", "n_embd", "n_layer", "batch_size")))
        out.append(table(["variant", "ms/step", "samples/s", "vs Standard"], [[
            NAMES[v], f"{r['ms_per_step']:.1f}", f"{r['samples_per_s']:.0f}",
            f"{100 * (r['samples_per_s'] / ref - 1):+.0f}%"] for v, r in rows.items()]))
    else:
        out.append("–")
    # Steps to result: the recipe's cost, read off each run's evaluation history
    out.append("**Table 8. Steps to result**: the first evaluation (every "
               f"{eval_interval(cells)} steps) at which test accuracy reached 99%, and the "
               "training seconds to it; `–` (best %) where it never did. The recipe is the "
               "scale's settings in run_all.sh; a step is one batch.")
    t8 = ["needle", "induction", "copy", "hop", "add", "modadd", "dyck"]
    out.append(table(["variant"] + t8, [[NAMES[v]] + [
        first_reaching(cells.get(f"t1/{t}/{v}", []) or cells.get(f"t3/{t}/{v}", []), 0.99)
        for t in t8] for v in T1_ROWS]))
    # wall time
    records = {r["config"]["tag"]: r for runs in cells.values() for r in runs}  # borrowed once
    secs = sum(r.get("wall_s", 0) for r in records.values())
    n = len(records)
    out.append(f"{n} runs, {secs / 60:.0f} minutes of run time in total (summed over parallel runs).")
    return "\n\n".join(out)


# -----------------------------------------------------------------------------
# Figures


def finish_plot(xlabel, ylabel, title, name):
    plt.xlabel(xlabel)
    plt.ylabel(ylabel)
    plt.title(title)
    plt.legend()
    plt.tight_layout()
    plt.savefig(f"{PLOT_DIR}/{name}", dpi=120)
    plt.close()


def plot_needle(cells, scale):
    plt.figure(figsize=(5, 3.5))
    for v in ["standard", "frozen_qk", "mixit"]:
        pts = sorted((runs[0]["config"]["task_size"], sum(a) / len(a)) for c, runs in cells.items()
                     if re.fullmatch(rf"(f1/needle\d+|t1/needle)/{v}", c) and (a := final(cells, c)))
        if pts:
            plt.plot(*zip(*pts), "o-", label=NAMES[v])
    plt.ylim(-0.05, 1.05)
    finish_plot("max key-value pairs (task_size)", "test accuracy",
                f"needle-in-a-haystack ({scale})", f"needle_vs_pairs_{scale}.png")


def plot_lm_curves(cells, scale):
    plt.figure(figsize=(5, 3.5))
    for v in VARIANTS:
        for r in cells.get(f"t2/lm/{v}", [])[:1]:
            h = r["history"]
            plt.plot([p["step"] for p in h], [p["bpb"] for p in h], label=NAMES[v])
    finish_plot("step", "validation bits per byte", f"byte-level LM learning curves ({scale})",
                f"lm_curves_{scale}.png")


def plot_depth(cells, scale):
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
    for v in ("random", "mixit"):
        pts = sorted((int(c.split("-L")[1]), c) for c in cells if c.startswith(f"t6/add/{v}-L"))
        if not pts:
            continue
        L = [d for d, _ in pts]
        ax[0].plot(L, [100 * sum(final(cells, c)) / len(final(cells, c)) for _, c in pts], "o-",
                   label=NAMES[v])
        ax[1].plot(L, [sum(final(cells, c, "token_cov")) / len(final(cells, c, "token_cov"))
                       for _, c in pts], "o-", label=NAMES[v])
    for a, lab in zip(ax, ("add test accuracy (%)", "token covariance, last block")):
        a.set_xscale("log", base=2)
        a.set_xlabel("n_layer")
        a.set_ylabel(lab)
        a.legend()
    fig.suptitle(f"depth: random transformer vs MixiT ({scale})")
    fig.tight_layout()
    fig.savefig(f"{PLOT_DIR}/depth_{scale}.png", dpi=120)
    plt.close(fig)


def plot_attention(scale):
    """Attention maps of the 2-layer models trained on induction, with per-head scores."""
    lines = []
    for v in ("standard", "frozen_qk", "frozen_qk_qk1d", "mixit"):
        path = f"results/ckpt/{scale}_induction_{v}.pt"
        if not os.path.exists(path):
            continue
        cfg = mixit.resolve_config({"load": path, "device": "cpu", "out": ""})
        task, model, _, _, _ = mixit.build(cfg, verbose=False)
        model.load_state_dict(mixit.load_checkpoint(path)["model"])
        scores = mixit.induction_scores(model, task)
        with torch.no_grad():
            _, _, atts = model(task.test[0][:1], return_hidden=True)
        L, H = len(atts), atts[0].size(1)
        fig, axes = plt.subplots(L, H, figsize=(2.2 * H, 2.3 * L), squeeze=False)
        for l in range(L):
            for h in range(H):
                axes[l][h].imshow(atts[l][0, h].float().numpy(), cmap="viridis")
                axes[l][h].set_title(f"L{l} H{h}: ind {scores[l]['induction'][h]:.2f} "
                                     f"prev {scores[l]['previous'][h]:.2f}", fontsize=7)
                axes[l][h].axis("off")
        fig.suptitle(f"{NAMES[v]} on induction: attention of one test sequence ({scale})")
        fig.tight_layout()
        fig.savefig(f"{PLOT_DIR}/attention_{v}_{scale}.png", dpi=110)
        plt.close(fig)
        best_ind = max((s, l, h) for l, sc in enumerate(scores) for h, s in enumerate(sc["induction"]))
        best_prev = max((s, l, h) for l, sc in enumerate(scores) for h, s in enumerate(sc["previous"]))
        lines.append([NAMES[v], f"{best_prev[0]:.2f} (L{best_prev[1]} H{best_prev[2]})",
                      f"{best_ind[0]:.2f} (L{best_ind[1]} H{best_ind[2]})"])
    if not lines:
        return ""
    return ("**Attention heads on induction** (2-layer models; `plots/attention_*`): the best "
            "previous-token score (mean attention from t to t-1) and the best induction score "
            "(attention from the query to the token after its earlier occurrence). Chance for "
            "the induction score is about 1/T.\n\n"
            + table(["variant", "previous-token head", "induction head"], lines))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="quick", choices=["quick", "paper", "smoke"])
    args = p.parse_args()
    cells = load(f"results/{args.scale}.jsonl")
    global PLOT_DIR
    PLOT_DIR = "results/smoke_plots" if args.scale == "smoke" else "plots"
    os.makedirs(PLOT_DIR, exist_ok=True)
    md = render(cells, args.scale)
    att = plot_attention(args.scale)
    if att:
        md += "\n\n" + att
    plot_needle(cells, args.scale)
    plot_lm_curves(cells, args.scale)
    plot_depth(cells, args.scale)
    with open(f"results/tables_{args.scale}.md", "w") as f:
        f.write(md + "\n")
    marker = f"<!-- {args.scale}-tables -->"
    if os.path.exists("README.md"):
        readme = open("README.md").read()
        if readme.count(marker) == 2:
            a, _, b = readme.split(marker)
            with open("README.md", "w") as f:
                f.write(a + marker + "\n" + md + "\n" + marker + b)
    print(md)


if __name__ == "__main__":
    main()
