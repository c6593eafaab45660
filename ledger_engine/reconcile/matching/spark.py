"""The Spark matcher: the specification in `matching`, computed with joins and windows over
DataFrames, so that it scales the way the ledger does. Its outcome equals the reference
matcher's (`reference.match`), which the tests check over generated inputs.

How each part of the specification is computed:

- *Partitioning*: both sides are hash-partitioned by account once, and every join, group and
  window keys on the account first, so none of them shuffles again (persisted frames keep the
  partitioning; the items a rule leaves are checkpointed, to cut the plan, and partitioned
  again). Where the time goes: bench/studies/reconcile-matcher.md.
- *Folding*: Spark's `lower` (ICU's full lowercase mapping, which agrees with Python's
  `str.lower`), `regexp_replace` of `similarity.WHITE_SPACE_RUN`, `trim`; by each rule that
  reads a text, over the items left to it.
- *Candidates*: an equi-join on the account, plus the folded reference or description when a
  rule requires it equal (threshold 1.0) and the amount when a rule allows no difference, so
  that exact rules cost a hash join; a date window is then a filter, and without an equal text
  it becomes an equi-join on date buckets of `window_days + 1` days (each statement item looks
  into its bucket and the two beside it) and a filter; similarity is Spark's `levenshtein`
  (code points, like the oracle's) in the same double arithmetic as the oracle.
- *Groups*: a `groupBy` of the grouped side's unmatched items on (account, folded field or
  date), kept when two or more.
- *The greedy choice* by rounds of mutual best candidates: each candidate is ranked on each
  side by cost (`row_number` over a window per item); the candidates that are the best of
  both their items are kept and every candidate touching a kept item dropped; until none is
  left. Costs are a strict total order (they end with both ids), so the cheapest candidate
  left is always mutual best and every kept one is what the greedy in increasing cost keeps:
  the same matches. Each round's frame is persisted, so that a round does not recompute the
  rounds before it.
- *Breaks*: duplicates by a window over the statement side's identical items (an unmatched
  item that is not the first by id of its identity is a duplicate: the first is matched or a
  break of another reason, so the specification's recursive wording reduces to this);
  amount mismatches by the same rounds over equal folded references; the rest by anti-joins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
    Break,
    LedgerItem,
    Match,
    MatchingOutcome,
    StatementItem,
)
from ledger_engine.reconcile.matching.order import break_order, match_order
from ledger_engine.reconcile.matching.similarity import WHITE_SPACE_RUN
from ledger_engine.reconcile.rules import MANY_TO_ONE, ONE_TO_MANY, Rule

# An item id is an array of longs: Spark orders arrays as Python orders tuples (element by
# element, a prefix first), so windows and sorts by id give the oracle's order.
STATEMENT_SCHEMA = (
    "id array<bigint>, account string, amount bigint, date date, reference string, "
    "description string"
)
LEDGER_SCHEMA = STATEMENT_SCHEMA + ", request_id string"
MATCH_SCHEMA = (
    "rule string, priority int, account string, statement_ids array<array<bigint>>, "
    "ledger_ids array<array<bigint>>, amount_difference bigint, date_difference_days int"
)
BREAK_SCHEMA = (
    "reason string, account string, statement_ids array<array<bigint>>, "
    "ledger_ids array<array<bigint>>, amount_difference bigint"
)
# A candidate's cost, compared in this order; it ends with both node ids, so no two
# candidates of one rule cost the same.
COST = ("c_amount", "c_days", "c_reference", "c_description", "s_nid", "l_nid")
_NODE = ("account", "nid", "members", "amount", "date", "fref", "fdesc")


# The input schemas in Arrow's types, which Spark reads as the schemas above.
_ARROW_STATEMENT = pa.schema(
    [
        ("id", pa.list_(pa.int64())),
        ("account", pa.string()),
        ("amount", pa.int64()),
        ("date", pa.date32()),
        ("reference", pa.string()),
        ("description", pa.string()),
    ]
)
_ARROW_LEDGER = _ARROW_STATEMENT.append(pa.field("request_id", pa.string()))


def statement_frame(spark: SparkSession, items: Sequence[StatementItem]) -> DataFrame:
    """A frame of statement items, in the matcher's input schema (`STATEMENT_SCHEMA`)."""
    return _arrow_frame(spark, items, _ARROW_STATEMENT, STATEMENT_SCHEMA)


def ledger_frame(spark: SparkSession, items: Sequence[LedgerItem]) -> DataFrame:
    """A frame of ledger items, in the matcher's input schema (`LEDGER_SCHEMA`)."""
    return _arrow_frame(spark, items, _ARROW_LEDGER, LEDGER_SCHEMA)


def _arrow_frame(
    spark: SparkSession,
    items: Sequence[StatementItem] | Sequence[LedgerItem],
    schema: pa.Schema,
    ddl: str,
) -> DataFrame:
    # Column by column into Arrow, which Spark reads in batches: not row by row through
    # Python's pickling, which took most of a run's input time at 10^5 items and more.
    if not items:
        return spark.createDataFrame([], ddl)
    table = pa.table(
        {f.name: pa.array([getattr(i, f.name) for i in items], f.type) for f in schema},
        schema=schema,
    )
    return spark.createDataFrame(table)


def items_frame(
    spark: SparkSession, items: Sequence[StatementItem] | Sequence[LedgerItem], ledger: bool
) -> DataFrame:
    """`statement_frame` or `ledger_frame` of `items` (`ledger` says which, for an empty
    list too)."""
    if ledger:
        return ledger_frame(spark, items)  # type: ignore[arg-type]
    return statement_frame(spark, items)  # type: ignore[arg-type]


@dataclass
class MatchFrames:
    """A matching run's result as frames (`MATCH_SCHEMA`, `BREAK_SCHEMA`, in no order), with
    the seconds of each phase and what each rule took (candidates, rounds, matches)."""

    matches: DataFrame
    breaks: DataFrame
    seconds: dict[str, float] = field(default_factory=dict)
    rules: dict[str, dict[str, int]] = field(default_factory=dict)
    # The persisted frames the result reads (cached, not checkpointed: a cached frame keeps
    # its partitioning by account, a checkpoint forgets it), until `release`.
    held: list[DataFrame] = field(default_factory=list)

    def release(self) -> None:
        """Free what the run persisted: the frames are not to be read after this."""
        for frame in self.held:
            frame.unpersist()
        self.held.clear()


def match_frames(
    spark: SparkSession, statement_df: DataFrame, ledger_df: DataFrame, rules: Sequence[Rule]
) -> MatchingOutcome:
    """The outcome of matching the statement items of `statement_df` with the ledger items
    of `ledger_df` by `rules`: the specification's, equal to `reference.match` on the same
    items."""
    return collect_outcome(match_plan(spark, statement_df, ledger_df, rules))


def spark_matcher(
    spark: SparkSession,
) -> Callable[[Sequence[StatementItem], Sequence[LedgerItem], Sequence[Rule]], MatchingOutcome]:
    """A matcher of item lists (`ledger_engine.reconcile.run.Matcher`) that runs on `spark`."""

    def run(
        statement: Sequence[StatementItem], ledger: Sequence[LedgerItem], rules: Sequence[Rule]
    ) -> MatchingOutcome:
        frames = statement_frame(spark, statement), ledger_frame(spark, ledger)
        return match_frames(spark, *frames, rules)

    return run


def collect_outcome(frames: MatchFrames) -> MatchingOutcome:
    """The frames' matches and breaks brought to the driver, in the outcome's order; the
    frames are released."""
    watch = Stopwatch()
    # Through Arrow, column by column: a million rows pickled one by one took most of a
    # run's time at 10^6 entries a side.
    m = _columns(frames.matches)
    matches = [
        (
            priority,
            Match(
                rule=rule,
                account=account,
                statement_ids=_ids(statement_ids),
                ledger_ids=_ids(ledger_ids),
                amount_difference=amount_difference,
                date_difference_days=days,
            ),
        )
        for rule, priority, account, statement_ids, ledger_ids, amount_difference, days in zip(
            m["rule"],
            m["priority"],
            m["account"],
            m["statement_ids"],
            m["ledger_ids"],
            m["amount_difference"],
            m["date_difference_days"],
            strict=True,
        )
    ]
    b = _columns(frames.breaks)
    breaks = [
        Break(
            reason=reason,
            account=account,
            statement_ids=_ids(statement_ids),
            ledger_ids=_ids(ledger_ids),
            amount_difference=amount_difference,
        )
        for reason, account, statement_ids, ledger_ids, amount_difference in zip(
            b["reason"],
            b["account"],
            b["statement_ids"],
            b["ledger_ids"],
            b["amount_difference"],
            strict=True,
        )
    ]
    matches.sort(key=lambda m: match_order(*m))
    breaks.sort(key=break_order)
    frames.release()
    frames.seconds["collect"] = watch.elapsed()
    return MatchingOutcome(tuple(m for _, m in matches), tuple(breaks))


def _columns(frame: DataFrame) -> dict[str, list]:
    """A frame's columns as Python lists, brought over as Arrow batches."""
    table = frame.toArrow()
    return {name: table.column(name).to_pylist() for name in table.column_names}


def _ids(arrays: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(sorted(tuple(i) for i in arrays))


def match_plan(
    spark: SparkSession,
    statement_df: DataFrame,
    ledger_df: DataFrame,
    rules: Sequence[Rule],
    on_phase: Callable[[str], None] | None = None,
) -> MatchFrames:
    """Run the rules and find the breaks; the result stays in Spark (persisted frames, which
    `collect_outcome` or `MatchFrames.release` frees). `on_phase`, if given, is called with
    each phase's name as it ends (a profiler's hook)."""
    frames = MatchFrames(
        spark.createDataFrame([], MATCH_SCHEMA), spark.createDataFrame([], BREAK_SCHEMA)
    )
    watch = Stopwatch(seconds=frames.seconds)

    def phase(name: str) -> None:
        watch.lap(name)
        if on_phase is not None:
            on_phase(name)
            watch.resume()  # the profiler's own time is no phase's

    with _partitioned_by_account(spark):
        _run(spark, statement_df, ledger_df, rules, frames, phase)
    return frames


def _run(
    spark: SparkSession,
    statement_df: DataFrame,
    ledger_df: DataFrame,
    rules: Sequence[Rule],
    frames: MatchFrames,
    phase: Callable[[str], None],
) -> None:
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    held = frames.held
    statement = _prepared(statement_df, identity=True, partitions=partitions, held=held)
    ledger = _prepared(ledger_df, identity=False, partitions=partitions, held=held)
    phase("prepare")
    matched = []
    for rule in sorted(rules, key=lambda r: r.priority):
        # A rule folds the texts it reads over the items left to it (an exact rule before a
        # fuzzy one leaves it a few); the folded texts go into its candidates, not into the
        # items carried to the next rule, which would compute them again for every item.
        s_items, l_items = _folded(statement, _texts(rule)), _folded(ledger, _texts(rule))
        s_nodes = _groups(s_items, rule.group_by) if rule.strategy == MANY_TO_ONE else None
        l_nodes = _groups(l_items, rule.group_by) if rule.strategy == ONE_TO_MANY else None
        candidates = _candidates(
            rule,
            _sided("s", s_nodes if s_nodes is not None else _singles(s_items)),
            _sided("l", l_nodes if l_nodes is not None else _singles(l_items)),
        )
        kept, stats = _greedy(candidates, held)
        frames.rules[rule.name] = stats
        if stats["kept"]:
            matched.append(
                kept.select(
                    F.lit(rule.name).alias("rule"),
                    F.lit(rule.priority).alias("priority"),
                    F.col("s_account").alias("account"),
                    F.col("s_members").alias("statement_ids"),
                    F.col("l_members").alias("ledger_ids"),
                    "amount_difference",
                    F.col("c_days").alias("date_difference_days"),
                )
            )
            statement = _without(statement, kept, "s_members", held, partitions)
            ledger = _without(ledger, kept, "l_members", held, partitions)
        phase(f"rule {rule.name}")
    if matched:
        frames.matches = reduce(DataFrame.unionByName, matched)
    frames.breaks = _breaks(statement, ledger, frames, partitions)
    phase("breaks")


# Every item is matched only within its account: both sides are hash-partitioned by account
# once (`_prepared`), and every join, group and window after that keys on the account first,
# so that none of them shuffles again. Spark keeps a partitioning by a subset of an
# aggregate's or a window's keys by default; for a join it asks this setting.
_CO_PARTITION = "spark.sql.requireAllClusterKeysForCoPartition"


@contextmanager
def _partitioned_by_account(spark: SparkSession) -> Iterator[None]:
    """Within: a join whose sides are both partitioned by the account (the first of its
    keys) reads them where they are. The frames a run returns are checkpoints and unions of
    them, which plan no join after the setting is given back."""
    before = spark.conf.get(_CO_PARTITION, None)
    spark.conf.set(_CO_PARTITION, "false")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(_CO_PARTITION)
        else:
            spark.conf.set(_CO_PARTITION, before)


def fold_column(text: Column) -> Column:
    """The folded text (`similarity.fold`), in Spark."""
    return F.trim(F.regexp_replace(F.lower(text), WHITE_SPACE_RUN, " "))


def similarity_column(a: Column, b: Column) -> Column:
    """`similarity.similarity` of two folded texts, in Spark (null when either is null)."""
    longer = F.greatest(F.length(a), F.length(b))
    return (
        F.when(a.isNull() | b.isNull(), F.lit(None).cast("double"))
        .when(longer == 0, F.lit(1.0))
        # An int over an int is a double in Spark as in Python, and 1 minus it the same.
        .otherwise(F.lit(1) - F.levenshtein(a, b) / longer)
    )


def _held(frame: DataFrame, held: list[DataFrame]) -> int:
    """Persist `frame` (the run's to release), computed now; its count."""
    held.append(frame.persist())
    return frame.count()


def _prepared(
    items: DataFrame, identity: bool, partitions: int, held: list[DataFrame]
) -> DataFrame:
    """The items (on the statement side with whether an item is the first by id of the items
    identical to it), partitioned by account and persisted: every rule reads them."""
    prepared = items.select(
        "id", "account", "amount", "date", "reference", "description"
    ).repartition(partitions, "account")
    if identity:
        # Window partitions put nulls together, as identity wants (None equals None).
        same = Window.partitionBy("account", "amount", "date", "reference", "description").orderBy(
            "id"
        )
        prepared = prepared.withColumn("first", F.row_number().over(same) == 1)
    _held(prepared, held)
    return prepared


_FOLDED = {"reference": "fref", "description": "fdesc"}


def _texts(rule: Rule) -> set[str]:
    """The text fields `rule` compares or groups by."""
    return {
        name
        for name, threshold in (
            ("reference", rule.reference_similarity),
            ("description", rule.description_similarity),
        )
        if threshold is not None or rule.group_by == name
    }


def _folded(items: DataFrame, texts: set[str]) -> DataFrame:
    """`items` with the folded column of each of `texts` (`fref`, `fdesc`) it lacks."""
    for name in sorted(texts):
        if _FOLDED[name] not in items.columns:
            items = items.withColumn(_FOLDED[name], fold_column(F.col(name)))
    return items


def _text(items: DataFrame, folded: str) -> Column:
    """A folded text column of `items`, or null where none is folded (no rule reads it)."""
    if folded in items.columns:
        return F.col(folded)
    return F.lit(None).cast("string").alias(folded)


def _singles(items: DataFrame) -> DataFrame:
    """Each item as a node of its own."""
    return items.select(
        "account",
        F.col("id").alias("nid"),
        F.array("id").alias("members"),
        "amount",
        "date",
        _text(items, "fref"),
        _text(items, "fdesc"),
    )


def _groups(items: DataFrame, group_by: str | None) -> DataFrame:
    """The groups of two or more items of one account sharing `group_by` (folded text, or the
    date), as nodes: the sum of the amounts, the latest date, only the shared text."""
    key = {"reference": "fref", "description": "fdesc", "date": "date"}[str(group_by)]
    grouped = (
        items.filter(F.col(key).isNotNull())
        .groupBy("account", F.col(key).alias("key"))
        .agg(
            F.count("*").alias("size"),
            F.sum("amount").alias("amount"),
            F.max("date").alias("date"),
            F.array_sort(F.collect_list("id")).alias("members"),
        )
        .filter(F.col("size") >= 2)
    )
    no_text = F.lit(None).cast("string")
    return grouped.select(
        "account",
        F.col("members")[0].alias("nid"),
        "members",
        "amount",
        "date",
        (F.col("key") if key == "fref" else no_text).alias("fref"),
        (F.col("key") if key == "fdesc" else no_text).alias("fdesc"),
    )


def _sided(side: str, nodes: DataFrame) -> DataFrame:
    return nodes.select([F.col(c).alias(f"{side}_{c}") for c in _NODE])


@dataclass
class _PairConditions:
    """What a pair of nodes must meet: equi-join keys (`on`), cheap filters, the similarity
    thresholds (filtered last: a Levenshtein distance costs the most), and each compared
    text's similarity column, by field."""

    on: list[Column]
    filters: list[Column] = field(default_factory=list)
    similar: list[Column] = field(default_factory=list)
    similarities: dict[str, Column] = field(default_factory=dict)


def _candidates(rule: Rule | None, s: DataFrame, l: DataFrame) -> DataFrame:  # noqa: E741
    """The pairs of nodes meeting `rule` with their costs; `rule` None gives the amount
    mismatch pairs (equal folded references, different amounts, no similarity compared)."""
    col = F.col
    met = _PairConditions(on=[col("s_account") == col("l_account")])
    if rule is None:
        met.on += [col("s_fref") == col("l_fref"), col("s_amount") != col("l_amount")]
    else:
        _text_conditions(rule, met)
        _amount_condition(rule, met)
        s, l = _window_condition(rule, s, l, met)  # noqa: E741
    pairs = s.join(l, met.on)
    for condition in [*met.filters, *met.similar]:
        pairs = pairs.filter(condition)
    return _pair_costs(pairs, met.similarities)


def _text_conditions(rule: Rule, met: _PairConditions) -> None:
    """The rule's reference and description similarities, as keys or thresholds."""
    for name, folded, threshold in (
        ("reference", "fref", rule.reference_similarity),
        ("description", "fdesc", rule.description_similarity),
    ):
        if threshold is None:
            continue
        mine, theirs = F.col(f"s_{folded}"), F.col(f"l_{folded}")
        if threshold == 1.0:
            # Similarity 1.0 is equality after folding (the formula gives exactly 1.0 then):
            # an equi-join key, with nulls never equal.
            met.on.append(mine == theirs)
            met.similarities[name] = F.lit(1.0)
        else:
            met.similarities[name] = similarity_column(mine, theirs)
            met.similar.append(met.similarities[name] >= F.lit(threshold))


def _amount_condition(rule: Rule, met: _PairConditions) -> None:
    """The rule's amount tolerance: a key where it allows no difference, else a filter."""
    col = F.col
    if rule.amount.tolerance == 0 and rule.amount.relative == 0.0:
        met.on.append(col("s_amount") == col("l_amount"))
        return
    allowed = F.greatest(
        F.lit(rule.amount.tolerance).cast("bigint"),
        F.floor(F.lit(rule.amount.relative) * F.abs(col("s_amount"))),
    )
    met.filters.append(F.abs(col("s_amount") - col("l_amount")) <= allowed)


def _window_condition(
    rule: Rule,
    s: DataFrame,
    l: DataFrame,  # noqa: E741
    met: _PairConditions,
) -> tuple[DataFrame, DataFrame]:
    """The rule's date window, as a key, a filter or date buckets; the sides, bucketed
    where the window needs it."""
    col, window = F.col, rule.window_days
    if window == 0:
        met.on.append(col("s_date") == col("l_date"))
    elif window is not None and len(met.similarities) > len(met.similar):
        # An equal text is a key few pairs share (a reference, mostly): the window is only a
        # filter then, cheaper than each statement node joining three buckets.
        met.filters.append(F.abs(F.datediff(col("s_date"), col("l_date"))) <= window)
    elif window is not None:
        # Dates within `window` days lie in the same bucket of window + 1 days or in adjacent
        # ones: each statement node joins its bucket and the two beside it, each ledger node
        # its own, so a pair meets at most once.
        width = window + 1
        s = s.withColumn(
            "s_bucket",
            F.explode(F.array(*[_bucket(col("s_date"), width) + k for k in (-1, 0, 1)])),
        )
        l = l.withColumn("l_bucket", _bucket(col("l_date"), width))  # noqa: E741
        met.on.append(col("s_bucket") == col("l_bucket"))
        met.filters.append(F.abs(F.datediff(col("s_date"), col("l_date"))) <= window)
    return s, l


def _pair_costs(pairs: DataFrame, similarities: dict[str, Column]) -> DataFrame:
    """Only what the choice and a match or break need: the rounds sort these rows again and
    again, and the texts are the widest part of a node."""
    col, zero = F.col, F.lit(0.0)
    return pairs.select(
        "s_account",
        "s_nid",
        "l_nid",
        "s_members",
        "l_members",
        (col("s_amount") - col("l_amount")).alias("amount_difference"),
        F.abs(col("s_amount") - col("l_amount")).alias("c_amount"),
        F.abs(F.datediff(col("s_date"), col("l_date"))).alias("c_days"),
        (-similarities["reference"] if "reference" in similarities else zero).alias("c_reference"),
        (-similarities["description"] if "description" in similarities else zero).alias(
            "c_description"
        ),
    )


def _bucket(day: Column, width: int) -> Column:
    # Whole days since the epoch, divided rounding down (dates before 1970 included).
    return F.floor(F.datediff(day, F.lit("1970-01-01").cast("date")) / F.lit(width))


def _greedy(candidates: DataFrame, held: list[DataFrame]) -> tuple[DataFrame, dict[str, int]]:
    """The candidates the greedy in increasing cost keeps, by rounds of mutual best ones;
    with the number of candidates, rounds and kept ones."""
    stats = {"candidates": 0, "rounds": 0, "kept": 0}
    order = [F.col(c) for c in COST]
    # Both nodes of a candidate are of its account (`s_account`), by which the candidates are
    # partitioned: the windows sort in place.
    by_statement = Window.partitionBy("s_account", "s_nid").orderBy(*order)
    by_ledger = Window.partitionBy("s_account", "l_nid").orderBy(*order)
    kept: list[DataFrame] = []
    left = candidates
    while True:
        # One job a round (three windows, persisted as counted): a candidate is kept when it is
        # the first of both its nodes; a node is taken when its first candidate is kept,
        # which is what `first` over the node's ordered window reads (for a statement node
        # its first candidate is kept when it is also its ledger node's first).
        ledger_first = F.row_number().over(by_ledger) == 1
        marked = (
            left.withColumn("l_first", ledger_first)
            .withColumn("best", (F.row_number().over(by_statement) == 1) & F.col("l_first"))
            .withColumn("s_taken", F.first("l_first").over(by_statement))
            .withColumn("l_taken", F.first("best").over(by_ledger))
            .persist()
        )
        held.append(marked)
        total, best, remaining = marked.agg(
            F.count("*"),
            F.count(F.when(F.col("best"), 1)),
            F.count(F.when(~F.col("s_taken") & ~F.col("l_taken"), 1)),
        ).first()
        if stats["rounds"] == 0:
            stats["candidates"] = total
        if not total:
            break
        stats["rounds"] += 1
        stats["kept"] += best
        helpers = ("l_first", "best", "s_taken", "l_taken")
        kept.append(marked.filter("best").drop(*helpers))
        if not remaining:
            break
        left = marked.filter(~F.col("s_taken") & ~F.col("l_taken")).drop(*helpers)
    if not kept:
        return candidates.limit(0), stats
    return reduce(DataFrame.unionByName, kept), stats


def _without(
    items: DataFrame, kept: DataFrame, members: str, held: list[DataFrame], partitions: int
) -> DataFrame:
    """`items` but the members of the kept candidates' nodes on their side, partitioned by
    account and persisted, for the next rule."""
    used = kept.select(F.col("s_account").alias("account"), F.explode(members).alias("id"))
    # A checkpoint cuts the plan: without it each persisted frame's plan holds every rule
    # and round before it, which Spark analyses again for every query over it (a plan that
    # grows with the rules, and twice over: each rule's items come from both sides). It
    # forgets the partitioning, so the items left (fewer than the rule was given) are
    # partitioned again.
    # Not eager: the persisted frame's count computes the checkpoint too, in one job.
    left = items.join(used, ["account", "id"], "left_anti").localCheckpoint(eager=False)
    left = left.repartition(partitions, "account")
    _held(left, held)
    # What `items` held is read no more (the frames over it are computed): freed now, which
    # also keeps the list of cached plans that every query is matched against short.
    items.unpersist()
    return left


def _breaks(
    statement: DataFrame, ledger: DataFrame, frames: MatchFrames, partitions: int
) -> DataFrame:
    """The breaks of the unmatched `statement` and `ledger` items."""
    no_amount = F.lit(None).cast("bigint")
    no_ids = F.array().cast("array<array<bigint>>")

    def one_side(items: DataFrame, reason: str, statement_side: bool) -> DataFrame:
        ids = F.array("id")
        return items.select(
            F.lit(reason).alias("reason"),
            "account",
            (ids if statement_side else no_ids).alias("statement_ids"),
            (no_ids if statement_side else ids).alias("ledger_ids"),
            no_amount.alias("amount_difference"),
        )

    duplicates = statement.filter(~F.col("first"))
    statement = statement.filter(F.col("first"))
    # Amount mismatches pair equal folded references.
    s_items, l_items = _folded(statement, {"reference"}), _folded(ledger, {"reference"})
    pairs, stats = _greedy(
        _candidates(None, _sided("s", _singles(s_items)), _sided("l", _singles(l_items))),
        frames.held,
    )
    frames.rules[AMOUNT_MISMATCH] = stats
    mismatches = pairs.select(
        F.lit(AMOUNT_MISMATCH).alias("reason"),
        F.col("s_account").alias("account"),
        F.col("s_members").alias("statement_ids"),
        F.col("l_members").alias("ledger_ids"),
        "amount_difference",
    )
    if stats["kept"]:
        statement = _without(statement, pairs, "s_members", frames.held, partitions)
        ledger = _without(ledger, pairs, "l_members", frames.held, partitions)
    return reduce(
        DataFrame.unionByName,
        [
            one_side(duplicates, DUPLICATE, statement_side=True),
            mismatches,
            one_side(statement, MISSING_IN_LEDGER, statement_side=True),
            one_side(ledger, MISSING_IN_STATEMENT, statement_side=False),
        ],
    )
