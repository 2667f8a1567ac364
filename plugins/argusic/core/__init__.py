"""Core: settings, file layout, safe I/O, the run-record contract, the attempt spec, task definitions,
the evidence store and the runs store. Imports nothing of argusic above it (the import contract)."""
