"""Readable views of the DVC metrics files (`python -m pipeline metrics`)."""
