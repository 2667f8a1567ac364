"""Renderings of the evidence (issue 30; methodology section 17, the presentation layer): videos, GIFs
and stills drawn from an attempt's *served* (masked) recording, and share images drawn from published
values only.

- ``timeline``: a served recording read strictly (asciicast v2, bounded) and its error-and-fix
  timeline, read from the harness's own lines in it (each command at its prompt, each failure, recovery
  move and fix as the harness noted it).
- ``edits``: the only edits a rendering may apply, as a list of time-range operations (idle time
  compressed, stretches trimmed) validated against that timeline before anything is drawn: no edit may
  reorder events, join sessions, or cover a failing step.
- ``frames``: the terminal emulated (pyte) and drawn (Pillow), with the fast-forward and trimming marks,
  the captions and the end card linking back to the run page and the evidence's sha256.
- ``output``: encoding (mp4 by imageio-ffmpeg's ffmpeg, gif and png by Pillow), the metadata, and the
  JSON manifest beside every rendering (recording sha256, renderer version, every edit applied).
- ``cards``: share images (PNG) per run and per board, from ``attempts.json`` and ``board.json`` as
  published (a sealed project shows what its page shows: its label, never its name).

Rendering is deterministic: the same served recording and settings give the same bytes.
"""

RENDERER_VERSION = "argusic-render/1"
