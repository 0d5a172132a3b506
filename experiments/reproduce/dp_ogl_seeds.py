"""Alias of ``python -m experiments.reproduce dp_ogl --figure fig3`` (DP-OGL Fig. 3 over seeds:
:mod:`experiments.reproduce.dp_ogl`), the command docs/reproduction/dp_ogl_seeds.md names."""

if __name__ == "__main__":
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("dp_ogl", "--figure",
                                                                           "fig3")
