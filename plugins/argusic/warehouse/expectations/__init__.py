"""Expectations on the marts, checked after every dbt build: the suites (data), the SQL checks, the
results, and the Great Expectations plumbing (validate; GX is imported there only, when a build runs)."""
