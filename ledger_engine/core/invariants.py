"""An application's own rules, declared beside its tables and streams, and audited.

The platform's integrity rules hold for every ledger (each table is the fold of its change log,
every event is accounted for once, the batches chain by hash); what money may do is the
application's to say. Three declarative forms cover the rules a ledger of integer amounts
keeps, each over one integer table:

- `Minimum(table, minimum)`: no row of `table` holds less than `minimum` (no balance below
  zero);
- `Conserved(table, sources)`: the total of `table` equals the sum, over the applied events of
  each source stream, of that stream's payload field (money enters only by deposits);
- `Balanced(table, streams)`: each applied event of these streams moves nothing in `table`, its
  changes there summing to zero (a transfer creates no money).

They are data, not code: the store records them (`ledger_declared_invariants`) and the audits
evaluate every declared one with the same SQL (`ledger_engine/audit/sql/invariants/`), in the
Great Expectations suites, in the report and in `ledger verify`. Each has a name, a label like
every name, from which the platform derives an identifier (`sql_name`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ledger_engine.core.naming import label_problem, sql_identifier
from ledger_engine.errors import DeclarationError

MINIMUM, CONSERVED, BALANCED = "minimum", "conserved", "balanced"


@dataclass(frozen=True)
class Invariant:
    """A declared rule over one integer table. `sources` are (stream, payload field) pairs:
    the streams whose applied events the rule reads, with the field a `Conserved` rule sums
    (`None` for `Balanced`)."""

    name: str
    kind: str
    table: str
    minimum: int | None = None
    sources: tuple[tuple[str, str | None], ...] = ()
    sql_name: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        assert self.kind in (MINIMUM, CONSERVED, BALANCED), self.kind
        # Its SQL name is derived here, so its labels are checked here, before: a default name
        # joins every stream's label, and may pass the limit.
        problem = invariant_problem(self)
        if problem is not None:
            raise DeclarationError(problem)
        object.__setattr__(self, "sql_name", sql_identifier(self.name))

    def describe(self) -> str:
        """The rule in words, for people (the report, the suite's descriptions)."""
        if self.kind == MINIMUM:
            return f"No row of `{self.table}` holds less than {self.minimum}."
        if self.kind == CONSERVED:
            parts = [f"the `{f}` of applied `{s}`" for s, f in self.sources]
            return f"The total of `{self.table}` equals the sum of {' and '.join(parts)}."
        streams = ", ".join(f"`{s}`" for s, _ in self.sources)
        return f"Each applied event of {streams} moves nothing in `{self.table}`."


def minimum(table: str, value: int, name: str | None = None) -> Invariant:
    """No row of `table` holds less than `value`."""
    _check_int("minimum", value)
    return Invariant(name or f"{table} never below {value}", MINIMUM, table, minimum=value)


def conserved(table: str, sources: Mapping[str, str], name: str | None = None) -> Invariant:
    """The total of `table` equals the sum of `sources[stream]` (a payload field) over the
    applied events of each source stream."""
    if not sources:
        raise ValueError("a conserved table needs at least one source stream")
    pairs = tuple(sorted(sources.items()))
    return Invariant(name or f"{table} total is conserved", CONSERVED, table, sources=pairs)


def balanced(
    table: str, streams: tuple[str, ...] | list[str], name: str | None = None
) -> Invariant:
    """Each applied event of `streams` nets to zero in `table`."""
    if not streams:
        raise ValueError("a balanced rule needs at least one stream")
    pairs = tuple((stream, None) for stream in sorted(set(streams)))
    return Invariant(
        name or f"{', '.join(streams)} move nothing in {table}", BALANCED, table, sources=pairs
    )


def _check_int(what: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {value!r}")


def invariant_problem(invariant: Invariant) -> str | None:
    """What is wrong with `invariant`'s own names, or `None`."""
    for kind, text in (("invariant", invariant.name), ("table", invariant.table)):
        problem = label_problem(kind, text)
        if problem is not None:
            return problem
    for stream, payload_field in invariant.sources:
        problem = label_problem("stream", stream) or (
            payload_field is not None and label_problem("payload field", payload_field)
        )
        if problem:
            return problem
    return None
