"""The generated blocks of a docs page: the text between ``<!-- NAME -->`` and ``<!-- /NAME -->``, replaced by
the scripts of this folder that write a page's tables (make_bgl_limits_figure.py, make_bgp_figure.py)."""

from __future__ import annotations

import re
from pathlib import Path


def replace_block(text: str, marker: str, body: str, page: Path) -> str:
    """``text`` with the block ``marker`` of ``page`` holding ``body``; a page without the marker stops the script."""
    pattern = re.compile(rf"(<!-- {marker} -->\n).*?(<!-- /{marker} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{page}: marker <!-- {marker} --> not found")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
