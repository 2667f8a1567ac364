# Airflow image for docker-compose.yml: the pinned set from requirements.txt plus the argusic package.
FROM python:3.11-slim-bookworm
WORKDIR /opt/argusic
COPY requirements.txt constraints.txt pyproject.toml ./
COPY plugins ./plugins
RUN pip install --no-cache-dir -r requirements.txt -c constraints.txt psycopg2-binary apache-airflow-providers-celery \
 && pip install --no-cache-dir --no-deps -e .
ENV AIRFLOW_HOME=/opt/airflow
ENTRYPOINT ["airflow"]
