"""Fixtures and helpers shared by every area's tests."""
