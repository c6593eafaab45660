-- The rules a run matched by, as declared then (many rows: execute_values fills VALUES).
INSERT INTO ledger_recon_run_rules
    (run_id, priority, rule, strategy, amount_tolerance, amount_relative, window_days)
VALUES %s;
