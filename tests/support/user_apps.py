"""Applications of a user's own, written as a user lays them out: several modules in a folder
or a package, nothing installed, nothing on `PYTHONPATH`.

Every application is the same small ledger (accounts, fee income; deposits and moves that
charge a fee, refuse moves over a limit and moves the source cannot pay), so that any layout's
result can be compared with `run_serial`'s. What varies is where its code lives and how the
pieces import each other (`Layout`): modules beside each other or a package with a subpackage,
absolute or relative imports, a fee module imported at module level, inside the transaction
at call time, or by a name computed at import time, and a limit read from a data file the
package carries. Module names carry a fresh tag, because Spark's Python workers outlive an
application and keep the modules they imported.
"""

from __future__ import annotations

import json
import random
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from ledger_engine import Event

FEE_IMPORTS = ("module level", "call time", "computed name")
MAX_MOVE = 450  # moves above it are refused ("over the limit")
RATE_PER_MILLE = 15
FEE_ACCOUNT = "fees: collected"


@dataclass(frozen=True)
class Layout:
    """Where an application's code lives and how its modules import each other."""

    packaged: bool  # a package (with a subpackage) rather than modules side by side
    relative: bool  # in a package: `from .rules import move` rather than `from pkg.rules ...`
    fee_import: str  # one of FEE_IMPORTS: how the transaction's module reaches the fee module
    limit_from_data_file: bool  # in a package: the limit read from `limits.json` beside it
    odd_names: bool  # module names that are legal but unusual (capitals, non-ASCII)


@dataclass(frozen=True)
class UserApp:
    """A written application: its `LEDGER_APP` and the folder it lies in."""

    spec: str
    folder: Path
    layout: Layout
    modules: tuple[str, ...]  # its top-level modules or package


def layouts() -> st.SearchStrategy[Layout]:
    """Every layout: flat folders and packages, each way of importing."""
    flat = st.builds(
        Layout,
        packaged=st.just(False),
        relative=st.just(False),
        fee_import=st.sampled_from(FEE_IMPORTS),
        limit_from_data_file=st.just(False),
        odd_names=st.booleans(),
    )
    packaged = st.builds(
        Layout,
        packaged=st.just(True),
        relative=st.booleans(),
        fee_import=st.sampled_from(FEE_IMPORTS),
        limit_from_data_file=st.booleans(),
        odd_names=st.booleans(),
    )
    return st.one_of(flat, packaged)


def write_user_app(folder: Path, layout: Layout) -> UserApp:
    """Write an application of `layout` under `folder` (which must not exist)."""
    tag = f"u{uuid.uuid4().hex[:10]}"
    folder.mkdir(parents=True)
    if layout.packaged:
        return _write_package(folder, tag, layout)
    return _write_flat(folder, tag, layout)


def user_app_events(count: int, *, accounts: int, seed: int) -> list[Event]:
    """Deposits for every account, then moves among them: some over the limit, some more
    than the source holds, some repeating an earlier request id."""
    rng = random.Random(seed)
    names = [f"acct {n:03d}" for n in range(accounts)]
    events = [
        Event("Deposits", f"d-{n}", {"to": name, "amount": 300}) for n, name in enumerate(names)
    ]
    for n in range(count - len(events)):
        source, target = rng.sample(names, 2)
        amount = rng.choice((rng.randint(1, 200), rng.randint(200, MAX_MOVE + 60)))
        request = f"m-{rng.randrange(n + 1)}" if rng.random() < 0.05 else f"m-{n}"
        events.append(Event("Moves", request, {"from": source, "to": target, "amount": amount}))
    return events


# -- flat: modules side by side ----------------------------------------------------------------


def _write_flat(folder: Path, tag: str, layout: Layout) -> UserApp:
    names = _names(tag, layout.odd_names)
    _write(folder / f"{names['constants']}.py", _constants(MAX_MOVE))
    _write(folder / f"{names['fees']}.py", _fees(f"from {names['constants']} import RATE"))
    _write(folder / f"{names['keys']}.py", _keys(f"from {names['constants']} import FEE_ACCOUNT"))
    _write(
        folder / f"{names['rules']}.py",
        _rules(
            layout.fee_import,
            fee_module=names["fees"],
            # A name the source does not spell out: only the driver's imports reveal it.
            fee_by_name=f"importlib.import_module(''.join({list(names['fees'])!r}))",
            limit=f"from {names['constants']} import MAX_MOVE",
        ),
    )
    _write(
        folder / f"{names['app']}.py",
        _app(f"from {names['rules']} import credit, move", f"from {names['keys']} import *"),
    )
    spec = f"{folder / names['app']}.py:build_ledger"
    return UserApp(spec, folder, layout, tuple(sorted(names.values())))


# -- a package with a subpackage ---------------------------------------------------------------


def _write_package(folder: Path, tag: str, layout: Layout) -> UserApp:
    package = f"{tag}_Ledger" if layout.odd_names else f"{tag}_ledger"
    root = folder / package
    (root / "routing").mkdir(parents=True)
    _write(root / "__init__.py", '"""A user\'s ledger, as a package."""\n')
    _write(root / "routing" / "__init__.py", "")
    here = "." if layout.relative else f"{package}."
    up = ".." if layout.relative else f"{package}."
    _write(root / "constants.py", _constants(MAX_MOVE))
    _write(root / "fees.py", _fees(f"from {here}constants import RATE"))
    _write(root / "routing" / "keys.py", _keys(f"from {up}constants import FEE_ACCOUNT"))
    fee_module = "fees" if layout.relative else f"{package}.fees"
    _write(
        root / "rules.py",
        _rules(
            layout.fee_import,
            fee_module=fee_module,
            fee_from=f"from {here[:-1] or '.'} import fees" if layout.relative else None,
            fee_by_name="importlib.import_module('.' + 'fees', __package__)",
            limit=_limit_from_file()
            if layout.limit_from_data_file
            else f"from {here}constants import MAX_MOVE",
        ),
    )
    if layout.limit_from_data_file:
        (root / "data").mkdir()
        _write(root / "data" / "limits.json", json.dumps({"max_move": MAX_MOVE}))
    _write(
        root / "app.py",
        _app(f"from {here}rules import credit, move", f"from {here}routing.keys import *"),
    )
    return UserApp(f"{root / 'app.py'}:build_ledger", folder, layout, (package,))


# -- the modules' text -------------------------------------------------------------------------


def _names(tag: str, odd: bool) -> dict[str, str]:
    if odd:
        return {
            "constants": f"{tag}_Konstanten_äöü",
            "fees": f"{tag}_FeeRules",
            "keys": f"{tag}_clés",
            "rules": f"{tag}_rules_v2",
            "app": f"{tag}_App",
        }
    return {part: f"{tag}_{part}" for part in ("constants", "fees", "keys", "rules", "app")}


def _constants(max_move: int) -> str:
    return f"RATE = {RATE_PER_MILLE}\nMAX_MOVE = {max_move}\nFEE_ACCOUNT = {FEE_ACCOUNT!r}\n"


def _fees(import_rate: str) -> str:
    return f"{import_rate}\n\n\ndef charge(amount):\n    return amount * RATE // 1000\n"


def _keys(import_fee_account: str) -> str:
    return textwrap.dedent(
        f"""\
        {import_fee_account}

        __all__ = ["source", "target", "fee_account"]


        def source(event):
            return event["from"]


        def target(event):
            return event["to"]


        def fee_account(event):
            return FEE_ACCOUNT
        """
    )


def _limit_from_file() -> str:
    return textwrap.dedent(
        """\
        import json
        from pathlib import Path

        MAX_MOVE = json.loads((Path(__file__).parent / "data" / "limits.json").read_text())[
            "max_move"
        ]"""
    )


def _rules(
    fee_import: str, *, fee_module: str, fee_by_name: str, limit: str, fee_from: str | None = None
) -> str:
    """The transactions, reaching the fee module as `fee_import` says."""
    assert fee_import in FEE_IMPORTS
    plain_import = fee_from or f"import {fee_module} as fees"
    at_module_level = {
        "module level": plain_import,
        "call time": "",
        "computed name": f"import importlib\n\nfees = {fee_by_name}",
    }[fee_import]
    in_function = plain_import if fee_import == "call time" else "pass"
    return f"{at_module_level}\n{limit}\n\n\n" + textwrap.dedent(
        f"""\
            def credit(event, ctx, account):
                account.add(event["amount"])


            def move(event, ctx, source, target, income):
                {in_function}
                amount = event["amount"]
                if amount > MAX_MOVE:
                    ctx.abort("over the limit")
                charge = fees.charge(amount)
                if source.read_or(0) < amount + charge:
                    ctx.abort("insufficient funds")
                source.write(source.read_or(0) - amount - charge)
                target.write(target.read_or(0) + amount)
                income.add(charge)
                ctx.emit({{"moved": amount, "fee": charge}})
            """
    )


def _app(import_rules: str, import_keys: str) -> str:
    return textwrap.dedent(
        f"""\
        from ledger_engine import AccessType, StreamingLedger

        {import_rules}
        {import_keys}


        def build_ledger():
            ledger = StreamingLedger.create("A user's ledger in several modules")
            accounts = ledger.declare_state("Accounts", key_type=str, value_type=int)
            income = ledger.declare_state("Fee income", key_type=str, value_type=int)
            ledger.using_stream("Deposits").apply(credit).on(
                accounts, target, "account", AccessType.ADD
            )
            ledger.using_stream("Moves").apply(move).on(
                accounts, source, "source", AccessType.READ_WRITE
            ).on(accounts, target, "target", AccessType.READ_WRITE).on(
                income, fee_account, "income", AccessType.ADD
            )
            return ledger
        """
    )


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
