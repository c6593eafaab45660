"""The ledger's pages inside Airflow's UI: an Airflow plugin (`plugin.LedgerPlugin`, found
through the package's `airflow.plugins` entry point, so `ledger airflow` and the compose setup
load it without a plugins folder) that serves the audit and reconciliation pages and the Great
Expectations Data Docs under Airflow's own address (`/ledger/`), and the breaks workbench where
people match breaks by hand, write them off and start a reconciliation (`/ledger/breaks`), all
behind Airflow's login.

Layer: above `report` (whose pages it serves), `reconcile` and `store` (whose functions the
workbench calls) and below `operations` and `dags` (the report tasks' extra links and the
reconciliation's param name, `links`, are imported by the DAGs at parse time and import only
Airflow's SDK).
"""
