#!/usr/bin/env bash
# The GPU figures of FINDINGS ("Efficiency"), on one GPU, from the repo root:
#   1. bench.py at width 512, batch 1000, add-10: ms/step and MFU per variant (Table 7, paper scale)
#   2. width 128: torch.compile + bf16 against eager fp32, and each half alone
#   3. CUDA graphs (--cuda_graphs: torch.compile mode="reduce-overhead") at widths 128 and 512
#   4. PER_GPU packing: quick-size runs P at a time on one GPU, compiled and eager
#   5. Table 1's induction shape (induction-64, width 512, batch 256, --resample): the profile
#      (bench.py --profile, with and without CUDA graphs), our step and the HF Llama step on the
#      same batches, today's code beside the code of BEFORE=folder (a copy of an earlier commit,
#      e.g. git archive 1373a91 | tar x -C results/ckpt/before), and bench.py --pack 1,4,8,16
#   6. one paper cell (t1/induction/standard/s0's recipe) with and without --cuda_graphs, same seed
# Records go to $OUT (default results/): paper.jsonl (Table 7) and gpu.jsonl (the rest).
# CUDA graphs are on by default (mixit.py --cuda_graphs); the rows measured without them say
# --cuda_graphs false, so each row means what it did when it was first recorded.
# PARTS="1 2 4" (env) runs only those parts (default: 1-4); PACK="1 8" packs only 1 and 8.
set -uo pipefail
export PYTHONUNBUFFERED=1
O=${OUT:-results}
PY=$(command -v python || command -v python3)
nvidia-smi -L; $PY -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
ADD="--task add --task_size 10 --n_layer 2 --n_head 4"
A512="$ADD --n_embd 512 --batch_size 1000"
A128="$ADD --n_embd 128 --batch_size 256"
part() { [[ " ${PARTS:-1 2 3 4} " == *" $1 "* ]]; }
S64="--task induction --task_size 64 --n_embd 512 --n_layer 2 --n_head 4 --batch_size 256"

if part 1; then
echo "=== 1. width 512, batch 1000, compile + bf16"
$PY bench.py $A512 --cuda_graphs false --tag t7/bench/s0 --out $O/paper.jsonl
fi
if part 2; then
echo "=== 2. width 128, batch 256: compile + bf16, eager fp32, eager bf16, compiled fp32"
$PY bench.py $A128 --cuda_graphs false --tag gpu/w128-compile-bf16 --out $O/gpu.jsonl
$PY bench.py $A128 --compile false --dtype float32 --tag gpu/w128-eager-fp32 --out $O/gpu.jsonl
$PY bench.py $A128 --variant standard --compile false --dtype bfloat16 --tag gpu/w128-eager-bf16 --out $O/gpu.jsonl
$PY bench.py $A128 --variant standard --dtype float32 --cuda_graphs false --tag gpu/w128-compile-fp32 --out $O/gpu.jsonl
fi
if part 3; then
echo "=== 3. CUDA graphs, standard and mixit, widths 128 and 512"
for v in standard mixit; do
  $PY bench.py $A128 --variant $v --cuda_graphs --tag gpu/w128-cudagraphs-bf16 --out $O/gpu.jsonl
  $PY bench.py $A512 --variant $v --cuda_graphs --tag gpu/w512-cudagraphs-bf16 --out $O/gpu.jsonl
done
fi
if part 4; then
echo "=== 4. PER_GPU packing: quick add-4 runs (1000 steps), P at a time"
Q="--n_embd 64 --n_head 4 --n_layer 2 --eval_size 500 --lr 3e-3 --warmup 100 --eval_interval 200
   --batch_size 128 --steps 1000 --task add --task_size 4 --examples 0 --log_interval 500"
$PY mixit.py $Q --out "" >/dev/null 2>&1  # warm the inductor cache, as a sweep's later runs find it
for mode in compile eager; do
  extra="--cuda_graphs false"; [ $mode = eager ] && extra="--compile false"
  for P in ${PACK:-1 2 4 8}; do
    t=$(date +%s.%N)
    for i in $(seq $P); do
      OMP_NUM_THREADS=2 $PY mixit.py $Q $extra --seed $i --tag gpu/pack-$mode-P$P --out $O/gpu.jsonl \
        >$O/pack_${mode}_P${P}_$i.log 2>&1 &
    done
    wait
    wall=$($PY -c "print(round($(date +%s.%N) - $t, 1))")
    # the batch's wall clock (interpreter starts included) as a record too, not only a console line
    $PY -c "import mixit; mixit.append_record('$O/gpu.jsonl', {'config': {'tag': 'gpu/pack-wall-$mode-P$P'},
            'runs': $P, 'pack_wall_s': $wall, **mixit.environment('cuda', 'auto')})"
    echo "$mode PER_GPU=$P: $P runs in $wall s wall; first run's $(grep -h 'ms/step' $O/pack_${mode}_P${P}_1.log | tail -1)"
  done
done
rm -f $O/pack_*.log
fi
if part 5; then
echo "=== 5. induction-64, width 512, batch 256: profile, ours vs HF Llama vs BEFORE, packing"
$PY bench.py --profile $S64 --resample --cuda_graphs false --tag gpu/profile-induction64-w512 --out $O/gpu.jsonl
$PY bench.py --profile $S64 --resample --cuda_graphs --tag gpu/profile-induction64-w512-cudagraphs --out $O/gpu.jsonl
$PY bench.py --variant standard $S64 --resample --cuda_graphs false --tag gpu/ours-induction64-w512 --out $O/gpu.jsonl
$PY bench.py --hf $S64 --resample --tag gpu/hf-induction64-w512 --out $O/gpu.jsonl
if [ -n "${BEFORE:-}" ]; then  # the earlier code's step, same shape, same machine (no --resample
  (cd "$BEFORE" && $PY bench.py --variant standard $S64 --tag gpu/before-induction64-w512 --out "$(realpath -m $O)/gpu.jsonl")
fi                              # in its bench.py: it timed get_batch without it)
$PY bench.py --pack "$(echo ${PACK:-1 4 8 16} | tr ' ' ,)" $S64 --resample --tag gpu/pack-barrier-induction64-w512 --out $O/gpu.jsonl
fi
if part 6; then
echo "=== 6. a paper cell with and without CUDA graphs: same seed, curves side by side"
CELL="--n_embd 512 --n_head 4 --n_layer 2 --eval_size 4000 --lr 3e-4 --warmup 300 --eval_interval 500
      --resample --batch_size 256 --steps 12000 --stop_acc 0.999 --task induction --task_size 64
      --variant standard --seed 0 --examples 0 --log_interval 500"
$PY mixit.py $CELL --cuda_graphs false --tag gpu/cell-induction64-standard --out $O/gpu.jsonl
$PY mixit.py $CELL --cuda_graphs --tag gpu/cell-induction64-standard-cudagraphs --out $O/gpu.jsonl
fi
