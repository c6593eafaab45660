-- Sets the setting `:name` to `:value` for the current transaction only (is_local true) and
-- returns the new value.
SELECT set_config(:name, :value, true)
