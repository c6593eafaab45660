"""Running the platform's services on one machine: `airflow_local` (the Airflow stack behind
`ledger airflow`) on `processes` (processes started in sessions of their own and stopped as a
whole)."""
