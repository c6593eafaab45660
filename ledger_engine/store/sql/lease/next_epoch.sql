-- The next fencing epoch, the new run's token.
UPDATE ledger_fence SET epoch = epoch + 1 RETURNING epoch;
