INSERT INTO ledger_statement_rejections (file_id, position, reason, detail, raw_input)
VALUES %s;
