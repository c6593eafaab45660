-- An adopted table given the columns naming its rows' last changes, filled from the change log
-- (sql/0025_change_links.sql; a no-op where it has them): {sql_name} and {name} are its
-- PostgreSQL and declared names, quoted as literals (DDL takes no parameters).
SELECT ledger_track_last_changes(to_regclass(quote_ident({sql_name})), {name});
