"""SFT datasets: chat rows and kept trajectories as pre-tokenized ``input_ids`` and ``assistant_masks``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gym_tinker.trajectory import Trajectory, TrajectoryFormatError

if TYPE_CHECKING:
    from executors.chat import HFChatRenderer

__all__ = [
    "MASK_COLUMN",
    "SFTDataError",
    "keep_trajectories",
    "load_sft_rows",
    "messages_to_sft_dataset",
    "tokenize_conversation",
    "trajectories_to_sft_dataset",
]

MASK_COLUMN = "assistant_masks"
"""The mask column TRL's ``SFTTrainer`` folds into ``labels`` (it always applies this one; it applies
``completion_mask`` only with ``completion_only_loss=True``)."""

SFTRows = list[dict[str, Any]] | list[Trajectory]
"""What :func:`load_sft_rows` returns: chat rows (dicts with ``messages``) or trajectories."""


class SFTDataError(ValueError):
    """SFT input that cannot be trained on: a row without messages, no kept episodes, nothing to learn."""


# --- chat rows -----------------------------------------------------------------------------------


def _encode(tokenizer: Any, text: str) -> list[int]:
    # The template writes BOS and turn markers itself, as in HFChatRenderer.
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _trained_suffix_length(tokenizer: Any, suffix_ids: Sequence[int]) -> int:
    """How many of the assistant end-of-turn ids to train: up to and including the first special token.

    ChatML's ``<|im_end|>\\n``: ``<|im_end|>`` (the EOS, the model's stop decision) is trained,
    the newline after it is not (a rollout adds it as an env token). A suffix without any special
    token is trained whole.
    """
    special = set(getattr(tokenizer, "all_special_ids", ()) or ())
    for index, token in enumerate(suffix_ids):
        if token in special:
            return index + 1
    return len(suffix_ids)


def tokenize_conversation(
    renderer: HFChatRenderer,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[list[int], list[int]]:
    """Token ids of a conversation and its loss mask: 1 on assistant tokens (with end-of-turn), 0 elsewhere.

    The conversation is rendered message by message: everything before an assistant message's
    content (earlier turns, the assistant prompt) is tokenized as one piece, the content as
    another, the end-of-turn text as a third, matching how a sampler sees a prompt and
    produces a completion. Text after the last assistant message is left out (nothing to learn).

    Raises:
        SFTDataError: there is no assistant message, or the template is not prefix-stable
            (adding a message changes how earlier ones render).

    Example:
        >>> from executors.chat import HFChatRenderer
        >>> from executors.models.tiny import tiny_tokenizer
        >>> renderer = HFChatRenderer(tiny_tokenizer())
        >>> ids, mask = tokenize_conversation(renderer, [{"role": "user", "content": "2+2?"},
        ...                                              {"role": "assistant", "content": "4"}])
        >>> renderer.decode([i for i, m in zip(ids, mask) if m])
        '4<|im_end|>'
        >>> renderer.decode([i for i, m in zip(ids, mask) if not m])
        '<|im_start|>user\\n2+2?<|im_end|>\\n<|im_start|>assistant\\n\\n'
    """
    tokenizer = renderer.tokenizer
    if not any(message.get("role") == "assistant" for message in messages):
        raise SFTDataError(
            f"Expected at least one assistant message to train on, got roles {[m.get('role') for m in messages]}"
        )
    ids: list[int] = []
    mask: list[int] = []
    rendered = ""
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        prompt = renderer.render_text(messages[:index], tools=tools, add_generation_prompt=True)
        full = renderer.render_text(messages[: index + 1], tools=tools, add_generation_prompt=False)
        if not prompt.startswith(rendered) or not full.startswith(prompt):
            raise SFTDataError(
                f"The chat template ({renderer.template_source}) is not prefix-stable at message #{index}: "
                "rendering more messages changes how earlier ones render, so assistant tokens cannot be "
                "masked exactly. Use a prefix-stable template, e.g. executors.chat.fallback_chat_template()."
            )
        context_ids = _encode(tokenizer, prompt[len(rendered) :])
        turn = full[len(prompt) :]
        suffix_ids = list(renderer.assistant_suffix_ids)
        suffix_text = renderer.decode(suffix_ids)
        if suffix_text and turn.endswith(suffix_text):
            body_ids = _encode(tokenizer, turn[: len(turn) - len(suffix_text)])
            trained = _trained_suffix_length(tokenizer, suffix_ids)
            turn_ids = body_ids + suffix_ids
            turn_mask = [1] * (len(body_ids) + trained) + [0] * (len(suffix_ids) - trained)
        else:  # a template whose assistant turns do not end the usual way: train the whole turn
            turn_ids = _encode(tokenizer, turn)
            turn_mask = [1] * len(turn_ids)
        ids += context_ids + turn_ids
        mask += [0] * len(context_ids) + turn_mask
        rendered = full
    return ids, mask


def _row_tools(row: Mapping[str, Any], where: str) -> list[dict[str, Any]] | None:
    tools = row.get("tools")
    if isinstance(tools, str):  # gym_tinker.rollout.to_records stores tools as a JSON string
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError:
            raise SFTDataError(f"{where}: `tools` is a string but not JSON: {tools[:80]!r}") from None
    if tools is None or tools == []:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, Mapping) for t in tools):
        raise SFTDataError(f"{where}: expected `tools` to be a list of JSON schemas, got {tools!r:.120}")
    return [dict(t) for t in tools]


def _check_messages(row: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(row, Mapping):
        raise SFTDataError(
            f"{where}: expected a dict with 'messages', got {type(row).__name__}: {row!r:.120}"
        )
    messages = row.get("messages")
    if messages is None:
        raise SFTDataError(
            f"{where}: expected a 'messages' list of chat messages, got keys {sorted(row)}: {dict(row)!r:.120}"
        )
    if not isinstance(messages, list) or not messages:
        raise SFTDataError(f"{where}: expected 'messages' to be a non-empty list, got {messages!r:.120}")
    for number, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise SFTDataError(f"{where}: message #{number} needs a 'role', got {message!r:.120}")
        if message.get("content") is not None and not isinstance(message.get("content"), str):
            raise SFTDataError(
                f"{where}: message #{number} content must be a string, got {message.get('content')!r:.120}"
            )
    return [dict(m) for m in messages]


def _finish(
    examples: list[tuple[list[int], list[int]]],
    *,
    max_length: int | None,
    assistant_only_loss: bool,
    what: str,
) -> Any:
    """Truncate, drop examples with nothing to learn, and build the ``datasets.Dataset``."""
    from datasets import Dataset

    ids_column, mask_column = [], []
    for ids, mask in examples:
        if max_length is not None:
            ids, mask = ids[:max_length], mask[:max_length]
        if not assistant_only_loss:
            mask = [1] * len(ids)
        if any(mask):
            ids_column.append(ids)
            mask_column.append(mask)
    if not ids_column:
        raise SFTDataError(
            f"No {what} has a token to train on after truncation to max_length={max_length} "
            f"({len(examples)} given); raise max_length or check the data"
        )
    return Dataset.from_dict({"input_ids": ids_column, MASK_COLUMN: mask_column})


def messages_to_sft_dataset(
    rows: Iterable[Mapping[str, Any]],
    tokenizer: Any,
    max_length: int | None = None,
    *,
    assistant_only_loss: bool = True,
    template: str | None = None,
) -> Any:
    """Chat rows (``{"messages": [...], "tools": [...]?}``) as a pre-tokenized dataset for TRL's ``SFTTrainer``.

    Columns ``input_ids`` and ``assistant_masks`` (see :func:`tokenize_conversation`).
    Sequences are cut to ``max_length`` tokens; rows left with no assistant token are dropped.
    With ``assistant_only_loss=False`` every token is trained.

    Raises:
        SFTDataError: a row has no ``messages`` (the message names the row), a row has no
            assistant message, or no row is left to train on.

    Example:
        >>> from executors.models.tiny import tiny_tokenizer
        >>> rows = [{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}]
        >>> ds = messages_to_sft_dataset(rows, tiny_tokenizer(), max_length=64)
        >>> ds.column_names, sum(ds[0]["assistant_masks"]) < len(ds[0]["input_ids"])
        (['input_ids', 'assistant_masks'], True)
    """
    from executors.chat import HFChatRenderer

    renderer = HFChatRenderer(tokenizer, template=template)
    examples = []
    for number, row in enumerate(rows):
        where = f"row {number}"
        messages = _check_messages(row, where)
        try:
            examples.append(tokenize_conversation(renderer, messages, tools=_row_tools(row, where)))
        except SFTDataError as error:
            raise SFTDataError(f"{where}: {error}") from None
    if not examples:
        raise SFTDataError("Expected at least one chat row, got none")
    return _finish(examples, max_length=max_length, assistant_only_loss=assistant_only_loss, what="row")


# --- trajectories --------------------------------------------------------------------------------


def keep_trajectories(
    trajectories: Iterable[Trajectory],
    *,
    keep: Literal["success", "all"] = "success",
    min_reward: float | None = None,
) -> list[Trajectory]:
    """The episodes rejection sampling keeps: successful ones (or all), with at least ``min_reward`` if given.

    Success is :func:`executors.training.common.is_success` (the env's ``info["correct"]`` on the
    last turn, else total reward > 0).

    Example:
        >>> from gym_tinker.trajectory import Turn
        >>> def t(r): return Trajectory(turns=(Turn("q", "a", r),), env_id="demo")
        >>> [x.total_reward for x in keep_trajectories([t(1.0), t(0.0), t(0.5)], min_reward=0.8)]
        [1.0]
    """
    from executors.training.common import is_success

    if keep not in ("success", "all"):
        raise ValueError(f"Expected `keep` to be 'success' or 'all', got {keep!r}")
    out = []
    for number, trajectory in enumerate(trajectories):
        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"Expected Trajectory objects, got {type(trajectory).__name__} at #{number}")
        if keep == "success" and not is_success(trajectory):
            continue
        if min_reward is not None and float(trajectory.total_reward or 0.0) < min_reward:
            continue
        out.append(trajectory)
    return out


def trajectories_to_sft_dataset(
    trajectories: Iterable[Trajectory],
    *,
    keep: Literal["success", "all"] = "success",
    min_reward: float | None = None,
    tokenizer: Any = None,
    max_length: int | None = None,
    assistant_only_loss: bool = True,
) -> Any:
    """Kept episodes as a pre-tokenized dataset for TRL's ``SFTTrainer`` (``input_ids``, ``assistant_masks``).

    Token-exact trajectories train on exactly the ids that were sampled (mask from
    :func:`gym_tinker.rollout.flatten`: 0 on the prompt and env tokens, 1 on sampled ones).
    Text-only trajectories (a chat policy's, or hand-written) are rendered as chat messages
    (:func:`gym_tinker.rollout.to_messages`) with ``tokenizer``.

    Raises:
        SFTDataError: no episode is kept (the message says how many were given and the filter),
            or a text-only trajectory comes without a ``tokenizer``.

    Example:
        >>> from gym_tinker.trajectory import Turn
        >>> won = Turn("q", "a", 1.0, prompt_ids=(1, 5), completion_ids=(7, 2, 9), env_mask=(1, 1, 0))
        >>> lost = Turn("q", "b", 0.0, prompt_ids=(1, 5), completion_ids=(8, 2), env_mask=(1, 1))
        >>> ds = trajectories_to_sft_dataset([Trajectory((won,), "demo"), Trajectory((lost,), "demo")])
        >>> ds[0]["input_ids"], ds[0]["assistant_masks"], len(ds)
        ([1, 5, 7, 2, 9], [0, 0, 1, 1, 0], 1)
    """
    from gym_tinker.rollout import flatten, to_messages

    given = list(trajectories)
    kept = keep_trajectories(given, keep=keep, min_reward=min_reward)
    if not kept:
        rewards = sorted({float(t.total_reward or 0.0) for t in given})
        raise SFTDataError(
            f"No episode kept for SFT: 0 of {len(given)} pass keep={keep!r}, min_reward={min_reward!r} "
            f"(total rewards seen: {rewards[:10]}). Sample more episodes, use keep='all', or lower min_reward."
        )
    renderer = None
    examples = []
    for number, trajectory in enumerate(kept):
        if trajectory.turns and trajectory.turns[0].prompt_ids is not None:
            flat = flatten(trajectory)
            examples.append((list(flat.input_ids), list(flat.loss_mask)))
            continue
        if tokenizer is None:
            raise SFTDataError(
                f"Kept trajectory #{number} (env {trajectory.env_id!r}, seed {trajectory.seed}) has no token ids; "
                "pass `tokenizer=` to render its messages"
            )
        if renderer is None:
            from executors.chat import HFChatRenderer

            renderer = HFChatRenderer(tokenizer)
        tools = trajectory.metadata.get("tools") or None
        examples.append(tokenize_conversation(renderer, to_messages(trajectory), tools=tools))
    return _finish(examples, max_length=max_length, assistant_only_loss=assistant_only_loss, what="episode")


# --- loading -------------------------------------------------------------------------------------


def _read_jsonl(path: Path) -> SFTRows:
    rows: list[dict[str, Any]] = []
    trajectories: list[Trajectory] = []
    text = path.read_text(encoding="utf-8")
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise SFTDataError(f"{path}:{number}: not valid JSON ({error.msg}): {line[:80]!r}") from None
        if isinstance(data, dict) and "turns" in data and "messages" not in data:
            try:
                trajectories.append(Trajectory.from_dict(data))
            except (TrajectoryFormatError, TypeError) as error:
                raise SFTDataError(f"{path}:{number}: not a trajectory: {error}") from None
        else:
            _check_messages(data, f"{path}:{number}")
            rows.append(data)
        if rows and trajectories:
            raise SFTDataError(
                f"{path}:{number}: the file mixes chat rows ('messages') and trajectories ('turns'); use one kind"
            )
    if not rows and not trajectories:
        raise SFTDataError(f"{path}: no rows (the file is empty)")
    return trajectories or rows


def load_sft_rows(path_or_name: str | PathLike[str]) -> SFTRows:
    """Read SFT data: chat rows (dicts with ``messages``, maybe ``tools``) or trajectories.

    * a ``.jsonl`` file of ``{"messages": [...]}`` rows, or of trajectories written by
      :func:`gym_tinker.trajectory.save_jsonl` (lines with ``turns``);
    * a folder written by ``datasets``' ``save_to_disk`` (a ``DatasetDict`` uses its ``train``
      split) with a ``messages`` column;
    * anything else is passed to ``datasets.load_dataset(name, split="train")``.

    Raises:
        SFTDataError: a row without ``messages`` (naming the file and line), a folder without
            a ``messages`` column, or an empty source.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "chats.jsonl")
        >>> with open(path, "w") as f:
        ...     _ = f.write('{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}')
        >>> load_sft_rows(path)[0]["messages"][1]["content"]
        'Hello'
    """
    path = Path(path_or_name)
    if path.is_file():
        return _read_jsonl(path)
    import datasets

    if path.is_dir():
        loaded = datasets.load_from_disk(str(path))
    else:
        loaded = datasets.load_dataset(str(path_or_name), split="train")
    if isinstance(loaded, datasets.DatasetDict):
        if "train" not in loaded:
            raise SFTDataError(f"{path_or_name}: expected a 'train' split, got splits {sorted(loaded)}")
        loaded = loaded["train"]
    if "messages" not in loaded.column_names:
        raise SFTDataError(
            f"{path_or_name}: expected a 'messages' column of chat messages, got columns {loaded.column_names}"
        )
    rows = [dict(row) for row in loaded]
    if not rows:
        raise SFTDataError(f"{path_or_name}: the dataset has no rows")
    for number, row in enumerate(rows):
        _check_messages(row, f"{path_or_name} row {number}")
    return rows
