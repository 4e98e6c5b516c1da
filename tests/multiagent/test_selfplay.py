"""Tests for multiagent.selfplay: batched matches, seat rotation, results and trajectories."""

from __future__ import annotations

import pytest

from gym_tinker.policy import Completion
from gym_tinker.trajectory import load_jsonl, save_jsonl
from multiagent import prisoners_dilemma_v0, rock_paper_scissors_v0, tictactoe_v0
from multiagent.bots import RandomLegalBot, get_bot
from multiagent.prisoners_dilemma.bots import AlwaysDefect, TitForTat
from multiagent.rock_paper_scissors.bots import ConstantBot, FrequencyBot
from multiagent.selfplay import (
    BatchPolicy,
    as_batch_policy,
    batch_policy,
    chat_batch_policy,
    play_match,
    play_matches,
    rotated_lineups,
)


def rps(rounds=4, **kwargs):
    return lambda: rock_paper_scissors_v0.parallel_env(rounds=rounds, **kwargs)


class CountingRock:
    """A batch policy that records the size of every call."""

    batched = True

    def __init__(self):
        self.calls = []

    def __call__(self, observations, infos):
        self.calls.append(len(observations))
        return ["rock"] * len(observations)


def test_seat_rotation_is_balanced_and_rotations_share_a_seed():
    report = play_matches(rps(), {"a": ConstantBot("rock"), "b": ConstantBot("paper")}, games=6, seed=10)
    seats = [dict(r.seats) for r in report.results]
    assert sum(s["player_0"] == "a" for s in seats) == 3
    assert [r.seed for r in report.results] == [10, 10, 11, 11, 12, 12]
    summary = report.summary()
    assert summary["a"].per_seat == {"player_0": (0, 0, 3), "player_1": (0, 0, 3)}
    assert summary["b"].per_seat == {"player_0": (3, 0, 0), "player_1": (3, 0, 0)}
    assert (summary["b"].games, summary["b"].wins, summary["b"].mean_reward) == (6, 6, 4.0)


def test_batch_policy_is_called_once_per_step_with_every_game():
    counting = CountingRock()
    report = play_matches(rps(rounds=5), {"batch": counting, "plain": ConstantBot("scissors")}, games=8)
    assert counting.calls == [8] * 5
    assert all(r.rewards[next(a for a, n in r.seats.items() if n == "batch")] == 5.0 for r in report.results)


def test_aec_and_parallel_forms_give_the_same_results():
    policies = {"freq": FrequencyBot(), "tft": ConstantBot("paper")}
    aec = play_matches(lambda: rock_paper_scissors_v0.env(rounds=6), policies, games=4)
    par = play_matches(rps(rounds=6), policies, games=4)
    assert [r.rewards for r in aec.results] == [r.rewards for r in par.results]
    assert [len(r.turns["player_0"]) for r in aec.results] == [6] * 4


def test_locked_players_are_not_asked_and_rewards_go_to_their_last_turn():
    asked = []

    def flaky(observation, info):
        asked.append(info["round"])
        return "nonsense" if len(asked) == 1 else "paper"

    result = play_match(rps(rounds=2), {"player_0": flaky, "player_1": ConstantBot("rock")}, seed=0)
    turns = result.turns["player_1"]
    assert len(turns) == 2  # not asked while its move was locked
    assert [t.reward for t in turns] == [-1.0, -1.0]
    assert [t.action for t in result.turns["player_0"]] == ["nonsense", "paper", "paper"]
    assert [t.reward for t in result.turns["player_0"]] == [0.0, 1.0, 1.0]
    assert result.turns["player_0"][0].info["legal_moves"] == ["rock", "paper", "scissors"]


def test_trajectories_for_learning_seats(tmp_path):
    report = play_matches(
        lambda: prisoners_dilemma_v0.parallel_env(rounds=3),
        {"learner": TitForTat(), "bot": AlwaysDefect()},
        games=2,
        seed=5,
    )
    trajectories = report.trajectories({"learner"})
    assert [t.agent for t in trajectories] == ["player_0", "player_1"]
    for t in trajectories:
        assert t.env_id == "prisoners_dilemma_v0" and t.seed == 5 and t.stop_reason == "terminated"
        assert t.total_reward == sum(turn.reward for turn in t.turns) == 2.0  # 0 + 1 + 1
        assert t.metadata["policy"] == "learner" and t.metadata["outcome"] == "loss"
        assert list(t.metadata["opponents"].values()) == ["bot"]
    save_jsonl(tmp_path / "t.jsonl", trajectories)
    assert [t.total_reward for t in load_jsonl(tmp_path / "t.jsonl")] == [2.0, 2.0]


def test_truncation_is_reported():
    result = play_match(
        rps(rounds=5, max_cycles=2),
        {"player_0": ConstantBot("rock"), "player_1": ConstantBot("rock")},
        seed=0,
    )
    assert result.stop_reason == "truncated" and result.outcome("player_0") == "draw"
    assert result.trajectory("player_0").stop_reason == "truncated"


def test_minimax_never_loses_to_random_at_tictactoe():
    report = play_matches(
        tictactoe_v0.env,
        {"minimax": get_bot("tictactoe_v0", "minimax"), "random": RandomLegalBot(seed=3)},
        games=20,
    )
    record = report.summary()["minimax"]
    assert record.losses == 0 and record.wins > 10
    assert record.per_seat["player_0"][2] == record.per_seat["player_1"][2] == 0
    assert all(r.stop_reason == "terminated" for r in report.results)
    # every reward the AEC env gave was credited: totals are +1/-1/0 and match the turns
    for r in report.results:
        assert sorted(r.rewards.values()) in ([-1.0, 1.0], [0.0, 0.0])
        for agent, turns in r.turns.items():
            assert sum(t.reward for t in turns) == r.rewards[agent]


def test_chat_policy_completions_keep_token_ids():
    seen = []

    def chat(conversations, *, tools=None, params=None):
        seen.extend(conversations)
        return [
            Completion("rock", token_ids=(7, 8), logprobs=(-0.1, -0.2), prompt_ids=(1,))
            for _ in conversations
        ]

    batch = chat_batch_policy(chat, system_prompt="Play well.")
    assert isinstance(batch, BatchPolicy)
    result = play_match(rps(rounds=1), {"player_0": batch, "player_1": ConstantBot("scissors")}, seed=0)
    turn = result.turns["player_0"][0]
    assert (turn.action, turn.completion_ids, turn.completion_logprobs, turn.prompt_ids) == (
        "rock",
        (7, 8),
        (-0.1, -0.2),
        (1,),
    )
    assert seen[0][0] == {"role": "system", "content": "Play well."}
    assert seen[0][1]["role"] == "user" and "Rock-paper-scissors" in seen[0][1]["content"]


def test_bad_policies_and_lineups_are_clear_errors():
    with pytest.raises(ValueError, match="one policy per seat"):
        play_matches(rps(), {"a": ConstantBot()}, games=2)
    with pytest.raises(ValueError, match="unknown policies"):
        play_matches(rps(), {"a": ConstantBot()}, lineups=[{"player_0": "a", "player_1": "z"}])
    with pytest.raises(ValueError, match="exactly the agents"):
        play_matches(rps(), {"a": ConstantBot()}, lineups=[{"player_0": "a"}])

    @batch_policy
    def short(observations, infos):
        return []

    with pytest.raises(ValueError, match="returned 0 replies for 2"):
        play_matches(rps(), {"short": short, "b": ConstantBot()}, games=2)
    with pytest.raises(TypeError, match="returned int"):
        play_matches(rps(), {"bad": lambda o, i: 3, "b": ConstantBot()}, games=1)
    with pytest.raises(TypeError, match="Expected a policy"):
        as_batch_policy("rock")
    assert rotated_lineups(["a", "b"], ["x", "y"], 2) == [{"x": "a", "y": "b"}, {"x": "b", "y": "a"}]


def test_turn_based_parallel_view_asks_only_the_player_to_move():
    report = play_matches(
        tictactoe_v0.parallel_env,
        {"minimax": get_bot("tictactoe_v0", "minimax"), "random": RandomLegalBot(seed=1)},
        games=4,
    )
    assert report.summary()["minimax"].losses == 0
    for result in report.results:
        moves = [len(turns) for turns in result.turns.values()]
        assert sum(moves) <= 9 and abs(moves[0] - moves[1]) <= 1  # players alternate, no idle turns
