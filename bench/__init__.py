"""Runnable benchmarks: ``python bench/<name>.py`` prints the measured figures."""
