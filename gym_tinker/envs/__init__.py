"""The gym_tinker environments, one module each (registered in :mod:`gym_tinker.registration`)."""
