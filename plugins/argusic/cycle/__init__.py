"""The cycle: plan and run a cycle's attempts, the same steps for `argusic cycle run` and the DAGs (ids of
runs and cycles, the plan, the pool, running the planned attempts, the tally). No Airflow here."""
