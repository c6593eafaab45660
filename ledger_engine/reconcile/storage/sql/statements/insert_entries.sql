INSERT INTO ledger_statement_entries
    (file_id, position, source, table_name, account, amount, booking_date, value_date,
     reference, servicer_reference, description, raw_input)
VALUES %s;
