"""The platform's jobs as the `ledger` command and the DAGs run them: each composes the
layers below (pipeline, audit, reconcile) and writes its page (report).

- `audit_runs`: an audit run, its Merkle and Great Expectations parts side by side, the mark
  it records and the page it writes (`ledger audit`, `ledger run --audit`, the DAGs);
- `pipeline_dag`, `audit_dag`, `reconcile_dag`: the bodies of the DAGs' tasks, which the DAG
  files import only when a task runs.

Layer: above `report` and `web`, below `operations`, `dags` and `cli`.
"""
