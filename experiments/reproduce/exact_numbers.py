"""Writes ``docs/reproduction/data/exact_numbers.json`` from the library (no number typed).

  python -m experiments.reproduce.exact_numbers            # rewrite the file
  python -m experiments.reproduce.exact_numbers --check    # exit 1 if the file differs

The exact-accounting numbers the pages print but no per-seed file carries: each paper declares
its own (``Paper.exact``: gossip's TM-1 and Thm. 4 sensitivities, the subject-level DP sigmas and
strict epsilons, LightDP's calibration check); :func:`jaxfl.repro.pages.exact_numbers` rounds
each to the format beside it and ``pages --check`` finds each on its page.
"""

from jaxfl.repro import pages

NOTE = ("Exact-accounting numbers that the reproduction pages print but no per-seed file holds, "
        "written by `python -m experiments.reproduce.exact_numbers` from the library (and from "
        "gossip_exact.json / subject_dp.json, which their drivers wrote with the library); each "
        "value is rounded to the format beside it, the precision its page prints. "
        "tests/experiments/reproduction_pages_test.py regenerates this file and checks that "
        "every value, so formatted, appears on its page.")


def compute() -> dict:
    """The file's content: :data:`NOTE` and every declared paper's exact numbers."""
    return pages.exact_numbers(NOTE)


def main(argv=None) -> int:
    return pages.write_exact_numbers(NOTE, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
