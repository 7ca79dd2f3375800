"""Environments: every benchmark's games as Gymnasium-style environments, for an agent (a training
loop, a scripted policy) to play one seat of a real game (docs/environments.md).

    env = pipeline.environments.make("whoisspy")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("P3")
"""

from pipeline.environments.env import EpisodeError, GameEnv, make

__all__ = ["EpisodeError", "GameEnv", "make"]
