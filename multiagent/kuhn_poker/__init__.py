"""Kuhn poker: rules (`game`) and bots (`bots`); the environment is `multiagent.kuhn_poker_v0`."""
