"""Tools an agent can call inside an env: calculator, sandboxed Python, knowledge-base search."""
