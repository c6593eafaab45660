-- No other writer changes a declared table while the batch's net changes are applied.
LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE;
