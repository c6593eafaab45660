"""Folding and similarity of texts, as the specification states them, in plain Python.

Both matchers fold texts the same way: the Spark matcher with Spark's `lower` and the same
white-space pattern (`WHITE_SPACE_RUN`, which Java's and Python's regular expressions read
alike), the reference matcher with `fold` below. Spark's `lower` (ICU's full lowercase mapping)
agrees with Python's `str.lower` on every code point Python's Unicode version knows, final
sigma and dotted capital I included; `str.casefold` would not (ß, ς, ligatures), which is why
the specification says lower-cased and not case-folded. Levenshtein distances and lengths
count code points on both sides (Spark's `levenshtein` and `length` do too).
"""

from __future__ import annotations

import re

# Unicode's White_Space property, written as a character class both Python's `re` and Java's
# regular expressions (Spark's `regexp_replace`) read the same. Not `\s`: Python's counts the
# separators \x1c-\x1f as white space and Java's (even with (?U)) does not.
WHITE_SPACE_CLASS = r"[\t\n\x0b\x0c\r\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
WHITE_SPACE_RUN = WHITE_SPACE_CLASS + "+"
_RUN = re.compile(WHITE_SPACE_RUN)


def fold(text: str) -> str:
    """`text` lower-cased, its runs of white space made one space, stripped of spaces."""
    # strip(" ") and not strip(): after the substitution the only white space left is the
    # plain space, and Spark's `trim` strips that one only.
    return _RUN.sub(" ", text.lower()).strip(" ")


def levenshtein(a: str, b: str) -> int:
    """The edit distance (insertions, deletions, substitutions of code points) of a and b."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(
                min(
                    previous[j] + 1,  # delete char_a
                    current[j - 1] + 1,  # insert char_b
                    previous[j - 1] + (char_a != char_b),  # substitute (or keep)
                )
            )
        previous = current
    return previous[-1]


def similarity(a: str | None, b: str | None) -> float | None:
    """`1 - levenshtein / longer length` of the folded texts (1.0 for two empty ones), or None
    when either text is missing (a criterion on it is then not met)."""
    if a is None or b is None:
        return None
    a, b = fold(a), fold(b)
    longer = max(len(a), len(b))
    if longer == 0:
        return 1.0
    # The same double arithmetic as the Spark expression: an int over an int, from 1.
    return 1 - levenshtein(a, b) / longer
