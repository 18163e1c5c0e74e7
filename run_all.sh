#!/usr/bin/env bash
# Reproduce every table and figure of the paper (README, "Reproducing it yourself").
#
# usage: bash run_all.sh [--quick|--smoke|--paper-smoke] [--list|--plan] [--seeds N] [--studies] [--claims] [--lr-sweep] [--minutes M] [--help]
#
#   (no flag)      paper scale: width 512, paper task sizes, seeds 0-2; needs a GPU (or ALLOW_CPU=1)
#   --quick        CPU scale: small widths and sizes, seed 0 (its run time: README)
#   --smoke        the quick list with 20 steps per run: checks the pipeline in minutes
#   --paper-smoke  every paper-scale run at its true size for 2 steps, on this machine (a CPU too)
#   --list         print the queue (what is left to run, in order) and exit
#   --plan         each run's FLOPs and H100 minutes, and the price of what is left; runs nothing
#   --seeds N      run seeds 0..N-1 of every cell (default: seed 0 at quick; seeds 0-2 at paper
#                  scale and in --claims and --studies; a ladder lists seeds 0-4, run as its rule asks)
#   --studies      also the studies beyond the paper (Tables 9 and 10, seeds 0-9 of a few cells, ...)
#   --claims       also the runs that test claims 1-6 where the quick cells stop too early (Tables 6b, 11-13)
#   --lr-sweep     also each claim's cells at a grid of learning rates, chosen on validation data
#   --minutes M    stop within M minutes: start only the runs that fit, pause the rest in time
#   --help         print this list and exit
#   YELP=DIR       (env) also the Yelp cells (Table 3b); DIR holds Yelp's train.csv and test.csv
#   ONLY=REGEX     (env) only the runs whose tag matches, e.g. ONLY='t1/|t3/'
#   CPU_DTYPE=bfloat16  (env) --quick in bf16 autocast, into results/quick-bfloat16.jsonl
#   CPU_COMPILE=1  (env) --quick compiled on the CPU, attention written out (--compile true --sdpa false)
#   PER_GPU=N      (env) runs at once on each GPU (default: the best of bench.py --pack, else `8`)
#   CUDA_GRAPHS=false  (env) every GPU run without CUDA graphs (default: with them, unless the
#                  latest bench.py --graphs-check found that they change training)
#   PIECES=1       (env) with --minutes, also start a run longer than M, to go on in the next call
#   PIECES=keep    (env) with --minutes where the state stays (a CPU): start any run, to go on later
#   ALLOW_CPU=1    (env) let the paper scale run on a machine without a GPU
#   REPORT=0       (env) skip report.py at the end (gpu_call.sh: tables are made where merged)
#   PYTHON=PATH    (env) the Python to run (default: the first python, or python3, on PATH)
#
# (--help prints the lines above from this file, so the two cannot disagree. The rest of this
# comment says more about some of them.)
#
# The paper scale is hours of GPU time (--plan prices it) and would take weeks on a CPU, so on a
# machine without a GPU it is refused unless ALLOW_CPU=1 says it is meant; --paper-smoke, --list
# and --plan run nothing long and work on any machine, a CPU too (every option but --help reads
# the runs' settings through mixit.py, so it needs torch: without it run_all.sh says in one line
# what to activate). --paper-smoke writes results/paper-smoke.jsonl,
# then the report: it catches shape, memory and configuration errors before GPU time is spent.
#
# --studies: MixiT's block confounds (Table 9), hybrid schedules (Table 10), seeds 0-9 of three
# variants and MixiT without its sink head, language modelling at longer contexts.
# --claims: 3-hop induction (3000 steps), MixiT with 64 heads on add (8000 steps) and dyck
# (1200 steps), memorization capacity with a table no variant can hold (`--task_size 128` at width
# 16, from 6000 steps, doubled while doubling moves it: Table 12), depth where Random adds (width
# 256, 2, 8 and 16 layers) against 64-head MixiT, and
# cells of Tables 1 and 3 given more steps (copy, induction, modadd); seeds 0-2.
# --plan: every paper-scale run with its FLOPs and estimated H100 minutes (bench.py's cost
# model), the total at PER_GPU packing, the runs longer than a GPU call, and the price of the
# queue left, into results/queue-paper.jsonl (written only when that price changed; rerun --plan
# after new paper records, or report.py --check says the price is stale).
# --minutes M (a GPU lent in short calls: `--minutes 9`): no cell starts that its price
# (bench.py steps_to_price, at the newest step time of its shape) says would not finish; running
# cells get SIGTERM shortly before the end and save their state, which a second call on the
# still-warm machine resumes (gpu_call.sh). PIECES=1 also starts a cell longer than M, with half
# of M left, to go on in such a call: only when one follows, or its state is lost. PIECES=keep,
# where the state stays (results/ckpt/ on a CPU), starts every cell while a minute is left.
# YELP: the path may not contain spaces; without it the Yelp table says how to get the data.
# ONLY lets a GPU lent in short calls take the list in parts. CPU_DTYPE: the quick list in another
# dtype, into its own file (docs/ENGINEERING.md, 'The bfloat16 check'). CPU_COMPILE: the same
# recipes, each step compiled and softmax attention written out rather than by the fused kernel
# (the same math, other rounding: docs/ENGINEERING.md, 'Efficiency', measures what each saves at
# claim 4's memorize shape).
#
# Every run appends one JSON record to results/<scale>.jsonl, tagged table/task/variant/seed.
# A cell whose latest record ran its recipe is skipped (a changed recipe reruns it), so an
# interrupted sweep resumes where it stopped, and `--seeds 3` after `--seeds 1` runs only seeds 1
# and 2. Each run saves its state at every evaluation and on SIGTERM under results/ckpt/<scale>/
# (ignored by git: a checkout cloned anew for each sitting keeps a paused cell's state only if it
# is committed, `git add -f results/ckpt/<scale>/*.pt`), so a half-finished cell continues where
# it stopped. The queue runs the claims'
# cells first (seed 0), then the other seeds, then the studies (bench.py --todo). Runs go in
# parallel: PER_GPU at once on each GPU, or on a CPU as many as it has cores, each
# single-threaded (OMP_NUM_THREADS; each record keeps its `threads`).
# At the end report.py renders the tables (results/tables_<scale>.md) and draws the figures into
# plots/.
set -euo pipefail
cd "$(dirname "$0")"
# PYTHON (env): the interpreter to run (report.py and the tests pass their own); else the first on PATH
PYTHON=${PYTHON:-$(command -v python || command -v python3)}  # GPU images often ship python3 only

SCALE=paper
SMOKE=""
N_SEEDS=""
N_SEEDS_GIVEN=""
# --help and a bad option read the usage and option lines from the comment at the top (sed), so
# that what they print is what the header says
help() { sed -n -e '2s/^# //p' -e 's/^# \(usage: .*\)/\n\1\n/p' -e 's/^#   /  /p' "${0##*/}"; exit 0; }
usage() { echo "run_all.sh: $1; $(sed -n 's/^# \(usage: \)/\1/p' "${0##*/}") (--help says what each does)" >&2; exit 2; }
MINUTES=""
PLAN=""
LIST=""
STUDIES=""
CLAIMS=""
LR_SWEEP=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) SCALE=quick ;;
    --smoke) SCALE=smoke; SMOKE="--steps 20 --eval_interval 10" ;;
    --plan) PLAN=1 ;;
    --list) LIST=1 ;;
    --studies) STUDIES=1 ;;
    --claims) CLAIMS=1 ;;
    --lr-sweep) LR_SWEEP=1 ;;
    --paper-smoke) SCALE=paper-smoke; SMOKE="--steps 2 --eval_interval 1 --eval_size 64 --warmup 1" ;;
    --seeds) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || usage "--seeds takes a number of seeds, 1 or more, not '${2:-}'"
      N_SEEDS=$2; N_SEEDS_GIVEN=$2; shift ;;
    --minutes) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || usage "--minutes takes a whole number of minutes, 1 or more, not '${2:-}'"
      MINUTES=$2; shift ;;
    --help) help ;;
    *) usage "unknown option '$1'" ;;
  esac
  shift
done
case "${PIECES:-}" in ""|1|keep) ;; *) usage "PIECES is 1 (a second call follows) or keep (the state stays here), not '$PIECES'" ;; esac
# every option past this point reads the runs' settings through mixit.py (bench.py), which needs torch
# (found, not imported: an import costs a second or two of every call)
"$PYTHON" -c "import importlib.util, sys; sys.exit(not importlib.util.find_spec('torch'))" 2>/dev/null || { echo "run_all.sh: $PYTHON cannot import torch: activate the environment you installed requirements.txt into (e.g. . venv/bin/activate), or give its interpreter as PYTHON=..." >&2; exit 2; }
CPU_DTYPE=${CPU_DTYPE:-float32}
NAME=$SCALE  # the results file's name: quick, paper, ..., or quick-bfloat16
[ $SCALE = quick ] && [ "$CPU_DTYPE" != float32 ] && NAME=$SCALE-$CPU_DTYPE
OUT=results/$NAME.jsonl
LOGS=results/logs/$NAME  # one folder per results file: they share their tags

# runs go round-robin over the GPUS GPUs; PER_GPU=2 (env) puts two small runs on each GPU at once;
# by default as many as did the most work at once in `bench.py --pack` (`8` before it has run)
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  GPUS=$(nvidia-smi -L | wc -l); JOBS=$((GPUS * ${PER_GPU:-$($PYTHON bench.py --per-gpu)})); THREADS=4
  # CUDA graphs (mixit.py's default outside torchrun) unless the latest `bench.py --graphs-check` found
  # that they change training; CUDA_GRAPHS=false (env) turns them off in any case
  [ "${CUDA_GRAPHS:-$($PYTHON bench.py --cuda-graphs)}" = false ] && GRAPHS="--cuda_graphs false"
else
  GPUS=1; JOBS=$($PYTHON -c "import os; print(max(1, os.cpu_count()))"); THREADS=1
  # the paper scale on a CPU would take weeks, and each stopped run leaves a state file of up to
  # a few hundred MB: refused, before anything is written, unless asked for
  if [ $SCALE = paper ] && [ -z "$PLAN$LIST" ] && [ "${ALLOW_CPU:-}" != 1 ]; then
    echo "run_all.sh: the paper scale (width 512) needs a GPU and this machine has none (nvidia-smi): run --quick here, or ALLOW_CPU=1 bash run_all.sh to run it on the CPU anyway" >&2
    exit 2
  fi
fi
mkdir -p "$LOGS" results/ckpt/$NAME plots
touch "$OUT"

# --- the settings of each scale ---------------------------------------------------------------
if [ $SCALE != paper ] && [ $SCALE != paper-smoke ]; then
  N_SEEDS=${N_SEEDS:-1}
  # SPARSE: the tasks that score few tokens per sequence get bigger batches than DENSE's (sizes
  # chosen by early probes whose runs predate the records)
  BASE="--n_embd 64 --n_head 4 --n_layer 2 --eval_size 500 --lr 3e-3 --warmup 100 --eval_interval 200"
  SPARSE="--batch_size 256 --steps 400"
  # add: 2000 steps
  DENSE="--batch_size 128 --steps 2000"
  # modadd: 1200 steps (a grokking task: Table 11 gives it more steps)
  MODADD="--batch_size 256 --steps 1200"
  # hop: k = 3, 1000 steps. At k = 2 the second hop can land back where it started, so "copy the
  # current token" can score (the probe `x/quick-hop-k2/*`, results/extra.jsonl; the floors, Table 1)
  HOP="--batch_size 256 --steps 1000"
  declare -A SIZE=([add]=4 [modadd]=59 [dyck]=10 [needle]=6 [copy]=8 [induction]=12 [hop]=3 [lm]=64)
  NEEDLE_SIZES="2 4"               # figure: accuracy against the number of pairs (+ Table 1's needle-6)
  MEM="--n_embd 32 --n_head 4 --batch_size 1024 --steps 1200 --lr 1e-2 --task_size 128"
  LM="--n_embd 128 --n_head 4 --n_layer 2 --batch_size 32 --steps 400 --lr 2e-3"
  # Table 5 gets more steps than Table 3 (the probes `x/t5-1000steps-*` in results/extra.jsonl)
  RANDOM_ADD="--n_embd 256 --batch_size 256 --lr 1e-2 --steps 1500"  # claim 6 (--claims)
  HEADS="1 2 4 8 16 64"; HEAD_RUN="--steps 4000"; DEPTHS="2 4 6"; T1_VARIANTS="standard frozen_qk frozen_qk_ref frozen_mlp mixit"
  DEPTH_MIXIT=""; DEPTH_RANDOM_LR="3e-3"  # Table 6 as it was: MixiT at 4 heads, Random at BASE's lr
  REF_DEPTHS=""  # Random at the reference's init: claim 6's width-256 cells (--claims, c6)
  RETRIEVE=$SPARSE; NEEDLE=$SPARSE; COPY=$SPARSE; DYCK=$SPARSE
  BENCH="--task add --task_size 10 --n_embd 128 --n_layer 2 --n_head 4 --batch_size 256"
  # Yelp: 128 bytes of each review; a part of the test reviews (`--eval_size`)
  YELP_ARGS="--n_embd 64 --n_head 4 --n_layer 2 --task_size 128 --batch_size 64 --steps 1500 --lr 1e-3 --warmup 100 --eval_interval 250 --eval_size 2000"
  # fp32 on every CPU: `--dtype auto` would pick bf16 autocast on CPUs with native bf16 (AVX-512
  # bf16, AMX) and fp32 on the others, and the published tables should not depend on the CPU
  DTYPE="--dtype $CPU_DTYPE"
  [ "${CPU_COMPILE:-0}" = 1 ] && COMPILE="--compile true --sdpa false"
else
  N_SEEDS=${N_SEEDS:-3}; [ $SCALE = paper-smoke ] && N_SEEDS=${N_SEEDS_GIVEN:-1}
  # One recipe per task, each from the reference code's own settings (REFERENCE_NOTES) or from a
  # probe record that shows its plateau (records x/paper-long/* in results/extra.jsonl and the
  # first paper runs t*/*/s0 in results/paper.jsonl; docs/ENGINEERING.md, "The paper scale and its price"). A stopping rule ends each run at its plateau (--stop_acc: solved; --patience: flat),
  # so the generous --steps cost little where a cell converges; --plan prices the full budgets.
  # --resample: every training row learns (the test side's fifth of the draws is redrawn).
  BASE="--n_embd 512 --n_head 4 --n_layer 2 --eval_size 4000 --lr 1e-3 --warmup 300 --eval_interval 300 --resample"
  SOLVED="--stop_acc 0.999"
  FLAT="--patience 4000 --min_delta 0.01 --min_steps 8000"  # a run that never leaves its floor
  # induction (t1): lr 3e-4 and up to 12000 steps, chosen by the probes x/paper-long/* (results/extra.jsonl)
  RETRIEVE="--batch_size 256 --lr 3e-4 --steps 12000 --eval_interval 500 $SOLVED $FLAT"
  # needle (t1, f1): lr 1e-4, chosen by the probes x/needle30-w512/*, x/paper-long/*-needle30/* and
  # x/needle30-w64/* (results/extra.jsonl)
  NEEDLE="$RETRIEVE --lr 1e-4"
  # copy-20: lr 1e-3, 1200 steps (the first paper runs t1/copy/*/s0, in results/paper.jsonl)
  COPY="--batch_size 256 --steps 1200 $SOLVED"
  # hop-16: the retrieval recipe at the paper's 5 layers, after the 2-layer probes x/paper-long/*-hop16/* and x/paper-r1/hop-L2/* (results/extra.jsonl).
  # The CPU probes x/hop16-L*-w64/* and x/hop16-L5-w128/* ran lr 1e-3 and 3e-4 (results/extra.jsonl): hop keeps the retrieval recipe's 3e-4, and a hop seed flat here is the first to rerun at 1e-3
  HOP="$RETRIEVE --n_layer 5"
  # add-10: 3000 steps (the first paper runs t3/add/*/s0, in results/paper.jsonl)
  DENSE="--batch_size 256 --steps 3000 $SOLVED"
  # modadd-599: the reference's modadd_exp.py (batch 4000, lr 1e-3, warm-up 50, 20000 steps), not batch 256 (the probe x/paper-long/frozen_qk-modadd599/* in results/extra.jsonl)
  MODADD="--batch_size 4000 --lr 1e-3 --warmup 50 --steps 20000 --eval_interval 500 --stop_acc 0.99"
  # dyck-30: up to 6000 steps (the first paper runs t3/dyck/*/s0 at 1200, in results/paper.jsonl)
  DYCK="--batch_size 256 --steps 6000 $SOLVED --patience 2000 --min_delta 0.01 --min_steps 3000"
  declare -A SIZE=([add]=10 [modadd]=599 [dyck]=30 [needle]=30 [copy]=20 [induction]=64 [hop]=16 [lm]=256)
  NEEDLE_SIZES="5 10 20 30"
  # memorize-512: the reference's hdmemorize (batch 32768, lr 5e-3, wd 1e-4, warm-up 500), to its plateau (the stopping rule below); memorize's size is MEM's --task_size
  MEM="--n_embd 128 --n_head 4 --batch_size 32768 --steps 15000 --lr 5e-3 --weight_decay 1e-4 --warmup 500 --eval_interval 500 --task_size 512 --patience 3000 --min_delta 0.01 --min_steps 6000"
  # lm: the standard library's sources (--data stdlib, shipped in corpus/) instead of the help text of the first paper runs t2/lm/*/s0; the reference's lr 5e-4; stop once the validation loss has not fallen for 300 steps
  LM="--data stdlib --n_embd 512 --n_head 8 --n_layer 8 --batch_size 64 --steps 1800 --lr 5e-4 --warmup 200 --eval_interval 100 --patience 300 --min_steps 600"
  # Table 5 (MixiT's heads on add-10): up to 20000 steps at lr 3e-4, chosen by t5/add/heads*/s0, t6/add/mixit-L2/s0
  # and the probes x/add10-w256-mixit64/* (results/extra.jsonl)
  HEADS="4 32 64 256"; HEAD_RUN="--steps 20000 --lr 3e-4"; T1_VARIANTS="standard frozen_qk frozen_qk_ref frozen_mlp mixit random"
  # Table 6: MixiT with 64 heads, as the paper's MixiT has many (t6/add/mixit-L*/s0 ran with 4), Table 5's steps and lr; Random at lr 1e-3 (chosen after t6/add/random-L*/s0) and at the reference's 1e-2
  DEPTHS="2 4 8 16"; DEPTH_MIXIT="--n_head 64 $HEAD_RUN"; DEPTH_RANDOM_LR="1e-3 1e-2"
  # and Random at the reference's Q/K init (0.02), at its lr 1e-2, where the paper's collapses (issue 37)
  REF_DEPTHS="2 4 8 16"
  # Table 7 without CUDA graphs, as its first seed ran, so that every seed times the same code
  # (graphs change what a step's time is made of, and so the variants' ratios)
  BENCH="--task add --task_size 10 --n_embd 512 --n_layer 2 --n_head 4 --batch_size 1000 --cuda_graphs false"
  # Yelp: the reference's Standard recipe (4 layers, width 512, 8 heads, 10k steps, batch 256,
  # lr 8e-4, context 256), the whole test set
  YELP_ARGS="--n_embd 512 --n_head 8 --n_layer 4 --task_size 256 --batch_size 256 --steps 10000 --lr 8e-4 --warmup 500 --eval_interval 1000 --eval_size 38000"
  DTYPE=""  # auto: bf16 autocast on GPUs
fi
VARIANTS="standard frozen_qk frozen_mlp mixit random"
SEEDS=$(seq 0 $((N_SEEDS - 1)))

# --- the list of runs: one line "TAG ARGS..." per cell and seed, unless its record exists -------
variant_args() {  # the extra rows *_ref: W_Q, W_K at the reference code's N(0, 0.02^2)
  case $1 in
    frozen_qk_ref) echo "--variant frozen_qk --qk_init_std 0.02" ;;
    random_ref) echo "--variant random --qk_init_std 0.02" ;;  # Random at the same init (claim 6)
    *) echo "--variant $1" ;;
  esac
}
shipped_cells() {  # shipped_cells SEED: MixiT as the reference ships it (--mixit_shipped, issue 49)
  # beside the MixiT cells of claims 3-5: Table 3's tasks, Table 4's memorization, Table 5's heads
  local seed=$1 h
  cell "t3/add/mixit-shipped/s$seed" $BASE $DENSE --task add --task_size ${SIZE[add]} --variant mixit --mixit_shipped --seed $seed
  cell "t3/modadd/mixit-shipped/s$seed" $BASE $MODADD --task modadd --task_size ${SIZE[modadd]} --variant mixit --mixit_shipped --seed $seed
  cell "t3/dyck/mixit-shipped/s$seed" $BASE $DYCK --task dyck --task_size ${SIZE[dyck]} --variant mixit --mixit_shipped --seed $seed
  cell "t4/memorize/mixit-shipped/s$seed" $MEM --task memorize --variant mixit --mixit_shipped --seed $seed
  for h in $HEADS; do
    cell "t5/add/heads$h-shipped/s$seed" $BASE $DENSE $HEAD_RUN --task add --task_size ${SIZE[add]} --variant mixit --n_head $h --mixit_shipped --seed $seed
  done
}
JOBLIST=$(mktemp)
trap 'rm -f "$JOBLIST" "$JOBLIST.est"' EXIT
cell() {  # cell TAG ARGS...: list a run (bench.py --todo drops those already done)
  local tag=$1; shift
  # The recipes build on each other ($BASE $RETRIEVE --lr 1e-4), so a flag can come twice.
  # mixit.py takes the last value; the line keeps only that one, in its place, so that it reads
  # (in --list, a Slurm queue, a log) as what runs. From the end: a flag's values follow it.
  local words=("$@" $DTYPE ${COMPILE:-} $SMOKE ${GRAPHS:-}) kept=() group=() seen=" " i
  for ((i = ${#words[@]} - 1; i >= 0; i--)); do
    group=("${words[i]}" "${group[@]}")
    [[ ${words[i]} == --* ]] || continue  # a value: its flag is further left
    [[ $seen == *" ${words[i]} "* ]] || kept=("${group[@]}" "${kept[@]}")
    seen+="${words[i]} "; group=()
  done
  echo "$tag ${kept[*]}" >>"$JOBLIST"
}
for seed in $SEEDS; do
  # Table 6 first: its deep runs are the longest, and long runs first let the slots finish together.
  # The 2-layer runs are Table 3's add runs; report.py reuses them.
  for L in $DEPTHS; do                             # Table 6: depth, random vs MixiT on add
    # 2 layers: Table 3's add runs, which report.py reuses, unless the setting differs from theirs
    [ "$L" = 2 ] && [ -z "$DEPTH_MIXIT" ] || cell "t6/add/mixit-L$L/s$seed" $BASE $DENSE $DEPTH_MIXIT --task add --task_size ${SIZE[add]} --variant mixit --n_layer $L --seed $seed
    for lr in $DEPTH_RANDOM_LR; do  # the row at BASE's lr keeps its name
      row=random; [[ " $BASE " == *" --lr $lr "* ]] || row=random-lr$lr
      [ "$L" = 2 ] && [ $row = random ] || cell "t6/add/$row-L$L/s$seed" $BASE $DENSE --lr $lr --task add --task_size ${SIZE[add]} --variant random --n_layer $L --seed $seed
    done
    if [[ " $REF_DEPTHS " == *" $L "* ]]; then
      cell "t6/add/random_ref-lr1e-2-L$L/s$seed" $BASE $DENSE --lr 1e-2 --task add --task_size ${SIZE[add]} $(variant_args random_ref) --n_layer $L --seed $seed
    fi
  done
  for v in $T1_VARIANTS; do
    for t in needle induction copy hop; do        # Table 1: retrieval
      extra=""; [ $t = induction ] && [ $seed = 0 ] && extra="--save results/ckpt/${NAME}_induction_$v.pt"
      recipe=$RETRIEVE; [ $t = hop ] && recipe=$HOP; [ $t = copy ] && recipe=$COPY; [ $t = needle ] && recipe=$NEEDLE
      cell "t1/$t/$v/s$seed" $BASE $recipe --task $t --task_size ${SIZE[$t]} $(variant_args $v) --seed $seed $extra
    done
  done
  for v in $VARIANTS frozen_qk_ref; do              # Table 2: language modelling
    cell "t2/lm/$v/s$seed" $LM --task lm --task_size ${SIZE[lm]} $(variant_args $v) --seed $seed
  done
  for v in $VARIANTS; do
    cell "t3/add/$v/s$seed" $BASE $DENSE --task add --task_size ${SIZE[add]} --variant $v --seed $seed
    cell "t3/modadd/$v/s$seed" $BASE $MODADD --task modadd --task_size ${SIZE[modadd]} --variant $v --seed $seed
    cell "t3/dyck/$v/s$seed" $BASE $DYCK --task dyck --task_size ${SIZE[dyck]} --variant $v --seed $seed
    cell "t4/memorize/$v/s$seed" $MEM --task memorize --variant $v --seed $seed  # Tables 3 and 4
  done
  for v in standard frozen_qk mixit; do            # figure: needle accuracy against pairs
    for n in $NEEDLE_SIZES; do
      cell "f1/needle$n/$v/s$seed" $BASE $NEEDLE --task needle --task_size $n --variant $v --seed $seed
    done
  done
  for h in $HEADS; do                              # Table 5: more heads for MixiT on add
    # (where Table 6's MixiT has 64 heads, its 2-layer cell is this one, run once as Table 6's)
    [ "$h" = 64 ] && [ -n "$DEPTH_MIXIT" ] || \
      cell "t5/add/heads$h/s$seed" $BASE $DENSE $HEAD_RUN --task add --task_size ${SIZE[add]} --variant mixit --n_head $h --seed $seed
  done
  # at paper scale MixiT as shipped is queued after the claims' cells (bench.py priority); at
  # the CPU scales it runs with --claims, below
  if [ $SCALE = paper ] || [ $SCALE = paper-smoke ]; then shipped_cells $seed; fi
done
# --- Yelp (YELP=folder): Table 3b, bidirectional text classification, and MixiT with 4 and 64 heads
if [ -n "${YELP:-}" ]; then
  for f in train.csv test.csv; do
    [ -f "$YELP/$f" ] || { echo "run_all.sh: YELP=$YELP holds no $f (docs/METHODS.md, Yelp)" >&2; exit 2; }
  done
  YELP_HEADS=$(echo $YELP_ARGS | grep -o -- '--n_head [0-9]*' | cut -d' ' -f2)
  for seed in $SEEDS; do
    for v in standard frozen_qk frozen_mlp mixit; do
      cell "y/yelp/$v/s$seed" $YELP_ARGS --task classify --data $YELP/train.csv --test_data $YELP/test.csv --variant $v --seed $seed
    done
    for h in 4 64; do  # a head count equal to the MixiT row's is that row (report.py)
      [ $h = $YELP_HEADS ] || cell "y/yelp/mixit-heads$h/s$seed" $YELP_ARGS --task classify --data $YELP/train.csv --test_data $YELP/test.csv --variant mixit --n_head $h --seed $seed
    done
  done
fi
# --- claims 1-6 given more steps (--claims, quick scale): the quick cells stop too early to test them
# Table 1's 3-hop cells get 3000 steps here (Table 11 renders where each cell stands, with the
# accuracy 1000 steps before its end). MixiT gets the 64 heads the paper's MixiT has (32 to 256 heads) on
# dyck as on add, and more steps than Table 3. Claim 4 asks at width 16, a table that no
# variant's parameters can hold, each cell at budgets by doubling (Table 12; why not Table 4's
# setting: the probes x/long-mem128-*, x/c4-n256-w32/*). MixiT's block
# differs from the others' (Table 9), so capacity is also measured with each attention in the
# other's block.
block_args() {  # the confound rows of Table 9: a variant in another block
  case $1 in
    standard_mixblock) echo "--variant standard --positions learned --mlp_act shaped --residual scaled" ;;
    standard_learnedpos) echo "--variant standard --positions learned" ;;
    mixit_stdblock) echo "--variant mixit --mlp_act swiglu --residual plain" ;;
  esac
}
capacity_args() {  # the rows of claim 4's capacity cells: variants, the block swaps, MixiT as shipped
  case $1 in
    *block) block_args $1 ;;
    mixit-shipped) echo "--variant mixit --mixit_shipped" ;;
    *) echo "--variant $1" ;;
  esac
}
doublings() {  # doublings CELL "B ..." ARGS...: CELL-steps<B> for each budget B, and the seeds of
  # CELL that its table does not list (records.READ_SEEDS at the budget a verdict reads), each run
  # only once the doubling rule asks for it (bench.py --todo: records.budget_wanted), as claim 4's
  # ladder below
  local base=$1 budgets=$2 seed B; shift 2
  for seed in 0 1 2 3 4; do
    [ $seed -lt 3 ] || cell "$base/s$seed" "$@" --seed $seed
    for B in $budgets; do cell "$base-steps$B/s$seed" "$@" --steps $B --seed $seed; done
  done
}
if [ -n "$CLAIMS" ] && [ $SCALE != paper ] && [ $SCALE != paper-smoke ]; then
  for seed in $(seq 0 $(( ${N_SEEDS_GIVEN:-3} - 1 ))); do
    for v in standard frozen_qk; do
      cell "c2/hop/$v/s$seed" $BASE $HOP --steps 3000 --task hop --task_size ${SIZE[hop]} --variant $v --seed $seed
    done
    # Claims 1 to 3 read the copy, modadd and induction cells of Tables 1 and 3 given more steps
    # (Table 11), so that no verdict rests on a cell whose seeds lie apart (†); the probes
    # x/claims-3x/* and x/claims-4000/* chose the budgets (results/extra.jsonl)
    for v in standard mixit; do
      cell "c1/copy/$v/s$seed" $BASE $SPARSE --steps 8000 --task copy --task_size ${SIZE[copy]} --variant $v --seed $seed
      cell "c3/modadd/$v/s$seed" $BASE $MODADD --steps 8000 --task modadd --task_size ${SIZE[modadd]} --variant $v --seed $seed
    done
    cell "c2/induction/frozen_qk/s$seed" $BASE $SPARSE --steps 1200 --task induction --task_size ${SIZE[induction]} --variant frozen_qk --seed $seed
    cell "c3/dyck/mixit-heads64/s$seed" $BASE $SPARSE --steps 1200 --task dyck --task_size ${SIZE[dyck]} --variant mixit --n_head 64 --seed $seed
    cell "c3/add/mixit-heads64/s$seed" $BASE $DENSE --steps 8000 --task add --task_size ${SIZE[add]} --variant mixit --n_head 64 --seed $seed
    # claim 6 in a second setting beside Table 6's width 64: width
    # 256 on add-3, at 2, 8 and 16 layers, as the paper's depths.
    # MixiT runs the same setting with 64 heads (the paper's MixiT has 32 to 256 heads) at lr 1e-3, chosen
    # by probes at 1e-2 and 3e-3 whose runs predate the records. Random, which trains only its
    # embeddings, keeps the paper's 1e-2. MixiT also runs Table 5's setting (width 64, add-4,
    # 4000 steps; its 2-layer cell is t5/add/heads64) at 8 layers. Longest runs first
    # The row random_ref is Random at the reference's init (issue 37): W_Q, W_K at N(0, 0.02^2), not
    # N(0, 1/d), so its frozen attention starts near uniform
    for L in 16 8 2; do
      cell "c6/add/random-w256-L$L/s$seed" $BASE $RANDOM_ADD --task add --task_size 3 --variant random --n_layer $L --seed $seed
      cell "c6/add/random_ref-w256-L$L/s$seed" $BASE $RANDOM_ADD --task add --task_size 3 $(variant_args random_ref) --n_layer $L --seed $seed
      # (16-layer MixiT: the longest run here; its wall time is in its records)
      cell "c6/add/mixit-w256-L$L/s$seed" $BASE $RANDOM_ADD --lr 1e-3 --task add --task_size 3 --variant mixit --n_head 64 --n_layer $L --seed $seed
    done
    cell "c6/add/mixit-heads64-L8/s$seed" $BASE $DENSE $HEAD_RUN --task add --task_size ${SIZE[add]} --variant mixit --n_head 64 --n_layer 8 --seed $seed
    # MixiT as the reference ships it, beside claims 3-5's MixiT cells, and Table 11's memorization
    shipped_cells $seed
    # claim 3's long cells as shipped: rows 3ˢ and 5ˢ read claim 3's and claim 5's cells with only MixiT swapped
    cell "c3/add/mixit-heads64-shipped/s$seed" $BASE $DENSE --steps 8000 --task add --task_size ${SIZE[add]} --variant mixit --n_head 64 --mixit_shipped --seed $seed
    cell "c3/modadd/mixit-shipped/s$seed" $BASE $MODADD --steps 8000 --task modadd --task_size ${SIZE[modadd]} --variant mixit --mixit_shipped --seed $seed
    cell "c3/dyck/mixit-heads64-shipped/s$seed" $BASE $SPARSE --steps 1200 --task dyck --task_size ${SIZE[dyck]} --variant mixit --n_head 64 --mixit_shipped --seed $seed
  done
  # claim 4 is read at capacity, not at a budget: each cell at 6000 steps and at every doubling up
  # to 384000 (CELL-steps<N>; issue 65: the reference's memorization script trains 20000 steps of
  # batch 32768, the samples of 640000 steps here), seeds 0-4 listed; bench.py --todo runs only
  # what the doubling rule asks for (records.budget_wanted: LADDER_SEEDS seeds a budget, the next
  # doubling once the one below has moved, READ_SEEDS at the budget whose doubling settled, which
  # the verdict reads). Standard in MixiT's block stays at 6000 steps (Table 11 marks it: read at
  # a budget)
  for seed in 0 1 2 3 4; do
    for B in 6000 12000 24000 48000 96000 192000 384000; do
      rung=""; [ $B = 6000 ] || rung="-steps$B"
      for row in standard frozen_qk mixit frozen_mlp mixit_stdblock mixit-shipped; do
        cell "c4/memorize/$row$rung/s$seed" $MEM --task memorize --n_embd 16 --steps $B --eval_interval 500 $(capacity_args $row) --seed $seed
      done
    done
  done
  # claim 5 reads MixiT's accuracy over head counts from two heads up (a single head is the sink
  # head alone: no random mixing), each cell doubled from Table 5's budget while doubling moves
  # it, with records.READ_SEEDS seeds where it is read
  for h in 2 4 8 16 64; do
    doublings t5/add/heads$h "8000 16000 32000" $BASE $DENSE $HEAD_RUN --task add --task_size ${SIZE[add]} --variant mixit --n_head $h
  done
  # copy, our extension beside claim 1: does MixiT's copying fall with the length as its needle
  # accuracy falls with the pairs? MixiT and Standard copying strings of up to 16 and 32 tokens
  # (--task_size; up to 8: Table 11's cells), each doubled while doubling moves it, up to 32000 steps
  for v in standard mixit; do
    for L in 16 32; do
      for seed in 0 1 2; do
        cell "c1/copy$L/$v/s$seed" $BASE $SPARSE --steps 2000 --task copy --task_size $L --variant $v --seed $seed
      done
      doublings c1/copy$L/$v "4000 8000 16000 32000" $BASE $SPARSE --steps 2000 --task copy --task_size $L --variant $v
    done
  done
  # claim 3's memorization under capacity: Table 4's cells (width 32, where Standard can hold the
  # table), each doubled while doubling moves it, up to 76800 steps
  for row in standard frozen_qk mixit frozen_mlp mixit-shipped; do
    doublings t4/memorize/$row "2400 4800 9600 19200 38400 76800" $MEM --task memorize $(capacity_args $row)
  done
  for seed in 0 1 2; do
    cell "c4/memorize/standard_mixblock/s$seed" $MEM --task memorize --n_embd 16 --steps 6000 --eval_interval 500 $(capacity_args standard_mixblock) --seed $seed
  done
fi
# --- each variant at its own learning rate (--lr-sweep, quick scale) -----------------------------
# The cells claims 1, 2, 3 and 8 read share one lr per task (BASE's 3e-3, LM's 2e-3). Each is run
# at a grid of lrs half a decade apart, seeds 0 and 1, and scored at its end on a validation set
# the test never sees (--val_size: tasks.with_validation); records.chosen_lr picks the lr with the
# best mean validation score, keeping the shared lr where the best is within its spread. A tag is
# CELL-lr<LR>/s<seed>; seed 2 is run only at a chosen lr other than the shared one (CELL itself
# already has seeds 0-2 there), and the grid's edge lrs (records.SWEEP_GRIDS) only where the best
# inner lr lies next to one (bench.py --todo: records.lr_wanted). modadd and lm hold their validation set out
# of training, so there the choosing runs are CELL-lr<LR>-val and CELL-lr<LR> trains as CELL does.
# Claim 4's cells (memorize, scored on the table it trains on: no separate validation set) run at
# 24000 steps at 3e-3 and 3e-2 beside the ladder's 1e-2 (CELL: c4/memorize/<row>-steps24000); a
# variant whose best lr is another continues its ladder there.
sweep() {  # sweep CELL LR ARGS...: the grid of one cell around its shared LR, seeds 0-2 (bench.py
  # keeps what the rule wants); the grid is records.SWEEP_GRIDS's line for LR (brackets dropped)
  local cell=$1 shared=$2 lr seed grid; shift 2
  grid=$(sed -n "s/^    \"$shared\": \"\(.*\)\",$/\1/p" records.py | tr -d '[]')
  [ -n "$grid" ] || { echo "run_all.sh: records.SWEEP_GRIDS has no grid for lr $shared" >&2; exit 2; }
  for lr in $grid; do
    for seed in 0 1 2; do
      case " $* " in
        *" --task modadd "*|*" --task lm "*)
          [ $seed = 2 ] || cell "$cell-lr$lr-val/s$seed" "$@" --lr $lr --val_size $VAL --seed $seed
          cell "$cell-lr$lr/s$seed" "$@" --lr $lr --seed $seed ;;
        *" --task memorize "*)  # its shared lr's runs are the cell's own
          [ $lr = $shared ] || cell "$cell-lr$lr/s$seed" "$@" --lr $lr --seed $seed ;;
        *) cell "$cell-lr$lr/s$seed" "$@" --lr $lr --val_size $VAL --seed $seed ;;
      esac
    done
  done
}
if [ -n "$LR_SWEEP" ] && [ $SCALE != paper ] && [ $SCALE != paper-smoke ]; then
  VAL=500
  # MixiT's cells first: the verdicts closest to turning on its lr (claims 1, 3 and 8)
  for v in mixit standard frozen_qk; do
    if [ $v != frozen_qk ]; then
      for t in needle induction hop; do  # claim 1: Table 1's cells
        recipe=$NEEDLE; [ $t = hop ] && recipe=$HOP; [ $t = induction ] && recipe=$RETRIEVE
        sweep "t1/$t/$v" 3e-3 $BASE $recipe --task $t --task_size ${SIZE[$t]} --variant $v
      done
    fi
    case $v in
      mixit)  # claim 3: MixiT with 64 heads on add and dyck, Table 11's budgets
        sweep "c3/add/mixit-heads64" 3e-3 $BASE $DENSE --steps 8000 --task add --task_size ${SIZE[add]} --variant mixit --n_head 64
        sweep "c3/dyck/mixit-heads64" 3e-3 $BASE $SPARSE --steps 1200 --task dyck --task_size ${SIZE[dyck]} --variant mixit --n_head 64 ;;
      standard)
        sweep "t3/add/standard" 3e-3 $BASE $DENSE --task add --task_size ${SIZE[add]} --variant standard
        sweep "t3/dyck/standard" 3e-3 $BASE $DYCK --task dyck --task_size ${SIZE[dyck]} --variant standard ;;
      frozen_qk)  # claim 2: needle (Table 1), induction and hop (Table 11's budgets)
        sweep "t1/needle/frozen_qk" 3e-3 $BASE $NEEDLE --task needle --task_size ${SIZE[needle]} --variant frozen_qk
        sweep "c2/induction/frozen_qk" 3e-3 $BASE $SPARSE --steps 1200 --task induction --task_size ${SIZE[induction]} --variant frozen_qk
        sweep "c2/hop/frozen_qk" 3e-3 $BASE $HOP --steps 3000 --task hop --task_size ${SIZE[hop]} --variant frozen_qk ;;
    esac
    # (modadd's validation set: 200 pairs out of its 3306 pairs for training, so that it trains
    # on nearly as many)
    [ $v = frozen_qk ] || VAL=200 sweep "c3/modadd/$v" 3e-3 $BASE $MODADD --steps 8000 --task modadd --task_size ${SIZE[modadd]} --variant $v
    sweep "t2/lm/$v" 2e-3 $LM --task lm --task_size ${SIZE[lm]} --variant $v  # claim 8
  done
  for row in standard frozen_qk mixit frozen_mlp; do  # claim 4, last: the longest runs
    sweep "c4/memorize/$row-steps24000" 1e-2 $MEM --task memorize --n_embd 16 --steps 24000 --eval_interval 500 --variant $row
  done
fi
# claim 4 at the paper scale reads Table 4's cells, each run to its plateau (--patience) within a
# budget: that budget too is doubled, as --claims doubles claim 4's
if [ $SCALE = paper ] || [ $SCALE = paper-smoke ]; then
  for row in standard frozen_qk mixit frozen_mlp mixit-shipped; do
    doublings "t4/memorize/$row" "30000 60000" $MEM --task memorize $(capacity_args $row)
  done
  # learning-rate grids where a variant fails at width 512 (records.SWEEP_GRIDS: three lrs, no
  # edges), queued behind the claims' seed-0 cells (bench.py priority): MixiT on add, modadd,
  # dyck and the LM, Frozen-MLP on needle
  VAL=2000
  sweep t3/add/mixit 1e-3 $BASE $DENSE --task add --task_size ${SIZE[add]} --variant mixit
  sweep t3/modadd/mixit 1e-3 $BASE $MODADD --task modadd --task_size ${SIZE[modadd]} --variant mixit
  sweep t3/dyck/mixit 1e-3 $BASE $DYCK --task dyck --task_size ${SIZE[dyck]} --variant mixit
  sweep t2/lm/mixit 5e-4 $LM --task lm --task_size ${SIZE[lm]} --variant mixit
  sweep t1/needle/frozen_mlp 1e-4 $BASE $NEEDLE --task needle --task_size ${SIZE[needle]} --variant frozen_mlp
fi
# --- the studies beyond the paper (--studies): each row of a table is a cell, seeds 0-2 ----------
task_args() {  # a task at this scale's Table 1-4 settings
  case $1 in
    lm) echo "$LM --task lm --task_size ${SIZE[lm]}" ;;
    memorize) echo "$MEM --task memorize" ;;
    add) echo "$BASE $DENSE --task add --task_size ${SIZE[add]}" ;;
    modadd) echo "$BASE $MODADD --task modadd --task_size ${SIZE[modadd]}" ;;
    needle) echo "$BASE $NEEDLE --task needle --task_size ${SIZE[needle]}" ;;
    induction) echo "$BASE $RETRIEVE --task induction --task_size ${SIZE[induction]}" ;;
    copy) echo "$BASE $COPY --task copy --task_size ${SIZE[copy]}" ;;
    dyck) echo "$BASE $DYCK --task dyck --task_size ${SIZE[dyck]}" ;;
  esac
}
if [ -n "$STUDIES" ]; then
  for seed in $(seq 0 $(( ${N_SEEDS_GIVEN:-3} - 1 ))); do
    for row in standard_mixblock standard_learnedpos mixit_stdblock; do    # Table 9: confounds
      for t in add modadd dyck memorize needle copy lm; do
        cell "t9/$t/$row/s$seed" $(task_args $t) $(block_args $row) --seed $seed
      done
    done
    for v in frozen_qk frozen_mlp; do                                    # Table 10: hybrids
      for t in needle add lm; do
        steps=$(task_args $t | grep -o -- '--steps [0-9]*' | tail -1 | cut -d' ' -f2)
        for pct in 25 50 75; do
          cell "t10/$t/$v-u$pct/s$seed" $(task_args $t) --variant $v --unfreeze_at $((steps * pct / 100)) --seed $seed
        done
      done
    done
    for ctx in 128 256; do                                               # longer context (lm)
      for v in standard frozen_qk mixit; do
        cell "s2/lm$ctx/$v/s$seed" $LM --task lm --task_size $ctx --variant $v --seed $seed
      done
    done
  done
  for seed in $(seq 0 $(( ${N_SEEDS_GIVEN:-3} - 1 ))); do                  # the draw: no sink head
    for t in needle add lm; do
      cell "s3/$t/mixit-nosink/s$seed" $(task_args $t) --variant mixit --mixit_sink false --seed $seed
    done
  done
  for seed in $(seq 3 9); do                                             # seeds 0-9: the draw
    for v in standard frozen_qk mixit; do
      for t in needle add lm; do  # seeds 0-2 are Tables 1-3's own; report.py joins them
        cell "s1/$t/$v/s$seed" $(task_args $t) --variant $v --seed $seed
      done
    done
  done
fi
# Table 7: a benchmark per seed (a fresh process timing other random models), each alone, last;
# not in the paper smoke test (its width-512 steps would take a CPU too long)
if [ $SCALE != paper-smoke ]; then
  for seed in $SEEDS; do cell "t7/bench/s$seed" $BENCH --bench --seed $seed; done
fi

if [ -n "$PLAN" ]; then  # every run, done or not, with its measured minutes where it ran
  # the paper-scale queue's price goes to results/queue-paper.jsonl, where docs/ENGINEERING.md reads it
  # (rewritten only when the price changed: the file is in git, and a clone stays clean)
  PRICE=""; [ $SCALE = paper ] && [ -z "${YELP:-}" ] && PRICE=results/queue-paper.jsonl
  $PYTHON bench.py --plan "$JOBLIST" "$OUT" $PRICE  # PER_GPU (env), else bench.py --per-gpu's
  exit 0
fi
# ONLY=REGEX (env) keeps the runs whose tag matches, e.g. ONLY='t1/|t3/' runs two tables' runs: a
# GPU lent by the call (a call of a few minutes) then takes the list in parts that each finish
# (before the pricing below, which then prices only these)
if [ -n "${ONLY:-}" ]; then
  rc=0; grep -E "^($ONLY)" "$JOBLIST" >"$JOBLIST.only" || rc=$?  # its exit status: no match, or a bad regex
  [ $rc -le 1 ] || { echo "run_all.sh: ONLY='$ONLY' is not a regular expression (grep -E)" >&2; exit 2; }
  mv "$JOBLIST.only" "$JOBLIST"
fi
# what is left to run, claims first; with --minutes also each run's estimated minutes
$PYTHON bench.py --todo "$JOBLIST" "$OUT" ${MINUTES:+"$JOBLIST.est"} >"$JOBLIST.todo"
mv "$JOBLIST.todo" "$JOBLIST"
if [ -n "$LIST" ]; then  # --list: the queue, in order, and nothing else (an empty one says so)
  [ -s "$JOBLIST" ] || echo "run_all.sh --list: nothing left to run: every run listed has a record of its recipe in $OUT${ONLY:+, or none matches ONLY='$ONLY'}" >&2
  cat "$JOBLIST"; exit 0
fi

# --- run them, $JOBS at a time; each job gets a slot number, which picks its GPU -------------------
# One sweep per results file at a time in a checkout: a second would start the same runs, which
# would write the same state files (results/ckpt) and records twice. The lock is a folder (mkdir
# is atomic) holding the sweep's pid; one whose process has ended is stale, and taken over.
LOCK="results/.run_all-$NAME.lock"
mkdir -p results
if ! mkdir "$LOCK" 2>/dev/null; then
  other=$(cat "$LOCK/pid" 2>/dev/null || true)
  if [ -n "$other" ] && kill -0 "$other" 2>/dev/null; then
    echo "run_all.sh: another run_all.sh is running into $OUT from this checkout (pid $other): wait for it to end, or stop it; if that pid is no run_all.sh, remove $LOCK" >&2
    exit 2
  fi
  rm -rf "$LOCK" && mkdir "$LOCK"
fi
echo $$ >"$LOCK/pid"
trap 'rm -f "$JOBLIST" "$JOBLIST.est"; rm -rf "$LOCK"' EXIT
n=$(wc -l <"$JOBLIST")
echo "run_all ($SCALE): $n runs to do, $JOBS at a time; records in $OUT, logs in $LOGS/"
start=$(date +%s)
# --minutes: the cells get SIGTERM before the end (`STOP_AT`; they save their state), then the report
STOP_AT=""; [ -n "$MINUTES" ] && STOP_AT=$((start + MINUTES * 60 - 30)) && BUDGET=$((MINUTES * 60 - 30))
export OUT THREADS GPUS LOGS PYTHON LAUNCH STOP_AT BUDGET JOBLIST NAME
# the benchmarks (the last lines) run alone, so that other runs do not disturb their timings; with
# several GPUs, the paper-scale language models run first, one at a time, each across every GPU
# (torchrun: DistributedDataParallel, the batch split over the GPUs)
LAUNCH="mixit.py"
: >"$JOBLIST.ddp"
if [ "$GPUS" -gt 1 ] && [ $SCALE = paper ]; then
  grep '^t2/' "$JOBLIST" >"$JOBLIST.ddp" || true
fi
grep -v '^t7/bench' "$JOBLIST" | grep -v -x -F -f "$JOBLIST.ddp" >"$JOBLIST.runs" || true
grep '^t7/bench' "$JOBLIST" >"$JOBLIST.bench" || true
run_one() {  # run_one TAG ARGS... (in a slot given by $SLOT; $LAUNCH runs mixit.py or bench.py)
  local tag=$1; shift
  local log="$LOGS/${tag//\//_}.log" state="results/ckpt/$NAME/${tag//\//_}.pt" limit=() rc=0
  local gpus=$(( ${SLOT:-0} % GPUS ))
  [[ "$LAUNCH" == *torch.distributed* ]] && gpus=$(seq -s, 0 $((GPUS - 1)))
  if [ -n "$STOP_AT" ]; then  # --minutes: start only what fits; stop it in time to save its state
    local left=$((STOP_AT - $(date +%s))) need
    need=$(awk -v t="$tag" '$1 == t {print int($2 * 60 + 0.5)}' "$JOBLIST.est"); need=${need:-0}
    [ -f "$state" ] && need=60  # a half-finished cell goes on from its last evaluation
    # a cell that cannot finish in this call (need: its price with bench.SPARE to spare, as
    # bench.py --todo writes it) is not started (its state would leave with the machine),
    # unless PIECES says its state is kept: PIECES=1 (a second call follows on the same warm
    # machine) starts one longer than the whole call with at least half of the call left;
    # PIECES=keep (the state stays here: a CPU, your own GPU) starts any cell while a minute is
    # left, so that no core idles at the end of a call
    local starts=yes
    if [ "$need" -gt "$left" ]; then
      case "${PIECES:-}" in
        keep) ;;
        1) [ "$need" -gt "$BUDGET" ] && [ $((2 * left)) -ge "$BUDGET" ] || starts=no ;;
        *) starts=no ;;
      esac
    fi
    if [ "$left" -lt 60 ] || [ $starts = no ]; then
      echo "  later  $tag  (needs about $(( (need + 59) / 60 )) min, $((left / 60)) min left)"; return 0
    fi
    limit=(timeout -k 60 "$left")
  fi
  [[ " $* " == *" --bench "* ]] || set -- "$@" --resume "$state"
  local had; had=$(grep -c -F "\"tag\": \"$tag\"" "$OUT" || true)  # its records so far (below)
  CUDA_VISIBLE_DEVICES=$gpus OMP_NUM_THREADS=$THREADS "${limit[@]}" \
    $PYTHON $LAUNCH "$@" --tag "$tag" --out "$OUT" --examples 0 --log_interval 250 >"$log" 2>&1 || rc=$?
  # (a run stopped by --minutes' deadline after it wrote its record is done, not failed)
  if [ $rc = 0 ] || [ "$(grep -c -F "\"tag\": \"$tag\"" "$OUT")" -gt "$had" ]; then
    echo "  done   $tag  ($(grep -o 'final test accuracy [0-9.]*' "$log" || echo benchmark))"
  elif [ -f "$state" ] && [ $rc = 124 -o $rc = 143 -o $rc = 130 ]; then
    echo "  paused $tag  (its state is in $state: the next call resumes it)"
    # its step time, so that the queue can price its shape though no record of it exists yet (a
    # GPU call's paused state may be lost with the machine, its measured speed is not)
    local ms; ms=$(grep -o '[0-9.]* ms/step' "$log" | tail -1 | cut -d' ' -f1)
    [ -z "$ms" ] || echo "{\"config\": {\"tag\": \"$tag\"}, \"ms_per_step\": $ms, \"time\": \"$(date -u +%Y-%m-%dT%H:%M:%S)\"}" >>"${OUT%.jsonl}-paused.jsonl"
  else
    echo "  FAILED $tag  (see $log)"
  fi
}
export -f run_one
if [ -s "$JOBLIST.ddp" ]; then
  LAUNCH="-m torch.distributed.run --standalone --nproc_per_node=$GPUS mixit.py" \
    xargs -r -a "$JOBLIST.ddp" -L 1 bash -c 'run_one "$@"' _ || true
fi
# -r: an empty list runs nothing (plain xargs would run the command once, with no arguments)
xargs -r -a "$JOBLIST.runs" -P "$JOBS" -L 1 --process-slot-var=SLOT bash -c 'run_one "$@"' _ || true
LAUNCH=bench.py THREADS=$($PYTHON -c "import os; print(os.cpu_count())") \
  xargs -r -a "$JOBLIST.bench" -L 1 bash -c 'run_one "$@"' _ || true
rm -f "$JOBLIST.runs" "$JOBLIST.bench" "$JOBLIST.ddp" "$JOBLIST.est"
echo "run_all ($SCALE): runs took $(( $(date +%s) - start ))s"

# REPORT=0: a lent GPU's call sends back only the records; rendering them there spends its time
[ "${REPORT:-1}" = 0 ] || $PYTHON report.py --scale "$SCALE"
