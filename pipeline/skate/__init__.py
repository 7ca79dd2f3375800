"""SKATE: models set and answer verifiable code-output-prediction questions (specs/skate.md)."""
