"""The lowest layer: errors every layer raises, and the host's memory (what a run may use, what it used)."""
