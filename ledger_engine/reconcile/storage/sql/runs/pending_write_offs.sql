-- The source's open breaks whose last step posted a write-off, with their items, the adjusting
-- event's request id, and who wrote the break off and why.
SELECT b.break_id, b.account, b.file_id, b.position, b.batch_id, b.change_position,
       b.change_seq, h.request_id, h.who, h.note
FROM ledger_recon_breaks AS b
JOIN LATERAL (
    SELECT action, request_id, who, note
    FROM ledger_recon_break_history
    WHERE break_id = b.break_id
    ORDER BY seq DESC
    LIMIT 1
) AS h ON true
WHERE b.source = %s AND b.status = 'open' AND h.action = 'write_off_posted'
ORDER BY b.break_id;
