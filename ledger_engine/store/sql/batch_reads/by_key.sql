-- A task's reads take the rows by their keys, whatever the statistics say: with a few
-- thousand keys in the array the planner scans the whole table instead (a parallel seq scan
-- of 10^6 rows per chunk of 4,096 transfers), a cost that grows with the ledger, not the
-- batch. Set once on the task's read-only connection.
SET enable_seqscan = off;
