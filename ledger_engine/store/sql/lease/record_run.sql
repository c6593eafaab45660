-- The run that took the lease: its epoch, and who and where it is.
INSERT INTO ledger_runs (epoch, holder, host, pid) VALUES (%s, %s, %s, %s);
