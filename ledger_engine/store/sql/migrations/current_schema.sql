-- The schema the session creates objects in.
SELECT current_schema();
