"""Operational scripts (``python -m scripts.topology``); importable by the tests and benchmarks."""
