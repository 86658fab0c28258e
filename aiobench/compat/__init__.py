"""elbencho drop-in: its config files, what its GPU options would need, the README's
compatibility table."""
