-- The journal checks read the batch's rows by the tables' keys, whatever the statistics say:
-- a table that was empty when last analyzed makes the planner take the rows this transaction
-- just wrote for a handful and probe one table once per row of the other by its batch id
-- alone (the first batch of 10^5 deposits: 372 s of checks). The batch's rows of two tables
-- are joined by hash or merge instead, each read by its key range. Two settings, set and
-- reset together (plan_reset.sql).
SET LOCAL enable_seqscan = off;
SET LOCAL enable_nestloop = off;
