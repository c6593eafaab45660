INSERT INTO ledger_statement_balances
    (file_id, statement, source, table_name, account, opening, closing, stated, as_of)
VALUES %s;
