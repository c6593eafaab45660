-- State tables of the bank application: one per declared ledger table, (key, value).
-- The engine checks at start-up that every declared table has one with a matching value type.

CREATE TABLE accounts (
    key   text PRIMARY KEY,
    value bigint NOT NULL
);

CREATE TABLE asset_ledger (
    key   text PRIMARY KEY,
    value bigint NOT NULL
);
