"""The Elimination Game: 8 seats talk in public and in private pairs, vote each other out, and
the eliminated seats form a jury that picks the winner. Logs use the original benchmark's format."""
