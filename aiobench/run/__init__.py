"""Runs a benchmark: the runner, its phases, the worker slots, signals and scale-out."""
