"""Execute an analyst notebook, top to bottom, into an operator's copy with its outputs (tables and
plots); the committed notebook stays without outputs.

    .venv/bin/python scripts/run_notebook.py [notebooks/board_and_verdicts.ipynb] [--out PATH]

It reads what the notebook reads (the analyst copy, else the warehouse, read-only), so run it after
`make demo` or a build; `make notebook` does. The executed copy is written beside the warehouse
(``<warehouse dir>/notebooks/<name>``, git-ignored; ``--out`` to choose): the warehouse is an
operator's view and names a cycle's private projects before their reveal (methodology section 6,
issue 32), so outputs drawn from it are never committed nor published. ``--strip`` empties a
notebook's outputs in place (what is committed).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "notebooks" / "board_and_verdicts.ipynb"


def strip(nb) -> None:
    """No outputs, no execution counts, no timings: the notebook as committed."""
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None


def executed_path(path: Path) -> Path:
    """Where an executed copy goes by default: ``notebooks/`` beside the warehouse file."""
    from argusic.core.settings import warehouse_path

    return warehouse_path().parent / "notebooks" / path.name


def _write(nb, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    nbformat.write(nb, partial)
    partial.replace(target)


def main(argv: list[str]) -> int:
    args = list(argv)
    only_strip = "--strip" in args
    if only_strip:
        args.remove("--strip")
    out = None
    if "--out" in args:
        at = args.index("--out")
        out = Path(args[at + 1])
        del args[at : at + 2]
    path = Path(args[0]) if args else DEFAULT
    nb = nbformat.read(path, as_version=4)
    if only_strip:
        strip(nb)
        _write(nb, path)
        print(f"{path}: outputs stripped")
        return 0
    from nbclient import NotebookClient

    target = out or executed_path(path)
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
    _write(nb, target)
    images = sum("image/png" in out.get("data", {}) for c in nb.cells for out in c.get("outputs", []))
    took, size = time.monotonic() - started, target.stat().st_size
    print(f"{target}: executed in {took:.1f} s, {images} plot(s), {size:,} bytes (an operator's view)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
