INSERT INTO ledger_recon_breaks
    (source, reason, account, file_id, position, batch_id, change_position, change_seq,
     amount_difference, opened_run_id)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
RETURNING break_id;
