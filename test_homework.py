"""
The public tests of the homework (homework.py): a student gets them with the handout.

    python -m pytest -q --tb=short test_homework.py                  # every part
    python -m pytest -q --tb=short test_homework.py -k masked_loss   # one part

The tests of a part are named test_<part>_... (MixingAttention.forward: test_mixing_attention_,
CausalSelfAttention.forward: test_causal_self_attention_), so that -k picks them. Each needs no
other part: where the part would call another (MixingAttention draws its matrix with
mixing_matrices), the test puts a fixed stand-in of its own in that place. Until a part is
written its tests fail with "NotImplementedError: homework: PART".

They check properties (shapes, causality, rows that sum to one) and small examples worked out
by hand, and hold no second implementation of any part: a test that needs one is a grading
test and stays with the teacher (test_mixit.py). Passing these is needed, not enough.
"""

import math

import pytest
import torch

import mixit
import tasks


def config(variant="standard", *flags):
    """A tiny model's config, as the command line builds it: width 32, 4 heads of 8 channels,
    2 layers, 8 positions."""
    return mixit.resolve_config(mixit.parse_args([
        "--variant", variant, "--task", "hop", "--block_size", "8", "--n_embd", "32",
        "--n_head", "4", "--n_layer", "2", "--device", "cpu", "--dtype", "float32", *flags]))


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# -----------------------------------------------------------------------------
# mixing_matrices


def test_mixing_matrices_are_lower_triangular_and_their_rows_sum_to_one():
    """Shape (n_head, T, T), float32, nothing above the diagonal, every row sums to 1, and
    some entries are negative (this is not a softmax)."""
    A = mixit.mixing_matrices(4, 16, 8, torch.Generator().manual_seed(0), sink=False)
    assert A.shape == (4, 16, 16) and A.dtype == torch.float32
    assert (A.triu(1) == 0).all()
    assert torch.allclose(A.sum(-1), torch.ones(4, 16), atol=1e-5)
    assert (A < 0).any()


def test_mixing_matrices_by_hand_one_position_and_the_sink():
    """Worked by hand: at T = 1 the centred noise is 0, so every head is [[1]]. With the sink
    at T = 3, head 0 is [[1, 0, 0], [.5, .5, 0], [.5, 0, .5]] and head 1 is random mixing."""
    gen = torch.Generator().manual_seed(0)
    assert torch.equal(mixit.mixing_matrices(3, 1, 8, gen, sink=False), torch.ones(3, 1, 1))
    A = mixit.mixing_matrices(2, 3, 8, gen, sink=True)
    assert A[0].tolist() == [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5]]
    assert A[1, 1:].tril(-1).abs().sum() > 0


def test_mixing_matrices_bidirectional_are_full_and_their_rows_sum_to_one():
    """causal=False: entries above the diagonal too; rows still sum to 1."""
    A = mixit.mixing_matrices(4, 12, 8, torch.Generator().manual_seed(0), sink=False, causal=False)
    assert (A.triu(1) != 0).sum() == 4 * 12 * 11 // 2
    assert torch.allclose(A.sum(-1), torch.ones(4, 12), atol=1e-5)


def test_mixing_matrices_follow_the_generator():
    """The same seed draws the same matrices; another seed other ones."""
    def draw(seed):
        return mixit.mixing_matrices(4, 16, 8, torch.Generator().manual_seed(seed))
    assert torch.equal(draw(0), draw(0)) and not torch.equal(draw(0), draw(1))


# -----------------------------------------------------------------------------
# MixingAttention.forward: the layer's matrix A is the test's own (mixing_matrices stands aside)


def mixing_layer(monkeypatch, A, *flags):
    """A MixiT attention layer (width 32, 4 heads, 8 positions) whose fixed matrix is A
    (4, 8, 8), put in place of mixing_matrices for this test."""
    monkeypatch.setattr(mixit, "mixing_matrices", lambda *args, **kwargs: A.clone())
    return mixit.MixingAttention(config("mixit", *flags), torch.Generator())


def test_mixing_attention_returns_y_and_its_matrix_on_request(monkeypatch):
    """(y, None): y (B, T, C). With return_att the map is A itself, once per batch row; a
    shorter input uses A's top-left corner."""
    A = randn(4, 8, 8).tril()
    attn = mixing_layer(monkeypatch, A)
    with torch.no_grad():
        y, att = attn(randn(3, 8, 32))
        assert y.shape == (3, 8, 32) and att is None
        _, att = attn(randn(3, 5, 32), return_att=True)
    assert att.shape == (3, 4, 5, 5) and all(torch.equal(a, A[:, :5, :5]) for a in att)


def test_mixing_attention_with_the_identity_keeps_tokens_apart(monkeypatch):
    """A = I mixes nothing: changing token 3's input changes token 3's output and no other."""
    attn = mixing_layer(monkeypatch, torch.eye(8).expand(4, 8, 8))
    x = randn(2, 8, 32)
    moved = x.clone()
    moved[:, 3] += 1
    with torch.no_grad():
        changed = (attn(moved)[0] - attn(x)[0]).abs().amax(-1) > 1e-6  # (B, T)
    assert changed[:, 3].all() and not changed[:, :3].any() and not changed[:, 4:].any()


def test_mixing_attention_by_hand_a_shift_reads_the_previous_token(monkeypatch):
    """Worked by hand: A[h, t, t-1] = 1 moves each token's value one place on, so position t
    outputs what the identity gives at t - 1."""
    shift = torch.diag(torch.ones(7), -1).expand(4, 8, 8)
    x = randn(2, 8, 32)
    with torch.no_grad():
        moved = mixing_layer(monkeypatch, shift)
        still = mixing_layer(monkeypatch, torch.eye(8).expand(4, 8, 8))
        still.load_state_dict(moved.state_dict() | {"A": still.A})
        assert torch.allclose(moved(x)[0][:, 1:], still(x)[0][:, :-1], atol=1e-6)


def test_mixing_attention_gives_head_h_the_channels_of_head_h(monkeypatch):
    """Head h holds channels h*8 to h*8+8 of the values. With A zero in heads 1-3, the value
    channels 8-31 cannot matter, and channels 0-7 do."""
    A = torch.zeros(4, 8, 8)
    A[0] = torch.eye(8)
    attn = mixing_layer(monkeypatch, A)
    x = randn(2, 8, 32)
    with torch.no_grad():
        before = attn(x)[0]
        attn.v_proj.weight[8:] += 1.0
        assert torch.allclose(attn(x)[0], before, atol=1e-6)
        attn.v_proj.weight[:8] += 1.0
        assert not torch.allclose(attn(x)[0], before, atol=1e-3)


def test_mixing_attention_scales_v_and_o_by_mult(monkeypatch):
    """Without biases, --mixit_mult 2 doubles the values and doubles the output: 4 times y. The
    factors are put on a built model (mixit.apply_shipped_factors), not into the layer itself."""
    A = randn(4, 8, 8).tril()
    monkeypatch.setattr(mixit, "mixing_matrices", lambda *args, **kwargs: A.clone())
    one, two = (mixit.GPT(config("mixit", *flags), vocab_size=10).blocks[0].attn
                for flags in ((), ("--mixit_mult", "2")))
    x = randn(2, 8, 32, seed=1)
    with torch.no_grad():
        for layer in (one, two):
            layer.v_proj.bias.zero_()
            layer.o_proj.bias.zero_()
        two.load_state_dict(one.state_dict())
        assert torch.allclose(two(x)[0], 4 * one(x)[0], atol=1e-5)


def test_mixing_attention_never_lets_a_pad_reach_a_real_token(monkeypatch):
    """With a full A (every token mixes every other), what a pad holds changes no real token."""
    attn = mixing_layer(monkeypatch, torch.full((4, 8, 8), 1 / 8), "--causal", "false")
    keep = torch.ones(2, 8, dtype=torch.bool)
    keep[0, 6:], keep[1, 0] = False, False
    x = randn(2, 8, 32)
    moved = x.clone()
    moved[~keep] += 5.0
    with torch.no_grad():
        y, after = attn(x, keep=keep)[0], attn(moved, keep=keep)[0]
        assert torch.allclose(after[keep], y[keep], atol=1e-5)
        assert not torch.allclose(attn(moved)[0][keep], attn(x)[0][keep], atol=1e-3)


# -----------------------------------------------------------------------------
# apply_rotary


def test_apply_rotary_keeps_the_shape_and_every_length():
    """A turn: same shape, the same length for every query, and position 0 (angle 0) unchanged."""
    x = randn(2, 3, 10, 16)
    cos, sin = mixit.rotary_tables(10, 16)
    r = mixit.apply_rotary(x, cos, sin)
    assert r.shape == x.shape
    assert torch.allclose(r.norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    assert torch.allclose(r[:, :, 0], x[:, :, 0]) and not torch.allclose(r[:, :, 1:], x[:, :, 1:])


def test_apply_rotary_by_hand_a_quarter_turn():
    """Worked by hand, one pair of channels: a quarter turn takes (1, 0) to (0, 1) and (0, 1) to
    (-1, 0); a half turn takes (1, 0) to (-1, 0)."""
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]).view(1, 1, 3, 2)  # T = 3 positions
    angle = torch.tensor([[math.pi / 2], [math.pi / 2], [math.pi]])  # (T, 1)
    r = mixit.apply_rotary(x, angle.cos(), angle.sin()).view(3, 2)
    assert torch.allclose(r, torch.tensor([[0.0, 1.0], [-1.0, 0.0], [-1.0, 0.0]]), atol=1e-6)


def test_apply_rotary_turns_add_up():
    """Angle 0 is the identity; turning by a twice is turning by 2a."""
    x = randn(2, 2, 5, 8)
    a = torch.rand(5, 4, generator=torch.Generator().manual_seed(1)) * 3
    assert torch.allclose(mixit.apply_rotary(x, torch.ones(5, 4), torch.zeros(5, 4)), x)
    twice = mixit.apply_rotary(mixit.apply_rotary(x, a.cos(), a.sin()), a.cos(), a.sin())
    assert torch.allclose(twice, mixit.apply_rotary(x, (2 * a).cos(), (2 * a).sin()), atol=1e-5)


def test_apply_rotary_scores_depend_on_the_distance_only():
    """The same q at position i and k at position j score alike for every pair at the same
    distance i - j."""
    T, hd = 12, 16
    q, k = randn(hd), randn(hd, seed=1)
    cos, sin = mixit.rotary_tables(T, hd)
    scores = mixit.apply_rotary(q.expand(1, 1, T, hd), cos, sin)[0, 0] @ \
        mixit.apply_rotary(k.expand(1, 1, T, hd), cos, sin)[0, 0].T  # (T, T)
    for d in range(T):
        assert torch.allclose(scores.diagonal(-d), scores.diagonal(-d)[:1].expand(T - d), atol=1e-4)


# -----------------------------------------------------------------------------
# CausalSelfAttention.forward: learned positions, so that apply_rotary is not needed


def attention(*flags):
    return mixit.CausalSelfAttention(config("standard", "--positions", "learned", *flags))


def test_causal_self_attention_returns_y_and_on_request_weights_whose_rows_sum_to_one():
    """(y, None) with y (B, T, C); with return_att also the weights (B, H, T, T): non-negative,
    0 above the diagonal, rows that sum to 1, and the same y."""
    attn, x = attention(), randn(2, 8, 32)
    with torch.no_grad():
        y, att = attn(x)
        assert y.shape == (2, 8, 32) and att is None
        y2, att = attn(x, return_att=True)
    assert att.shape == (2, 4, 8, 8) and (att >= 0).all() and (att.triu(1) == 0).all()
    assert torch.allclose(att.sum(-1), torch.ones(2, 4, 8), atol=1e-5)
    assert torch.allclose(y, y2, atol=1e-5)


def test_causal_self_attention_later_tokens_change_no_earlier_output():
    """Causal: changing token 5 changes outputs 5-7 only. Bidirectional: it changes them all."""
    x = randn(2, 8, 32)
    moved = x.clone()
    moved[:, 5] += 1
    for causal in ("true", "false"):
        attn = attention("--causal", causal)
        with torch.no_grad():
            changed = (attn(moved)[0] - attn(x)[0]).abs().amax(-1) > 1e-6  # (B, T)
        assert changed[:, 5:].all() and changed[:, :5].any() == (causal == "false"), causal


def test_causal_self_attention_by_hand_equal_scores_average_uniformly():
    """Worked by hand: with q_proj zero every score is 0, so query t puts 1/(t+1) on each of
    the t+1 keys it sees; token 0 sees only itself: its output is o_proj(v_proj(x_0))."""
    attn, x = attention(), randn(1, 8, 32)
    with torch.no_grad():
        attn.q_proj.weight.zero_()
        attn.q_proj.bias.zero_()
        y, att = attn(x, return_att=True)
        assert torch.allclose(y[:, 0], attn.o_proj(attn.v_proj(x[:, 0])), atol=1e-5)
    uniform = torch.ones(8, 8).tril() / torch.arange(1, 9)[:, None]
    assert torch.allclose(att[0], uniform.expand(4, 8, 8), atol=1e-6)


def test_causal_self_attention_by_hand_the_score_is_divided_by_sqrt_d_head():
    """Worked by hand: head 0's query is e_0 and key j is x_j[0] e_0. With x_1[0] = ln(3)
    sqrt(8) (d_head = 8), query 1 scores keys 0 and 1 as 0 and ln 3: weights 1/4 and 3/4."""
    attn = attention()
    x = torch.zeros(1, 2, 32)
    x[0, 1, 0] = math.log(3) * math.sqrt(8)
    with torch.no_grad():
        for p in (attn.q_proj, attn.k_proj):
            p.weight.zero_()
            p.bias.zero_()
        attn.q_proj.bias[0] = 1.0
        attn.k_proj.weight[0, 0] = 1.0
        _, att = attn(x, return_att=True)
    assert torch.allclose(att[0, 0, 1], torch.tensor([0.25, 0.75]), atol=1e-6)


def test_causal_self_attention_hides_pads_from_real_tokens():
    """No real token puts weight on a pad, rows still sum to 1, and what a pad holds changes no
    real token's output."""
    attn = attention("--causal", "false")
    keep = torch.ones(2, 8, dtype=torch.bool)
    keep[0, 5:], keep[1, 2] = False, False
    x = randn(2, 8, 32)
    moved = x.clone()
    moved[~keep] += 5.0
    with torch.no_grad():
        y, att = attn(x, return_att=True, keep=keep)
        after, _ = attn(moved, keep=keep)
    real_to_pad = (keep[:, None, :, None] & ~keep[:, None, None, :]).expand_as(att)
    assert (att[real_to_pad] == 0).all()
    assert torch.allclose(att.sum(-1), torch.ones(2, 4, 8), atol=1e-5)
    assert torch.allclose(after[keep], y[keep], atol=1e-5)


def test_causal_self_attention_turns_q_and_k_with_the_tables_cut_to_the_input(monkeypatch):
    """With RoPE the layer calls apply_rotary with (B, H, T, 8) and the tables' first T rows,
    here a stand-in that turns nothing: the output is then the one without RoPE."""
    calls = []

    def no_turn(x, cos, sin):
        calls.append((tuple(x.shape), tuple(cos.shape), tuple(sin.shape)))
        return x
    monkeypatch.setattr(mixit, "apply_rotary", no_turn)
    rope, plain = mixit.CausalSelfAttention(config("standard")), attention()
    plain.load_state_dict(rope.state_dict())
    x = randn(2, 5, 32)
    with torch.no_grad():
        assert torch.allclose(rope(x)[0], plain(x)[0], atol=1e-6)
    assert calls and all(c == ((2, 4, 5, 8), (5, 4), (5, 4)) for c in calls)


# -----------------------------------------------------------------------------
# freeze


def model():
    return mixit.GPT(config("standard"), vocab_size=10)  # RoPE: no wpe


def test_freeze_by_hand_the_head_is_32_by_10():
    """Worked by hand: the head is a 32 x 10 matrix without bias, so freezing it freezes 320
    numbers, and the counts add up to the model's size."""
    m = model()
    n_train, n_frozen = mixit.freeze(m, ["head"], verbose=False)
    assert {n for n, p in m.named_parameters() if not p.requires_grad} == {"lm_head.weight"}
    assert n_frozen == 320 and n_train + n_frozen == sum(p.numel() for p in m.parameters())


def test_freeze_of_q_freezes_every_layers_query_weights_and_biases():
    """"q" covers the query projection of both layers, its weight and its bias, and nothing else."""
    m = model()
    mixit.freeze(m, ["q"], verbose=False)
    assert {n for n, p in m.named_parameters() if not p.requires_grad} == {
        f"blocks.{i}.attn.q_proj.{kind}" for i in range(2) for kind in ("weight", "bias")}


def test_freeze_of_nothing_trains_everything_and_says_so_in_one_line(capsys):
    """No part: every parameter trains, (size, 0); verbose prints one line, starting with label."""
    m = model()
    assert mixit.freeze(m, [], label="mine") == (sum(p.numel() for p in m.parameters()), 0)
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("mine")


def test_freeze_refuses_a_part_the_model_lacks():
    """A RoPE model has no learned positions: freezing wpe is an error that names it."""
    with pytest.raises(tasks.UsageError, match="wpe"):
        mixit.freeze(model(), ["wpe"], verbose=False)


# -----------------------------------------------------------------------------
# masked_loss


def test_masked_loss_by_hand_two_scored_positions():
    """Worked by hand, 2 classes: logits (0, 0) give p = 1/2, loss ln 2; logits (ln 3, 0) with
    answer 0 give p = 3/4, loss ln(4/3). The mean over these two is ln(8/3) / 2, whatever the
    unscored position holds."""
    logits = torch.tensor([[[0.0, 0.0], [math.log(3), 0.0], [50.0, -50.0]]])
    y = torch.tensor([[1, 0, 1]])
    mask = torch.tensor([[True, True, False]])
    loss = mixit.masked_loss(logits, y, mask)
    assert loss.shape == () and loss.dtype == torch.float32
    assert loss.item() == pytest.approx(math.log(8 / 3) / 2, rel=1e-6)


def test_masked_loss_of_uniform_logits_is_log_vocab_and_of_no_answer_is_zero():
    """Uniform logits over 7 classes lose ln 7 at every position; a batch with no answer loses 0."""
    y = torch.zeros(2, 4, dtype=torch.long)
    mask = torch.tensor([[True, False, True, True], [False, False, True, False]])
    assert mixit.masked_loss(torch.zeros(2, 4, 7), y, mask).item() == pytest.approx(math.log(7))
    assert mixit.masked_loss(randn(2, 4, 7), y, torch.zeros(2, 4, dtype=torch.bool)).item() == 0


def test_masked_loss_reads_and_trains_only_the_scored_positions():
    """Noise at the unscored positions changes nothing, and gets no gradient; bfloat16 logits
    give a float32 loss."""
    logits = randn(3, 6, 5).requires_grad_()
    y = torch.randint(0, 5, (3, 6), generator=torch.Generator().manual_seed(1))
    mask = torch.rand(3, 6, generator=torch.Generator().manual_seed(2)) < 0.5
    mask[0, 0] = True
    loss = mixit.masked_loss(logits, y, mask)
    noisy = logits.detach() + 100 * randn(3, 6, 5, seed=3) * ~mask[:, :, None]
    assert torch.allclose(mixit.masked_loss(noisy, y, mask), loss)
    loss.backward()
    per_position = logits.grad.abs().sum(-1)
    assert (per_position[~mask] == 0).all() and (per_position[mask] > 0).all()
    assert mixit.masked_loss(logits.detach().bfloat16(), y, mask).dtype == torch.float32


# -----------------------------------------------------------------------------
# The tasks: shapes and tokens, the generator, and what can be checked without solving them


def draw(sample, size, B=256, seed=0):
    return sample(B, torch.Generator().manual_seed(seed), size)


@pytest.mark.parametrize("hops", [1, 3])
def test_sample_hop_shapes_tokens_and_no_repeats(hops):
    """(B, 16 + 4k) int64 x and y, bool mask; tokens a..d; no token equals the one before; y is 0
    where nothing is scored."""
    x, y, mask = draw(tasks.sample_hop, hops)
    assert x.shape == y.shape == mask.shape == (256, tasks.hop_length(hops))
    assert x.dtype == y.dtype == torch.int64 and mask.dtype == torch.bool
    for t in (x, y):
        assert 0 <= t.min() and t.max() < tasks.HOP_SYMBOLS
    assert (x[:, 1:] != x[:, :-1]).all() and (y[~mask] == 0).all()


def test_sample_hop_follows_the_generator():
    """The same seed draws the same batch; another seed another one."""
    a, b, c = (draw(tasks.sample_hop, 2, seed=seed) for seed in (0, 0, 1))
    assert all(torch.equal(s, t) for s, t in zip(a, b)) and not torch.equal(a[0], c[0])


@pytest.mark.parametrize("hops", [1, 3])
def test_sample_hop_scores_a_position_only_if_its_token_came_before(hops):
    """A first hop needs an earlier occurrence of the token: position 0 is never scored, and
    at k = 1 a position is scored exactly when its token came before. At k = 1 the answer is
    never the current token (no token equals the one before it). Most late positions count."""
    x, y, mask = draw(tasks.sample_hop, hops, B=64)
    came_before = torch.tensor([[row[i] in row[:i] for i in range(len(row))] for row in x.tolist()])
    assert not mask[:, 0].any() and not (mask & ~came_before).any()
    if hops == 1:
        assert torch.equal(mask, came_before) and not (y == x)[mask].any()
    assert mask[:, -4:].float().mean() > 0.5


def test_sample_add_shapes_and_the_last_digit_by_hand():
    """N = 3: x is a a a + b b b = s s s (y: the same shifted by one, ending in the 4th digit).
    The answers are the 4 last positions of y; the first answer digit is (a_0 + b_0) mod 10,
    the last one (the final carry) is 0 or 1."""
    x, y, mask = draw(tasks.sample_add, 3)
    assert x.shape == (256, 11) and x.dtype == torch.int64 and mask.dtype == torch.bool
    assert (x[:, 3] == 10).all() and (x[:, 7] == 11).all()
    assert torch.equal(mask, torch.tensor([False] * 7 + [True] * 4).expand(256, 11))
    assert torch.equal(y[:, 7], (x[:, 0] + x[:, 4]) % 10) and (y[:, 10] <= 1).all()
    assert torch.equal(x[:, 1:], y[:, :-1])


def test_sample_add_follows_the_generator():
    """The same seed draws the same batch; another seed another one."""
    a, b, c = (draw(tasks.sample_add, 3, seed=seed) for seed in (0, 0, 1))
    assert all(torch.equal(s, t) for s, t in zip(a, b)) and not torch.equal(a[0], c[0])


def test_sample_needle_scores_one_value_after_the_query():
    """N = 4: one scored position per row, the query (256 + 4 + k), and its answer is a value
    (1-255) stored in the row."""
    x, y, mask = draw(tasks.sample_needle, 4)
    assert x.shape == (256, 9) and (mask.sum(1) == 1).all() and torch.equal(x[:, 1:], y[:, :-1])
    assert ((x[mask] >= 260) & (x[mask] < 264)).all()
    assert ((y[mask] >= 1) & (y[mask] <= 255)).all() and (x == y[mask][:, None]).any(1).all()
    a, b = draw(tasks.sample_needle, 4, seed=1), draw(tasks.sample_needle, 4, seed=1)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], x)


def test_sample_induction_scores_the_last_position_with_a_token_of_the_context():
    """Context 6: one scored position, the last; its answer is a token of the context, never the
    query itself. The same seed draws the same batch."""
    x, y, mask = draw(tasks.sample_induction, 6)
    assert x.shape == (256, 7) and torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(mask, torch.tensor([False] * 6 + [True]).expand(256, 7))
    assert (x[:, :-1] == y[:, -1:]).any(1).all() and (y[:, -1] != x[:, -1]).all()
    a, b = draw(tasks.sample_induction, 6, seed=1), draw(tasks.sample_induction, 6, seed=1)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], x)


def test_sample_dyck_answers_yes_or_no_after_the_question_mark():
    """One scored position per row, the '?' (3), answered 'yes' (4) or 'no' (5), both common.
    Worked by hand: a string that opens with ')' (2) is never balanced."""
    x, y, mask = draw(tasks.sample_dyck, 3, B=512)
    assert x.shape == (512, 7) and (mask.sum(1) == 1).all() and (x[mask] == 3).all()
    assert ((y[mask] == 4) | (y[mask] == 5)).all() and 0.2 < (y[mask] == 4).float().mean() < 0.8
    assert (y[mask][x[:, 0] == 2] == 5).all()
    a, b = draw(tasks.sample_dyck, 3, seed=1), draw(tasks.sample_dyck, 3, seed=1)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], x)
