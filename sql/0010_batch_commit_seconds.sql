-- Commit latency of every batch, for the audit report (ledger_engine.audit.report): the seconds
-- the commit transaction took up to writing the batch row (taking the commit lock, checking
-- the staging, applying rows, moving the log, updating the Merkle digests).
--
-- A measurement, not a fact of the ledger: the batch hash does not cover it
-- (`HASHED_FIELDS` in ledger_engine/store/commit.py), so batches committed before this
-- migration keep their hashes and read 0 ("not measured").
--
-- Grants need nothing new: the writer's INSERT and the auditor's SELECT on ledger_batches
-- (0007_roles.sql) are table-wide and so cover a column added later; the reader sees no
-- batch column but through its views, which name their columns.
ALTER TABLE ledger_batches
    ADD COLUMN commit_seconds double precision NOT NULL DEFAULT 0 CHECK (commit_seconds >= 0);
