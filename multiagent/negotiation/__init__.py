"""Negotiation: rules and reply parsing (``logic``) and bots (``bots``); the env is ``negotiation_v0``."""
