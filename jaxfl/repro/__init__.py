"""Reproduction of papers declared as data: run, export, render and check.

A paper declares its figures, claims and pages as frozen records (:mod:`.declare`); one engine
runs a figure's configs as a resumable sweep and writes its per-seed data with provenance
(:mod:`.runs`), decides the claims by their pre-declared rules (:mod:`.claims` over the seed
statistics of :mod:`.stats`: paired t-tests, Holm over a paper's family) and renders the pages
from templates (:mod:`.text`, :mod:`.pages`); :mod:`.cli` is the command line. The papers of
this repository are declared in ``experiments/reproduce/`` (``python -m experiments.reproduce
--list``).
"""
