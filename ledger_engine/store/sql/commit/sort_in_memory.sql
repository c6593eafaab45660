-- Sorting a batch's row writes and change log in memory rather than in temporary files;
-- local to the commit's transaction.
SET LOCAL work_mem = '256MB';
