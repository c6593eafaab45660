"""Whether a text that is not JSON is the start of a longer JSON array or object: a line cut
short, which more bytes would have made JSON, as opposed to one whose syntax is broken.

`json` cannot tell: it reports an unterminated string where the string starts, a cut `tru`
as a missing value, and runs out of stack on deep nesting. So the text is read here token by
token against JSON's grammar (RFC 8259), with an explicit stack, the same at any depth: it is
cut short if every token fits where it stands and the text ends inside an array or object,
possibly inside a token begun (a string, a number, `true`, `false` or `null`).
"""

from __future__ import annotations

import re

_WHITESPACE = re.compile(r"[ \t\r\n]*")
_CHARACTERS = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*'
_STRING = re.compile(f'"{_CHARACTERS}"')
# A string begun: its characters so far, and perhaps an escape begun.
_STRING_BEGUN = re.compile(f'"{_CHARACTERS}(?:\\\\(?:u[0-9a-fA-F]{{0,3}})?)?')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# What may belong to a number: read as a run, then judged whole.
_NUMBER_RUN = re.compile(r"[-+.eE0-9]+")
_WORD = re.compile(r"[A-Za-z]+")
_LITERALS = ("true", "false", "null")

# What the grammar expects next.
_VALUE = "value"
_VALUE_OR_CLOSE = "value or ]"
_KEY = "key"
_KEY_OR_CLOSE = "key or }"
_COLON = ":"
_AFTER_VALUE = ", or a closing bracket"
_OPENS_VALUE = (_VALUE, _VALUE_OR_CLOSE)
# A closing bracket: the bracket it closes, and where it may stand.
_CLOSES = {"}": ("{", _KEY_OR_CLOSE, _AFTER_VALUE), "]": ("[", _VALUE_OR_CLOSE, _AFTER_VALUE)}


def cut_short(text: str) -> bool:
    """True if `text`, which is not JSON, starts an array or object and ends where more
    characters could still make it JSON."""
    reader = _Reader(text)
    start = _WHITESPACE.match(text).end()
    if not text.startswith(("{", "["), start):
        return False
    return reader.read_from(start)


class _Reader:
    """JSON's grammar over one text, its open arrays and objects on a stack."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.stack: list[str] = []
        self.expects = _VALUE

    def read_from(self, at: int) -> bool:
        """Whether the text from `at` fits the grammar and ends inside an open value."""
        text = self.text
        while True:
            at = _WHITESPACE.match(text, at).end()
            if at == len(text):
                return bool(self.stack)  # an empty stack: a whole value, not a cut one
            if not self.stack and self.expects == _AFTER_VALUE:
                return False  # something after a whole value
            step = self._token(at)
            if step is None:
                return False
            at, ended_inside_a_token = step
            if ended_inside_a_token:
                return True

    def _token(self, at: int) -> tuple[int, bool] | None:
        """Read the token at `at`: where it ends and whether the text ended inside it; None if
        it does not fit."""
        char = self.text[at]
        if char in "{[]}:,":
            return (at + 1, False) if self._punctuation(char) else None
        if char == '"':
            return self._string(at)
        if char == "-" or char.isdigit():
            return self._number(at)
        return self._word(at)

    def _punctuation(self, char: str) -> bool:
        expects, stack = self.expects, self.stack
        if char in "{[" and expects in _OPENS_VALUE:
            stack.append(char)
            self.expects = _KEY_OR_CLOSE if char == "{" else _VALUE_OR_CLOSE
        elif char in _CLOSES and stack[-1:] == [_CLOSES[char][0]] and expects in _CLOSES[char]:
            stack.pop()
            self.expects = _AFTER_VALUE
        elif char == ":" and expects == _COLON:
            self.expects = _VALUE
        elif char == "," and stack and expects == _AFTER_VALUE:
            self.expects = _KEY if stack[-1] == "{" else _VALUE
        else:
            return False
        return True

    def _string(self, at: int) -> tuple[int, bool] | None:
        if self.expects not in (*_OPENS_VALUE, _KEY, _KEY_OR_CLOSE):
            return None
        whole = _STRING.match(self.text, at)
        if whole:
            self.expects = _COLON if self.expects in (_KEY, _KEY_OR_CLOSE) else _AFTER_VALUE
            return whole.end(), False
        begun = _STRING_BEGUN.match(self.text, at)
        return (len(self.text), True) if begun.end() == len(self.text) else None

    def _number(self, at: int) -> tuple[int, bool] | None:
        run = _NUMBER_RUN.match(self.text, at)
        if self.expects not in _OPENS_VALUE:
            return None
        if _NUMBER.fullmatch(run.group()):
            self.expects = _AFTER_VALUE
            return run.end(), False
        # A number begun: `-`, `1.`, `1e`, `1e+` each lack only a digit.
        if run.end() == len(self.text) and _NUMBER.fullmatch(run.group() + "0"):
            return run.end(), True
        return None

    def _word(self, at: int) -> tuple[int, bool] | None:
        word = _WORD.match(self.text, at)
        if word is None or self.expects not in _OPENS_VALUE:
            return None
        if word.group() in _LITERALS:
            self.expects = _AFTER_VALUE
            return word.end(), False
        begun = word.end() == len(self.text) and any(
            literal.startswith(word.group()) for literal in _LITERALS
        )
        return (word.end(), True) if begun else None
