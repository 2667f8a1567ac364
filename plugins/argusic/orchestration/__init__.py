"""The Airflow side of the package, the only place (with cli/) that imports Airflow: what the DAG files
in dags/ share (dag_support: pools, queues, task settings, the mapped attempt task), the people's forms
(forms: Airflow's human-in-the-loop operators for approval, environment review, disputes and judging
review), the scheduler's cluster policy (policy, entry point `airflow.policy`) and the benchmark
stand-in attempts (bench_standin). The steps themselves live below: a DAG task calls the same function
of cycle/, workflows/, review/ or warehouse/ that `argusic` calls."""
