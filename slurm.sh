#!/usr/bin/env bash
# The paper queue on a Slurm cluster: one array task per run of `run_all.sh --list`. From the
# repository root (Slurm runs a copy of this script, in the folder it was submitted from):
#
#   bash run_all.sh --list > queue.txt
#   sbatch --array=1-$(wc -l < queue.txt) slurm.sh queue.txt   (--array=1-N%8: at most 8 at once)
#   bash slurm.sh --merge [FOLDER]    add the tasks' records to results/paper.jsonl; any time, as
#                                     often as you like: a line already there is not added again
#   python report.py --scale paper
#
# Task i runs line i ("TAG ARGS...") as run_all.sh's run_one would: the same flags, state
# (results/ckpt/paper/TAG.pt, with / as _) and log (results/logs/paper/TAG.log, appended). Records
# that cannot collide: each task writes its record to a file of its own, results/slurm/paper/
# TAG.jsonl, never to results/paper.jsonl, which the merge alone writes. SCALE=paper-smoke (with
# `run_all.sh --paper-smoke --list`) puts everything under that name instead, as run_all.sh does.
# On a node without a GPU a paper-scale task is refused in one line (exit 2), as run_all.sh's paper
# scale is, unless ALLOW_CPU=1 (ALLOW_CPU=1 sbatch ...: the task inherits it) says that is meant.
#
# Edit these for your cluster (some want --gres=gpu:1 instead of --gpus=1). One GPU per task: a
# saved state resumes only on as many processes as it was saved by.
#SBATCH --job-name=mixit-paper
#SBATCH --partition=gpu
#SBATCH --gpus=1
#SBATCH --cpus-per-task=4
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --signal=B:USR1@120
#SBATCH --open-mode=append
#SBATCH --output=results/logs/slurm-%A_%a.out
# --requeue: a preempted task goes back in the queue, and Slurm's SIGTERM lets the run save its
# state first. --signal: two minutes before the time limit this script stops the run the same way
# and puts the task back itself, so a run longer than --time goes on in pieces. --open-mode: a
# requeued task's output adds to its file instead of replacing it. (results/logs/ exists once
# run_all.sh has run; Slurm does not create the folder of --output.)
set -uo pipefail  # no -e: a run's exit status is reported, not fatal
SCALE=${SCALE:-paper}
PYTHON=${PYTHON:-$(command -v python || command -v python3)}
die() { echo "slurm.sh: $*" >&2; exit 2; }

# in a Slurm job this is a copy in Slurm's spool folder and we are already where sbatch was run
LIST=""; FOLDER=""
[ -n "${2:-}" ] && FOLDER=$(realpath -m "$2")  # --merge FOLDER is relative to where we were called
[ -n "${1:-}" ] && [ "$1" != --merge ] && [ -f "$1" ] && LIST=$(realpath "$1")
[ -n "${SLURM_JOB_ID:-}" ] || cd "$(dirname "$0")"
[ -f mixit.py ] || die "run it from the repository root (no mixit.py in $(pwd))"

if [ "${1:-}" = --merge ]; then  # every task's records into results/$SCALE.jsonl, each line once
  FOLDER=${FOLDER:-results/slurm/$SCALE}
  [ -d "$FOLDER" ] || die "--merge: no folder '$FOLDER'"
  shopt -s nullglob; files=("$FOLDER"/*.jsonl)
  [ ${#files[@]} -gt 0 ] || die "--merge: no records (*.jsonl) in '$FOLDER'"
  target=results/$SCALE.jsonl
  touch "$target"; before=$(wc -l <"$target")
  # gpu_call.sh's union, over every file at once: the lines the target lacks, in the files' order,
  # written to a temporary file and renamed over the target, so a reader sees all of it or none
  { cat "$target"; awk -v target="$target" 'FILENAME == target {seen[$0] = 1; next}
      !($0 in seen) {print; seen[$0] = 1}' "$target" "${files[@]}"; } >"$target.tmp" ||
    { rm -f "$target.tmp"; die "--merge: could not write $target.tmp"; }
  mv "$target.tmp" "$target"
  echo "slurm.sh: $(( $(wc -l <"$target") - before )) new records in $target (from ${#files[@]} files in $FOLDER)"
  exit 0
fi

# --- one array task: line $SLURM_ARRAY_TASK_ID of the list ------------------------------------
[ -n "${1:-}" ] || die "usage: sbatch --array=1-N slurm.sh LIST, or bash slurm.sh --merge [FOLDER]"
[ -n "${LIST:-}" ] || die "no list file '$1' (make one: bash run_all.sh --list > queue.txt)"
ID=${SLURM_ARRAY_TASK_ID:-}
[ -n "$ID" ] || die "SLURM_ARRAY_TASK_ID is not set (submit with sbatch --array=1-N, or set it by hand)"
n=$(wc -l <"$LIST")
[[ "$ID" =~ ^[0-9]+$ ]] && [ "$ID" -ge 1 ] && [ "$ID" -le "$n" ] || die "task $ID is not a line of $LIST (lines 1-$n)"
line=$(sed -n "${ID}p" "$LIST")
read -ra argv <<<"$line"
[ ${#argv[@]} -gt 0 ] || die "line $ID of $LIST is empty"
tag=${argv[0]}; argv=("${argv[@]:1}")
# a paper-smoke line (2 steps) must not end up in results/paper.jsonl, where it would count as done
[ "$SCALE" = paper ] && [[ "$line" == *" --steps 2 --eval_interval 1 --eval_size 64 --warmup 1" ]] &&
  die "line $ID of $LIST is from run_all.sh --paper-smoke --list: submit it with SCALE=paper-smoke"
# a paper line is a width-512 run: on a node without a GPU (a CPU partition, a job given no GPU)
# it would take days, and each stop leaves a state file of up to a few hundred MB
if [ "$SCALE" = paper ] && [ "${ALLOW_CPU:-}" != 1 ] && ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  die "task $ID: the paper scale (width 512) needs a GPU and this node (${HOSTNAME:-?}) has none (nvidia-smi): check #SBATCH --gpus, or ALLOW_CPU=1 runs it on the CPU anyway"
fi
mine=results/slurm/$SCALE/${tag//\//_}.jsonl
state=results/ckpt/$SCALE/${tag//\//_}.pt
log=results/logs/$SCALE/${tag//\//_}.log
mkdir -p "results/slurm/$SCALE" "results/ckpt/$SCALE" "results/logs/$SCALE"

# A task Slurm starts again after its run ended (a requeue after the record was written) would
# train it again from scratch: skip it if its own file holds a record of this recipe (as the queue
# skips a cell whose record ran its recipe: bench.py --todo, which prints the lines still to run)
if [ -s "$mine" ]; then
  left=$("$PYTHON" bench.py --todo <(printf '%s\n' "$line") "$mine") || exit 2
  [ -n "$left" ] || { echo "  done   $tag  (its record is in $mine already)"; exit 0; }
fi

say() {  # the one line run_one prints for a run, into the task's Slurm output
  if [ "$1" = 0 ]; then
    echo "  done   $tag  ($(grep -o 'final test accuracy [0-9.]*' "$log" | tail -1 || echo benchmark))"
  elif [ -f "$state" ] && [ "$1" = 143 ]; then
    echo "  paused $tag  (its state is in $state: the task's next start resumes it)"
  else
    echo "  FAILED $tag  (exit $1, see $log)"
  fi
}
stop() {  # SIGTERM (preemption) or USR1 (the time limit is near): the run saves its state, stops
  trap - TERM USR1
  kill -TERM "$pid" 2>/dev/null; wait "$pid"; local rc=$?
  say $rc  # now: putting the task back in the queue ends this job
  [ "$1" = USR1 ] && [ $rc != 0 ] && [ -f "$state" ] && [ -n "${SLURM_JOB_ID:-}" ] && scontrol requeue "$SLURM_JOB_ID"
  exit $rc
}
# the benchmarks (t7/bench) time models and keep no state; every other line resumes from its state
if [[ " ${argv[*]} " == *" --bench "* ]]; then launch=bench.py; else launch=mixit.py; argv+=(--resume "$state"); fi
echo "slurm.sh: task $ID of $LIST: $tag on ${HOSTNAME:-?} ($SCALE)"
# in the background, so that bash can act on a signal while it waits; unbuffered, so that the log
# shows each line as it is printed (tail -f) and a task killed at its time limit loses none
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-4}} PYTHONUNBUFFERED=1
"$PYTHON" $launch "${argv[@]}" \
  --tag "$tag" --out "$mine" --examples 0 --log_interval 250 >>"$log" 2>&1 &
pid=$!
trap 'stop TERM' TERM; trap 'stop USR1' USR1
wait "$pid"; rc=$?; say $rc; exit $rc
