# The Airflow image of the production-like setup (docker-compose.yml): the official
# apache/airflow 3.3.2 image on Python 3.11, plus Java 17 (the Spark driver runs inside the
# Airflow task process) and this project, installed at the versions pinned in constraints.txt.
#
# Build from the repository root:  docker build -f docker/airflow.Dockerfile .
FROM apache/airflow:3.3.2-python3.11

USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /opt/ledger-data \
    && chown airflow:root /opt/ledger-data

USER airflow
# Only what the package needs. It is installed editable from /opt/ledger because the engine
# finds its SQL migrations (sql/) and its Great Expectations context (expectations/) next to
# the `ledger_engine` package.
COPY --chown=airflow:root pyproject.toml constraints.txt README.md /opt/ledger/
COPY --chown=airflow:root ledger_engine /opt/ledger/ledger_engine
COPY --chown=airflow:root sql /opt/ledger/sql
COPY --chown=airflow:root expectations /opt/ledger/expectations
RUN pip install --no-cache-dir --constraint /opt/ledger/constraints.txt --editable /opt/ledger \
    && python -c "import airflow, pyspark, ledger_engine; assert airflow.__version__ == '3.3.2', airflow.__version__; assert pyspark.__version__ == '4.3.0', pyspark.__version__"
