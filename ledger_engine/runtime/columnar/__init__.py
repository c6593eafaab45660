"""The columnar engine: a batch's events, plan, rows and outcomes as Arrow columns.

Spark-independent kernels that Spark tasks (`ledger_engine.runtime.spark.engine`) run, each over
Arrow tables: screening a unit of events, routing them to the slots of a plan, executing a
slot, settling deferred adds; and the driver's side, which works on columns only
(`admission`, `carry`), and the result (`result`).
"""
