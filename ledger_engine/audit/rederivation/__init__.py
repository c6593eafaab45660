"""The serial runner as the audit's oracle: committed batches re-derived line by line and
compared with what PostgreSQL holds (`compare`), from the inbox files the batches took in
(`oracle`) or from the stored event log (`replay`). `expected` says what each line must have
left, `stored_log` reads what it did leave, and `stored_form` is what the store keeps of an
event and a JSON value, written apart from the staging's code."""
