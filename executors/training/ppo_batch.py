"""Token-exact trajectories as padded tensors for PPO: :func:`collate` into a :class:`PPOBatch`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gym_tinker.trajectory import Trajectory

if TYPE_CHECKING:
    import torch

__all__ = ["PPOBatch", "collate", "rows"]


class PPOBatch:
    """Trajectories as right-padded tensors; per-token tensors are aligned with the predicted tokens.

    For a sequence ``input_ids[b]`` of length ``L``, column ``j`` of the ``[batch, L - 1]``
    tensors is about token ``j + 1`` (predicted from position ``j``).
    """

    def __init__(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        mask: torch.Tensor,
        scores: torch.Tensor,
        sampler_logprobs: torch.Tensor | None,
    ) -> None:
        self.input_ids = input_ids
        """``[batch, L]`` token ids, right-padded."""
        self.attention_mask = attention_mask
        """``[batch, L]``, 1 on real tokens."""
        self.mask = mask
        """``[batch, L - 1]``, 1 where the model sampled the token: no prompt, env or padding."""
        self.scores = scores
        """``[batch, L - 1]`` env rewards, each turn's on its last sampled token."""
        self.sampler_logprobs = sampler_logprobs
        """``[batch, L - 1]`` the sampler's log-probabilities (0 elsewhere), or None."""

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def collate(trajectories: Sequence[Trajectory], pad_id: int = 0, device: Any = "cpu") -> PPOBatch:
    """Token-exact trajectories as a :class:`PPOBatch` (right padding).

    Raises:
        ValueError: A trajectory is not token-exact (see :func:`gym_tinker.rollout.flatten`).

    Example:
        >>> from gym_tinker.trajectory import Turn
        >>> turns = (Turn("q", "a", 0.5, prompt_ids=(1, 2), completion_ids=(3, 4, 9), env_mask=(1, 1, 0)),
        ...          Turn("r", "b", 1.0, prompt_ids=(1, 2, 3, 4, 9), completion_ids=(5,), env_mask=(1,)))
        >>> batch = collate([Trajectory(turns=turns, env_id="demo")])
        >>> batch.mask.int().tolist(), batch.scores.tolist()
        ([[0, 1, 1, 0, 1]], [[0.0, 0.0, 0.5, 0.0, 1.0]])
    """
    import torch

    from gym_tinker.rollout import flatten

    if not trajectories:
        raise ValueError("Expected at least one trajectory, got none")
    rows = []
    for trajectory in trajectories:
        flat = flatten(trajectory)
        scores = [0.0] * len(flat.input_ids)
        position, pending = len(flat.prompt_ids), 0.0
        last_sampled: int | None = None
        for turn in trajectory.turns:
            ids = turn.completion_ids or ()
            env_mask = turn.env_mask if turn.env_mask is not None else (1,) * len(ids)
            sampled = [position + i for i, m in enumerate(env_mask) if m]
            pending += turn.reward
            if sampled:
                last_sampled = sampled[-1]
                scores[last_sampled] += pending
                pending = 0.0
            position += len(ids)
        if pending and last_sampled is not None:  # a turn without sampled ids: credit the last action
            scores[last_sampled] += pending
        rows.append((flat, scores))
    length = max(len(flat.input_ids) for flat, _ in rows)
    if length < 2:
        raise ValueError(f"Expected sequences of at least 2 tokens, got length {length}")
    n = len(rows)
    input_ids = torch.full((n, length), pad_id, dtype=torch.long)
    attention = torch.zeros((n, length), dtype=torch.long)
    mask = torch.zeros((n, length), dtype=torch.float32)
    scores_t = torch.zeros((n, length), dtype=torch.float32)
    have_logprobs = all(flat.logprobs is not None for flat, _ in rows)
    logprobs = torch.zeros((n, length), dtype=torch.float32)
    for b, (flat, scores) in enumerate(rows):
        size = len(flat.input_ids)
        input_ids[b, :size] = torch.tensor(flat.input_ids)
        attention[b, :size] = 1
        mask[b, :size] = torch.tensor(flat.loss_mask, dtype=torch.float32)
        scores_t[b, :size] = torch.tensor(scores)
        if have_logprobs and flat.logprobs is not None:
            start = len(flat.prompt_ids)
            logprobs[b, start:size] = torch.tensor(flat.logprobs, dtype=torch.float32)
    return PPOBatch(
        input_ids.to(device),
        attention.to(device),
        mask[:, 1:].to(device),
        scores_t[:, 1:].to(device),
        logprobs[:, 1:].to(device) if have_logprobs else None,
    )


def rows(batch: PPOBatch, index: Any) -> PPOBatch:
    """The rows ``index`` of ``batch``, cut to their longest sequence (padding is on the right)."""
    length = int(batch.attention_mask[index].sum(1).max())
    width = length - 1
    return PPOBatch(
        batch.input_ids[index, :length],
        batch.attention_mask[index, :length],
        batch.mask[index, :width],
        batch.scores[index, :width],
        None,
    )
