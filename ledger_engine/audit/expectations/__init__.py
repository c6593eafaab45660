"""The Great Expectations audit of the system of record: two suites over one data source,
generated from one list of rules.

- `rules`: every rule, declared once with its whole-ledger and in-scope wording and SQL;
- `queries`: the rules' SQL (`ledger_engine/audit/sql/`), filled in for a declaration;
- `suites`: the suites `ledger_integrity` (the full audit's) and `ledger_batch_integrity` (the
  batch audit's), their assets and expectations;
- `rows_once`: the expectation types that run a rule's query once;
- `context`: the project's file context, kept current for a suite;
- `run`: running a suite's checkpoint (`run_expectations`, `run_batch_expectations`);
- `results`: the validation results as `CheckResult`s; `console`: Great Expectations' noise;
- `data_docs`: Data Docs that work offline.
"""
