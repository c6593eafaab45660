# The Spark master and worker image of the production-like setup (docker-compose.yml).
#
# PySpark runs the ledger's Python code on the workers with the driver's interpreter
# (`spark.pyspark.python` is the driver's `sys.executable`), so a worker needs the very same
# Python (3.11, same path), pyspark (4.3.0) and `ledger_engine`. The honest way to get that is
# to build the worker from the same base image as the Airflow image (docker/airflow.Dockerfile)
# with the project installed the same way, and run Spark's standalone master and worker from
# pip's pyspark (`spark-class` is on PATH).
#
# Build from the repository root:  docker build -f docker/spark.Dockerfile .
FROM apache/airflow:3.3.2-python3.11

USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /opt/ledger-data \
    && chown airflow:root /opt/ledger-data

USER airflow
COPY --chown=airflow:root pyproject.toml constraints.txt README.md /opt/ledger/
COPY --chown=airflow:root ledger_engine /opt/ledger/ledger_engine
COPY --chown=airflow:root sql /opt/ledger/sql
COPY --chown=airflow:root expectations /opt/ledger/expectations
RUN pip install --no-cache-dir --constraint /opt/ledger/constraints.txt --editable /opt/ledger \
    && python -c "import pyspark, ledger_engine; assert pyspark.__version__ == '4.3.0', pyspark.__version__"

# Where a worker keeps its executors' scratch files and logs.
ENV SPARK_WORKER_DIR=/tmp/spark-work
# Not Airflow's entrypoint: these containers run Spark, not an Airflow component.
ENTRYPOINT ["/usr/bin/dumb-init", "--"]
# A master by default; docker-compose.yml gives the master and the worker their own commands.
CMD ["spark-class", "org.apache.spark.deploy.master.Master"]
