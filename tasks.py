"""
The data for every task of the MixiT reproduction (arXiv 2506.01115), in one file.

Every task answers the same question: "here is a batch of sequences; which positions are the
answer?". A batch is three (B, T) tensors:

    x     int64   the tokens the model reads
    y     int64   the token the model must predict at each position (for next-token tasks,
                  y is x shifted left by one)
    mask  bool    True where y is part of the answer: only these positions are trained on and
                  scored. Everything else (the prompt, the padding) is context.

All generators are vectorized tensor code that runs on whatever device the torch.Generator lives
on, so on a GPU no data ever crosses from the host inside a training step.

Train and test never share a sequence, and they follow the same distribution: the distinct
sequences of a task are split by a hash of their tokens, one in five (hash = 0 mod 5) into the
test set and the rest into training, and both sides are drawn from the same generator. A
training row that falls on the test side gets an all-False mask (no host sync). Holding out the
test set's *own draws* instead would take the commonest short strings out of training wherever
the input space is small (at dyck-6 most training rows would lose their loss, and the share of
"yes" among the rest would change), so the model would train on one distribution and be scored
on another.

Tasks (`python mixit.py --task NAME`; `--task_size` sets the size in brackets):
    add        decimal addition, digits least-significant first    [digits per operand]
    modadd     (a + b) mod p, a fixed 95% / 5% split of all pairs  [p]
    memorize   a random lookup table (x1, x2) -> y, scored on itself [n]
    dyck       is this string of brackets balanced?                [max pairs]
    needle     key-value pairs, then a query: return the value     [max pairs]
    copy       a random string, a separator, the string again      [max length]
    induction  the last token appeared once before: what followed it? [context length]
    hop        k-hop induction (Sanford et al., 2024)              [hops k]
    lm         byte-level language modelling on a text file        [context length]
    classify   the class of a labelled text (Yelp reviews), bidirectional [context length]
"""

import csv
import hashlib
import lzma
import math
import os
import re
import zlib
from dataclasses import dataclass
from functools import partial
from typing import Callable, Optional

import torch


class UsageError(Exception):
    """A problem with what the user asked for (bad size, missing file): printed as one line."""


# -----------------------------------------------------------------------------
# The Task object: what mixit.py needs to know about a task


@dataclass
class Task:
    name: str
    size: int  # the --task_size actually used
    vocab_size: int
    block_size: int  # T: every x, y, mask of this task is (B, T)
    itos: list  # token id -> printable string, for decoding examples
    test: tuple  # (x, y, mask) of the fixed held-out test set
    val: Optional[tuple] = None  # (x, y, mask) for choosing hyperparameters (with_validation)
    sample: Optional[Callable] = None  # (B, generator) -> (x, y, mask): a fresh batch
    train: Optional[tuple] = None  # or a finite training set (x, y, mask) to draw rows from
    capacity_bits: float = 0.0  # memorize only: information in the table, n^2 log2(n) bits
    corpus_sha256: str = ""  # lm only: the sha256 of its text, which its records carry
    note: str = ""  # one line describing the format, printed at startup

    hash_split: bool = True  # sampled tasks: rows with hash = 0 mod 5 are the test side (lm: no)
    classes: Optional[list] = None  # classify: the labels as the file writes them; the head
    pad_id: Optional[int] = None  # predicts one of len(classes), and pad tokens are masked out

    def get_batch(self, batch_size, gen, resample=False):
        """A training batch (x, y, mask), drawn on gen's device with no host sync. With resample,
        rows on the test side are replaced by other draws instead of masked: 1.5 B + 8 rows are
        drawn and the first B on the training side kept (fewer than B of them: about 1e-6 at
        B = 64), so each row is a fresh draw from the training side and every row learns."""
        return tuple(t[0] for t in self.get_batches(1, batch_size, gen, resample))

    def get_batches(self, n, batch_size, gen, resample=False):
        """n training batches at once, (x, y, mask) each (n, B, T): one draw of n times the rows,
        so that a GPU spends a few large kernels on the data of n steps instead of a few dozen
        small ones per step (mixit.py's --data_pool). Batch i is what get_batch would give if
        the generator's draws were shaped n times larger; n = 1 is get_batch's own stream."""
        if self.train is not None:  # finite set (modadd, memorize): pick rows
            x, y, mask = self.train
            idx = torch.randint(0, x.size(0), (n * batch_size,), generator=gen, device=gen.device)
            return tuple(t[idx].view(n, batch_size, -1) for t in (x, y, mask))  # (n, B, T)
        drawn = batch_size + (batch_size // 2 + 8 if resample else 0)  # rows per batch
        x, y, mask = (t.view(n, drawn, -1) for t in self.sample(n * drawn, gen))  # (n, rows, T)
        if not self.hash_split:
            return x, y, mask
        test_side = on_test_side(x.flatten(0, 1)).view(n, drawn)  # the row hash, once for all
        if resample:  # a stable sort keeps the draw order on each side
            keep = torch.argsort(test_side.int(), dim=1, stable=True)[:, :batch_size]  # (n, B)
            x, y, mask = (t.gather(1, keep[:, :, None].expand(-1, -1, t.size(2))) for t in (x, y, mask))
            test_side = test_side.gather(1, keep)
        return x, y, mask & ~test_side[:, :, None]  # a row on the test side carries no loss

    def decode(self, ids):
        return " ".join(self.itos[i] for i in ids.tolist())

    def show(self, pred, n):
        """Print n decoded test examples, wrong ones first, given the model's predictions
        pred (N, T) on the test set: the input up to its first answer, then expected and got."""
        x, y, mask = self.test
        right = ((pred == y) | ~mask).all(1)
        order = torch.cat([torch.nonzero(~right).flatten()[: n // 2], torch.nonzero(right).flatten()])
        # up to half are wrong ones, however few the test set holds: the header says so, and how
        # many there are, or 3 WRONG of 6 would read as 50% at an exact match of 99%
        wrong = int((~right).sum())
        print(f"\nexamples from the test set ({self.note}), the wrong ones first: "
              f"{wrong:,} of its {len(right):,} are wrong ({wrong / len(right):.2%})")
        for i in order[:n].tolist():
            if self.classes:  # classify: the text, then its class as the file writes it
                text = " ".join(text_of(x[i]).split())  # newlines and runs of spaces: one space
                text = repr(text if len(text) <= 80 else text[:77] + "...")
                p, t = (self.classes[int(c[mask[i]][0])] for c in (pred[i], y[i]))
                print(f"  {'RIGHT' if right[i] else 'WRONG'}  review {text} -> predicted {p}, true {t}")
                continue
            shown = x[i][: int(torch.nonzero(mask[i]).min()) + 1] if self.name != "hop" else x[i]
            print(f"  {'RIGHT' if right[i] else 'WRONG'}  {self.decode(shown)[-120:]}  ->")
            print(f"         expected: {self.decode(y[i][mask[i]])[:100]}")
            print(f"         got:      {self.decode(pred[i][mask[i]])[:100]}")


HASH_P, HASH_BASE = 2_147_483_647, 4099  # a prime below 2^31, and the hash's base
_HASH_WEIGHTS = {}  # (T, device) -> (T,) the weights BASE^(T-1-t) mod P, made once


def _hash_rows(x):
    """A polynomial hash per row (B, T) -> (B,), exact enough to spot repeated sequences:
    h = (...((x_0 * BASE + x_1) * BASE + x_2) ...) mod P, which is sum_t x_t * BASE^(T-1-t) mod P.
    The sum form costs five tensor ops for any T where the loop over columns cost 3 T (on a GPU,
    one kernel launch each). Each term is reduced mod P before the sum: a term is below 2^62 and
    T of them stay below 2^63 for T < 2^32, so nothing overflows whatever the token values."""
    key = (x.size(1), str(x.device))
    if key not in _HASH_WEIGHTS:  # Python's exact integers, then one tensor
        w = [pow(HASH_BASE, x.size(1) - 1 - t, HASH_P) for t in range(x.size(1))]
        _HASH_WEIGHTS[key] = torch.tensor(w, dtype=torch.int64, device=x.device)
    return ((x % HASH_P) * _HASH_WEIGHTS[key] % HASH_P).sum(1) % HASH_P


def on_test_side(x):
    """(B, T) -> (B,) bool: is this sequence on the test side of the hash split?"""
    return _hash_rows(x) % 5 == 0


def held_out_test(sample, n_test, gen, name, smallest, side=True):
    """The fixed test set: n_test draws of `sample` that fall on the test side of the split
    (side=False: on the training side, for a validation set: with_validation).
    Draws are made in large chunks until enough are found; a task whose input space is so small
    that almost nothing lands on the test side is refused, naming the smallest size that works."""
    parts, found = [], 0
    for _ in range(50):
        if found >= n_test:
            break
        x, y, mask = sample(max(1024, 5 * n_test), gen)
        keep = (on_test_side(x) == side) & mask.any(1)
        parts.append((x[keep], y[keep], mask[keep]))
        found += int(keep.sum())
    if found < n_test:
        raise UsageError(f"{name}: this size has too few distinct sequences to hold out a test "
                         f"set; use --task_size {smallest} or more")
    return tuple(torch.cat(p)[:n_test] for p in zip(*parts))


def shift(seq, answer):
    """Next-token framing: from full sequences (B, L) and a bool mask of the answer tokens
    (B, L), make x = seq[:, :-1], y = seq[:, 1:], mask = answer[:, 1:] (each (B, L-1))."""
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous(), answer[:, 1:].contiguous()


def _randint(lo, hi, shape, gen):
    return torch.randint(lo, hi, shape, generator=gen, device=gen.device)


def _rand(shape, gen):
    return torch.rand(shape, generator=gen, device=gen.device)


# -----------------------------------------------------------------------------
# Arithmetic: add, modadd


def sample_add(B, gen, n_digits):
    """Decimal addition of two N-digit numbers, every digit written least-significant first.

    Tokens: 0-9 are digits, 10 is '+', 11 is '='. With N = 3, 472 + 385 = 857 is written

        seq:  2 7 4 + 5 8 3 = 7 5 8 0        (rev(472) + rev(385) = rev(0857))
        x:    2 7 4 + 5 8 3 = 7 5 8
        y:    7 4 + 5 8 3 = 7 5 8 0
        mask: . . . . . . . X X X X          (the N+1 answer digits, all of them scored)

    Reversed order lets the model produce the carry before it needs it (as a child would).
    The sum always has N+1 digits (a leading 0 when there is no final carry).
    B rows, every draw from the torch.Generator gen (on its device; the same seed gives the
    same batch). Returns shift(seq, answer): x, y int64 and mask bool, each (B, 3N + 2).
    """
    N = n_digits
    pow10 = 10 ** torch.arange(N + 1, device=gen.device)  # (N+1,)
    a_digits = _randint(0, 10, (B, N), gen)
    b_digits = _randint(0, 10, (B, N), gen)
    a_digits[:, -1] = _randint(1, 10, (B,), gen)  # exactly N digits: no leading zero
    b_digits[:, -1] = _randint(1, 10, (B,), gen)
    a = (a_digits * pow10[:N]).sum(1)  # (B,) the numbers themselves (int64 holds N <= 17)
    b = (b_digits * pow10[:N]).sum(1)
    s_digits = ((a + b)[:, None] // pow10) % 10  # (B, N+1), least-significant first
    plus = torch.full((B, 1), 10, device=gen.device)
    equals = torch.full((B, 1), 11, device=gen.device)
    seq = torch.cat([a_digits, plus, b_digits, equals, s_digits], 1)  # (B, 3N+3)
    answer = torch.zeros_like(seq, dtype=torch.bool)
    answer[:, 2 * N + 2:] = True
    return shift(seq, answer)


def make_add(n_digits, device, data_seed, n_test):
    if not 1 <= n_digits <= 17:
        raise UsageError(f"add: --task_size (digits) must be between 1 and 17, got {n_digits}")
    gen = torch.Generator(device).manual_seed(data_seed)
    sample = partial(sample_add, n_digits=n_digits)
    return Task("add", n_digits, vocab_size=12, block_size=3 * n_digits + 2,
                itos=[str(d) for d in range(10)] + ["+", "="],
                test=held_out_test(sample, n_test, gen, "add", 1), sample=sample,
                note=f"{n_digits}-digit addition, digits least-significant first")


def make_modadd(p, device, data_seed, n_test, n_val=0):
    """Modular addition: every pair (a, b) with a, b < p, written as three tokens.

    Tokens 0..p-1 are the numbers. With p = 7, 5 + 4 = 9 = 2 (mod 7) is written

        seq:  5 4 2
        x:    5 4         y: 4 2        mask: . X     (only (a+b) mod p is scored)

    All p^2 pairs are shuffled with the data seed; 95% train, 5% test (never seen in training).
    n_val > 0 holds the last n_val training pairs out as a validation set (with_validation).
    """
    if p < 5:
        raise UsageError(f"modadd: --task_size (the modulus p) must be at least 5, got {p}")
    gen = torch.Generator(device).manual_seed(data_seed)
    a = torch.arange(p, device=device).repeat_interleave(p)  # (p*p,) all pairs
    b = torch.arange(p, device=device).repeat(p)
    seq = torch.stack([a, b, (a + b) % p], 1)  # (p*p, 3)
    seq = seq[torch.randperm(p * p, generator=gen, device=device)]
    answer = torch.tensor([False, False, True], device=device).expand_as(seq)
    x, y, mask = shift(seq, answer)
    n_train = int(0.95 * p * p)
    test = tuple(t[n_train:][:n_test] for t in (x, y, mask)) if n_test else (x[:0], y[:0], mask[:0])
    if not 0 <= n_val < n_train // 2:
        raise UsageError(f"modadd-{p}: --val_size must be below half its {n_train} training pairs")
    fit = n_train - n_val  # the pairs it trains on; the rest of the training side validates
    return Task("modadd", p, vocab_size=p, block_size=2, itos=[str(i) for i in range(p)],
                test=test, train=(x[:fit], y[:fit], mask[:fit]),
                val=tuple(t[fit:n_train] for t in (x, y, mask)) if n_val else None,
                note=f"(a + b) mod {p}: {fit} training pairs, {p * p - n_train} held out"
                     + f", {n_val} validating" * bool(n_val))


# -----------------------------------------------------------------------------
# Memorization


def make_memorize(n, device, data_seed, n_test):
    """Memorize a random table: each pair (x1, x2) in [n]^2 gets a label y drawn uniformly from [n].

    Tokens: x1 is 0..n-1, x2 is written as n+x2 (its own range), the label is 0..n-1. With
    n = 4 and the table entry (3, 1) -> 2:

        seq:  3 5 2
        x:    3 5         y: 5 2        mask: . X     (only the label is scored)

    There is nothing to generalize: the training set is all n^2 pairs and the score is accuracy
    on the training set itself. The table holds n^2 log2(n) bits; bits per trainable parameter
    = accuracy * n^2 * log2(n) / #trainable parameters (the paper's capacity measure, Table 4).
    """
    if n < 2:
        raise UsageError(f"memorize: --task_size (n) must be at least 2, got {n}")
    gen = torch.Generator(device).manual_seed(data_seed)
    x1 = torch.arange(n, device=device).repeat_interleave(n)  # (n*n,) all pairs
    x2 = torch.arange(n, device=device).repeat(n)
    label = _randint(0, n, (n * n,), gen)
    seq = torch.stack([x1, n + x2, label], 1)  # (n*n, 3)
    answer = torch.tensor([False, False, True], device=device).expand_as(seq)
    data = shift(seq, answer)
    itos = [str(i) for i in range(n)] + [f"'{i}" for i in range(n)]
    return Task("memorize", n, vocab_size=2 * n, block_size=2, itos=itos, test=data, train=data,
                capacity_bits=n * n * math.log2(n),
                note=f"a random table of {n * n} pairs ({n * n * math.log2(n):.0f} bits)")


# -----------------------------------------------------------------------------
# Dyck: bracket balancing


DYCK_SMALLEST = 3  # dyck-2 holds 4 distinct test strings, all 'no'


def sample_dyck(B, gen, max_pairs):
    """Is a string of brackets balanced? Tokens: 0 pad, 1 '(', 2 ')', 3 '?', 4 'yes', 5 'no'.

    A third of the strings are balanced (a random walk that never closes below zero) with
    ceil(N/2)..N pairs, a third are such strings with their interior shuffled (equal counts, so
    only the nesting tells), a third are random brackets of N..2N symbols: 66% (N = 3) to 40%
    (N = 30) of the answers are 'yes' (a test checks it). Strings shorter than N symbols are left
    out: there are so few of them that the train/test split by hash would put, say, every short
    balanced string on the training side.
    The label is computed from the string itself, so it is always right. With max_pairs = 3:

        seq:  ( ( ) ) ? yes pad pad        (strings are padded at the end to 2*max_pairs + 2)
        x:    ( ( ) ) ? yes pad
        y:    ( ) ) ? yes pad pad
        mask: . . . . X .   .              (only the answer after '?' is scored)

    B rows, every draw from the torch.Generator gen (on its device; the same seed gives the
    same batch). Returns shift(seq, answer): x, y int64 and mask bool, each (B, 2N + 1).
    """
    N, dev = max_pairs, gen.device
    L = 2 * N  # the longest string
    pos = torch.arange(L, device=dev)
    # balanced strings of ceil(N/2)..N pairs, one bracket at a time for all rows at once
    shortest = (N + 1) // 2  # fewest pairs: shorter strings are too few to split into train/test
    pairs = _randint(shortest, N + 1, (B,), gen)
    coin = _rand((B, L), gen)
    # The walk: at each step open '(' if the coin says so or the depth is 0 (nothing to close),
    # until `pairs` have been opened; then close the rest. Read as a walk on the depth, a coin
    # that says "close" at depth 0 is overruled (+1 instead of -1): the depth is the free walk S
    # (the coins' running sum) plus 2 for every overruled coin so far, and the count of overruled
    # coins is the least that keeps the depth >= 0: K_i = max(0, max_{j <= i} ceil(-S_j / 2)).
    # That makes the whole walk a few cumulative ops instead of one step per position.
    S = torch.where(coin < 0.5, 1, -1).cumsum(1)  # (B, L): free walk after each step
    overruled = (1 - S).div(2, rounding_mode="floor").cummax(1).values.clamp(min=0)  # ceil(-S/2)
    depth = torch.cat([torch.zeros_like(S[:, :1]), S + 2 * overruled], 1)  # (B, L+1), from 0
    opens = depth[:, 1:] > depth[:, :-1]  # (B, L): step i writes '('
    opened_before = (pos[None, :] + depth[:, :-1]) // 2  # '(' among the first i brackets
    brackets = torch.where(opens & (opened_before < pairs[:, None]), 1, 2)
    length = 2 * pairs
    # a third: shuffle the interior of the balanced string. The counts of '(' and ')' stay equal
    # and the string still opens with '(' and closes with ')', so only the running depth tells
    # (a shuffle of n pairs is balanced with probability about 1/n). With two swapped positions
    # instead, as the reference does, "equal counts, opens with '(', closes with ')'" answers
    # nearly every such negative right: dyck would measure counting, not nesting (Table 3's
    # floor row prints that rule's accuracy on today's test set)
    keys = _rand((B, L), gen)  # interior positions 1..length-2 get random sort keys ...
    keys = torch.where(pos[None, :] == 0, -1.0, keys)  # ... the first stays first ...
    keys = torch.where(pos[None, :] >= length[:, None] - 1, 2.0 + pos[None, :], keys)  # ... the rest stay
    shuffled = brackets.gather(1, keys.argsort(1))
    kind = _randint(0, 3, (B,), gen)  # 0: balanced; 1: shuffled; 2: random
    brackets = torch.where((kind == 1)[:, None], shuffled, brackets)
    # a third: uniform random brackets, N..2N of them
    rand_len = _randint(2 * shortest - 1, L + 1, (B,), gen)
    rand_brackets = _randint(1, 3, (B, L), gen)
    brackets = torch.where((kind == 2)[:, None], rand_brackets, brackets)
    length = torch.where(kind == 2, rand_len, length)
    # the label, from the string: the running depth never dips below 0 and ends at 0
    inside = pos[None, :] < length[:, None]  # (B, L)
    steps = torch.where(inside, 3 - 2 * brackets, 0)  # '(' -> +1, ')' -> -1, pad -> 0
    run = steps.cumsum(1)
    balanced = (run.min(1).values >= 0) & (run[:, -1] == 0)
    # lay out: string, '?', answer, padding
    seq = torch.zeros(B, L + 2, dtype=torch.long, device=dev)
    seq[:, :L] = torch.where(inside, brackets, 0)
    seq.scatter_(1, length[:, None], 3)
    seq.scatter_(1, length[:, None] + 1, torch.where(balanced, 4, 5)[:, None])
    answer = torch.zeros_like(seq, dtype=torch.bool).scatter_(1, length[:, None] + 1, True)
    return shift(seq, answer)


def make_dyck(max_pairs, device, data_seed, n_test):
    if not DYCK_SMALLEST <= max_pairs <= 256:
        raise UsageError(f"dyck: --task_size (max pairs) must be {DYCK_SMALLEST}..256, got {max_pairs}")
    gen = torch.Generator(device).manual_seed(data_seed)
    sample = partial(sample_dyck, max_pairs=max_pairs)
    return Task("dyck", max_pairs, vocab_size=6, block_size=2 * max_pairs + 1,
                itos=["_", "(", ")", "?", "yes", "no"], sample=sample,
                test=held_out_test(sample, n_test, gen, "dyck", DYCK_SMALLEST),
                note=f"bracket strings of up to {2 * max_pairs} symbols: balanced or not?")


# -----------------------------------------------------------------------------
# Retrieval: needle, copy, induction, hop


def sample_needle(B, gen, max_pairs):
    """Needle in a haystack (associative recall): n ~ U{1..N} key-value pairs, then a query.

    Tokens: 0 pad, values 1..255, key k is 256+k, the query for key k is 256+N+k (its own
    symbol, as in the reference code: the model must learn that query k matches key k).
    With N = 4, three pairs {1: 17, 3: 200, 0: 9} and the query "3?":

        seq:  k1 17 k3 200 k0 9 q3 200 pad pad
        x:    k1 17 k3 200 k0 9 q3 200 pad
        y:    17 k3 200 k0 9 q3 200 pad pad
        mask: .  .  .   .  .  . X   .   .         (only the value after the query is scored)

    B rows, every draw from the torch.Generator gen (on its device; the same seed gives the
    same batch). Returns shift(seq, answer): x, y int64 and mask bool, each (B, 2N + 1).
    """
    N, dev = max_pairs, gen.device
    n = _randint(1, N + 1, (B,), gen)
    keys = _rand((B, N), gen).argsort(1)  # (B, N) a random permutation: distinct keys
    values = _randint(1, 256, (B, N), gen)
    which = (_rand((B,), gen) * n).long()  # the queried pair, one of the first n
    q_key, q_value = keys.gather(1, which[:, None]), values.gather(1, which[:, None])
    pairs = torch.stack([256 + keys, values], 2).view(B, 2 * N)  # (B, N, 2) -> (B, 2N)
    inside = torch.arange(2 * N, device=dev)[None, :] < 2 * n[:, None]
    seq = torch.zeros(B, 2 * N + 2, dtype=torch.long, device=dev)
    seq[:, :2 * N] = torch.where(inside, pairs, 0)
    seq.scatter_(1, 2 * n[:, None], 256 + N + q_key)
    seq.scatter_(1, 2 * n[:, None] + 1, q_value)
    answer = torch.zeros_like(seq, dtype=torch.bool).scatter_(1, 2 * n[:, None] + 1, True)
    return shift(seq, answer)


def make_needle(max_pairs, device, data_seed, n_test):
    if not 1 <= max_pairs <= 128:
        raise UsageError(f"needle: --task_size (max pairs) must be 1..128, got {max_pairs}")
    gen = torch.Generator(device).manual_seed(data_seed)
    sample = partial(sample_needle, max_pairs=max_pairs)
    itos = ["_"] + [str(v) for v in range(1, 256)]
    itos += [f"k{k}" for k in range(max_pairs)] + [f"q{k}" for k in range(max_pairs)]
    return Task("needle", max_pairs, vocab_size=256 + 2 * max_pairs,
                block_size=2 * max_pairs + 1, itos=itos, sample=sample,
                test=held_out_test(sample, n_test, gen, "needle", 1),
                note=f"up to {max_pairs} key-value pairs, then a query for one key")


COPY_SYMBOLS = 26  # the string's alphabet: a..z


def sample_copy(B, gen, max_len):
    """Copying: a random string of length l ~ U{1..L} over a..z, a separator '|', the string again.

    Tokens: 0-25 are a..z, 26 is '|', 27 is pad. With L = 5 and the string "cab":

        seq:  c a b | c a b _ _ _ _
        x:    c a b | c a b _ _ _
        y:    a b | c a b _ _ _ _
        mask: . . . X X X . . . .          (every copied token is scored)

    The copy of token i sits l+1 places after it, and l changes from row to row: where to look
    depends on where the separator '|' is, so no single offset fits every row. The paper counts
    copying as retrieval, which it reports that MixiT, whose mixing is the same for every input,
    cannot do.
    """
    L, dev = max_len, gen.device
    length = _randint(1, L + 1, (B,), gen)
    string = _randint(0, COPY_SYMBOLS, (B, L), gen)
    pos = torch.arange(2 * L + 1, device=dev)[None, :]  # (1, 2L+1)
    l = length[:, None]  # (B, 1)
    src = torch.where(pos < l, pos, pos - l - 1).clamp(0, L - 1)  # where each token comes from
    seq = string.gather(1, src)  # (B, 2L+1)
    seq = torch.where(pos == l, 26, seq)  # the separator
    seq = torch.where(pos > 2 * l, 27, seq)  # padding
    answer = (pos > l) & (pos <= 2 * l)
    return shift(seq, answer)


def make_copy(max_len, device, data_seed, n_test):
    if not 1 <= max_len <= 256:
        raise UsageError(f"copy: --task_size (max length) must be 1..256, got {max_len}")
    gen = torch.Generator(device).manual_seed(data_seed)
    sample = partial(sample_copy, max_len=max_len)
    itos = [chr(ord("a") + i) for i in range(COPY_SYMBOLS)] + ["|", "_"]
    return Task("copy", max_len, vocab_size=28, block_size=2 * max_len, itos=itos,
                test=held_out_test(sample, n_test, gen, "copy", 1), sample=sample,
                note=f"copy a string of up to {max_len} letters after '|'")


INDUCTION_SYMBOLS = 32  # alphabet of the induction task
INDUCTION_SMALLEST = 4  # at context 2 or 3 the answer's position is (nearly) fixed


def sample_induction(B, gen, context):
    """Induction-head test: random tokens in which the last token q appeared exactly once before.

    The answer is the token that followed that earlier q ("... q r ... q -> r"). With symbols
    a..f (the real task uses 32) and context 6:

        seq:  e b d a f b d        (q = 'b' at position 1; the follower is 'd')
        x:    e b d a f b          (context, then the query q)
        y:    b d a f b d
        mask: . . . . . X          (only the follower is scored: one position per sequence)

    The follower never equals q, and q is not elsewhere in the context, so the answer is unique.
    B rows, every draw from the torch.Generator gen (on its device; the same seed gives the
    same batch). Returns shift(seq, answer): x, y int64 and mask bool, each (B, context + 1).
    """
    V = INDUCTION_SYMBOLS
    q = _randint(0, V, (B, 1), gen)
    ctx = _randint(0, V - 1, (B, context), gen)
    ctx = ctx + (ctx >= q).long()  # every context token differs from q ...
    where = _randint(0, context - 1, (B, 1), gen)  # ... but one, which has a follower after it
    ctx = ctx.scatter(1, where, q)
    follower = ctx.gather(1, where + 1)
    seq = torch.cat([ctx, q, follower], 1)  # (B, context+2)
    answer = torch.zeros_like(seq, dtype=torch.bool)
    answer[:, -1] = True
    return shift(seq, answer)


def make_induction(context, device, data_seed, n_test):
    if not INDUCTION_SMALLEST <= context <= 1024:
        raise UsageError(f"induction: --task_size (context length) must be "
                         f"{INDUCTION_SMALLEST}..1024, got {context}")
    gen = torch.Generator(device).manual_seed(data_seed)
    sample = partial(sample_induction, context=context)
    return Task("induction", context, vocab_size=INDUCTION_SYMBOLS, block_size=context + 1,
                itos=[f"t{i}" for i in range(INDUCTION_SYMBOLS)],
                test=held_out_test(sample, n_test, gen, "induction", INDUCTION_SMALLEST),
                sample=sample,
                note=f"{context} random tokens over {INDUCTION_SYMBOLS} symbols, then a query")


HOP_SYMBOLS = 4  # alphabet of the k-hop sequences


def hop_length(hops):
    """Each hop moves back about HOP_SYMBOLS places, so k hops need about 4k tokens of history;
    16 + 4k leaves a good part of every sequence with a defined answer (k = 2: 24, k = 16: 80)."""
    return 16 + 4 * hops


def sample_hop(B, gen, hops):
    """k-hop induction (Sanford, Hsu & Telgarsky, 2024). One hop from position i: find the
    previous occurrence j < i of the token x[i], and move to j+1. The answer at position i is the
    token where k hops land; it is undefined when some hop finds no previous occurrence.

    This is a labelling task (y is not x shifted): the model reads x and at every position
    predicts the k-hop token. Alphabet a..d, length 16 + 4k, and no token equals the one before
    it (so "predict the current token" is never right at k = 1). With k = 2 on "a b a c b a":

        x:    a b a c b a
        hop1 from 5 ('a'): previous 'a' at 2 -> land on 3 ('c');  hop2 from 3 ('c'): no
        earlier 'c' -> undefined.   From 4 ('b'): previous 'b' at 1 -> 2 ('a'); previous 'a'
        at 0 -> 1 ('b'): the answer at position 4 is 'b'.
        y:    . . . . b .
        mask: . . . . X .          (every position whose k-hop answer is defined is scored)

    B: how many rows. gen: the torch.Generator of every draw; the batch is made on its device,
    and the same seed gives the same batch. hops: k >= 1. The first token is uniform over the
    alphabet, each later one uniform over the HOP_SYMBOLS - 1 others than the token before it.
    Returns (x, y, mask), each (B, hop_length(k)): x int64 tokens 0..HOP_SYMBOLS-1 (a..d);
    y int64, the k-hop token where it is defined and 0 elsewhere; mask bool, True exactly where
    the k-hop answer is defined.
    """
    V, T, dev = HOP_SYMBOLS, hop_length(hops), gen.device
    # no token equals its predecessor (as in Sanford et al.): a repeated pair "a a" would be a
    # fixed point of the hop map, and "predict the current token" would then solve 69% of it
    first = _randint(0, V, (B, 1), gen)
    step = _randint(1, V, (B, T - 1), gen)  # move 1..V-1 places around the alphabet
    x = torch.cat([first, first + step.cumsum(1)], 1) % V  # (B, T)
    # prev[b, i]: the last j < i with x[b, j] == x[b, i], or -1. For every symbol v, the running
    # maximum of "j where x[b, j] == v" is the last place v was seen up to i; read it at i - 1.
    pos = torch.arange(T, device=dev)
    seen = torch.where(x[:, :, None] == torch.arange(V, device=dev), pos[:, None], -1)  # (B, T, V)
    last = seen.cummax(1).values  # (B, T, V): where each symbol was last seen, up to i
    last = torch.cat([torch.full_like(last[:, :1], -1), last[:, :-1]], 1)  # ... before i
    prev = last.gather(2, x[:, :, None]).squeeze(2)  # (B, T)
    # One hop is a map on positions, hop(i) = prev[i] + 1, with an extra position T standing for
    # "undefined", which maps to itself. k hops are that map applied k times; composing a map
    # with itself doubles its hops, so k hops take about 2 log2(k) gathers instead of k steps.
    hop = torch.cat([torch.where(prev >= 0, prev + 1, T), torch.full_like(prev[:, :1], T)], 1)
    where = torch.arange(T + 1, device=dev).expand(B, T + 1)  # (B, T+1): zero hops
    k = hops
    while k:  # binary powering: hop is the map of 2^m hops at round m
        if k & 1:
            where = hop.gather(1, where)
        k >>= 1
        if k:
            hop = hop.gather(1, hop)
    where = where[:, :T]  # (B, T): where k hops from each position land
    defined = where < T
    y = torch.where(defined, x.gather(1, where.clamp(max=T - 1)), 0)
    return x, y, defined


def make_hop(hops, device, data_seed, n_test):
    if not 1 <= hops <= 32:
        raise UsageError(f"hop: --task_size (hops k) must be 1..32, got {hops}")
    gen = torch.Generator(device).manual_seed(data_seed)
    sample = partial(sample_hop, hops=hops)
    return Task("hop", hops, vocab_size=HOP_SYMBOLS, block_size=hop_length(hops),
                itos=[chr(ord("a") + i) for i in range(HOP_SYMBOLS)],
                test=held_out_test(sample, n_test, gen, "hop", 1), sample=sample,
                note=f"{hops}-hop induction on {hop_length(hops)} tokens over {HOP_SYMBOLS} symbols")


# -----------------------------------------------------------------------------
# Language modelling


# The two texts that ship with Python change between its versions, even between patch releases
# (3.11.2's help text is not 3.11.7's): the repository ships them instead, made once from Python
# 3.11.7 (the quick records' Python) and compressed with lzma. corpus/README.md says how they were
# made and how to remake them; each is checked against its digest here when it is read.
CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
CORPORA = {  # --data: (file in corpus/, sha256 of its text)
    # Python's English help text (pydoc_data.topics), 466 KB: the default
    "": ("help.txt.xz", "37d06970fc926e60c16dff401e441b84752446a36b6b64516c229fdec77e992c"),
    # the standard library's .py sources in path order (no tests, IDLE, demos), 11 MB
    "stdlib": ("stdlib.txt.xz", "aa3ccdbb30507bb507a0fecedd6de4860dbe905671a20c548a91c13b290947a2"),
}


def load_text(path=""):
    """The bytes of a text file; by default Python's help text, and with path 'stdlib' the
    standard library's sources, both as shipped in corpus/ (the same bytes on every Python)."""
    if path in CORPORA:
        name, digest = CORPORA[path]
        try:
            with open(os.path.join(CORPUS, name), "rb") as f:
                data = lzma.decompress(f.read())
        except (OSError, lzma.LZMAError):
            data = b""
        if hashlib.sha256(data).hexdigest() != digest:
            raise UsageError(f"lm: corpus/{name} is missing or not the shipped text (its sha256 "
                             "differs): `git checkout corpus/` restores it")
        return data
    if not os.path.isfile(path):
        raise UsageError(f"lm: data file not found: {path}")
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise UsageError(f"lm: data file is empty: {path}")
    return data


def make_lm(context, device, data_seed, n_test, path="", n_val=0):
    """Byte-level language modelling: predict every next byte of a text.

    Tokens are the 256 byte values. The first 90% of the file trains, the last 10% validates.
    With context 4 and the text "def f(x):":

        x:    d e f ' '        a window of the text
        y:    e f ' ' f        the same window one byte later
        mask: X X X X          (every position is scored)

    Training windows start anywhere in the training part; the test set is up to n_test
    non-overlapping windows of the validation part. Loss is in nats per byte; bits per byte
    = loss / ln 2. n_val > 0 holds n_val such windows out of the end of the training part as a
    validation set (with_validation); training windows then start before them.
    """
    text = load_text(path)
    data = torch.frombuffer(bytearray(text), dtype=torch.uint8).long().to(device)
    n_tail = len(data) // 10
    held = n_val * context + 1 if n_val else 0  # the training part's tail that validates
    train, val = data[:-n_tail], data[-n_tail:]
    train, held = train[:len(train) - held], train[len(train) - held:]
    if len(val) < context + 1 or len(train) < context + 1:
        raise UsageError(f"lm: the text ({len(data)} bytes) is too short for context {context}"
                         + f" and --val_size {n_val}" * bool(n_val))
    offs = torch.arange(context + 1, device=device)

    def windows_of(part, n):  # up to n non-overlapping windows: (n, context+1)
        return part[torch.arange(0, len(part) - context, context, device=device)[:n, None] + offs]

    def xym(w):
        return w[:, :-1], w[:, 1:], torch.ones_like(w[:, 1:], dtype=torch.bool)

    def sample_lm(B, gen):
        s = torch.randint(0, len(train) - context, (B, 1), generator=gen, device=gen.device)
        w = train[s + offs]  # (B, context+1)
        return w[:, :-1], w[:, 1:], torch.ones(B, context, dtype=torch.bool, device=gen.device)

    itos = [chr(i) if 32 <= i < 127 else f"\\x{i:02x}" for i in range(256)]
    task = Task("lm", context, vocab_size=256, block_size=context, itos=itos,
                test=xym(windows_of(val, n_test)), sample=sample_lm,
                val=xym(windows_of(held, n_val)) if n_val else None,
                note=f"{path or 'Python help text'}: {len(train)} train / {len(val)} validation "
                     f"bytes" + f" ({len(held)} more held out of training)" * bool(n_val))
    task.hash_split = False  # train and validation are split by position in the file instead
    task.corpus_sha256 = hashlib.sha256(text).hexdigest()  # the record's: cells never mix texts
    return task


# -----------------------------------------------------------------------------
# Text classification: Yelp reviews (paper, Tables 3 and 5)


BOS, PAD = 256, 257  # classify's tokens after the 256 byte values


def read_labelled(path, flag):
    """[(line, label, text as bytes)] of a file of labelled texts, in one of two formats:

        "2","Good ""tacos"".\\nCheap, too."    Yelp's CSV (Zhang et al., 2015): no header; two
                                              quoted fields, label and text; "" is a quote in
                                              the text, and a newline is written as \\n (real
                                              newlines inside quotes are read too)
        2<TAB>Good tacos.                     a label, a tab, the text (to the end of the line)

    A file whose first line is an integer and a tab is read as the second format. Blank lines
    are skipped; any other row that is not an integer label and a text is an error naming its
    line, and so is a file that is missing or holds no row."""
    if not os.path.isfile(path):
        raise UsageError(f"classify: {flag} file not found: {path}")
    # surrogateescape: bytes that are not UTF-8 come back unchanged when the text is encoded
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        tabbed = re.match(r"\s*-?\d+\t", f.readline()) is not None
        f.seek(0)
        rows, line = [], 1
        if tabbed:
            rows = [(i, row.rstrip("\r\n").split("\t", 1)) for i, row in enumerate(f, 1) if row.strip()]
        else:
            reader = csv.reader(f, strict=True)  # strict: a stray quote is an error
            try:
                for fields in reader:
                    if fields:  # a blank line reads as []
                        rows.append((line, fields))
                    line = reader.line_num + 1  # a quoted text can span lines: where the next starts
            except csv.Error as e:
                raise UsageError(f"classify: {path} line {line}: not a CSV row ({e})") from None
    if not rows:
        raise UsageError(f"classify: {flag} file is empty: {path}")
    out = []
    for line, fields in rows:
        if len(fields) != 2:
            raise UsageError(f"classify: {path} line {line}: expected a label and a text "
                             f"({'label<TAB>text' if tabbed else 'label,text'}), got "
                             f"{len(fields)} field{'s' * (len(fields) != 1)}")
        label, text = fields
        if not re.fullmatch(r"\s*-?\d+\s*", label):
            raise UsageError(f"classify: {path} line {line}: the label {label[:20]!r} is not "
                             "an integer")
        text = text if tabbed else text.replace("\\n", "\n")
        out.append((line, int(label), text.encode("utf-8", "surrogateescape")))
    return out


def make_classify(context, device, data_seed, n_test, path="", test_path=""):
    """Text classification (Yelp polarity: 1 = negative, 2 = positive; Yelp full: 1-5 stars).

    Tokens are the 256 byte values, then BOS (256) and pad (257). A text becomes BOS and its
    first context-1 bytes, padded in front, so that it ends at the last position; the answer is
    its class, read there. The head has one output per class; the classes are the labels found
    in --data, in sorted order. With context 8 and the row "2","Yum!" of a file with labels 1, 2:

        x:    _ _ _ <s> Y u m !        (<s> = BOS, _ = pad)
        y:    0 0 0 0   0 0 0 1        (class 1 = the label "2"; the 0s are never read)
        mask: . . . .   . . . X        (the last position, the text's last token, is scored)

    The reference reads its classifier at the last non-pad token too. Padding in front puts
    that token at one position for every text: MixiT's fixed matrix then reads every text
    through the same row of A, as on Yelp, whose reviews nearly all fill 255 bytes. (Padded at
    the end, texts of different lengths would each be read through another row of A.) No real
    token ever sees a pad (mixit.py). The model
    is bidirectional (--causal false, the task's recipe). The score is the class's accuracy.
    With --test_data, that file is the test set (Yelp ships train.csv and test.csv); without it,
    the distinct texts are split by a hash (CRC-32) of their tokens, one in five to the test set.
    Texts of the test set are left out of training; the test set is up to n_test of its texts,
    picked at random with the data seed.
    """
    if not 2 <= context <= 4096:
        raise UsageError(f"classify: --task_size (context length) must be 2..4096, got {context}")
    if not path:
        raise UsageError("classify: give the labelled texts with --data FILE (Yelp's CSV "
                         "label,text or label<TAB>text); FINDINGS, 'Text classification'")
    n = context - 1  # text bytes after BOS
    train = {}  # truncated text -> label: distinct texts, the first label of each
    for _, label, text in read_labelled(path, "--data"):
        train.setdefault(text[:n], label)
    classes = sorted(set(train.values()))
    if len(classes) < 2:
        raise UsageError(f"classify: {path} has one class only (label {classes[0]}); a "
                         "classifier needs two or more")
    if test_path:
        test = {}
        for line, label, text in read_labelled(test_path, "--test_data"):
            if label not in classes:
                raise UsageError(f"classify: {test_path} line {line}: label {label} is not a "
                                 f"class of {path} ({', '.join(map(str, classes))})")
            test.setdefault(text[:n], label)
    else:
        test = {t: c for t, c in train.items() if zlib.crc32(t) % 5 == 0}
    train = {t: c for t, c in train.items() if t not in test}
    if not train or not test:
        raise UsageError(f"classify: {path} has too few distinct texts to hold out a test set "
                         f"({len(train)} train, {len(test)} test); give --test_data")
    cls = {c: i for i, c in enumerate(classes)}

    def table(texts):  # {text: label} -> bytes (N, n) uint8, length (N,), class (N,)
        buf = bytearray(len(texts) * n)
        for i, t in enumerate(texts):
            buf[i * n:i * n + len(t)] = t
        raw = torch.frombuffer(buf, dtype=torch.uint8) if buf else torch.zeros(0, dtype=torch.uint8)
        return (raw.view(len(texts), n).to(device),
                torch.tensor([len(t) for t in texts], device=device),
                torch.tensor([cls[c] for c in texts.values()], device=device))

    pos = torch.arange(context, device=device)

    def rows(raw, length, label):  # -> x, y, mask (B, context), as in the docstring
        text = torch.cat([torch.full((raw.size(0), 1), BOS, device=raw.device), raw.long()], 1)
        src = pos - (n - length[:, None])  # (B, context): which token of BOS + text goes here
        x = torch.where(src >= 0, text.gather(1, src.clamp(min=0)), PAD)
        mask = (pos == n).expand_as(x)
        return x, torch.where(mask, label[:, None], 0), mask

    train_t, test_t = table(train), table(test)
    pick = torch.randperm(len(test), generator=torch.Generator().manual_seed(data_seed))[:n_test]
    test_rows = rows(*(t[pick.to(device)] for t in test_t))

    def sample(B, gen):
        idx = torch.randint(0, len(train), (B,), generator=gen, device=gen.device)
        return rows(*(t[idx] for t in train_t))

    itos = [chr(i) if 32 <= i < 127 else f"\\x{i:02x}" for i in range(256)] + ["<s>", "_"]
    return Task("classify", context, vocab_size=258, block_size=context, itos=itos,
                test=test_rows, sample=sample, classes=classes, pad_id=PAD, hash_split=False,
                note=f"{path}: {len(train)} train / {len(test)} test texts "
                     f"({'--test_data' if test_path else 'hash split'}), classes "
                     f"{', '.join(map(str, classes))}, {n} bytes each at most")


def text_of(ids):
    """classify: the bytes of a row of tokens (BOS and pads dropped) as text."""
    return bytes(i for i in ids.tolist() if i < 256).decode("utf-8", "replace")


# -----------------------------------------------------------------------------
# Trivial rules: the floor under every table
#
# A score means little until we know how far a rule that needs no learned attention gets. Each
# rule is fitted on training rows and scored on the test set, over the scored positions:
#   majority per position         the most frequent answer at each position
#   current token + position      the most frequent answer given the token at that position and
#                                 where it is: all that a model whose attention mixed nothing
#                                 could learn (it covers "copy the current token")
#   counting rule (dyck only)     "yes" iff the string has as many '(' as ')' (+ ends: and it
#                                 opens with '(' and closes with ')')


def _fit_majority(keys, answers, n_keys, n_answers):
    """The most frequent answer for each key (keys, answers: 1-D int64 of the same length)."""
    counts = torch.bincount(keys * n_answers + answers, minlength=n_keys * n_answers)
    return counts.view(n_keys, n_answers).argmax(1)  # (n_keys,)


def baselines(task, n_fit=20000, seed=0):
    """{rule: test accuracy} of the trivial rules above; for lm, the bigram loss (nats/byte)."""
    gen = torch.Generator(task.test[0].device).manual_seed(seed)
    fit = task.train if task.train is not None else task.get_batch(n_fit, gen)
    V, T = task.vocab_size, task.block_size

    def score(x, mask, table, key_fn):
        pred = table[key_fn(x)]  # (B, T)
        return float(((pred == y_test) & mask).sum() / mask.sum().clamp(min=1))

    x_test, y_test, m_test = task.test
    pos = lambda x: torch.arange(x.size(1), device=x.device).expand_as(x)  # noqa: E731
    rules = {"majority per position": pos, "current token + position": lambda x: pos(x) * V + x}
    x, y, m = fit
    out = {}
    for name, key_fn in rules.items():
        k = key_fn(x)[m]
        table = _fit_majority(k, y[m], T * V, V)
        out[name] = score(x_test, m_test, table, key_fn)
    if task.name == "dyck":  # rules that count but do not nest
        opens, closes = (x_test == 1).sum(1), (x_test == 2).sum(1)
        length = (x_test == 3).long().argmax(1)  # where '?' stands
        ends = (x_test[:, 0] == 1) & (x_test.gather(1, (length - 1)[:, None]).squeeze(1) == 2)
        for name, yes in (("counting rule", opens == closes),
                          ("counting rule + ends", (opens == closes) & ends)):
            pred = torch.where(yes, 4, 5)[:, None].expand_as(y_test)
            out[name] = float(((pred == y_test) & m_test).sum() / m_test.sum())
    if task.name == "lm":  # a loss table: the bigram model's cross-entropy, add-one smoothed
        counts = torch.bincount((x * V + y).flatten(), minlength=V * V).view(V, V).float() + 1
        logp = (counts / counts.sum(1, keepdim=True)).log()
        out = {"bigram loss": float(-logp[x_test, y_test].mean())}
    return out


def best_baseline(task):
    """(rule, score) of the strongest trivial rule: the floor a table row is read against."""
    b = baselines(task)
    if task.name == "lm":
        return next(iter(b.items()))
    return max(b.items(), key=lambda kv: kv[1])


# -----------------------------------------------------------------------------
# The registry: name -> (maker, CPU-friendly size, paper size, what the size means, recipe)
#
# The CPU size and the recipe are what `python mixit.py --task NAME` uses by default, on a laptop
# CPU; each value can be overridden on the command line (see `python mixit.py --help`). The quick
# tables (run_all.sh --quick) and the paper scale set their own sizes and recipes in run_all.sh;
# the README's task table shows the three side by side. Tasks with one scored token per sequence
# (dyck, needle, induction) get big batches: a row gives only one answer to learn from.

TASKS = {
    #            maker           cpu  paper  size means
    "add":       (make_add,        5,  10, "digits per operand",
                  dict(steps=1500, lr=3e-3, batch_size=128)),
    "modadd":    (make_modadd,    97, 599, "the modulus p",
                  dict(steps=1500, lr=3e-3, batch_size=512, weight_decay=0.1)),
    "memorize":  (make_memorize,  64, 512, "n: the table is n x n",
                  dict(steps=1500, lr=3e-3, batch_size=512)),
    "dyck":      (make_dyck,      10,  30, "max pairs of brackets",
                  dict(steps=600, lr=3e-3, batch_size=256)),
    "needle":    (make_needle,    10,  30, "max key-value pairs",
                  dict(steps=600, lr=3e-3, batch_size=256)),
    "copy":      (make_copy,      10,  20, "max string length",
                  dict(steps=1000, lr=3e-3, batch_size=128)),
    "induction": (make_induction, 32,  64, "context length",
                  dict(steps=600, lr=3e-3, batch_size=256)),
    "hop":       (make_hop,        3,  16, "hops k",
                  dict(steps=1000, lr=3e-3, batch_size=256)),
    "lm":        (make_lm,       128, 256, "context length in bytes",
                  dict(steps=1500, lr=2e-3, batch_size=32)),
    "classify":  (make_classify, 128, 256, "context length in bytes",
                  dict(steps=600, lr=2e-3, batch_size=64, causal=False)),
}


def make_task(name, size=0, device="cpu", data_seed=12345, n_test=2000, data_path="",
              test_path="", n_val=0):
    """Build a task by name. size 0 means the task's CPU-friendly default; n_val > 0 adds a
    validation set (with_validation)."""
    if name not in TASKS:
        raise UsageError(f"unknown task '{name}'; choose one of: {', '.join(TASKS)}")
    maker, cpu_size = TASKS[name][:2]
    size = size or cpu_size
    if test_path and name != "classify":
        raise UsageError(f"--test_data is only used by --task classify, not by {name}")
    if name == "classify":
        return make_classify(size, device, data_seed, n_test, data_path, test_path)
    if n_val and name in ("memorize", "classify"):
        raise UsageError(f"--val_size: {name} has no validation set (memorize is scored on its "
                         "training table itself; classify holds out only its test set)")
    if name == "lm":
        return make_lm(size, device, data_seed, n_test, data_path, n_val)
    if data_path:
        raise UsageError(f"--data is only used by --task lm and classify, not by {name}")
    if name == "modadd":
        return make_modadd(size, device, data_seed, n_test, n_val)
    return with_validation(maker(size, device, data_seed, n_test), n_val, data_seed)


def with_validation(task, n_val, data_seed):
    """Give a sampled task a validation set of n_val sequences, for choosing a learning rate
    without reading the test set (run_all.sh --lr-sweep): fresh draws from the task's own
    generator that fall on the *training* side of the hash split, so it shares no sequence with
    the test set. Its draws come from a generator of their own (seeded by data_seed + 2^32, a seed
    no run trains with), so the test set and the training stream stay exactly as without it. A
    validation row may also be drawn in training, as any two training draws may coincide
    (modadd and lm instead hold their validation set out of training: make_modadd, make_lm)."""
    if n_val:
        gen = torch.Generator(task.test[0].device).manual_seed((data_seed + 2 ** 32) % 2 ** 63)
        task.val = held_out_test(task.sample, n_val, gen, task.name, task.size, side=False)
    return task


if __name__ == "__main__":  # python tasks.py [-h]: say what this file is (mixit.py imports it)
    import sys
    if sys.argv[1:] not in ([], ["-h"], ["--help"]):
        print(f"error: unrecognized arguments: {' '.join(sys.argv[1:])} (python tasks.py takes "
              "only -h; train on a task with python mixit.py --task NAME)", file=sys.stderr)
        sys.exit(2)
    print(f"usage: python tasks.py [-h]\n{__doc__}\ntasks.py is a module that mixit.py imports; "
          "train on a task with\n    python mixit.py --task NAME --task_size N    "
          "(python mixit.py --help lists every flag)")
