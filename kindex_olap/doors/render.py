"""Drawing chart specifications: PNG and SVG through vl-convert (offline), and HTML pages with
the Vega JavaScript inlined, so that a chart opens from disk with no network."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from kindex_olap.errors import ConfigError

FORMATS = (".png", ".svg", ".html")
_CONFIG = {"view": {"stroke": None}, "axis": {"labelLimit": 220}, "legend": {"labelLimit": 260}}


def full_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with kindex's config (and no $schema URL: the files hold no http address)."""
    return {"config": _CONFIG, **spec}


def write_chart(spec: dict[str, Any], path: Path) -> None:
    """Write PNG, SVG or a self-contained HTML page, by the file's suffix."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        # an output file name is an argument (exit 2), not a question the lake cannot answer
        raise ConfigError(
            f"cannot write a chart to {path.name!r}", hint="name a .png, .svg or .html file"
        )
    import vl_convert as vlc

    spec = full_spec(spec)
    if suffix == ".png":
        path.write_bytes(vlc.vegalite_to_png(spec, scale=1.5))
    elif suffix == ".svg":
        path.write_text(vlc.vegalite_to_svg(spec), encoding="utf-8")
    else:
        path.write_text(html_page(path.stem, [("chart", spec)]), encoding="utf-8")


def html_page(title: str, charts: list[tuple[str, dict[str, Any]]]) -> str:
    """A page that draws `charts` (element id, spec) with the Vega bundle inlined."""
    from html import escape

    divs = "".join(f'<div id="{escape(i)}"></div>' for i, _ in charts)
    specs = inline_json({i: full_spec(s) for i, s in charts})
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<script>{vega_bundle()}</script></head><body>{divs}"
        f"<script>(()=>{{const SPECS={specs};for(const [id,s] of Object.entries(SPECS))"
        "vegaEmbed('#'+id,s,{actions:false,renderer:'svg'}).catch(e=>console.error(e));})()"
        "</script></body></html>"
    )


# Inside <script>, `<!--`, `<script` and `</script` change how the HTML parser finds the end of
# the element; U+2028/9 end a line in older JavaScript. JSON allows \uXXXX for any of them.
_INLINE_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_INLINE = re.compile("[<>&\u2028\u2029]")


def inline_json(value: Any) -> str:
    """`value` as JSON that is safe inside an HTML <script> element: every `<`, `>` and `&` as a
    \\u escape, so no string in it (a kernel named `<!--<script>`) can end or reopen the element."""
    text = json.dumps(value, separators=(",", ":"))
    return _INLINE.sub(lambda m: _INLINE_ESCAPES[m.group()], text)


def vega_bundle() -> str:
    """The Vega, Vega-Lite and vega-embed JavaScript from vl-convert (no network), cached on
    disk: building it takes 4.4 s, reading it a millisecond."""
    import importlib.metadata

    import vl_convert as vlc

    version = importlib.metadata.version("vl-convert-python")
    from kindex_olap.cache import cache_folder

    cache = cache_folder()
    path = cache / f"vega-bundle-{version}.js"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    # the stub marks the optional snippet as required
    bundle = vlc.javascript_bundle()  # type: ignore[call-arg]
    bundle = bundle.replace("</script", "<\\/script")
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(bundle, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # no writable cache: build it again next time
    return bundle
