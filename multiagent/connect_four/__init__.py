"""Connect four: rules (`board`) and bots (`bots`); the environment is `multiagent.connect_four_v0`."""
