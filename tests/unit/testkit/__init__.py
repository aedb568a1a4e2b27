"""Unit tests of the real-cluster test harness (``testkit``) without the kit running."""
