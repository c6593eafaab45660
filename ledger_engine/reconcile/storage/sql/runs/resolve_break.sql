UPDATE ledger_recon_breaks
SET status = 'resolved', resolution = %s, resolved_at = clock_timestamp()
WHERE break_id = %s AND status = 'open';
