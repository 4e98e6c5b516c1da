"""PPO math on hand-computed examples: GAE over sampled tokens, clipped losses, whitening, KL, entropy, value head."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from executors.training import ppo_core  # noqa: E402
from executors.training.ppo_core import (  # noqa: E402
    entropy_from_logits,
    explained_variance,
    gae,
    kl_estimate,
    masked_mean,
    masked_whiten,
    policy_loss,
    value_loss,
)

# gamma = lam = 0.5, three sampled tokens, values 0.5, reward 1 on the last one:
#   t2: delta = 1 + 0 - 0.5 = 0.5                      A2 = 0.5
#   t1: delta = 0 + 0.5 * 0.5 - 0.5 = -0.25            A1 = -0.25 + 0.25 * 0.5 = -0.125
#   t0: delta = 0 + 0.5 * 0.5 - 0.5 = -0.25            A0 = -0.25 + 0.25 * -0.125 = -0.28125
EXPECTED_ADVANTAGES = [-0.28125, -0.125, 0.5]
EXPECTED_RETURNS = [0.21875, 0.375, 1.0]


def test_gae_by_hand() -> None:
    adv, ret = gae([[0.0, 0.0, 1.0]], [[0.5, 0.5, 0.5]], [[1, 1, 1]], gamma=0.5, lam=0.5)
    assert adv.tolist() == [EXPECTED_ADVANTAGES]
    assert ret.tolist() == [EXPECTED_RETURNS]


def test_gae_skips_env_tokens_in_the_middle() -> None:
    # The same three sampled tokens with env tokens between them (and a prompt token first): the
    # env positions' rewards and values are ignored, they are not steps, and their advantage is 0.
    rewards = [[5.0, 0.0, 7.0, 0.0, 9.0, 1.0]]
    values = [[-8.0, 0.5, 100.0, 0.5, -3.0, 0.5]]
    mask = [[0, 1, 0, 1, 0, 1]]
    adv, ret = gae(rewards, values, mask, gamma=0.5, lam=0.5)
    assert adv.tolist() == [[0.0, EXPECTED_ADVANTAGES[0], 0.0, EXPECTED_ADVANTAGES[1], 0.0, 0.5]]
    assert ret.tolist() == [[0.0, EXPECTED_RETURNS[0], 0.0, EXPECTED_RETURNS[1], 0.0, 1.0]]


def test_gae_rows_are_independent_and_padding_is_terminal() -> None:
    # Row 2 is right-padded: its last sampled token is terminal (next value 0).
    #   t1: delta = 2 - 1 = 1, A1 = 1;  t0: delta = 0 + 0.5 * 1 - 1 = -0.5, A0 = -0.5 + 0.25 * 1 = -0.25
    rewards = [[0.0, 0.0, 1.0], [0.0, 2.0, 0.0]]
    values = [[0.5, 0.5, 0.5], [1.0, 1.0, 1.0]]
    mask = [[1, 1, 1], [1, 1, 0]]
    adv, ret = gae(rewards, values, mask, gamma=0.5, lam=0.5)
    assert adv.tolist() == [EXPECTED_ADVANTAGES, [-0.25, 1.0, 0.0]]
    assert ret.tolist() == [EXPECTED_RETURNS, [0.75, 2.0, 0.0]]


def test_gae_limits_lambda_one_and_zero() -> None:
    rewards, values, mask = [[1.0, 0.0, 2.0]], [[0.25, 1.0, 0.5]], [[1, 0, 1]]
    # gamma = lam = 1: the advantage is the sum of later rewards minus the value (Monte Carlo).
    adv, _ = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    assert adv.tolist() == [[3.0 - 0.25, 0.0, 2.0 - 0.5]]
    # lam = 0: one-step TD errors, bootstrapping across the env token to the next sampled one.
    adv, _ = gae(rewards, values, mask, gamma=1.0, lam=0.0)
    assert adv.tolist() == [[1.0 + 0.5 - 0.25, 0.0, 2.0 - 0.5]]


def test_gae_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="gamma"):
        gae([[1.0]], [[0.0]], [[1]], gamma=1.5, lam=0.9)
    with pytest.raises(ValueError, match="one shape"):
        gae([[1.0, 2.0]], [[0.0]], [[1]], gamma=1.0, lam=0.9)


def _log(ratios: list[float]) -> list[list[float]]:
    return [[math.log(r) for r in ratios]]


def test_policy_loss_inside_and_outside_the_clip() -> None:
    # clip 0.2. Per token (ratio, advantage) -> max(-A r, -A clip(r)):
    #   (1.5, +1) -> max(-1.5, -1.2) = -1.2  clipped
    #   (1.5, -1) -> max( 1.5,  1.2) =  1.5  not clipped (a bad move is not capped)
    #   (0.5, +1) -> max(-0.5, -0.8) = -0.5  not clipped
    #   (0.5, -1) -> max( 0.5,  0.8) =  0.8  clipped
    #   (1.1, +2) -> -2.2 inside the range
    #   (3.0, 100) masked out
    ratios = [1.5, 1.5, 0.5, 0.5, 1.1, 3.0]
    advantages = [[1.0, -1.0, 1.0, -1.0, 2.0, 100.0]]
    mask = [[1, 1, 1, 1, 1, 0]]
    logprobs = torch.tensor(_log(ratios), requires_grad=True)
    old = torch.zeros(1, 6)
    loss, clip_fraction, approx_kl = policy_loss(logprobs, old, advantages, mask, clip_range=0.2)
    assert float(loss.detach()) == pytest.approx((-1.2 + 1.5 - 0.5 + 0.8 - 2.2) / 5)
    assert float(clip_fraction) == pytest.approx(2 / 5)
    expected_kl = sum((r - 1) - math.log(r) for r in ratios[:5]) / 5
    assert float(approx_kl) == pytest.approx(expected_kl)
    loss.backward()
    grad = logprobs.grad[0].tolist()
    # d/dlogp of -A r is -A r; clipped tokens and the masked token get no gradient.
    assert grad[0] == 0.0 and grad[3] == 0.0 and grad[5] == 0.0
    assert grad[1] == pytest.approx(1.5 / 5)
    assert grad[2] == pytest.approx(-0.5 / 5)
    assert grad[4] == pytest.approx(-2.2 / 5)


def test_policy_loss_at_ratio_one_is_minus_mean_advantage() -> None:
    loss, clip_fraction, approx_kl = policy_loss([[0.0, 0.0]], [[0.0, 0.0]], [[1.0, 3.0]], [[1, 1]], 0.2)
    assert float(loss.detach()) == -2.0 and float(clip_fraction) == 0.0 and float(approx_kl) == 0.0


def test_value_loss_clipped_by_hand() -> None:
    # clip 0.5, old values 0:
    #   v=2.0, R=3: (2-3)^2 = 1; clipped v = 0.5: (0.5-3)^2 = 6.25 -> 6.25 (clipped term larger)
    #   v=0.1, R=1: inside the range, 0.81 both ways
    #   v=3.0, R=1: (3-1)^2 = 4; clipped 0.5: 0.25 -> 4 (the unclipped error is kept)
    #   masked token ignored
    values = torch.tensor([[2.0, 0.1, 3.0, -40.0]], requires_grad=True)
    old, returns, mask = [[0.0] * 4], [[3.0, 1.0, 1.0, 50.0]], [[1, 1, 1, 0]]
    loss, clip_fraction = value_loss(values, old, returns, mask, clip_range=0.5)
    assert float(loss.detach()) == pytest.approx(0.5 * (6.25 + 0.81 + 4.0) / 3)
    assert float(clip_fraction) == pytest.approx(1 / 3)
    loss.backward()
    grad = values.grad[0].tolist()
    assert grad[0] == 0.0 and grad[3] == 0.0  # clipped, masked
    assert grad[1] == pytest.approx((0.1 - 1.0) / 3)
    assert grad[2] == pytest.approx((3.0 - 1.0) / 3)
    unclipped, _ = value_loss(values, old, returns, mask, clip_range=None)
    assert float(unclipped.detach()) == pytest.approx(0.5 * (1.0 + 0.81 + 4.0) / 3)


def test_masked_mean_and_whiten_ignore_masked_positions() -> None:
    mask = [[1, 0, 1, 1]]
    std = math.sqrt(8 / 3)  # values 1, 3, 5: mean 3, population variance 8/3
    for masked_value in (100.0, -7.0):
        x = [[1.0, masked_value, 3.0, 5.0]]
        assert float(masked_mean(x, mask)) == 3.0
        white = masked_whiten(x, mask)[0].tolist()
        assert white == pytest.approx([-2 / std, 0.0, 0.0, 2 / std], abs=1e-6)
        kept_mean = masked_whiten(x, mask, shift_mean=False)[0].tolist()
        assert kept_mean == pytest.approx([3 - 2 / std, 0.0, 3.0, 3 + 2 / std], abs=1e-6)
    assert float(masked_mean([[4.0, 5.0]], [[0, 0]])) == 0.0


def test_kl_estimators() -> None:
    logprobs, ref = torch.tensor([[-1.0, -2.0]]), torch.tensor([[-2.0, -1.0]])
    assert kl_estimate(logprobs, ref, "k1").tolist() == [[1.0, -1.0]]
    assert kl_estimate(logprobs, ref, "k2").tolist() == [[0.5, 0.5]]
    k3 = kl_estimate(logprobs, ref, "k3")[0].tolist()
    assert k3 == pytest.approx([math.exp(-1) - 1 + 1, math.exp(1) - 1 - 1])
    assert float(kl_estimate(ref, ref, "k3").abs().sum()) == 0.0
    with pytest.raises(ValueError, match="k4"):
        kl_estimate(logprobs, ref, "k4")  # type: ignore[arg-type]


def test_k1_and_k3_average_to_the_true_kl() -> None:
    p = torch.tensor([0.7, 0.2, 0.1])
    q = torch.tensor([0.4, 0.4, 0.2])
    true_kl = float((p * (p / q).log()).sum())
    logp, logq = p.log(), q.log()
    for kind in ("k1", "k3"):
        expectation = float((p * kl_estimate(logp, logq, kind)).sum())
        assert expectation == pytest.approx(true_kl, rel=1e-5)


def test_entropy_from_logits() -> None:
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [50.0, 0.0, 0.0, 0.0]])
    entropy = entropy_from_logits(logits).tolist()
    assert entropy[0] == pytest.approx(math.log(4))
    assert entropy[1] == pytest.approx(0.0, abs=1e-12)


def test_explained_variance() -> None:
    assert explained_variance([[0.0, 0.0]], [[1.0, 3.0]], [[1, 1]]) == pytest.approx(0.0)
    assert explained_variance([[1.0, 3.0, 5.0]], [[1.0, 3.0, 0.0]], [[1, 1, 0]]) == 1.0
    assert math.isnan(explained_variance([[1.0]], [[2.0]], [[1]]))


def test_value_head_starts_at_zero_and_learns() -> None:
    head = ppo_core.ValueHead(8)
    hidden = torch.randn(2, 3, 8)
    assert head(hidden).shape == (2, 3)
    assert float(head(hidden).detach().abs().sum()) == 0.0
    assert head.backbone is None and sum(p.numel() for p in head.parameters()) == 9
    with pytest.raises(ValueError, match="hidden_size"):
        ppo_core.ValueHead(0)
    with pytest.raises(ValueError, match="policy_hidden"):
        head.values(torch.zeros(1, 2, dtype=torch.long), torch.ones(1, 2))


def test_separate_value_model_is_its_own_copy() -> None:
    from executors.models.tiny import tiny_random_model

    model, _ = tiny_random_model(seed=0)
    head = ppo_core.ValueHead.separate(model)
    assert head.backbone is not model
    ids = torch.tensor([[1, 5, 6, 7]])
    values = head.values(ids, torch.ones_like(ids))
    assert values.shape == (1, 4)
    own = {id(p) for p in head.parameters()}
    assert not own & {id(p) for p in model.parameters()}
    import pickle

    assert type(pickle.loads(pickle.dumps(ppo_core.ValueHead(4)))).__name__ == "ValueHead"
