-- The current fencing epoch, under a share lock: a new run cannot take the lease (and
-- increment the epoch) until the transaction that read it ends.
SELECT epoch FROM ledger_fence FOR SHARE;
