"""Writes the reproduction pages from the committed result files (:mod:`jaxfl.repro.pages`).

  python -m experiments.reproduce.pages            # rewrite the pages
  python -m experiments.reproduce.pages --check    # exit 1 and list the pages that differ
"""

from jaxfl.repro.pages import main

if __name__ == "__main__":
    raise SystemExit(main())
