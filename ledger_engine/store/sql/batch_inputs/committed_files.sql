-- Which of the given event file names (%(names)s, a text array) a committed batch took.
SELECT DISTINCT taken.name
FROM ledger_batches AS b
CROSS JOIN LATERAL jsonb_array_elements_text(b.input_files) AS taken(name)
WHERE taken.name = ANY(%(names)s);
