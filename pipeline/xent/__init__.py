"""Xent: cross-entropy games written in XGL, scored by a judge language model (specs/xent.md)."""
