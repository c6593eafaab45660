INSERT INTO ledger_recon_matched_entries (file_id, position, match_id) VALUES %s;
