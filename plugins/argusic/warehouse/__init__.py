"""Warehouse: the database (db, lock), every raw table's schema, the loaders (run records, judging,
repair), people's decisions, the dbt build and its expectations, and the analyst copy."""
