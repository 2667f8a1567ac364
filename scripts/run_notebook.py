"""Execute an analyst notebook in place, top to bottom, and keep its outputs (tables and plots).

    .venv/bin/python scripts/run_notebook.py [notebooks/board_and_verdicts.ipynb]

It reads what the notebook reads (the analyst copy, else the warehouse, read-only), so run it after
`make demo` or a build; `make notebook` does. The committed notebook's outputs come from this script.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else ROOT / "notebooks" / "board_and_verdicts.ipynb"
    nb = nbformat.read(path, as_version=4)
    started = time.monotonic()
    NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        coalesce_streams=True,  # a cell's prints saved as one output, whatever the kernel's flushes
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    for cell in nb.cells:  # execution metadata (timings) would change the file at every run
        cell.get("metadata", {}).pop("execution", None)
    partial = path.with_name(f".{path.name}.partial")
    nbformat.write(nb, partial)
    partial.replace(path)
    images = sum("image/png" in out.get("data", {}) for c in nb.cells for out in c.get("outputs", []))
    took, size = time.monotonic() - started, path.stat().st_size
    print(f"{path}: executed in {took:.1f} s, {images} plot(s), {size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
