"""Slow, obviously-correct NumPy reference implementations used by the parity tests."""
