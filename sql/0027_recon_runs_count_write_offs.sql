-- A run's breaks_closed counts the write-offs it settles (ledger_engine.reconcile.storage.runs):
-- a settled write-off closes its break in that run. Runs recorded before this migration left
-- them out (a run that settled three write-offs recorded 0 closed): each such run's count is
-- made right from the breaks' history, where every write-off a run settled is a step
-- `written_off` of that run.
UPDATE ledger_recon_runs AS r
SET breaks_closed = r.breaks_closed + w.settled
FROM (
    SELECT run_id, count(*) AS settled
    FROM ledger_recon_break_history
    WHERE action = 'written_off' AND run_id IS NOT NULL
    GROUP BY run_id
) AS w
WHERE w.run_id = r.run_id;
