"""Reproducible benchmarks: `python -m bench` (make bench) prints tables."""
