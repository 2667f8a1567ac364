"""People's decisions on the pipeline's results (METHODOLOGY.md §8, §10 and §1), as data.

- `environment`: a project every agent failed is under review until a person says whose fault it
  was (project at fault: its results count again; environment at fault: they stay out).
- `publication`: nothing is published before a person approves the exact board (its sha256); the
  form shows what changed since the cycle's last publication; a rejection is recorded with its reason.
- `disputes`: a maintainer disputes an attempt; a person rules; when our environment was at fault,
  the attempt is rerun through the one attempt path and the rerun counts in its place.

Every decision goes through `argusic.warehouse.decisions.record` (who, when, why). The Airflow forms
(`argusic.orchestration.forms`, human-in-the-loop operators) and the CLI (`argusic review|publish|
dispute`) call the same functions. No Airflow import here except in `operators`.
"""
