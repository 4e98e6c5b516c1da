"""WordleEnv: letter marks (repeated letters), guess parsing, invalid guesses, pools, datasets."""

from __future__ import annotations

import re
from collections import Counter

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gym_tinker  # noqa: F401 (registers the envs)
from gym_tinker.envs.wordle import (
    ANSWER_POOLS,
    VALID_GUESSES,
    WordleEnv,
    extract_guess,
    oracle,
    score_guess,
)
from gym_tinker.envs.wordle_words import COMMON_WORDS, EXTRA_GUESSES, RARE_WORDS


@pytest.mark.parametrize(
    ("guess", "answer", "marks"),
    [
        ("crane", "crane", "G G G G G"),
        ("slate", "crane", "_ _ G _ G"),
        ("speed", "abide", "_ _ Y _ Y"),  # one E in the answer: only the first E is marked
        ("geese", "those", "_ _ _ G G"),  # exact matches take the S and E first
        ("eerie", "there", "Y _ Y _ G"),
        ("allot", "llama", "Y G Y _ _"),
        ("lolly", "hello", "_ Y G G _"),  # both L of the answer are green already
        ("mamma", "maxim", "G G Y _ _"),
        ("abbey", "keeps", "_ _ _ Y _"),
    ],
)
def test_score_guess_handles_repeated_letters(guess, answer, marks):
    assert score_guess(guess, answer) == marks


_words = st.text(alphabet="abcde", min_size=5, max_size=5)


@settings(max_examples=300, deadline=None)
@given(_words, _words)
def test_score_guess_properties(guess, answer):
    marks = score_guess(guess, answer).split()
    # Green exactly where the letters agree.
    assert [m == "G" for m in marks] == [g == a for g, a in zip(guess, answer, strict=True)]
    # Each letter is marked (G or Y) as often as it can be matched, never more.
    for letter in set(guess):
        marked = sum(1 for g, m in zip(guess, marks, strict=True) if g == letter and m != "_")
        assert marked == min(guess.count(letter), answer.count(letter))
    # Yellows go to the leftmost unmatched copies.
    for letter in set(guess):
        flags = [m for g, m in zip(guess, marks, strict=True) if g == letter and m != "G"]
        assert flags == sorted(flags, key=lambda m: m != "Y")


def test_score_guess_rejects_wrong_length():
    with pytest.raises(ValueError, match="5 letters, got 'cranes'"):
        score_guess("cranes", "crane")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("crane", "crane"),
        ("  CRANE.\n", "crane"),
        ("<answer>crane</answer>", "crane"),
        ("I think... <Answer> Slate </Answer>", "slate"),
        ("\\boxed{plant}", "plant"),
        ("guess: CRANE", "crane"),
        ("My guess is **plant**", "plant"),
        ("Answer = slate", "slate"),
        ("Let me try SLATE this time", "slate"),
        ("After those marks, a good next word would be plant", "plant"),
        ("Try zzzzz now", "zzzzz"),
        ("Maybe zzzzz then", "maybe"),
        ("cranes", "cranes"),
        ("I am not sure", "sure"),
        ("12345 !?", None),
        ("", None),
        ("éèêëē", None),
    ],
)
def test_extract_guess(text, expected):
    assert extract_guess(text) == expected


def _env(answer="crane", **kwargs):
    return WordleEnv(dataset=[{"answer": answer}], **kwargs)


def test_episode_feedback_board_and_solve():
    env = _env("flame")
    observation, info = env.reset(seed=0)
    assert "five-letter" in observation and "6 guesses" in observation
    assert "<answer>" in info["system_prompt"] and info["tools"] == [] and "flame" not in str(info)
    obs, reward, terminated, truncated, info = env.step("<answer>slate</answer>")
    assert obs.splitlines()[0] == "SLATE: _ G G _ G"
    assert "SLATE  _ G G _ G" in obs and "5 guesses left." in obs
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info == {"valid": True, "guess": "slate", "marks": "_ G G _ G", "turn": 1}
    obs, reward, terminated, truncated, info = env.step("guess: FLAME")
    assert obs.startswith("FLAME: G G G G G") and "Solved in 2 guesses" in obs
    assert (reward, terminated, truncated) == (1.0, True, False)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("cranes", "'cranes' has 6 letters"),
        ("xyzzy", "'xyzzy' is not in the word list"),
        ("12345", "couldn't find a word"),
        # cut to the default `max_action_chars` first, with a note saying so
        ("a" * 1_000_000, "only the first 32,768 were read.\n'aaaaaaaaaaaaaaaaaaaa...' has 32768 letters"),
    ],
)
def test_invalid_guesses_get_feedback_cost_a_turn_and_leave_the_board(action, message):
    env = _env("crane")
    env.reset(seed=0)
    env.step("slate")
    obs, reward, terminated, truncated, info = env.step(action)
    assert message in obs and len(obs) < 500
    assert "SLATE  _ _ G _ G" in obs and "4 guesses left." in obs
    assert (reward, terminated, truncated, info["valid"], info["turn"]) == (0.0, False, False, False, 2)
    assert env.board == [("slate", "_ _ G _ G")]


def test_check_words_false_scores_any_five_letters():
    env = _env("crane", check_words=False)
    env.reset(seed=0)
    assert env.step("xyzzy")[0].startswith("XYZZY: _ _ _ _ _")


def test_running_out_of_guesses_truncates_and_reveals_the_word():
    env = _env("crane")
    env.reset(seed=0)
    for _ in range(5):
        assert env.step("slate")[3] is False
    obs, reward, terminated, truncated, _ = env.step("plant")
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert obs.endswith("Out of guesses. The word was CRANE.")


def test_word_lists_are_clean():
    for words in (COMMON_WORDS, RARE_WORDS, EXTRA_GUESSES):
        assert all(re.fullmatch(r"[a-z]{5}", w) for w in words)
        assert len(set(words)) == len(words)
    assert not set(COMMON_WORDS) & set(RARE_WORDS)
    assert not (set(COMMON_WORDS) | set(RARE_WORDS)) & set(EXTRA_GUESSES)
    assert len(COMMON_WORDS) >= 500 and len(RARE_WORDS) >= 500
    assert set(COMMON_WORDS) | set(RARE_WORDS) | set(EXTRA_GUESSES) == VALID_GUESSES


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_difficulty_picks_the_answer_pool(difficulty):
    env = WordleEnv(difficulty=difficulty)
    answers = set()
    for seed in range(60):
        _, info = env.reset(seed=seed)
        assert info["difficulty"] == difficulty and info["task_id"].startswith(f"Wordle-{difficulty}-")
        assert env.answer in ANSWER_POOLS[difficulty]
        answers.add(env.answer)
    assert len(answers) > 50
    if difficulty == "medium":
        assert answers & set(COMMON_WORDS) and answers & set(RARE_WORDS)


def _solve_from_feedback(env, observation):
    """A consistent-candidate solver that only reads the observations; returns the turns used."""
    candidates = sorted(VALID_GUESSES)
    for turn in range(1, env.max_turns + 1):
        guess = candidates[0]
        observation, reward, terminated, _, _ = env.step(f"<answer>{guess}</answer>")
        if terminated:
            assert reward == 1.0
            return turn
        marks = observation.splitlines()[0].split(": ")[1]
        candidates = [w for w in candidates if score_guess(guess, w) == marks]
        assert env.answer in candidates
    raise AssertionError("not solved")


def test_feedback_is_enough_to_solve():
    env = WordleEnv(difficulty="medium", max_turns=30)
    turns = [_solve_from_feedback(env, env.reset(seed=seed)[0]) for seed in range(30)]
    assert max(turns) <= 15


def test_same_seed_same_word():
    a, b = WordleEnv(difficulty="hard"), WordleEnv(difficulty="hard")
    assert a.reset(seed=11)[1] == b.reset(seed=11)[1] and a.answer == b.answer


def test_oracle_through_gym_make_and_wrong_env():
    env = gym.make("tinker/Wordle-v0", difficulty="hard")
    env.reset(seed=2)
    assert env.step(oracle(env))[1:3] == (1.0, True)
    with pytest.raises(TypeError, match="WordleEnv"):
        oracle(gym.make("tinker/GuessNumber-v0"))


def test_dataset_answers_become_valid_guesses(tmp_path):
    path = tmp_path / "words.jsonl"
    path.write_text('{"answer": "QUBIT"}\n{"answer": "crane"}\n')
    env = WordleEnv(dataset=path)
    _, info = env.reset(seed=0, options={"task_index": 0})
    assert info["task_id"] == "Wordle-row0" and env.answer == "qubit"
    assert env.step("qubit")[1:3] == (1.0, True)
    assert Counter(env.reset(seed=s)[1]["task_id"] for s in range(40)).keys() == {
        "Wordle-row0",
        "Wordle-row1",
    }


@pytest.mark.parametrize("answer", ["toolong", "abc", "crän e", 12345, "cr4ne"])
def test_bad_dataset_answers_are_clear_errors(answer):
    with pytest.raises(ValueError, match=r"row 0: expected `answer` to be five ASCII letters, got"):
        WordleEnv(dataset=[{"answer": answer}])


def test_bad_arguments():
    with pytest.raises(ValueError, match="difficulty"):
        WordleEnv(difficulty="nightmare")
    with pytest.raises(ValueError, match="missing column"):
        WordleEnv(dataset=[{"word": "crane"}])
