"""Every gossip config's smoke sweep equals its points' single runs.

ego-Facebook is not among the shipped data sets, so its config runs on a synthetic graph of the
same kind written as ``facebook_combined.txt`` (networkx powerlaw-cluster, 400 nodes): the test
is of the engine (sweep = single runs), not of the data.
"""

import networkx as nx
import pytest

from tests.experiments import _sweep_check


@pytest.mark.parametrize("config_file", _sweep_check.config_files("gossip"))
def test_smoke_sweep_equals_single_runs(config_file, tmp_path, monkeypatch):
    if config_file.endswith("fig1_facebook.py"):
        data = tmp_path / "data"
        (data / "snap").mkdir(parents=True)
        graph = nx.powerlaw_cluster_graph(400, 5, 0.3, seed=0)
        nx.write_edgelist(graph, data / "snap" / "facebook_combined.txt", data=False)
        monkeypatch.setenv("JAXFL_DATA_DIR", str(data))
    _sweep_check.check_config_sweep(config_file, tmp_path)
