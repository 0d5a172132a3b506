"""Alias of ``python -m experiments.reproduce dp_ogl --figure fig3`` (DP-OGL Fig. 3 over seeds:
:mod:`experiments.reproduce.dp_ogl`), the command docs/reproduction/dp_ogl_seeds.md names."""

if __name__ == "__main__":
    import sys

    from experiments.reproduce.__main__ import main

    raise SystemExit(main(["dp_ogl", "--figure", "fig3", *sys.argv[1:]]))
