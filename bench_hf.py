"""Optional: time a plain Hugging Face Llama training step of the same size as `mixit.py --bench`.

The reference code (princeton-pli/MixiT) trains HF Llama models (SwiGLU MLP of width 4d) in fp32
through the HF Trainer. Its per-step cost is the model's forward, backward and AdamW step. This
script times exactly that core for an HF `LlamaForCausalLM` of our shape, on the same batches as
`python mixit.py --bench` (tasks.py), so the two can be compared on *your* machine:

    pip install "transformers>=4.50,<5"     # only this script needs it; mixit.py does not
    python bench_hf.py --n_embd 128 --batch_size 256
    python mixit.py --bench --task add --task_size 10 --n_embd 128 --batch_size 256

It is generous to the reference: no Trainer, no Python data generation, no per-step host copy
of the mixing matrices, just model + AdamW (torch's defaults, as the Trainer uses) + grad clip.
"""
import argparse
import time

import torch
import torch.nn.functional as F

import tasks

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--task", default="add", help="task whose batches are used (tasks.py)")
parser.add_argument("--task_size", type=int, default=10, help="task size (add: digits)")
parser.add_argument("--n_embd", type=int, default=128, help="hidden size d (MLP width 4d)")
parser.add_argument("--n_layer", type=int, default=2, help="number of blocks")
parser.add_argument("--n_head", type=int, default=4, help="attention heads")
parser.add_argument("--batch_size", type=int, default=256, help="sequences per step")
parser.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                    help="HF attention implementation (sdpa: torch's fused kernel)")
parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
parser.add_argument("--iters", type=int, default=20, help="timed steps")
args = parser.parse_args()

try:
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    raise SystemExit('error: bench_hf.py needs transformers: pip install "transformers>=4.50,<5"')

task = tasks.make_task(args.task, args.task_size, "cpu", data_seed=0, n_test=10)
config = LlamaConfig(vocab_size=task.vocab_size, hidden_size=args.n_embd,
                     intermediate_size=4 * args.n_embd, num_hidden_layers=args.n_layer,
                     num_attention_heads=args.n_head, num_key_value_heads=args.n_head,
                     max_position_embeddings=task.block_size, attn_implementation=args.attn)
model = LlamaForCausalLM(config).train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(0)
print(f"HF LlamaForCausalLM ({args.attn}), {sum(p.numel() for p in model.parameters()):,} "
      f"parameters, task {args.task} (T={task.block_size}), batch {args.batch_size}, "
      f"{torch.get_num_threads()} threads")
for i in range(args.warmup + args.iters):
    if i == args.warmup:
        t0 = time.time()
    x, y, mask = task.get_batch(args.batch_size, gen)
    logits = model(input_ids=x).logits                      # (B, T, vocab)
    loss = F.cross_entropy(logits[mask], y[mask])           # the answer positions only
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
dt = (time.time() - t0) / args.iters
print(f"{1000 * dt:.1f} ms/step | {args.batch_size / dt:.0f} samples/s | "
      f"{args.batch_size * task.block_size / dt:.0f} tokens/s")
