"""Sources: the candidate catalogue, the mirror of pinned commits, the pool a cycle draws, and the demo
forge (local projects with their history)."""
