"""Airflow's own look, read from the UI it ships (`airflow/ui/dist`): the fonts, the colour
palettes and the semantic colours its Chakra UI theme gives the pages, so that a test can
hold the ledger's pages to them without writing Airflow's values down a second time.

The UI is one bundled script; its theme is in it as Chakra's token definitions, e.g.
``fonts({heading:{value:`Inter, ${X}`},body:{value:`Inter, ${X}`},mono:{value:`...`}})``
and ``{tokens:{colors:{black:{value:`oklch(...)`},brand:{50:{value:`oklch(...)`},...}}}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import airflow

DIST = Path(airflow.__file__).parent / "ui" / "dist"
_SHADES = ("50", "100", "200", "300", "400", "500", "600", "700", "800", "900", "950")


@dataclass(frozen=True)
class AirflowLook:
    """What Airflow's UI is drawn with."""

    body_font: str  # the CSS font-family of its text
    mono_font: str  # of its code
    palette: dict[str, str]  # "brand.600", "gray.200", "black" ... -> a CSS colour
    semantic: dict[str, tuple[str, str]]  # "fg.info", "brand.solid" ... -> (light, dark)

    def color(self, token: str, dark: bool = False) -> str:
        """The CSS colour of a semantic token ("fg.muted", "brand.solid") or a palette
        colour ("brand.600"), in the light or the dark colour mode."""
        if token in self.semantic:
            token = self.semantic[token][1 if dark else 0]
        return self.palette.get(token, token)


def _bundle() -> str:
    (script,) = (DIST / "assets").glob("index-*.js")
    return script.read_text(encoding="utf-8")


def _template(bundle: str, text: str) -> str:
    """`text` with each `${NAME}` replaced by the template string NAME holds in `bundle`."""

    def value(found: re.Match[str]) -> str:
        (held,) = set(re.findall(rf"\b{re.escape(found[1])}=`([^`]*)`", bundle))
        return held

    return re.sub(r"\$\{(\w+)\}", value, text)


def _fonts(bundle: str) -> tuple[str, str]:
    found = re.search(
        r"fonts\(\{heading:\{value:`[^`]*`\},body:\{value:`([^`]*)`\},mono:\{value:`([^`]*)`\}",
        bundle,
    )
    assert found, "Airflow's UI declares no body and mono fonts where expected"
    return _template(bundle, found[1]), _template(bundle, found[2])


def _palette(bundle: str) -> dict[str, str]:
    """Airflow's own theme's colours: its `tokens.colors` (black, brand, gray, ...)."""
    start = bundle.index("{tokens:{colors:{black:")
    theme = bundle[start : bundle.index("semanticTokens", start)]
    palette = {"black": re.search(r"black:\{value:`([^`]*)`", theme)[1], "white": "#FFFFFF"}
    shaded = r"(\w+):\{(50:\{value:`[^}]*\}(?:,\d+:\{value:`[^}]*\})*)\}"
    for name, shades in re.findall(shaded, theme):
        for shade, colour in re.findall(r"(\d+):\{value:`([^`]*)`\}", shades):
            palette[f"{name}.{shade}"] = colour
    assert all(f"brand.{s}" in palette and f"gray.{s}" in palette for s in _SHADES)
    return palette


def _semantic(bundle: str) -> dict[str, tuple[str, str]]:
    """The semantic colours of Chakra's theme (bg, fg, border and their kinds) and of
    Airflow's palettes (`brand.solid`, `brand.fg`: each palette's function of its shades)."""
    found: dict[str, tuple[str, str]] = {}
    start = bundle.index("colors({bg:{DEFAULT:")
    end = bundle.index("gray:{contrast:", start)
    groups = ("bg", "fg", "border")
    starts = [bundle.index(f"{group}:{{DEFAULT:", start) for group in groups]
    for group, begin, stop in zip(groups, starts, [*starts[1:], end], strict=True):
        block = bundle[begin:stop]
        pairs = re.findall(
            r"(DEFAULT|\w+):\{value:\{_light:`\{colors\.([\w.]+)\}`,_dark:`\{colors\.([\w.]+)\}`\}\}",
            block,
        )
        for kind, light, dark in pairs:
            name = group if kind == "DEFAULT" else f"{group}.{kind}"
            found.setdefault(name, (light, dark))
    palettes = re.search(r"semanticTokens:\{colors:\{brand:(\w+)\(`brand`\)", bundle)
    assert palettes, "Airflow's theme gives its brand colours no semantic tokens"
    derive = bundle[bundle.index(f"{palettes[1]}=(e") :][:900]
    for kind in ("solid", "fg", "muted", "subtle", "emphasized"):
        shades = re.search(
            rf"\b{kind}:\{{value:(?:`\{{colors\.\$\{{e\}}\.(\d+)\}}`|\{{_light:`\{{colors\."
            rf"\$\{{e\}}\.(\d+)\}}`,_dark:`\{{colors\.\$\{{e\}}\.(\d+)\}}`\}})\}}",
            derive,
        )
        assert shades, f"no {kind} in Airflow's palette tokens"
        light = shades[1] or shades[2]
        found[f"brand.{kind}"] = (f"brand.{light}", f"brand.{shades[1] or shades[3]}")
    return found


@cache
def airflow_look() -> AirflowLook:
    """Airflow's look, as the installed Airflow's UI declares it."""
    bundle = _bundle()
    body, mono = _fonts(bundle)
    return AirflowLook(body, mono, _palette(bundle), _semantic(bundle))
