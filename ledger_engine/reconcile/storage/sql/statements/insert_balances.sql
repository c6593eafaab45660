INSERT INTO ledger_statement_balances
    (file_id, source, table_name, account, opening, closing, as_of)
VALUES %s;
