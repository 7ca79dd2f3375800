"""The run plan: `python -m pipeline plan [TARGET]` and the budget guard of every run."""
