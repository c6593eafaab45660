-- CSV rows into {table}'s {columns}, as a task or the commit wrote them.
COPY {table} ({columns}) FROM STDIN WITH (FORMAT csv);
