"""The PostgreSQL system of record: connection, schema, state access and the batch commit."""
