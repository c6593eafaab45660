-- The planner's settings again, once the journal checks that needed plan_by_keys.sql are done.
RESET enable_seqscan;
RESET enable_nestloop;
