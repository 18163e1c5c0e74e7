"""
MixiT in one file: how much of a Transformer's skill needs *learned* attention?

A reproduction of Dong, Noci, Khodak & Li, "Attention Retrieves, MLP Memorizes" (arXiv
2506.01115). The paper trains one small decoder in several variants and reports that with its
attention replaced by a fixed random mixing matrix (MixiT) it still adds and memorizes but cannot
retrieve; with the attention's queries and keys frozen at their random init (Frozen-QK) it still
forms induction heads; with frozen MLPs it loses memorization capacity (ours: results/FINDINGS.md).

    python mixit.py                                     # Frozen-QK learns to copy strings
    python mixit.py --variant mixit                     # the same task, MixiT's fixed mixing
    python mixit.py --variant mixit --task modadd --task_size 59   # MixiT on addition mod 59
    python mixit.py --task needle --qk_init_std 0.02    # Frozen-QK at the reference code's init
    python mixit.py --help                              # every flag, with its meaning
Stopped by Ctrl-C or SIGTERM, a run saves its state: the same command continues it (--restart
starts over). Sections: model (`MixingAttention` first) | as the reference code ships it | freezing
| training | evaluation | config and command line. The data is in tasks.py; the machinery around a
run (device, checkpoints, records, resuming, torchrun, flags) in runtime.py, always called as
`runtime.NAME(...)`: a reader of the paper can skip those lines. bench.py (the benchmark) imports
this file, not the reverse.
"""

import dataclasses
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import runtime  # the machinery around a run (see above): skip its lines on a first read
import tasks
from tasks import UsageError

VARIANTS = ("standard", "frozen_qk", "frozen_mlp", "mixit", "random")
INIT_STD = 0.02  # every Linear and Embedding weight starts N(0, 0.02^2), as in the reference code

# -----------------------------------------------------------------------------
# Model: a pre-norm decoder whose attention is MixiT's fixed mixing or softmax attention


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):  # x / rms(x) * weight, one fused kernel where torch has one
        return F.rms_norm(x, (x.size(-1),), self.weight, self.eps)


def mixing_matrices(n_head, T, head_dim, gen, sink=True, causal=True):
    """The fixed random attention of MixiT, (n_head, T, T). For each head h (paper, Sec. 3):

        sigma_h ~ U[1/sqrt(T * d_head), 1/sqrt(T)]      one mixing strength per head
        Z ~ N(0, sigma_h^2), lower-triangular           causal noise (full if not causal)
        Z[i, S_i] -= mean(Z[i, S_i])                     S_i: j <= i (causal) or every j,
        A_h = I + Z                                      so each row of A_h sums to exactly 1

    (Z is 0 outside S_i: above the diagonal, when causal.) A is the same for every input: it
    mixes tokens by position only. Entries can be negative. With `sink`, head 0 instead
    averages each token with the first one, as the reference code does: A_0[i, i] = A_0[i, 0]
    = 0.5 for i > 0, and row 0 is [1, 0, ...] so that it too sums to 1 (the reference's is
    [0.5, 0, ...]: apply_shipped_factors). Without it head 0 is drawn like the others.
    The reference's bidirectional matrix (Yelp) centres row i by the full row's sum over i+1,
    the causal count: its rows sum to 1 + (1 - T/(i+1)) sum_j Z_ij. A bug we do not copy.

    head_dim: d_head, which sets the low end of sigma's range. gen: the torch.Generator (CPU)
    of every random draw, so the same seed gives bit-identical matrices and another seed other
    ones. Returns a float32 tensor (n_head, T, T).
    """
    lo, hi = 1 / math.sqrt(T * head_dim), 1 / math.sqrt(T)
    sigma = lo + (hi - lo) * torch.rand(n_head, 1, 1, generator=gen)
    support = torch.ones(T, T).tril() if causal else torch.ones(T, T)
    Z = torch.randn(n_head, T, T, generator=gen) * sigma * support
    Z = (Z - Z.sum(-1, keepdim=True) / support.sum(-1, keepdim=True)) * support  # centre rows
    A = torch.eye(T) + Z
    if sink:
        A[0] = 0.5 * torch.eye(T)
        A[0, :, 0] += 0.5
    return A


class MixingAttention(nn.Module):
    """MixiT's attention: y_h = A_h V_h with a fixed random A_h (no queries, no keys).

    A is a registered buffer: it is never trained, it is saved in checkpoints and it moves with
    .to(device). Only the value and output projections learn."""

    def __init__(self, cfg, gen):
        super().__init__()
        C, self.n_head = cfg.n_embd, cfg.n_head
        self.v_proj = nn.Linear(C, C)
        self.o_proj = nn.Linear(C, C)
        A = mixing_matrices(cfg.n_head, cfg.block_size, C // cfg.n_head, gen, cfg.mixit_sink,
                            cfg.causal)  # (H, T, T)
        self.register_buffer("A", A)

    def forward(self, x, return_att=False, keep=None):
        """MixiT's attention: y_h = A_h V_h per head, with A_h = self.A[h, :T, :T], then o_proj.

        x (B, T, C), T <= block_size: a shorter input uses the top-left corner of A. V is
        v_proj(x), split into n_head heads of d_head = C / n_head channels (head h: channels
        h*d_head to (h+1)*d_head). The heads' outputs are merged back into C channels (the
        inverse of the split), and y = o_proj(merged).
        keep (B, T) bool, or None: the real tokens, where the input has pads (classify). A pad's
        value is zeroed before the mixing, so pads never reach a real token, as in the softmax
        variants; a real token's row then sums to 1 minus A's weight on the pads (the reference
        mixes its pads in).

        Returns (y, att): y (B, T, C); att (B, n_head, T, T), A[:, :T, :T] once per batch row,
        if return_att, else None.
        """
        B, T, C = x.size()
        v = self.v_proj(x)  # (B, T, C)
        v = v if keep is None else v * keep[:, :, None]
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, H, T, hd)
        A = self.A[:, :T, :T].to(v.dtype)  # causal: a shorter input uses the top-left corner
        y = (A @ v).transpose(1, 2).reshape(B, T, C)  # (H,T,T) @ (B,H,T,hd) -> (B, T, C)
        return self.o_proj(y), (A.expand(B, -1, -1, -1) if return_att else None)


def rotary_tables(block_size, head_dim, base=10000.0):
    """cos and sin tables (T, head_dim/2) for rotary position embeddings (RoPE)."""
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(block_size).float(), inv_freq)  # (T, hd/2)
    return angles.cos(), angles.sin()


def apply_rotary(x, cos, sin):
    """Rotary position embedding (RoPE): turn each pair of channels of x by its own angle.

    x (B, H, T, hd), hd even: the queries or the keys of every head. cos, sin (T, hd/2): the
    cosine and sine of pair i's angle at position t (rotary_tables, cut to x's T positions).
    Pair i is channels 2i and 2i+1, and turns like a point of the plane by the angle a:

        (x[2i], x[2i+1]) -> (x[2i] cos a - x[2i+1] sin a,  x[2i] sin a + x[2i+1] cos a)

    Returns the turned tensor, of x's shape. A turn keeps each vector's length, and angle 0
    (position 0) changes nothing; the angles grow with the position, so a query at i and a key
    at j score q . k by a function of i - j alone.
    """
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (B, H, T, hd/2) each
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


class CausalSelfAttention(nn.Module):
    """Standard attention: softmax(Q K^T / sqrt(d_head)) V with RoPE, causal (or bidirectional:
    --causal false). Used by standard, frozen_qk (q_proj and k_proj stay at their random init),
    frozen_mlp and random."""

    def __init__(self, cfg):
        super().__init__()
        C, self.n_head = cfg.n_embd, cfg.n_head
        self.q_proj = nn.Linear(C, C)  # the reference code has biases on all four projections
        self.k_proj = nn.Linear(C, C)
        self.v_proj = nn.Linear(C, C)
        self.o_proj = nn.Linear(C, C)
        self.rope = cfg.positions == "rope"  # else the model adds learned positions (wpe)
        self.causal, self.sdpa = cfg.causal, cfg.sdpa  # sdpa: the fused kernel (forward)
        cos, sin = rotary_tables(cfg.block_size, C // cfg.n_head)
        self.register_buffer("cos", cos, persistent=False)  # recomputed, so not saved
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x, return_att=False, keep=None):
        """Softmax attention: softmax(Q K^T / sqrt(d_head)) V per head, then o_proj.

        x (B, T, C), T <= block_size. Q, K, V are q_proj(x), k_proj(x), v_proj(x), each split
        into n_head heads of d_head = C / n_head channels (head h: channels h*d_head to
        (h+1)*d_head). With RoPE (self.rope) Q and K, not V, are turned by
        apply_rotary(., self.cos[:T], self.sin[:T]) before they are scored. Query i sees key j
        if j <= i (self.causal), or every key (bidirectional); a hidden key gets weight 0.
        keep (B, T) bool, or None: the real tokens, where the input has pads (classify). No
        query sees a pad key, except that a pad sees itself (every row needs one key).
        The heads' outputs are merged back into C channels (the inverse of the split) and
        projected by o_proj.

        Returns (y, att): y (B, T, C); att (B, n_head, T, T), the weights each query put on each
        key (rows sum to 1), if return_att, else None. Without it the fused kernel (--sdpa true)
        computes y and never forms the weights; --sdpa false writes them out (other rounding).
        """
        B, T, C = x.size()
        q, k, v = [p(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, H, T, hd)
                   for p in (self.q_proj, self.k_proj, self.v_proj)]
        if self.rope:
            q, k = apply_rotary(q, self.cos[:T], self.sin[:T]), apply_rotary(k, self.cos[:T], self.sin[:T])
        seen = None  # may query i see key j? Built only where the fused kernel needs it spelled out
        if return_att or not self.sdpa or keep is not None:
            seen = torch.ones(T, T, dtype=torch.bool, device=x.device)
            seen = seen.tril() if self.causal else seen
            if keep is not None:  # no token sees a pad but the pad itself (a row needs one key)
                seen = seen & (keep[:, None, None, :] | torch.eye(T, dtype=torch.bool, device=x.device))
        if return_att or not self.sdpa:  # the explicit attention matrix (the figures; --sdpa false)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (B, H, T, T)
            att = att.masked_fill(~seen, float("-inf")).softmax(-1)
            y = att @ v
        else:  # fused kernel; with pads it takes the mask seen (B, 1, T, T)
            att, y = None, F.scaled_dot_product_attention(q, k, v, attn_mask=seen,
                                                          is_causal=self.causal and seen is None)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, H, T, hd) -> (B, T, C)
        return self.o_proj(y), att if return_att else None


class ShapedLeakyReLU(nn.Module):
    """The reference MixiT's activation: leaky ReLU of slope a = 1 - 1/sqrt(d), times a gain."""

    def __init__(self, dim):
        super().__init__()
        self.slope = 1 - 1 / math.sqrt(dim)
        self.gain = math.sqrt(2 / (1 + self.slope ** 2))  # keeps a unit Gaussian's variance

    def forward(self, x):
        return self.gain * F.leaky_relu(x, self.slope)


class MLP(nn.Module):
    """A gated MLP of width 4d: down(act(gate(x)) * up(x)), act SiLU or ShapedLeakyReLU (MixiT)."""

    def __init__(self, cfg):
        super().__init__()
        C = cfg.n_embd
        self.gate_proj = nn.Linear(C, 4 * C)
        self.up_proj = nn.Linear(C, 4 * C)
        self.down_proj = nn.Linear(4 * C, C)
        self.act = ShapedLeakyReLU(C) if cfg.mlp_act == "shaped" else nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg, gen):
        super().__init__()
        self.norm1 = RMSNorm(cfg.n_embd)
        self.attn = MixingAttention(cfg, gen) if cfg.variant == "mixit" else CausalSelfAttention(cfg)
        self.norm2 = RMSNorm(cfg.n_embd)
        self.mlp = MLP(cfg)
        # residual x + f(x); MixiT (reference code): sqrt(1/2) x + sqrt(1/2) f(x)
        self.skip = self.res = math.sqrt(0.5) if cfg.residual == "scaled" else 1.0

    def forward(self, x, return_att=False, keep=None):
        a, att = self.attn(self.norm1(x), return_att, keep)
        x = self.skip * x + self.res * a
        x = self.skip * x + self.res * self.mlp(self.norm2(x))
        return x, att


class GPT(nn.Module):
    """Token ids (B, T) -> logits (B, T, n_out). n_out is the vocabulary, or for classify the
    number of classes (its loss reads one position, the last real token: tasks.make_classify).
    pad_id: tokens of this id are invisible to every other token (classify's padding)."""

    def __init__(self, cfg, vocab_size, n_out=None, pad_id=None):
        super().__init__()
        self.pad_id = pad_id
        self.cfg = cfg
        self.wte = nn.Embedding(vocab_size, cfg.n_embd)
        # MixiT has no queries or keys to carry RoPE, so it learns absolute positions instead
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd) if cfg.positions == "learned" else None
        gen = torch.Generator().manual_seed(cfg.seed)  # the mixing matrices' own, explicit seed
        self.blocks = nn.ModuleList([Block(cfg, gen) for _ in range(cfg.n_layer)])
        self.norm_f = RMSNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, n_out or vocab_size, bias=False)  # untied from wte
        for name, m in self.named_modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                qk = name.endswith(("q_proj", "k_proj"))  # frozen_qk's fixed random attention
                nn.init.normal_(m.weight, std=cfg.qk_init_std if qk else INIT_STD)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
        apply_shipped_factors(self, cfg)  # the reference code's factors, where cfg asks for them

    def forward(self, idx, return_hidden=False):
        """With return_hidden, also the residual stream after every block and the attention maps."""
        B, T = idx.size()
        if T > self.cfg.block_size:
            raise UsageError(f"sequence of length {T} is longer than block_size {self.cfg.block_size}")
        x = self.wte(idx)  # (B, T, C)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(T, device=idx.device))
        keep = None if self.pad_id is None else idx != self.pad_id  # (B, T): the real tokens
        hidden, atts = [], []
        for block in self.blocks:
            x, att = block(x, return_hidden, keep)
            hidden.append(x)
            atts.append(att)
        logits = self.lm_head(self.norm_f(x))
        return (logits, hidden, atts) if return_hidden else logits


# -----------------------------------------------------------------------------
# MixiT as the reference code ships it (--mixit_shipped, --mixit_mult): factors on a built model
#
# The reference (princeton-pli/MixiT, modeling_llama.py) wraps MixiT's linear layers in a
# ScaledLinear that multiplies W x + b by sqrt(base_fan_in / fan_in), the base set by the driver:
#
#   factor     where (reference)                       value                 d=32    d=64   d=512
#   mult       v, o, gate, up, lm_head (base_hidden)   sqrt(512 / d)         4.00    2.83   1.00
#              (Yelp's trainer_classifier.py passes no base: sqrt(1 / d)     0.177   0.125  0.044)
#   down       down_proj (base_intermediate_size,      sqrt(1 / (4 d))       0.088   0.063  0.022
#              never passed by any driver: 1)
#   skip, res  the residual h <- skip h + res f(h)     sqrt(1/2), sqrt(1/2)  (depth.py, hdmemorize,
#              (skip_scaling)                          0.5, sqrt(3/4) = 0.866 (trainer.py, the LM)
#
# and the sink head's row 0 is [0.5, 0, ...] (ours: [1, 0, ...], a row that sums to 1). Our
# MixiT keeps only the sink and the sqrt(1/2) residual by default: mult is 1 (ours is written
# for any width; at 512 the reference's is 1 too), and `down` looks like an accident of the
# reference (base_intermediate_size unset), but the paper's MixiT numbers were made with it
# (FINDINGS, "Recipe differences from the reference code"). Under AdamW a fixed factor c on a
# layer's output changes that layer's effect on the function c times faster or slower.


def shipped_factors(cfg):
    """(mult, down, skip, res) of a block: the reference's with --mixit_shipped, else ours (mult
    = --mixit_mult for MixiT, 1 for the others; down 1; the residual weights of --residual)."""
    skip = res = math.sqrt(0.5) if cfg.residual == "scaled" else 1.0
    if not cfg.mixit_shipped:
        return cfg.mixit_mult if cfg.variant == "mixit" else 1.0, 1.0, skip, res
    base = 1.0 if cfg.task == "classify" else 512.0
    if cfg.task == "lm":
        skip, res = 0.5, math.sqrt(0.75)
    return math.sqrt(base / cfg.n_embd), math.sqrt(1 / (4 * cfg.n_embd)), skip, res


def apply_shipped_factors(model, cfg):
    """Give a built GPT the factors of shipped_factors(cfg) where the reference puts them, the
    classes above staying the paper's: a factor c on a layer is a forward hook returning c * (its
    output), a factor of 1 no hook (c * output is output, bit for bit); the blocks' residual
    weights become (skip, res); --mixit_shipped sets the sink's row 0 to [0.5, 0, ...]."""
    mult, down, skip, res = shipped_factors(cfg)

    def scale(layer, c):
        if c != 1.0:
            layer.register_forward_hook(lambda module, args, out: c * out)
    scale(model.lm_head, mult)
    for block in model.blocks:
        block.skip, block.res = skip, res
        for layer in (block.attn.v_proj, block.attn.o_proj, block.mlp.gate_proj):
            scale(layer, mult)
        # up_proj's factor, on the other side of the product act(gate) * up: the same number,
        # and the rounding of (c act(gate)) * up that the records were made with
        scale(block.mlp.act, mult)
        scale(block.mlp.down_proj, down)
        if cfg.mixit_shipped:  # the reference's sink row 0 is [0.5, 0, ...]: it sums to 0.5
            block.attn.A[0, 0, 0] = 0.5


# -----------------------------------------------------------------------------
# Freezing: which parameters each variant trains (paper, Sec. 3 and Table 1)


# The parts of the model that can be frozen, by the parameter names they cover. A variant is a
# named set of parts (its preset); `--freeze` adds parts to it, e.g. `--variant standard --freeze
# v,o` or `--variant frozen_qk --freeze v,o` (all four attention projections frozen).
PARTS = {
    "q": ".attn.q_proj.", "k": ".attn.k_proj.", "v": ".attn.v_proj.", "o": ".attn.o_proj.",
    "mlp": ".mlp.", "norm": "norm", "wte": "wte.", "wpe": "wpe.", "head": "lm_head.",
}
PRESETS = {
    "standard": set(),
    "frozen_qk": {"q", "k"},  # W_Q, W_K (and biases): the attention pattern's random part
    "frozen_mlp": {"mlp"},  # gate, up, down
    "mixit": set(),  # its attention A is a buffer: fixed by construction, not by freezing
    "random": {"q", "k", "v", "o", "mlp", "norm"},  # all but embeddings and head (Zhong & Andreas)
}


def frozen_parts(cfg):
    """The variant's preset plus the parts named by --freeze, as a sorted list."""
    extra = {p.strip() for p in cfg.freeze.split(",") if p.strip()}
    unknown = extra - set(PARTS)
    if unknown:
        raise UsageError(f"--freeze: unknown part(s) {', '.join(sorted(unknown))}; "
                         f"choose from {', '.join(PARTS)}")
    return sorted(PRESETS[cfg.variant] | extra)


def freeze(model, parts, verbose=True, label=""):
    """Freeze the named parts of model: requires_grad=False on every one of their parameters.

    parts: names of PARTS (frozen_parts checks them), e.g. ["q", "k"]. A parameter belongs to
    part p when PARTS[p] occurs in "." + its name (model.named_parameters()): "q" covers every
    layer's q_proj weight and bias. Frozen tensors get no gradient and are not given to the
    optimizer, so they stay bit-identical.
    Raises UsageError, naming the part, for a part that covers no parameter of this model (q in
    MixiT, which has no queries; wpe in a RoPE model).
    verbose: print one line, starting with label: the parts, and both counts below (and MixiT's
    fixed mixing weights, which are buffers, not parameters).

    Returns (n_train, n_frozen): how many numbers (numel) of all the model's parameters train
    and how many are frozen after the call (a parameter frozen before counts as frozen); they
    add up to the model's size.
    """
    for part in parts:
        matched = [p for n, p in model.named_parameters() if PARTS[part] in "." + n]
        if not matched:  # e.g. q for MixiT, which has no queries, or wpe for a RoPE model
            raise UsageError(f"--freeze {part}: this model has no such part")
        for p in matched:
            p.requires_grad_(False)
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    n_frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    if verbose:  # MixiT's fixed matrices A are buffers, not parameters: counted apart
        n_fixed = sum(b.numel() for n, b in model.named_buffers() if n.endswith(".A"))
        fixed = f", {n_fixed:,} fixed mixing weights (buffers)" if n_fixed else ""
        print(f"{label}: frozen {{{', '.join(parts)}}}: {n_train:,} trainable parameters, "
              f"{n_frozen:,} frozen{fixed}")
    return n_train, n_frozen


# -----------------------------------------------------------------------------
# Training


def get_lr(step, cfg):
    """Linear warm-up to cfg.lr, then cosine decay to 0 at cfg.steps."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def masked_loss(logits, y, mask):
    """Cross-entropy averaged over the answer positions only (mask), as the paper trains.

    logits (B, T, V), of any float dtype; y (B, T) int64, the targets; mask (B, T) bool, True
    where y is scored. Returns a 0-dim float32 tensor (computed in float32): the mean over the
    positions where mask is True of -log softmax(logits[b, t])[y[b, t]], so rows without a
    True position add nothing, and 0 (not nan) when mask has no True position at all. The
    positions where mask is False get no gradient.
    """
    ce = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="none")
    m = mask.flatten().float()
    return (ce * m).sum() / m.sum().clamp(min=1)


def param_groups(params, cfg):
    """Weight decay on matrices and embeddings, none on biases and norm gains."""
    return [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]


def make_optimizer(model, cfg, device):
    """AdamW over the trainable parameters only."""
    groups = param_groups([p for p in model.parameters() if p.requires_grad], cfg)
    # fused: one kernel for the whole update on GPU; foreach: a few batched ops on CPU
    fast = {"fused": True} if device.startswith("cuda") else {"foreach": True}
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), **fast)


def unfreeze(model, optimizer, cfg):
    """Give the frozen parameters to the optimizer, in groups of their own (fresh AdamW state,
    the same learning-rate schedule and weight-decay rule). Returns how many were unfrozen."""
    frozen = [p for p in model.parameters() if not p.requires_grad]
    for p in frozen:
        p.requires_grad_(True)
    for group in param_groups(frozen, cfg):
        optimizer.add_param_group(group)
    return sum(p.numel() for p in frozen)


def build(cfg, verbose=True):
    """Config -> (task, model on its device, device, dtype, (#trainable, #frozen))."""
    device = runtime.pick_device(cfg.device)
    dtype = runtime.pick_dtype(cfg.dtype, device)
    task = tasks.make_task(cfg.task, cfg.task_size, device, cfg.data_seed, cfg.eval_size, cfg.data,
                           cfg.test_data, cfg.val_size)
    cfg.task_size = task.size
    if cfg.block_size == 0:
        cfg.block_size = task.block_size
    if cfg.block_size < task.block_size:
        raise UsageError(f"task {cfg.task} needs sequences of {task.block_size} tokens, "
                         f"longer than --block_size {cfg.block_size}")
    if not cfg.causal and cfg.block_size != task.block_size:  # (a corner of a full A is not one)
        raise UsageError("--causal false takes sequences of exactly --block_size tokens; leave "
                         "--block_size at 0")
    # a step keeps about 25 activations of width C per token and block, and 3 copies of the logits
    step_floats = cfg.batch_size * cfg.block_size * (25 * cfg.n_layer * cfg.n_embd + 3 * task.vocab_size)
    runtime.check_memory(4 * step_floats, device, cfg.batch_size)
    torch.manual_seed(cfg.seed)
    model = GPT(cfg, task.vocab_size, task.classes and len(task.classes), task.pad_id)
    n_train, n_frozen = freeze(model, frozen_parts(cfg), verbose, label=f"variant {cfg.variant}")
    model.to(device)
    if device.startswith("cuda"):  # fp32 matmuls on the tensor cores (TF32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    return task, model, device, dtype, (n_train, n_frozen)


def train_step(model, fwd, optimizer, batch, lr, cfg, dtype):
    """One optimizer step on one batch. fwd is the model, or its compiled version (--compile).
    Returns the loss as a tensor: reading it (.item()) would wait for the GPU, so we don't."""
    for g in optimizer.param_groups:
        g["lr"] = lr
    x, y, mask = batch
    with torch.autocast(x.device.type, dtype=dtype, enabled=dtype != torch.float32):
        logits = fwd(x)
    loss = masked_loss(logits, y, mask)
    loss.backward()
    if cfg.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


def stop_reason(cfg, history, task):
    """Why the run stops at its latest evaluation (the stopping rule), or None to go on. Off
    unless --stop_acc or --patience is given, so that the default runs keep their records."""
    last = history[-1]
    if cfg.stop_acc and last["step"] > 0 and last["acc"] >= cfg.stop_acc:
        return f"test accuracy {last['acc']:.4f} reached --stop_acc {cfg.stop_acc:g}"
    if cfg.patience and last["step"] >= max(cfg.min_steps, cfg.patience):
        # lm is scored by its validation loss: it stops once it overfits, near its best loss
        score = (lambda h: -h["loss"]) if task.name == "lm" else (lambda h: h["acc"])
        gain = max(map(score, history)) - max(score(h) for h in history
                                              if h["step"] <= last["step"] - cfg.patience)
        if gain <= cfg.min_delta:
            what = "validation loss fell" if task.name == "lm" else "test accuracy rose"
            return f"{what} by {gain:.4f} (at most --min_delta {cfg.min_delta:g}) in the last {cfg.patience} steps"
    return None


def train(cfg, task, model, device, dtype, record, t_run=None, state=None):
    """The training loop. Returns the list of evaluation results (the learning curve).

    Under torchrun (several processes, `init_distributed`), each rank draws its own share of
    every batch from its own seed (seed + rank), DistributedDataParallel averages the gradients,
    and rank 0 alone evaluates and prints. One process is simply rank 0 of 1. A signal saves the
    training state, which `state` continues; the bookkeeping is runtime.Progress's."""
    rank, world = runtime.rank_world()
    optimizer = make_optimizer(model, cfg, device)
    gen = torch.Generator(device).manual_seed(cfg.seed + rank)  # the training batches
    draw = lambda n: task.get_batches(n, cfg.batch_size // world, gen, cfg.resample)  # noqa: E731
    fwd, sync = runtime.compiled(model, cfg, device, world)  # evaluation calls the model itself
    progress = runtime.Progress(cfg, model, optimizer, gen, draw, record, t_run, sync)
    if state:  # continue an interrupted run
        if cfg.unfreeze_at and state["step"] > cfg.unfreeze_at:  # the optimizer had these groups
            unfreeze(model, optimizer, cfg)
        progress.restore(state)  # (it says from where)
    train_fwd = runtime.data_parallel(model, cfg, device) if world > 1 else fwd  # DDP (torchrun)
    for step in progress.steps():  # start (0, or where a stopped run was) to cfg.steps
        # evaluate on the fixed test set (rank 0), and stop here if the stopping rule says so
        if progress.evaluates(step):  # every eval_interval, the last step, --save_steps
            if rank == 0:  # rank 0 alone evaluates; runtime.agree hands its verdict to every rank
                m = evaluate(fwd, task, dtype)
                progress.add_eval(step, m)  # the learning curve
                print(f"step {step:5d} | test loss {m['loss']:.4f} | acc {m['acc']:.4f} "
                      f"| exact {m['exact']:.4f}")
            reason = runtime.agree(stop_reason(cfg, progress.history, task) if rank == 0 else None)
            if progress.stops(step, reason):  # the last step, or the rule's reason (else go on)
                break

        # one optimizer step on the next batch
        if cfg.unfreeze_at and step == cfg.unfreeze_at:  # a hybrid schedule (paper, Sec. 7)
            record["unfrozen_params"] = unfreeze(model, optimizer, cfg)
            record["unfrozen_at"] = step
            print(f"step {step:5d} | unfroze {record['unfrozen_params']:,} parameters")
        batch = progress.next_batch(step)  # (x, y, mask), (B, T) each
        loss = train_step(model, train_fwd, optimizer, batch, get_lr(step, cfg), cfg, dtype)
        progress.watch(step, loss)  # a nan or inf loss stops the run at the next log line
        if (step + 1) % cfg.log_interval == 0:  # the log line (.item(): a host sync, once per line)
            print(f"step {step + 1:5d} | loss {loss.item():.4f} | lr {get_lr(step, cfg):.2e} "
                  f"| {progress.ms_per_step(step + 1):.1f} ms/step")
    return progress.finish()  # the learning curve; train_s (and DDP's checksums) in the record


# -----------------------------------------------------------------------------
# Evaluation


@torch.no_grad()
def evaluate(model, task, dtype, batch_size=500, return_preds=False, data=None):
    """Per-token accuracy and exact match over the answer positions of the fixed test set (or
    of data, e.g. task.val)."""
    was_training = model.training
    model.eval()
    x_all, y_all, m_all = task.test if data is None else data
    totals = torch.zeros(4, device=x_all.device)  # loss, correct, scored, exact: summed on device
    preds = []
    for i in range(0, x_all.size(0), batch_size):
        x, y, mask = x_all[i:i + batch_size], y_all[i:i + batch_size], m_all[i:i + batch_size]
        with torch.autocast(x.device.type, dtype=dtype, enabled=dtype != torch.float32):
            logits = model(x)
        # the training loss (a mean over this batch's scored positions) times their number: the
        # batches then add up to the mean over the whole test set. Calling masked_loss, not
        # repeating it, keeps one definition of the loss (and gives no homework away).
        scored = mask.sum()
        pred = logits.argmax(-1)  # (B, T)
        hit = (pred == y) & mask
        totals += torch.stack([masked_loss(logits, y, mask) * scored, hit.sum(), scored,
                               (hit.sum(1) == mask.sum(1)).sum()]).float()
        if return_preds:
            preds.append(pred)
    model.train(was_training)
    loss_sum, correct, scored, exact = totals.tolist()  # the one host sync of an evaluation
    n = max(1, x_all.size(0))
    m = {"loss": loss_sum / max(1, scored), "acc": correct / max(1, scored), "exact": exact / n}
    if task.name == "lm":
        m["bpb"] = m["loss"] / math.log(2)  # bits per byte
    return (m, torch.cat(preds)) if return_preds else m


def show_examples(model, task, dtype, n):
    """Print a few decoded test examples, right ones and wrong ones (tasks.Task.show)."""
    if n > 0 and task.test[0].size(0):
        task.show(evaluate(model, task, dtype, return_preds=True)[1], n)


@torch.no_grad()
def token_covariance(model, task, n=256):
    """How alike are the token representations at the last block? (Table 6 of the paper.)

    Each token's residual vector is normalized to zero mean and unit variance over its C
    channels; the covariance of two tokens is then the mean over channels of their product (the
    correlation, between -1 and 1). We average it over all pairs of positions of a sequence and
    over n test sequences. Near 0: tokens are told apart; near 1: every position carries the same
    vector (rank collapse), which is what deep random attention does to a Transformer."""
    model.eval()
    _, hidden, _ = model(task.test[0][:n], return_hidden=True)
    h = hidden[-1].float()  # (B, T, C)
    h = (h - h.mean(-1, keepdim=True)) / (h.std(-1, keepdim=True, unbiased=False) + 1e-6)
    cov = h @ h.transpose(1, 2) / h.size(-1)  # (B, T, T): correlation of every pair of tokens
    T = cov.size(1)
    off_diagonal = ~torch.eye(T, dtype=torch.bool, device=cov.device)
    return cov[:, off_diagonal].mean().item()


# -----------------------------------------------------------------------------
# Configuration and command line: one dataclass; `--key value` flags are generated from it


def _f(default, help, group=None):  # group: --help lists this field and those after it under it
    return field(default=default, metadata={"help": help, "group": group})


@dataclass
class Config:
    # the paper's run: what to run, the model, its training, its testing and output
    task: str = _f("copy", "task: " + ", ".join(tasks.TASKS), group="the paper's run")
    variant: str = _f("frozen_qk", "what trains: " + ", ".join(VARIANTS) + " (see README)")
    task_size: int = _f(0, "size of the task (digits, pairs, length, ...; see tasks.py); "
                           "0 = the task's CPU-friendly default")
    freeze: str = _f("", "freeze these parts too, comma-separated: " + ", ".join(PARTS)
                         + " (e.g. --variant standard --freeze v,o)")
    data: str = _f("", "lm: a text file (default: Python 3.11's help text, in corpus/; 'stdlib': "
                       "its standard library's sources, 24x larger); classify: the labelled "
                       "texts, Yelp's CSV \"label\",\"text\" or label<TAB>text")
    n_layer: int = _f(2, "number of Transformer blocks")
    n_head: int = _f(4, "attention heads per block (MixiT: random mixing matrices per block)")
    n_embd: int = _f(128, "width d of the residual stream; the MLP is 4d wide")
    block_size: int = _f(0, "longest sequence the model takes; 0 = the task's sequence length")
    qk_init_std: float = _f(0.0, "std of the random W_Q, W_K at init (frozen_qk keeps them); 0 = "
                                 "1/sqrt(n_embd), the paper's N(0, 1/d); the reference uses 0.02")
    causal: bool = _f(True, "each token sees only the earlier ones; false = bidirectional (every "
                            "variant, MixiT's A full), classify's default; only for classify, hop")
    steps: int = _f(1500, "optimizer steps (0: only evaluate, e.g. a --load'ed checkpoint)")
    batch_size: int = _f(128, "sequences per step")
    lr: float = _f(3e-3, "peak learning rate (AdamW)")
    warmup: int = _f(100, "linear warm-up steps, then cosine decay to 0")
    weight_decay: float = _f(1e-3, "AdamW weight decay, on matrices and embeddings only")
    beta1: float = _f(0.9, "AdamW beta1")
    beta2: float = _f(0.999, "AdamW beta2")
    grad_clip: float = _f(1.0, "clip the gradient norm to this (0: off)")
    seed: int = _f(0, "seed for the model init, the MixiT matrices and the training batches")
    eval_interval: int = _f(250, "evaluate on the test set every this many steps")
    eval_size: int = _f(2000, "sequences in the fixed test set (the paper uses 4000)")
    log_interval: int = _f(50, "print a progress line every this many steps")
    examples: int = _f(6, "decoded test examples printed at the end (right and wrong)")
    out: str = _f("results/runs.jsonl", "append one JSON record of the run here ('' = don't)")
    save: str = _f("", "write a checkpoint here at the end (model, mixing matrices, config)")
    load: str = _f("", "start from this checkpoint; its model and task settings are used")
    device: str = _f("auto", "cuda, mps or cpu; auto picks the first available")
    dtype: str = _f("auto", "float32 or bfloat16 (autocast); auto = bf16 on CUDA and on CPUs "
                            "with native bf16, else fp32")
    # as the reference code ships it: MixiT's block differs from Standard's in three more ways
    # than its attention (README), each a switch, to measure the attention apart from its block
    mixit_shipped: bool = _f(False, "MixiT as the reference ships it (apply_shipped_factors): its "
                                    "multipliers, the sink's row 0 [0.5, 0, ...], lm's residual",
                             group="as the reference code ships it")
    mixit_mult: float = _f(1.0, "MixiT: multiply the v, o, gate, up and head outputs by this; "
                                "the reference code uses sqrt(512 / n_embd), 1 at width 512")
    mixit_sink: bool = _f(True, "MixiT: head 0 of every block is a fixed 'sink' (half self, half "
                                "first token), as in the reference code")
    positions: str = _f("auto", "rope or learned (absolute, added to the input); auto = learned "
                                "for mixit (it has no queries or keys to rotate), rope otherwise")
    mlp_act: str = _f("auto", "swiglu or shaped (the reference MixiT's leaky-ReLU GLU); auto = "
                              "shaped for mixit, swiglu otherwise")
    residual: str = _f("auto", "plain (x + f(x)) or scaled (sqrt(1/2) x + sqrt(1/2) f(x)); auto "
                               "= scaled for mixit, plain otherwise")
    # stopping: early, by a rule; or by a signal, and continuing
    stop_acc: float = _f(0.0, "stop once the test accuracy reaches this (0 = never)",
                         group="stopping")
    patience: int = _f(0, "stop once the last this many steps raised the test accuracy (lm: "
                          "lowered the validation loss) by at most --min_delta (0 = never)")
    min_delta: float = _f(0.0, "the gain that --patience asks for")
    min_steps: int = _f(0, "--patience stops no run before this step")
    resume: str = _f("", "save the training state here at each evaluation and on SIGINT/SIGTERM, "
                         "and continue from it if it exists; deleted once the record is written "
                         "(without it: under results/ckpt/, where the same command finds it)")
    restart: bool = _f(False, "start over, deleting the state a stopped run of this command saved")
    # machinery: switches for research, labels, speed
    unfreeze_at: int = _f(0, "at this step the frozen parts join the optimizer (fresh AdamW "
                             "state, same schedule); 0 = never", group="machinery")
    resample: bool = _f(False, "draw training rows from the training side only (redraw the test "
                               "side's fifth instead of masking it): every row of a batch learns")
    data_seed: int = _f(12345, "seed of the task's fixed test set (and of memorize's table)")
    test_data: str = _f("", "classify: the test file (e.g. Yelp's test.csv); '' = hold out one "
                            "text in five by hash")
    val_size: int = _f(0, "sequences of a validation set, disjoint from the test set, scored at "
                          "the end into the record's 'val' (run_all.sh --lr-sweep chooses by it); "
                          "modadd and lm hold it out of training (tasks.with_validation)")
    tag: str = _f("", "free-form label stored in the record (run_all.sh uses it)")
    save_steps: str = _f("", "with --save PATH, also evaluate and save the model after each of "
                             "these steps (e.g. 0,50,100; 0: at init), as PATH_step{N}.pt")
    compile: str = _f("auto", "torch.compile the model: true, false, or auto = on CUDA only (on "
                              "a CPU it needs a C++ compiler; FINDINGS, Efficiency, measures it)")
    cuda_graphs: bool = _f(True, "compiled on one GPU: mode='reduce-overhead' (CUDA graphs), a "
                                 "step's kernels replayed as one, saving the launches of a launch-"
                                 "bound model (FINDINGS, Efficiency, measures it); off in torchrun")
    data_pool: int = _f(0, "draw this many training batches at once and hand them out one by one "
                           "(a few large kernels instead of dozens of small ones a step); 0 = auto: "
                           "32 on one GPU, else 1 (the CPU's data stream as it has always been)")
    sdpa: bool = _f(True, "softmax attention by the fused kernel; false: written out (other rounding)")


# settings that define the model and its data: a checkpoint brings these along
ARCH_KEYS = ("task", "variant", "task_size", "data", "test_data", "n_layer", "n_head", "n_embd",
             "block_size", "causal", "positions", "mlp_act", "residual", "mixit_mult", "mixit_sink",
             "mixit_shipped", "data_seed")


def parse_args(argv):
    """Flags -> the dict of settings the user actually gave (the rest come from the defaults)."""
    recipes = "; ".join(f"{t}: " + ", ".join(f"{k} {v}" for k, v in spec[4].items())
                        for t, spec in tasks.TASKS.items())
    return runtime.flags(Config, argv, description=__doc__.split("\n\n")[0].strip(),
                 epilog="Each task brings its own CPU recipe, which replaces the defaults above "
                        f"unless you give the flag: {recipes}. A run prints its settings first, in "
                        "a few lines, and its record keeps the whole config. `python bench.py` "
                        "with these flags times every variant's training step.")


# What each numeric setting must be: (settings, test, the rule as the error states it)
RULES = [
    (("n_layer", "n_head", "n_embd", "batch_size", "eval_interval", "log_interval", "eval_size"),
     lambda v: v >= 1, "be at least 1"),
    (("steps", "task_size", "block_size", "warmup", "val_size", "patience", "min_steps", "weight_decay",
      "grad_clip", "qk_init_std", "min_delta", "data_pool"), lambda v: v >= 0, "not be negative"),
    (("lr", "mixit_mult"), lambda v: 0 < v < math.inf, "be a positive number"),  # mult 0: no signal
    (("beta1", "beta2"), lambda v: 0 <= v < 1, "be in [0, 1)"),
    (("stop_acc",), lambda v: 0 <= v <= 1, "be between 0 and 1"),
    (("seed", "data_seed"), lambda v: 0 <= v < 2 ** 63, "be between 0 and 2^63 - 1"),  # torch's
]


def resolve_config(given):
    """Defaults <- the task's CPU recipe (tasks.TASKS) <- a checkpoint's model <- the flags."""
    settings = {}
    if "load" in given:
        ckpt = runtime.load_checkpoint(given["load"])
        for k in ("task_size", "block_size"):  # 0 means "the default": here, the checkpoint's
            if given.get(k) == 0:
                del given[k]
        for k in ARCH_KEYS:
            saved = ckpt["config"].get(k, getattr(Config, k))  # older checkpoints lack a few
            if k in given and given[k] not in (saved, "auto"):
                raise UsageError(f"checkpoint {given['load']} has --{k} {saved}, "
                                 f"but you asked for --{k} {given[k]}")
            settings[k] = saved
    task = given.get("task", settings.get("task", Config.task))
    if task not in tasks.TASKS:
        raise UsageError(f"unknown task '{task}'; choose one of: {', '.join(tasks.TASKS)}")
    settings = {**tasks.TASKS[task][4], **settings, **given}
    cfg = Config(**settings)
    if cfg.variant not in VARIANTS:
        raise UsageError(f"unknown variant '{cfg.variant}'; choose one of: {', '.join(VARIANTS)}")
    for keys, ok, must in RULES:
        for k in keys:
            if not ok(getattr(cfg, k)):  # (a nan fails every rule)
                raise UsageError(f"--{k} must {must}, got {getattr(cfg, k)}")
    if cfg.n_embd % cfg.n_head:
        raise UsageError(f"n_embd ({cfg.n_embd}) must be divisible by n_head ({cfg.n_head})")
    mixit, cuda = cfg.variant == "mixit", runtime.pick_device(cfg.device).startswith("cuda")
    for k, choices, auto in (("positions", ("rope", "learned"), "learned" if mixit else "rope"),
                             ("mlp_act", ("swiglu", "shaped"), "shaped" if mixit else "swiglu"),
                             ("residual", ("plain", "scaled"), "scaled" if mixit else "plain"),
                             ("compile", ("true", "false"), "true" if cuda else "false")):
        if getattr(cfg, k) == "auto":  # the record carries the block that actually ran
            setattr(cfg, k, auto)
        if getattr(cfg, k) not in choices:
            raise UsageError(f"--{k} must be auto, {' or '.join(choices)}; got '{getattr(cfg, k)}'")
    if cfg.mixit_shipped and not (mixit and cfg.mixit_sink and cfg.mixit_mult == 1.0
                                  and cfg.residual == "scaled"):
        raise UsageError("--mixit_shipped builds MixiT as the reference ships it: it needs "
                         "--variant mixit and sets the multipliers, the sink and the residual "
                         "itself (drop --mixit_mult, --mixit_sink and --residual)")
    if mixit and cfg.positions == "rope":
        raise UsageError("--positions rope needs queries and keys; mixit has none (use learned)")
    if cfg.positions == "rope" and (cfg.n_embd // cfg.n_head) % 2:
        raise UsageError(f"the head size n_embd/n_head = {cfg.n_embd // cfg.n_head} must be even "
                         "for rotary position embeddings")
    if not cfg.causal and cfg.task not in ("classify", "hop"):  # hop's answer is an earlier token
        raise UsageError(f"--causal false would show {cfg.task} the next token it must predict; "
                         "only classify and hop can be bidirectional")
    if cfg.unfreeze_at and not 0 < cfg.unfreeze_at < cfg.steps:
        raise UsageError(f"--unfreeze_at must be between 1 and --steps - 1 ({cfg.steps - 1}), "
                         f"got {cfg.unfreeze_at}")
    if cfg.unfreeze_at and not frozen_parts(cfg):
        raise UsageError(f"--unfreeze_at: variant {cfg.variant} freezes nothing (add --freeze)")
    frozen_parts(cfg)  # an unknown --freeze part is an error now, not after loading the data
    cfg.save_steps = runtime.snapshot_steps(cfg.save_steps, cfg.save, cfg.steps)  # e.g. "0,50"
    # N(0, 1/d) keeps the attention logits q.k/sqrt(d_head) at unit scale at any width; with the
    # reference's 0.02 their spread is 0.02^2 d, 0.03 at width 64: frozen, near-uniform attention
    cfg.qk_init_std = cfg.qk_init_std or round(1 / math.sqrt(cfg.n_embd), 6)
    runtime.check_writable(out=cfg.out, save=cfg.save, resume=cfg.resume)  # now, not after the run
    if cfg.dtype not in ("auto", "float32", "bfloat16"):
        raise UsageError(f"--dtype must be auto, float32 or bfloat16, not '{cfg.dtype}'")
    return cfg


def settings(cfg, task, device, dtype):
    """The lines a run opens with: its task, model, training and testing, then every other
    setting that is not its default, as the flag that gives it (the record keeps the whole config)."""
    in_lines = set("task task_size variant n_layer n_head n_embd block_size positions mlp_act "
                   "residual steps batch_size lr warmup weight_decay seed eval_size eval_interval "
                   "out device dtype compile".split())
    default = {f.name: f.default for f in dataclasses.fields(Config)}
    default["qk_init_std"] = round(1 / math.sqrt(cfg.n_embd), 6)  # what 0 became (resolve_config)
    flag = lambda v: str(v).lower() if isinstance(v, bool) else shlex.quote(str(v))  # noqa: E731
    other = [f"--{k} {flag(v)}" for k, v in dataclasses.asdict(cfg).items()
             if k not in in_lines and v != default[k]]
    tested = "sequences it trains on" if task.capacity_bits else "held-out sequences"  # as built
    return [f"task {cfg.task}: {task.note} | device {device} | {str(dtype).replace('torch.', '')}"
            + (", compiled" if cfg.compile == "true" else ""),
            f"model: {cfg.n_layer} layers, {cfg.n_head} heads, width {cfg.n_embd}, sequences of up "
            f"to {cfg.block_size} tokens; {cfg.positions} positions, {cfg.mlp_act} MLP, "
            f"{cfg.residual} residual",
            f"training: {cfg.steps} steps of {cfg.batch_size} sequences; AdamW, lr {cfg.lr:g} "
            f"({cfg.warmup} steps of warm-up, then cosine), weight decay {cfg.weight_decay:g}; "
            f"seed {cfg.seed}",
            f"testing: {len(task.test[0])} {tested} every {cfg.eval_interval} steps; "
            + (f"the record, with every setting, goes to {cfg.out}" if cfg.out else "no record")
            ] + (["other settings: " + " ".join(other)] if other else [])


def run(cfg):
    t0 = time.time()
    rank, world = runtime.init_distributed(cfg.batch_size, cfg.device)
    task, model, device, dtype, (n_train, n_frozen) = build(cfg)
    if cfg.load:  # start from a checkpoint's weights (resolve_config took its settings)
        runtime.load_weights(model, cfg.load)
    print("\n".join(settings(cfg, task, device, dtype)))
    record = {"config": dataclasses.asdict(cfg), "n_trainable": n_train, "n_frozen": n_frozen}
    if task.corpus_sha256:  # lm: its text's digest; records of two texts never share a cell
        record["corpus_sha256"] = task.corpus_sha256
    if cfg.mixit_shipped:  # its sink's row 0 as run (0.5; older records without it ran 1)
        record["sink_row0"] = model.blocks[0].attn.A[0, 0, 0].item()
    state = runtime.load_state(cfg)  # a stopped run's state, if this command left one
    with runtime.catch_signals():  # a signal now saves the training state instead of losing it (train)
        history = train(cfg, task, model, device, dtype, record, t0, state)
    if rank > 0:  # rank 0 evaluates, prints, saves and writes the record; the others wait for it:
        dist.barrier()  # a rank that left the group early could abort at exit (gloo, under load)
        return None
    final = history[-1]
    if task.capacity_bits:  # memorize: the paper's capacity measure (Table 4)
        final["bits_per_param"] = final["acc"] * task.capacity_bits / n_train
    if task.block_size > 2 and len(task.test[0]):  # rank collapse with depth (Table 6)
        final["token_cov"] = token_covariance(model, task)
    if task.val:  # --val_size: what a learning-rate sweep chooses by (never the test set)
        record["val"] = evaluate(model, task, dtype, data=task.val)
        print(f"validation: loss {record['val']['loss']:.4f} | acc {record['val']['acc']:.4f}")
    show_examples(model, task, dtype, cfg.examples)
    took = runtime.wall_times(record, t0)  # this sitting's and, resumed, every sitting's seconds
    print(f"\nfinal test accuracy {final['acc']:.4f} (exact match {final['exact']:.4f}, "
          f"loss {final['loss']:.4f}) | {cfg.variant} on {cfg.task} | {took}")
    if cfg.save:
        runtime.save_checkpoint(cfg.save, model, cfg)
        print(f"checkpoint saved to {cfg.save}")
    record.update({
        "final": final, "best_acc": max(h["acc"] for h in history), "history": history,
        "steps": final["step"], **runtime.environment(device, dtype)})
    if cfg.out:
        runtime.append_record(cfg.out, record)
    if os.path.isfile(runtime.resume_path(cfg)):  # the record holds the run now
        os.remove(runtime.resume_path(cfg))
    if world > 1:
        dist.barrier()
    return record


def main(argv=None):
    with runtime.command_line():  # bad input: one line, status 2; a signal: where its state is saved
        run(resolve_config(parse_args(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    main()
