-- The source of each break named (to take that source's lock before locking the breaks).
SELECT DISTINCT source FROM ledger_recon_breaks WHERE break_id = ANY (%(break_ids)s) ORDER BY 1;
