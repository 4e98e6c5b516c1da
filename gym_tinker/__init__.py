"""gym_tinker: text environments for LLM agents, as standard Gymnasium envs.

Importing the package registers every env under the ``tinker`` namespace::

    >>> import gymnasium as gym
    >>> import gym_tinker
    >>> env = gym.make("tinker/GuessNumber-v0")
    >>> observation, info = env.reset(seed=0)
    >>> isinstance(observation, str)
    True
"""

from gym_tinker.core import StepResult, TextEnv
from gym_tinker.registration import ENV_ENTRIES, list_envs, register_all
from gym_tinker.spaces import TextObservation, TextSpace

__version__ = "0.1.0"

__all__ = [
    "ENV_ENTRIES",
    "StepResult",
    "TextEnv",
    "TextObservation",
    "TextSpace",
    "__version__",
    "list_envs",
    "register_all",
]

register_all()
