# The one image of every Airflow service in docker-compose.yml: the pinned set from requirements.txt,
# the argusic package, the DAGs and the dbt project. Nothing of a checkout is mounted at run time; on
# real hosts this image is loaded from a `docker save` archive (docs/deployment.md).
FROM python:3.11-slim-bookworm
# git: the mirror cache and the attempts' single-commit sources; e2fsprogs (mkfs.ext4) and mount
# (mount, umount, losetup): the attempts' size-capped areas (README "Threat model"); iptables and
# util-linux's nsenter: the section-7 attempt network's firewall, set in the host's network namespace.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git e2fsprogs mount iptables util-linux \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/argusic
COPY requirements.txt constraints.txt pyproject.toml ./
COPY plugins ./plugins
# The cluster's packages (Celery executor, Amazon provider for task logs in S3, Postgres and Redis
# clients) are named here as well as pinned in requirements.txt/constraints.txt: -c holds them to
# the pinned versions.
RUN pip install --no-cache-dir -r requirements.txt -c constraints.txt \
      psycopg2-binary redis apache-airflow-providers-celery apache-airflow-providers-amazon \
 && pip install --no-cache-dir --no-deps -e .
COPY dags ./dags
COPY dbt_project ./dbt_project
# The methodology: published with every board and rendered on the site (methodology.html).
COPY METHODOLOGY.md ./
ENV AIRFLOW_HOME=/opt/airflow
# Airflow's plugins folder: empty on purpose (not plugins/, whose *.py Airflow would execute).
RUN mkdir -p /opt/airflow/plugins /opt/airflow/logs /var/cache/argusic/runs
ENTRYPOINT ["airflow"]
