#!/usr/bin/env bash
# One call of a GPU lent in short calls: a machine that runs one command on a fresh copy of this
# checkout, keeps its ignored files (results/ckpt/: the paused runs' states) only while it stays
# warm between calls, and sends back only the files the command writes under $OUT. On it:
#   PER_GPU=8 bash gpu_call.sh --minutes 9    the paper queue (run_all.sh) for up to 9 minutes
#   PACK=1,4,8 PER_GPU=8 bash gpu_call.sh --minutes 9
#                     first the packing measurement (bench.py --pack: P copies at once, timed
#                     together, at Table 1's induction shape; into results/gpu.jsonl), then the
#                     queue for the minutes left of the 9; at the 16-layer 64-head MixiT
#                     shape too (the runs of Table 6 that --plan prices longest)
#   CHECK=1 ...       first the CUDA-graphs check (bench.py --graphs-check: t1/induction/standard/
#                     s0's recipe for 1000 steps with graphs and twice without, every step's batch,
#                     learning rate and loss compared; into results/gpu.jsonl). Where graphs
#                     change training, the queue (run_all.sh) runs without them. CHECK_ARGS:
#                     flags added to the check's (a rehearsal on a CPU: smaller sizes)
#   MPS=1 ...         NVIDIA's Multi-Process Service for every run of the call: without it the
#                     packed runs' kernels take turns on the GPU; with it they can share the chip.
#                     With PACK, the measurement runs without MPS, then with it (tags -mps). If
#                     the daemon is missing or will not start, the call says so and goes on
#                     without it. Unset, MPS follows the best measurement (bench.py --mps).
#   PROFILE=1 ...     first the profile of Table 4's memorize step (bench.py --profile at the paper
#                     shape of t4/memorize/standard/s0 and t4/memorize/mixit/s0: the kernels that
#                     take a step's time; into results/gpu.jsonl, tags gpu/profile-memorize-V), as
#                     --plan prices Table 4's runs highest. PROFILE_ARGS: flags added to the
#                     profile's (a rehearsal on a CPU: a smaller batch)
#   PROBE=1 ...       beside the queue (one run fewer at once), t6/add/mixit-L16/s0's line with
#                     --mixit_shipped --steps 3000, into results/extra.jsonl (tag x/...)
# then here, with the folder the call's files came back to:
#   bash gpu_call.sh --merge FOLDER           add its new records to results/paper.jsonl (and
#                                             the paused runs' step times to paper-paused.jsonl,
#                                             the packing records to gpu.jsonl)
# and after the last call: bash run_all.sh --plan (the queue left, its price, and which records
# it reruns: the tables mark those °), then python report.py --scale paper.
#
# Why the machine keeps its own copy of the records: every call copies this checkout's
# results/paper.jsonl over the machine's, and this checkout may not hold the last call's records
# yet (the next call has to start within seconds, or the machine and the paused states go back).
# So before run_all.sh decides what is left, the records the machine kept are added back. Both
# sides add only the lines they lack: merging twice, or a file lacking a record, loses nothing.
set -uo pipefail
HERE=$(dirname "$0")

union() {  # union SRC DST: add to DST the lines of SRC that DST lacks, in SRC's order; DST is
  [ -f "$1" ] || return 0  # replaced in one rename, so a copy taken meanwhile sees all or nothing
  touch "$2"
  # (FILENAME, not NR == FNR: with an empty DST that test would hold for SRC's lines, adding none)
  { cat "$2"; awk -v dst="$2" 'FILENAME == dst {seen[$0] = 1; next} !($0 in seen) {print; seen[$0] = 1}' "$2" "$1"; } >"$2.tmp"
  mv "$2.tmp" "$2"
}

if [ "${1:-}" = --merge ]; then
  FROM=$(realpath -m "${2:-/nowhere}"); cd "$HERE"  # FOLDER is relative to where we were called
  [ -f "$FROM/paper.jsonl" ] || { echo "gpu_call.sh: --merge FOLDER: no paper.jsonl in '${2:-}'" >&2; exit 2; }
  before=$(wc -l <results/paper.jsonl)
  union "$FROM/paper.jsonl" results/paper.jsonl
  union "$FROM/paper-paused.jsonl" results/paper-paused.jsonl  # the paused runs' step times
  union "$FROM/gpu.jsonl" results/gpu.jsonl  # PACK's records (bench.py --per-gpu reads them)
  union "$FROM/extra.jsonl" results/extra.jsonl  # PROBE's record
  # the induction heads' scores, computed from checkpoints that stay on the machine
  [ -f "$FROM/heads_paper.json" ] && cp "$FROM/heads_paper.json" results/
  echo "gpu_call.sh: $(( $(wc -l <results/paper.jsonl) - before )) new records in results/paper.jsonl"
  exit 0
fi

[ -n "${OUT:-}" ] || { echo "gpu_call.sh: OUT is not set (the folder the lent machine sends back)" >&2; exit 2; }
OUT=$(realpath -m "$OUT"); cd "$HERE"
PYTHON=${PYTHON:-$(command -v python || command -v python3)}
KEEP=results/ckpt/calls  # ignored by git, so the next warm call finds it as it was left
mkdir -p "$KEEP"
union "$KEEP/paper.jsonl" results/paper.jsonl
union "$KEEP/paper-paused.jsonl" results/paper-paused.jsonl
command -v nvidia-smi >/dev/null && nvidia-smi -L
# (torch's version from its package metadata: importing torch here would cost a second or two)
$PYTHON -c 'from importlib.metadata import version; print("torch", version("torch"))'
rc=0; args=("$@")

mps_start() {  # NVIDIA's MPS control daemon, its pipe and log folders under /tmp
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  local why=""
  if ! command -v nvidia-cuda-mps-control >/dev/null; then why="nvidia-cuda-mps-control not found"
  # (its output to a file: the daemon it forks could hold a $(...) pipe open)
  elif ! nvidia-cuda-mps-control -d >/tmp/mps-log/start.txt 2>&1; then
    why="nvidia-cuda-mps-control -d: $(head -c 300 /tmp/mps-log/start.txt | tr '\n' ' ')"
  else export MPS_ACTIVE=1; echo "gpu_call.sh: MPS on"; return 0; fi
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; MPS_FAILED=1
  echo "gpu_call.sh: MPS could not start ($why); the runs go on without it"; return 1
}
mps_stop() {
  [ "${MPS_ACTIVE:-}" = 1 ] || return 0
  echo quit | nvidia-cuda-mps-control; unset MPS_ACTIVE CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  echo "gpu_call.sh: MPS off"
}
trap mps_stop EXIT

measure() {  # the packing measurement at both shapes; $1: the tags' suffix ("" or -mps)
  $PYTHON bench.py --pack "$PACK" --task induction --task_size 64 --n_embd 512 --n_layer 2 \
    --n_head 4 --batch_size 256 --resample --tag gpu/pack-barrier-induction64-w512$1 --out results/gpu.jsonl || rc=$?
  $PYTHON bench.py --pack "$PACK" --task add --task_size 10 --variant mixit --n_embd 512 --n_layer 16 \
    --n_head 64 --batch_size 256 --resample --tag gpu/pack-barrier-mixit16-w512$1 --out results/gpu.jsonl || rc=$?
}

start=$(date +%s)  # CHECK, PACK and PROFILE come first; the minutes they take come off --minutes M
if [ "${CHECK:-}" = 1 ]; then  # t1/induction/standard/s0's recipe for 1000 steps, three times
  $PYTHON bench.py --graphs-check --n_embd 512 --n_head 4 --n_layer 2 --eval_size 4000 --lr 3e-4 \
    --warmup 300 --eval_interval 500 --resample --batch_size 256 --steps 1000 --task induction \
    --task_size 64 --variant standard --seed 0 --tag gpu/graphs-check-induction64-w512 \
    --out results/gpu.jsonl ${CHECK_ARGS:-}  # (exit 3: graphs change training: run_all.sh then
  c=$?; [ $c = 0 ] || [ $c = 3 ] || rc=1  # runs without them, as bench.py --cuda-graphs says)
  cp results/gpu.jsonl "$OUT/"
fi
if [ -n "${PACK:-}" ]; then
  measure ""
  [ "${MPS:-}" = 1 ] && mps_start && measure -mps
  cp results/gpu.jsonl "$OUT/"
fi
if [ "${PROFILE:-}" = 1 ]; then  # Standard's memorize step beside MixiT's, at the queue's shape
  for v in standard mixit; do
    line=$(PYTHON=$PYTHON bash run_all.sh --list | grep "^t4/memorize/$v/s0 " | cut -d' ' -f2-)
    [ -n "$line" ] || { echo "gpu_call.sh: PROFILE=1: t4/memorize/$v/s0 is not in the queue"; continue; }
    $PYTHON bench.py --profile $line --tag gpu/profile-memorize-$v --out results/gpu.jsonl \
      ${PROFILE_ARGS:-} || rc=$?
  done
  cp results/gpu.jsonl "$OUT/"
fi
if [ -n "${CHECK:-}${PACK:-}${PROFILE:-}" ]; then
  took=$(( ($(date +%s) - start + 59) / 60 ))
  for i in "${!args[@]}"; do
    [ "${args[$i]}" = --minutes ] && args[$((i + 1))]=$(( ${args[$((i + 1))]} - took ))
  done
  echo "gpu_call.sh: the checks took $took min; then: run_all.sh ${args[*]}"
fi
# the queue under MPS where asked for (MPS unset: where the best measurement used it)
if [ "${MPS:-$($PYTHON bench.py --mps)}" = 1 ]; then
  [ "${MPS_ACTIVE:-}${MPS_FAILED:-}" ] || mps_start  # (once: a failed start said why)
else
  mps_stop
fi
probe=""
if [ "${PROBE:-}" = 1 ]; then  # MixiT as shipped at 16 layers, given 3000 steps: a probe for claim 6
  line=$(PYTHON=$PYTHON bash run_all.sh --list | grep '^t6/add/mixit-L16/s0 ' | cut -d' ' -f2-)
  if [ -z "$line" ]; then echo "gpu_call.sh: PROBE=1: t6/add/mixit-L16/s0 is not in the queue"
  else
    PER_GPU=$(( ${PER_GPU:-$($PYTHON bench.py --per-gpu)} - 1 )); export PER_GPU
    $PYTHON mixit.py $line --mixit_shipped --steps 3000 --tag x/t6-mixit-L16-shipped-3000/s0 \
      --out results/extra.jsonl >results/probe.log 2>&1 &
    probe=$!
  fi
fi
# REPORT=0: the tables are rendered here, from the merged records; only the induction heads'
# scores need the checkpoints that stay on the machine, so those alone are computed there
REPORT=0 PYTHONUNBUFFERED=1 bash run_all.sh "${args[@]}" || rc=$?
if [ -n "$probe" ]; then
  wait $probe || { rc=1; tail -3 results/probe.log; }
  cp results/extra.jsonl "$OUT/"
fi
if ls results/ckpt/paper_induction_*.pt >/dev/null 2>&1; then
  $PYTHON -c 'import figures; figures.plot_attention("paper")' >/dev/null || rc=1
fi
cp results/paper.jsonl "$KEEP/"
cp results/paper.jsonl "$OUT/"
if [ -f results/paper-paused.jsonl ]; then
  cp results/paper-paused.jsonl "$KEEP/"; cp results/paper-paused.jsonl "$OUT/"
fi
[ -f results/heads_paper.json ] && cp results/heads_paper.json "$OUT/"
[ -d results/logs/paper ] && tar czf "$OUT/logs-paper.tgz" results/logs/paper
exit $rc
