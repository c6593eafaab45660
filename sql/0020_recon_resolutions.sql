-- Working breaks to closure (ledger_engine.reconcile.resolve, ledger_engine.store.reconciliation)
-- and what the audit needs to check a run's matches against its rules.

-- A match is made by a rule in a run, by hand (`ledger breaks match`: no run, no rule), or by
-- a run settling a write-off: the break's items with the adjusting event's ledger change,
-- which the run found committed (a run, no rule).
ALTER TABLE ledger_recon_matches
    ADD COLUMN kind text NOT NULL DEFAULT 'rule' CHECK (kind IN ('rule', 'manual', 'write_off'));
ALTER TABLE ledger_recon_matches DROP CONSTRAINT ledger_recon_matches_check;
ALTER TABLE ledger_recon_matches
    ADD CONSTRAINT ledger_recon_matches_rule CHECK ((kind = 'rule') = (rule IS NOT NULL)),
    ADD CONSTRAINT ledger_recon_matches_run CHECK ((kind = 'manual') = (run_id IS NULL)),
    ADD CONSTRAINT ledger_recon_matches_note CHECK (kind = 'rule' OR note IS NOT NULL);

-- A write-off first posts its adjusting event through the ledger (`write_off_posted`, with the
-- event's request id); the break stays open until a run finds that event's change committed
-- and settles it (`written_off`). An adjusting event the ledger rejected settles nothing: the
-- break stays open, and may be written off again (a new request id).
ALTER TABLE ledger_recon_break_history DROP CONSTRAINT ledger_recon_break_history_action_check;
ALTER TABLE ledger_recon_break_history ADD CONSTRAINT ledger_recon_break_history_action_check
    CHECK (action IN ('opened', 'matched', 'manual_match', 'write_off_posted', 'written_off',
                      'superseded'));
ALTER TABLE ledger_recon_break_history
    ADD CONSTRAINT ledger_recon_break_history_posted
        CHECK (action <> 'write_off_posted' OR (request_id IS NOT NULL AND note IS NOT NULL));
CREATE INDEX ledger_recon_break_history_request ON ledger_recon_break_history (request_id)
    WHERE request_id IS NOT NULL;

-- The rules a run matched by, as they were declared then (the run's sources_digest names the
-- file): what lets the audit check each rule match against its own tolerances.
CREATE TABLE ledger_recon_run_rules (
    run_id           bigint NOT NULL REFERENCES ledger_recon_runs,
    priority         integer NOT NULL CHECK (priority >= 0),
    rule             text NOT NULL,
    strategy         text NOT NULL CHECK (strategy IN ('one_to_one', 'one_to_many',
                                                       'many_to_one')),
    amount_tolerance bigint NOT NULL CHECK (amount_tolerance >= 0),
    amount_relative  double precision NOT NULL CHECK (amount_relative BETWEEN 0 AND 1),
    window_days      integer CHECK (window_days BETWEEN 0 AND 366),
    PRIMARY KEY (run_id, rule),
    UNIQUE (run_id, priority)
);
REVOKE UPDATE, DELETE ON ledger_recon_run_rules FROM ledger_writer;

-- A run's matches and the breaks it opened, found through their run (the reconciliation page,
-- the audit's rules) instead of by reading every match and break.
CREATE INDEX ledger_recon_matches_run ON ledger_recon_matches (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX ledger_recon_breaks_opened_run ON ledger_recon_breaks (opened_run_id);

-- Readers see, beside each open break, the write-off posted for it, if any: the adjusting
-- event's request id (its outcome is in request_outcomes). The columns before it stay as 0019
-- made them (CREATE OR REPLACE may only append).
CREATE OR REPLACE VIEW open_breaks AS
SELECT b.break_id,
       b.source,
       b.reason,
       b.account,
       b.amount_difference,
       b.opened_at,
       clock_timestamp() - b.opened_at AS age,
       e.amount AS statement_amount,
       e.booking_date,
       e.reference AS statement_reference,
       e.description AS statement_description,
       c.request_id,
       CASE WHEN c.batch_id IS NOT NULL THEN
           COALESCE((c.after #>> '{}')::bigint, 0) - COALESCE((c.before #>> '{}')::bigint, 0)
       END AS ledger_amount,
       posted.request_id AS write_off_request_id
FROM ledger_recon_breaks AS b
LEFT JOIN ledger_statement_entries AS e USING (file_id, position)
LEFT JOIN ledger_change_log AS c
    ON (c.batch_id, c.position, c.seq) = (b.batch_id, b.change_position, b.change_seq)
LEFT JOIN LATERAL (
    SELECT h.request_id
    FROM ledger_recon_break_history AS h
    WHERE h.break_id = b.break_id AND h.action = 'write_off_posted'
    ORDER BY h.seq DESC
    LIMIT 1
) AS posted ON true
WHERE b.status = 'open';
