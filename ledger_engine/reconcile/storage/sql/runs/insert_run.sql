INSERT INTO ledger_recon_runs
    (source, sources_digest, through_batch, through_file, statement_items, ledger_items,
     matches, breaks_opened, breaks_closed, who, started_at, from_batch, from_date)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
RETURNING run_id;
