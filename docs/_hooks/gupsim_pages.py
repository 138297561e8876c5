"""mkdocs hook: fill the ``<!-- gupsim:NAME -->`` markers of a page from the code.

The generators live in :mod:`gupsim.app.reference_docs`; this file only connects
them to mkdocs, so the reference pages cannot drift from the schema.
"""

from __future__ import annotations

from gupsim.app.reference_docs import render


def on_page_markdown(markdown, page, config, files):  # noqa: ARG001 - mkdocs hook signature
    return render(markdown, page.file.src_path)
