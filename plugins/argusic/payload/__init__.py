"""Programs that run inside containers, mounted there from this folder: the standard library only,
nothing of argusic (the import contract). render_driver.py renders HTML artifacts (judging/render.py);
check_instructions.py refuses a repair attempt when an agent instruction file is reachable (its name
and bytes are hashed into every repair record)."""
