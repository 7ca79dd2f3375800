"""SKATE: models set and answer verifiable code-output-prediction questions (docs/skate.md)."""
