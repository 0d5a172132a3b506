"""experiments.demo offline fallback: digits, epsilon <= 8 at delta=1e-5, useful accuracy."""

from experiments import demo


def test_offline_demo_is_private_and_useful(tmp_path, capsys):
    summary = demo.main(["--offline", "--workdir", str(tmp_path / "demo")])
    out = capsys.readouterr().out
    assert summary["dataset"] == "digits" and summary["delta"] == 1e-5
    assert summary["epsilon"] <= 8.0 and summary["epsilon_rdp"] <= 8.0
    assert summary["test_accuracy"] >= 0.8
    assert "python -m jaxfl.data.download mnist" in out
