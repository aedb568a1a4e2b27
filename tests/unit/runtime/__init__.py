"""Unit tests of process start-up (``shared.runtime``): argument parsing, the event loop."""
