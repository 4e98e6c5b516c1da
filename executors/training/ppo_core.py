"""The math of actor-critic PPO over token sequences: GAE, clipped losses, KL estimates and the value head.

Every per-token tensor here has shape ``[batch, time]`` and comes with a ``mask`` of the same
shape: 1 where the model sampled the token (trained on), 0 for prompt, env and padding tokens.
Masked positions never contribute to a loss, a mean or a variance, and GAE skips them
entirely: the time axis of an episode is its sampled tokens only, so an env reply between two
turns is not a step (no discount, no bootstrap through it).

torch is imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import torch

    class ValueHead(torch.nn.Module):
        """Type stub; the real class is built on first use (see :func:`_value_head_class`)."""

        hidden_size: int
        backbone: Any
        linear: torch.nn.Linear

        def __init__(self, hidden_size: int, backbone: Any = None) -> None: ...
        def forward(self, hidden_states: torch.Tensor) -> torch.Tensor: ...
        def values(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            policy_hidden: torch.Tensor | None = None,
        ) -> torch.Tensor: ...
        @classmethod
        def separate(cls, model: Any) -> ValueHead: ...


__all__ = [
    "KLKind",
    "ValueHead",
    "entropy_from_logits",
    "explained_variance",
    "gae",
    "kl_estimate",
    "masked_mean",
    "masked_var",
    "masked_whiten",
    "policy_loss",
    "value_loss",
]

KLKind = Literal["k1", "k2", "k3"]
"""Which per-token estimator of KL(policy || reference): see :func:`kl_estimate`."""


def _tensor(x: Any, like: Any = None) -> torch.Tensor:
    import torch

    if isinstance(x, torch.Tensor):
        return x
    dtype = torch.float32 if like is None else like.dtype
    return torch.as_tensor(x, dtype=dtype)


def _check_shapes(**tensors: torch.Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"Expected tensors of one shape, got {shapes}")


def gae(rewards: Any, values: Any, mask: Any, gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation over the sampled tokens of each row.

    The steps of row ``b`` are the positions where ``mask[b] == 1``, in order. Masked positions
    (prompt, env replies, padding) are skipped: they are not steps, their rewards and values
    are ignored, and the next step's value is bootstrapped straight across them. The value
    after the last step is 0 (the episode ended). Per-turn rewards belong on that turn's last
    sampled token.

    Args:
        rewards: ``[batch, time]`` rewards (plus any per-token KL penalty).
        values: ``[batch, time]`` value estimates for the state before each token.
        mask: ``[batch, time]``, 1 for sampled tokens, 0 elsewhere.
        gamma: Discount per sampled token.
        lam: GAE lambda.

    Returns:
        ``(advantages, returns)``, both ``[batch, time]`` float tensors, 0 at masked positions;
        ``returns = advantages + values`` on sampled tokens.

    Example:
        >>> adv, ret = gae([[0.0, 5.0, 1.0]], [[0.5, 9.0, 0.5]], [[1, 0, 1]], gamma=1.0, lam=1.0)
        >>> adv.tolist(), ret.tolist()
        ([[0.5, 0.0, 0.5]], [[1.0, 0.0, 1.0]])
    """
    import torch

    if not 0.0 <= gamma <= 1.0 or not 0.0 <= lam <= 1.0:
        raise ValueError(f"Expected gamma and lam in [0, 1], got gamma={gamma!r}, lam={lam!r}")
    rewards_t = _tensor(rewards).float()
    values_t = _tensor(values).float()
    mask_t = _tensor(mask).bool()
    _check_shapes(rewards=rewards_t, values=values_t, mask=mask_t)
    if rewards_t.dim() != 2:
        raise ValueError(f"Expected [batch, time] tensors, got shape {tuple(rewards_t.shape)}")
    advantages = torch.zeros_like(rewards_t)
    next_value = torch.zeros(rewards_t.shape[0], dtype=rewards_t.dtype, device=rewards_t.device)
    next_advantage = torch.zeros_like(next_value)
    for t in range(rewards_t.shape[1] - 1, -1, -1):
        step = mask_t[:, t]
        delta = rewards_t[:, t] + gamma * next_value - values_t[:, t]
        advantage = delta + gamma * lam * next_advantage
        advantages[:, t] = torch.where(step, advantage, torch.zeros_like(advantage))
        next_value = torch.where(step, values_t[:, t], next_value)
        next_advantage = torch.where(step, advantage, next_advantage)
    returns = torch.where(mask_t, advantages + values_t, torch.zeros_like(advantages))
    return advantages, returns


def masked_mean(x: Any, mask: Any, dim: int | None = None) -> torch.Tensor:
    """Mean of ``x`` over positions where ``mask`` is 1 (0 where nothing is unmasked).

    Example:
        >>> float(masked_mean([[1.0, 100.0, 3.0]], [[1, 0, 1]]))
        2.0
    """
    import torch

    x_t = _tensor(x).float()
    mask_t = _tensor(mask, like=x_t).to(x_t.dtype)
    _check_shapes(x=x_t, mask=mask_t)
    if dim is None:
        total, count = (x_t * mask_t).sum(), mask_t.sum()
    else:
        total, count = (x_t * mask_t).sum(dim), mask_t.sum(dim)
    return torch.where(count > 0, total / count.clamp(min=1.0), torch.zeros_like(total))


def masked_var(x: Any, mask: Any) -> torch.Tensor:
    """Population variance of ``x`` over positions where ``mask`` is 1.

    Example:
        >>> float(masked_var([[1.0, 100.0, 3.0]], [[1, 0, 1]]))
        1.0
    """
    x_t = _tensor(x).float()
    mean = masked_mean(x_t, mask)
    return masked_mean((x_t - mean) ** 2, mask)


def masked_whiten(x: Any, mask: Any, shift_mean: bool = True, eps: float = 1e-8) -> torch.Tensor:
    """Normalise ``x`` to mean 0 and variance 1 over unmasked positions; masked positions become 0.

    Args:
        x: Values to whiten.
        mask: 1 where a value counts.
        shift_mean: If False, only divide by the standard deviation (keep the mean).
        eps: Added to the variance.

    Example:
        >>> [round(v, 4) for v in masked_whiten([[1.0, 100.0, 3.0]], [[1, 0, 1]])[0].tolist()]
        [-1.0, 0.0, 1.0]
    """
    import torch

    x_t = _tensor(x).float()
    mask_t = _tensor(mask, like=x_t).bool()
    mean = masked_mean(x_t, mask_t)
    whitened = (x_t - mean) * torch.rsqrt(masked_var(x_t, mask_t) + eps)
    if not shift_mean:
        whitened = whitened + mean
    return torch.where(mask_t, whitened, torch.zeros_like(whitened))


def policy_loss(
    logprobs: Any, old_logprobs: Any, advantages: Any, mask: Any, clip_range: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate loss, averaged over unmasked tokens.

    Per token, with ``r = exp(logprobs - old_logprobs)``:
    ``max(-A * r, -A * clip(r, 1 - clip_range, 1 + clip_range))``.

    Returns:
        ``(loss, clip_fraction, approx_kl)``: the loss; the share of tokens where the clipped
        term was the larger (its gradient is 0 there); and ``mean((r - 1) - log r)``, an
        estimate of KL(old || new) that is never negative.

    Example:
        >>> import math
        >>> loss, clipped, _ = policy_loss([[math.log(1.5)]], [[0.0]], [[1.0]], [[1]], clip_range=0.2)
        >>> round(float(loss), 4), float(clipped)
        (-1.2, 1.0)
    """
    import torch

    if clip_range <= 0:
        raise ValueError(f"Expected `clip_range` > 0, got {clip_range!r}")
    logprobs_t = _tensor(logprobs).float()
    old_t = _tensor(old_logprobs).float()
    adv_t = _tensor(advantages).float()
    _check_shapes(logprobs=logprobs_t, old_logprobs=old_t, advantages=adv_t, mask=_tensor(mask))
    log_ratio = logprobs_t - old_t
    ratio = torch.exp(log_ratio)
    unclipped = -adv_t * ratio
    clipped = -adv_t * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    loss = masked_mean(torch.maximum(unclipped, clipped), mask)
    with torch.no_grad():
        clip_fraction = masked_mean((clipped > unclipped).float(), mask)
        approx_kl = masked_mean((ratio - 1.0) - log_ratio, mask)
    return loss, clip_fraction, approx_kl


def value_loss(
    values: Any, old_values: Any, returns: Any, mask: Any, clip_range: float | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The clipped value loss ``0.5 * max((v - R)^2, (v_clip - R)^2)``, averaged over unmasked tokens.

    ``v_clip = old_values + clip(values - old_values, -clip_range, clip_range)``: the new value
    may not move further than ``clip_range`` from the value at rollout time for free.

    Args:
        values: New value predictions.
        old_values: Predictions when the batch was collected.
        returns: GAE returns (targets).
        mask: 1 on sampled tokens.
        clip_range: Clip range; ``None`` for the plain squared error.

    Returns:
        ``(loss, clip_fraction)``: the loss and the share of tokens where the clipped error was the larger.

    Example:
        >>> loss, clipped = value_loss([[2.0]], [[0.0]], [[3.0]], [[1]], clip_range=0.5)
        >>> float(loss), float(clipped)
        (3.125, 1.0)
    """
    import torch

    values_t = _tensor(values).float()
    old_t = _tensor(old_values).float()
    returns_t = _tensor(returns).float()
    _check_shapes(values=values_t, old_values=old_t, returns=returns_t, mask=_tensor(mask))
    error = (values_t - returns_t) ** 2
    if clip_range is None:
        return 0.5 * masked_mean(error, mask), torch.zeros(())
    if clip_range <= 0:
        raise ValueError(f"Expected `clip_range` > 0 or None, got {clip_range!r}")
    clipped_values = old_t + torch.clamp(values_t - old_t, -clip_range, clip_range)
    clipped_error = (clipped_values - returns_t) ** 2
    loss = 0.5 * masked_mean(torch.maximum(error, clipped_error), mask)
    with torch.no_grad():
        clip_fraction = masked_mean((clipped_error > error).float(), mask)
    return loss, clip_fraction


def kl_estimate(logprobs: Any, ref_logprobs: Any, kind: KLKind = "k1") -> torch.Tensor:
    """Per-token estimate of KL(policy || reference) from the sampled tokens' log-probabilities.

    With ``d = logprobs - ref_logprobs``: ``"k1"`` is ``d`` (unbiased, can be negative; the
    usual per-token reward penalty), ``"k2"`` is ``d**2 / 2``, ``"k3"`` is ``exp(-d) - 1 + d``
    (unbiased and never negative; the usual loss term).

    Example:
        >>> [round(float(kl_estimate([[-1.0]], [[-2.0]], kind)), 4) for kind in ("k1", "k2", "k3")]
        [1.0, 0.5, 0.3679]
    """
    import torch

    diff = _tensor(logprobs).float() - _tensor(ref_logprobs).float()
    if kind == "k1":
        return diff
    if kind == "k2":
        return 0.5 * diff**2
    if kind == "k3":
        return torch.exp(-diff) - 1.0 + diff
    raise ValueError(f"Expected `kind` to be 'k1', 'k2' or 'k3', got {kind!r}")


def entropy_from_logits(logits: Any) -> torch.Tensor:
    """Entropy of the softmax distribution over the last axis: ``[..., vocab] -> [...]``.

    Example:
        >>> import math
        >>> round(float(entropy_from_logits([0.0, 0.0, 0.0, 0.0])), 4) == round(math.log(4), 4)
        True
    """
    import torch

    logits_t = _tensor(logits).float()
    log_probs = torch.log_softmax(logits_t, dim=-1)
    return -(log_probs.exp() * log_probs).sum(-1)


def explained_variance(values: Any, returns: Any, mask: Any) -> float:
    """``1 - Var(returns - values) / Var(returns)`` over unmasked tokens (nan when returns are constant).

    1 means the critic predicts the returns exactly, 0 no better than a constant.

    Example:
        >>> explained_variance([[1.0, 2.0, 9.0]], [[1.0, 2.0, 0.0]], [[1, 1, 0]])
        1.0
    """
    values_t = _tensor(values).float()
    returns_t = _tensor(returns).float()
    variance = float(masked_var(returns_t, mask))
    if variance <= 0.0:
        return float("nan")
    return 1.0 - float(masked_var(returns_t - values_t, mask)) / variance


def _last_hidden(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    output = model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
    return output.hidden_states[-1]


def _value_head_class() -> type:
    import torch

    class _ValueHead(torch.nn.Module):
        """The critic: a linear map from a hidden state to a scalar value, optionally on its own backbone.

        ``ValueHead(hidden_size)`` reads the policy's last hidden states (a shared trunk, the
        "head" option). ``ValueHead.separate(model)`` copies the policy model (with its own
        LoRA adapter when the policy has one, otherwise all its weights) as the critic's
        backbone (the "separate" option): twice the memory, no interference between the
        policy and value gradients.

        The linear layer starts at zero, so every value is 0 before training.
        """

        def __init__(self, hidden_size: int, backbone: Any = None) -> None:
            super().__init__()
            if not isinstance(hidden_size, int) or isinstance(hidden_size, bool) or hidden_size < 1:
                raise ValueError(f"Expected `hidden_size` to be an int >= 1, got {hidden_size!r}")
            self.hidden_size = hidden_size
            self.backbone = backbone
            self.linear = torch.nn.Linear(hidden_size, 1)
            torch.nn.init.zeros_(self.linear.weight)
            torch.nn.init.zeros_(self.linear.bias)

        def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
            """``[batch, time, hidden] -> [batch, time]`` values, computed in float32."""
            return self.linear(hidden_states.float()).squeeze(-1)

        def values(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            policy_hidden: torch.Tensor | None = None,
        ) -> torch.Tensor:
            """Values at every position: from the own backbone if any, else from ``policy_hidden``."""
            if self.backbone is not None:
                return self(_last_hidden(self.backbone, input_ids, attention_mask))
            if policy_hidden is None:
                raise ValueError(
                    "A shared-trunk value head needs the policy's hidden states (`policy_hidden`)"
                )
            return self(policy_hidden)

        @classmethod
        def separate(cls, model: Any) -> Any:
            """A critic on a deep copy of ``model`` (its LoRA adapter or all weights trainable)."""
            backbone = copy.deepcopy(model)
            hidden = int(backbone.config.hidden_size)
            return cls(hidden, backbone)

    _ValueHead.__name__ = _ValueHead.__qualname__ = "ValueHead"
    _ValueHead.__module__ = __name__
    return _ValueHead


_lazy: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    # ValueHead subclasses torch.nn.Module, so it is built when first asked for, keeping
    # `import executors.training.ppo_core` free of torch.
    if name == "ValueHead":
        if name not in _lazy:
            _lazy[name] = _value_head_class()
        return _lazy[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
