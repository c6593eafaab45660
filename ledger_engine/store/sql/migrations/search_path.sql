-- The schema the session creates objects in (NULL when it does not exist yet), and the
-- search_path that names it.
SELECT current_schema(), current_setting('search_path');
