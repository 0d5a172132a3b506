"""The papers' reproduction declarations (one module per paper, each with ``PAPER``).

The engine that runs, exports, renders and checks them is the library's :mod:`jaxfl.repro`;
this package registers itself as a paper package and its ``templates/`` folder (the pages'
fixed wording) with it.
"""

from pathlib import Path

from jaxfl.repro import declare, text

declare.add_package(__name__)
text.add_templates(Path(__file__).with_name("templates"))
