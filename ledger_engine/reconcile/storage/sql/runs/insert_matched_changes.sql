INSERT INTO ledger_recon_matched_changes (source, batch_id, position, seq, match_id) VALUES %s;
