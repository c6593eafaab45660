-- The accounts a run read from the source's start: each one's run is this run.
INSERT INTO ledger_recon_accounts (source, table_name, account, run_id)
SELECT %(source)s, %(table)s, account, %(run_id)s
FROM unnest(%(appearing)s::text[]) AS a(account)
ON CONFLICT (source, table_name, account) DO UPDATE SET run_id = excluded.run_id;
