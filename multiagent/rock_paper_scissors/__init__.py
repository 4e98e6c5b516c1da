"""Rock-paper-scissors: rules (``logic``), the parallel env (``env``) and bots (``bots``)."""
