"""Wordle: find a secret five-letter word from per-letter feedback (multi-turn).

Rules
    The env picks a secret English word of five letters. Each turn the agent guesses a word and
    gets one mark per letter: ``G`` (right letter, right spot), ``Y`` (the letter is in the word
    elsewhere) or ``_`` (not in the word). Repeated letters follow the usual rule: exact matches
    are marked first, then each remaining copy in the answer turns at most one more guess letter
    ``Y``, left to right; extra copies are ``_``. Guessing ``ALLOT`` for ``LLAMA`` gives
    ``Y G Y _ _``.

    ``difficulty`` picks the answer pool: ``easy`` everyday words, ``medium`` everyday and rarer
    words, ``hard`` only the rarer ones. Every word of both pools, plus common plurals, is a
    valid guess.

Action
    Any text. The guess is, in order of preference: the word inside the last
    ``<answer>...</answer>`` or ``\\boxed{...}``; a word after ``guess:``/``answer:``/``word is``;
    the only word of the reply; the last all-capitals five-letter word; the last five-letter word
    in the word list; the last five-letter word. Case does not matter.

    A guess that is not five letters, not in the word list (unless ``check_words=False``) or
    not found at all gets feedback saying so and **costs a turn** (every step counts against
    ``max_turns``); the board is unchanged.

Observation
    The newest guess with its marks, the board of all valid guesses so far and the guesses left,
    e.g. ``"CRANE: _ Y G _ G"``; when the turns run out, the answer is revealed.

Reward
    1.0 on the turn the word is found (terminated), 0.0 otherwise; truncated when the turns run
    out.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, ClassVar

from gym_tinker.core import StepResult, TextEnv
from gym_tinker.envs.wordle_words import COMMON_WORDS, EXTRA_GUESSES, RARE_WORDS
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from gym_tinker.parsing import last_answer_or_box
from gym_tinker.tasks import TaskDataset, check_difficulty

__all__ = ["ANSWER_POOLS", "VALID_GUESSES", "WordleEnv", "extract_guess", "oracle", "score_guess"]

WORD_LENGTH = 5

ANSWER_POOLS: dict[str, tuple[str, ...]] = {
    "easy": COMMON_WORDS,
    "medium": COMMON_WORDS + RARE_WORDS,
    "hard": RARE_WORDS,
}
"""The answer words each difficulty draws from."""

VALID_GUESSES: frozenset[str] = frozenset(COMMON_WORDS + RARE_WORDS + EXTRA_GUESSES)
"""Every word accepted as a guess (lower case)."""

_MARKED = re.compile(r"\b(?:guess|answer|word)\s*(?:is|:|=|-)\s*[\"'*`]*([A-Za-z]+)", re.IGNORECASE)
# ASCII letters only: accented or non-Latin letters are never part of a valid guess.
_TOKEN = re.compile(r"[A-Za-z]+")
_LEGEND = "G = right letter, right spot; Y = in the word, another spot; _ = not in the word"


def score_guess(guess: str, answer: str) -> str:
    """The marks for ``guess`` against ``answer``: one of ``G``/``Y``/``_`` per letter, space separated.

    Exact matches are marked first; each unmatched copy of a letter in the answer then turns at
    most one guess letter ``Y``, left to right.

    Example:
        >>> score_guess("crane", "crane")
        'G G G G G'
        >>> score_guess("allot", "llama")
        'Y G Y _ _'
        >>> score_guess("eerie", "there")
        'Y _ Y _ G'
    """
    if len(guess) != len(answer):
        raise ValueError(f"Expected a guess of {len(answer)} letters, got {guess!r}")
    marks = ["_"] * len(answer)
    unmatched: dict[str, int] = {}
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            marks[i] = "G"
        else:
            unmatched[a] = unmatched.get(a, 0) + 1
    for i, g in enumerate(guess):
        if marks[i] == "_" and unmatched.get(g, 0) > 0:
            marks[i] = "Y"
            unmatched[g] -= 1
    return " ".join(marks)


def extract_guess(text: str, vocabulary: frozenset[str] = VALID_GUESSES) -> str | None:
    """The word an agent's reply guesses (lower case), or ``None`` if it holds no ASCII word.

    The result may have the wrong length or be missing from ``vocabulary``; the env says so.

    Example:
        >>> extract_guess("<answer>crane</answer>"), extract_guess("guess: CRANE"), extract_guess(" crane ")
        ('crane', 'crane', 'crane')
        >>> extract_guess("I'll try SLATE next"), extract_guess("hmm, maybe the word is plant.")
        ('slate', 'plant')
        >>> extract_guess("cranes"), extract_guess("12345 !!") is None
        ('cranes', True)
    """
    if "nswer" in text or "NSWER" in text or "boxed" in text:
        final = last_answer_or_box(text)
        if final is not None:
            text = final
    marked = None
    for marked in _MARKED.finditer(text):  # noqa: B007 (the last match is wanted)
        pass
    if marked is not None:
        return marked.group(1).lower()
    tokens = _TOKEN.findall(text)
    if not tokens:
        return None
    if len(tokens) == 1:
        return tokens[0].lower()
    five = [t for t in tokens if len(t) == WORD_LENGTH]
    capitals = [t for t in five if t.isupper()]
    if capitals and len(capitals) < len(tokens):
        return capitals[-1].lower()
    known = [t for t in five if t.lower() in vocabulary]
    if known:
        return known[-1].lower()
    return (five or tokens)[-1].lower()


def _task_id(difficulty: str, answer: str) -> str:
    # A digest, so the task id does not give the answer away.
    return f"Wordle-{difficulty}-{hashlib.sha1(answer.encode()).hexdigest()[:12]}"


class WordleEnv(TextEnv):
    """Find a secret five-letter word in at most six guesses, from per-letter feedback.

    See the module docstring for the rules, the guess parsing and the reward.

    Args:
        difficulty: ``"easy"`` (everyday words), ``"medium"`` (everyday and rarer) or ``"hard"``
            (rarer words only).
        dataset: Fixed tasks instead of random ones: a JSONL path, a ``datasets.Dataset`` or a
            sequence of dicts with column ``answer`` (a five-letter word of ASCII letters; it is
            added to the valid guesses).
        max_turns: Guesses per episode (default 6).
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an action that are read; a longer one is cut, with a
            note in the observation (``None``: no cap; see :mod:`gym_tinker.limits`).
        check_words: Reject guesses missing from the word list (default). With ``False``, any
            five ASCII letters are scored.

    Example:
        >>> env = WordleEnv()
        >>> observation, info = env.reset(seed=0)
        >>> observation.splitlines()[0]
        'Guess the secret five-letter English word. You have 6 guesses.'
        >>> env.step("xyzzy")[0].splitlines()[0]
        "'xyzzy' is not in the word list. Guess a real five-letter English word."
        >>> env.step(oracle(env))[1:3]
        (1.0, True)
    """

    description: ClassVar[str] = "Wordle: find a five-letter word from green/yellow/gray letter feedback."
    default_max_turns: ClassVar[int] = 6

    def __init__(
        self,
        difficulty: str = "easy",
        dataset: Any = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        check_words: bool = True,
        *,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        super().__init__(max_turns=max_turns, render_mode=render_mode, max_action_chars=max_action_chars)
        self.difficulty = check_difficulty(difficulty)
        self.check_words = bool(check_words)
        self.vocabulary = VALID_GUESSES
        self.dataset = None
        if dataset is not None:
            self.dataset = TaskDataset(dataset, required=["answer"], env_name="Wordle")
            answers = []
            for index, row in enumerate(self.dataset.rows):
                word = row["answer"]
                if not isinstance(word, str) or not re.fullmatch(r"[A-Za-z]{5}", word):
                    raise ValueError(
                        f"Wordle dataset row {index}: expected `answer` to be five ASCII letters, got {word!r}"
                    )
                answers.append(word.lower())
            self.vocabulary = VALID_GUESSES | frozenset(answers)
        self.answer = ""
        self.board: list[tuple[str, str]] = []

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        if self.dataset is None:
            pool = ANSWER_POOLS[self.difficulty]
            self.answer = pool[int(self.np_random.integers(len(pool)))]
            task_id = _task_id(self.difficulty, self.answer)
        else:
            index, row = self.dataset.pick(self.np_random, options)
            self.answer = row["answer"].lower()
            task_id = f"Wordle-row{index}"
        self.board = []
        observation = (
            f"Guess the secret five-letter English word. You have {self.max_turns} guesses.\n"
            f"After each guess you get one mark per letter: {_LEGEND}.\n"
            "Reply with your guess, e.g. <answer>crane</answer>."
        )
        info = {
            "system_prompt": (
                "You are playing Wordle. Each turn, reply with one five-letter English word, your guess, "
                "inside <answer></answer> tags, for example <answer>crane</answer>. Use the letter "
                f"feedback ({_LEGEND}) to find the word in as few guesses as possible."
            ),
            "tools": [],
            "task_id": task_id,
            "difficulty": self.difficulty,
        }
        return observation, info

    def _step(self, action: str) -> StepResult:
        guess = extract_guess(action, self.vocabulary)
        left = self.max_turns - self.turn
        problem = None
        if guess is None:
            problem = "I couldn't find a word in your reply. Reply with a five-letter word, e.g. <answer>crane</answer>."
        elif len(guess) != WORD_LENGTH:
            shown = guess if len(guess) <= 20 else guess[:20] + "..."
            problem = f"'{shown}' has {len(guess)} letters. Guess a five-letter word."
        elif self.check_words and guess not in self.vocabulary:
            problem = f"'{guess}' is not in the word list. Guess a real five-letter English word."
        if problem is not None:
            return self._observe(problem, left), 0.0, False, False, {"valid": False}
        assert guess is not None
        marks = score_guess(guess, self.answer)
        self.board.append((guess, marks))
        info = {"valid": True, "guess": guess, "marks": marks}
        if guess == self.answer:
            return (
                f"{guess.upper()}: {marks}\nSolved in {self.turn} {'guess' if self.turn == 1 else 'guesses'}!",
                1.0,
                True,
                False,
                info,
            )
        return self._observe(f"{guess.upper()}: {marks}", left), 0.0, False, False, info

    def _observe(self, headline: str, left: int) -> str:
        lines = [headline]
        if self.board:
            lines.append("Board:")
            lines.extend(f"{word.upper()}  {marks}" for word, marks in self.board)
        if left > 0:
            lines.append(f"{left} guesses left." if left > 1 else "1 guess left.")
        else:
            lines.append(f"Out of guesses. The word was {self.answer.upper()}.")
        return "\n".join(lines)


def oracle(env: Any) -> str:
    """The perfect next guess: the answer itself (``env`` may be wrapped).

    Example:
        >>> env = WordleEnv(difficulty="hard")
        >>> _ = env.reset(seed=3)
        >>> env.step(oracle(env))[1]
        1.0
    """
    inner = env.unwrapped
    if not isinstance(inner, WordleEnv):
        raise TypeError(f"wordle.oracle expects a WordleEnv, got {type(inner).__name__}")
    return f"<answer>{inner.answer}</answer>"
