"""Sandbox: the launch contract (what an attempt container is given and what it leaves), the executors,
containment of a container and its scratch areas, and landing of /out and the agent's changes."""
