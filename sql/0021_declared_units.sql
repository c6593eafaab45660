-- Money as money (ledger_engine.core.money): what each declared table's integers count, and
-- how an amount reads in its unit. Storage and arithmetic stay integer; these only say how a
-- person reads an amount, in the views people query as in the command line and the reports.

-- A declared table's unit: a code (a currency such as EUR, or another unit) and a precision
-- (the decimal places of its minor units), both or neither. Only a table of integers has one;
-- one without reads as a plain integer. The code's pattern and the precision's range are
-- `ledger_engine.core.money`'s.
ALTER TABLE ledger_declared_tables
    ADD COLUMN unit_code text,
    ADD COLUMN unit_precision integer,
    ADD CONSTRAINT ledger_declared_tables_unit CHECK (
        (unit_code IS NULL AND unit_precision IS NULL)
        OR (value_type = 'bigint'
            AND unit_code ~ '^[A-Za-z][A-Za-z0-9]{0,11}$'
            AND unit_precision BETWEEN 0 AND 18)
    );

-- A whole number's digits grouped by thousands: '1234567' -> '1,234,567'.
CREATE FUNCTION ledger_digit_groups(digits text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN reverse(regexp_replace(reverse(digits), '([0-9]{3})(?=[0-9])', '\1,', 'g'));

-- A whole number's digits read with `places` decimal places: ('123456', 2) -> '1,234.56',
-- ('5', 2) -> '0.05', ('1234', 0) -> '1,234'.
CREATE FUNCTION ledger_decimal_text(digits text, places integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE
    WHEN places = 0 THEN ledger_digit_groups(digits)
    WHEN length(digits) > places
        THEN ledger_digit_groups(left(digits, -places)) || '.' || right(digits, places)
    ELSE '0.' || lpad(digits, places, '0')
END;

-- An amount of integer minor units as a person reads it, exactly as Python's
-- `ledger_engine.core.money.money_text` writes it: (-123456, 'EUR', 2) -> '-1,234.56 EUR';
-- without a unit (a NULL code) the integer with thousands separators, (-123456, NULL, NULL)
-- -> '-123,456'; NULL for no amount. Views show it beside the integer column, joining the
-- table's unit from ledger_declared_tables:
--   ledger_money_text(a.value, u.unit_code, u.unit_precision) AS balance_text
CREATE FUNCTION ledger_money_text(amount numeric, unit_code text, unit_precision integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN amount < 0 THEN '-' ELSE '' END
    || ledger_decimal_text(
        CAST(trunc(abs(amount)) AS text),
        CASE WHEN unit_code IS NULL THEN 0 ELSE unit_precision END)
    || CASE WHEN unit_code IS NULL THEN '' ELSE ' ' || unit_code END;
