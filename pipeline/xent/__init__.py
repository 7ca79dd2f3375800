"""Xent: cross-entropy games written in XGL, scored by a judge language model (docs/xent.md)."""
