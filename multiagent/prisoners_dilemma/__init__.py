"""Prisoner's dilemma: rules (``logic``), the parallel env (``env``) and bots (``bots``)."""
