-- A declared table of integers, for the audit page's figures: how many rows it has and the
-- total of its values (numeric: a total may pass the int64 range), which the page shows as
-- money in the table's declared unit. {table}: the table's sql_name.
SELECT count(*) AS row_count, COALESCE(SUM(t.value), 0) AS total
FROM "{table}" AS t
