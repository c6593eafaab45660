-- The Merkle encoding of ledger_engine.audit.merkle, in SQL, so that audits recompute every
-- table's tree inside PostgreSQL (ledger_engine.audit.proof.snapshots) instead of streaming the
-- table through Python. Each function reproduces, byte for byte, what the Python side hashes;
-- tests/audit/test_merkle_sql.py checks the two agree over generated keys and values.

-- `canonical_json` (ledger_engine.core.records) of a jsonb value: object keys sorted by code point
-- (COLLATE "C" compares UTF-8 bytes, which sorts code points), no spaces. Strings are escaped
-- as Python's json.dumps(ensure_ascii=False) escapes them, which is what to_json and jsonb's
-- output do: \" \\ \b \f \n \r \t, every other control character as \u00XX, the rest as is.
CREATE FUNCTION ledger_canonical_json(value jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    CASE jsonb_typeof(value)
    WHEN 'object' THEN
        RETURN '{' || coalesce((
            SELECT string_agg(to_json(k)::text || ':' || ledger_canonical_json(v), ','
                              ORDER BY k COLLATE "C")
            FROM jsonb_each(value) AS e(k, v)), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((
            SELECT string_agg(ledger_canonical_json(v), ',' ORDER BY n)
            FROM jsonb_array_elements(value) WITH ORDINALITY AS a(v, n)), '') || ']';
    ELSE
        RETURN value::text;
    END CASE;
END
$$;

-- `bucket_of`: the top 12 bits of sha256 of the key's canonical JSON (`key_json`).
CREATE FUNCTION ledger_merkle_bucket(key_json text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ((('x' || encode(substr(sha256(convert_to(key_json, 'UTF8')), 1, 2), 'hex'))
             ::bit(16))::integer) >> 4
$$;

-- `leaf`: sha256 of the row's canonical JSON `[key, value]`.
CREATE FUNCTION ledger_merkle_leaf(key_json text, value_json text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT sha256(convert_to('[' || key_json || ',' || value_json || ']', 'UTF8'))
$$;

-- Word `word` (0..3, most significant first) of a 256-bit leaf, as a signed 64-bit integer.
-- A bucket's digest is the sum of its leaves modulo 2^256; summing the four words separately
-- (as numeric, which does not overflow) and recombining them gives it without 256-bit
-- arithmetic in SQL (ledger_engine.audit.proof.snapshots).
CREATE FUNCTION ledger_merkle_word(leaf bytea, word integer) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (('x' || encode(substr(leaf, 8 * word + 1, 8), 'hex'))::bit(64))::bigint
$$;
