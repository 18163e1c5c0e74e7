#!/usr/bin/env bash
# One call of a GPU lent in short calls: a machine that runs one command on a fresh copy of this
# checkout, keeps its ignored files (results/ckpt/: the paused runs' states) only while it stays
# warm between calls, and sends back only the files the command writes under $OUT. On it:
#   PER_GPU=8 bash gpu_call.sh --minutes 9    the paper queue (run_all.sh) for up to 9 minutes
#   PACK=1,4,8 PER_GPU=8 bash gpu_call.sh --minutes 9
#                     first the packing measurement (bench.py --pack: P copies at once, timed
#                     together, at Table 1's induction shape; into results/gpu.jsonl), then the
#                     queue for the minutes left of the 9
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
$PYTHON -c 'import torch; print("torch", torch.__version__)'
rc=0; args=("$@")
if [ -n "${PACK:-}" ]; then  # the measurement first; the minutes it took come off --minutes M
  start=$(date +%s)
  $PYTHON bench.py --pack "$PACK" --task induction --task_size 64 --n_embd 512 --n_layer 2 \
    --n_head 4 --batch_size 256 --resample --tag gpu/pack-barrier-induction64-w512 --out results/gpu.jsonl || rc=$?
  cp results/gpu.jsonl "$OUT/"
  took=$(( ($(date +%s) - start + 59) / 60 ))
  for i in "${!args[@]}"; do
    [ "${args[$i]}" = --minutes ] && args[$((i + 1))]=$(( ${args[$((i + 1))]} - took ))
  done
  echo "gpu_call.sh: the packing measurement took $took min; then: run_all.sh ${args[*]}"
fi
# REPORT=0: the tables are rendered here, from the merged records; only the induction heads'
# scores need the checkpoints that stay on the machine, so those alone are computed there
REPORT=0 PYTHONUNBUFFERED=1 bash run_all.sh "${args[@]}" || rc=$?
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
