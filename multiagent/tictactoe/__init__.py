"""Tic-tac-toe: rules (`board`) and bots (`bots`); the environment is `multiagent.tictactoe_v0`."""
