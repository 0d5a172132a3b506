"""``python -m experiments.reproduce PAPER ...``: the reproduction of this repository's papers
(:mod:`jaxfl.repro.cli`; ``--list`` names them)."""

from jaxfl.repro.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
