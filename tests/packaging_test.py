"""The wheel: built with `python -m build`, installed into a fresh venv, used outside the checkout.

Offline-safe: the venv sees this interpreter's site-packages through a .pth file, and the wheel
is installed with --no-deps, so nothing is downloaded; what is tested is the wheel's content.
"""

import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = textwrap.dedent("""
    import pathlib, jaxfl, jaxfl.data.download, jaxfl.sensitivity, jaxfl.crypto
    assert "site-packages" in jaxfl.__file__, jaxfl.__file__
    pkg = pathlib.Path(jaxfl.__file__).parent
    assert (pkg / "models" / "README.md").is_file()
    import experiments  # noqa: must not be in the wheel
""")


@pytest.mark.slow
def test_wheel_installs_and_trains_outside_the_checkout(tmp_path):
    pytest.importorskip("build")
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--skip-dependency-check", "--outdir",
                    str(dist), str(ROOT)], check=True, capture_output=True, timeout=180)
    wheel, = dist.glob("jaxfl-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    parents = [p for p in sys.path if p.endswith("site-packages")] or [
        sysconfig.get_path("purelib")]
    Path(site, "parent_env.pth").write_text("\n".join(parents) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-index", "--target", site, str(wheel)], check=True, timeout=120)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    check = subprocess.run([py, "-c", QUICKSTART], cwd=work, env=env, capture_output=True,
                           text=True, timeout=120)
    assert "No module named 'experiments'" in check.stderr, check.stderr
    quick = subprocess.run([py, str(ROOT / "tests" / "_quickstart_outside.py")], cwd=work,
                           env=env, capture_output=True, text=True, timeout=180)
    assert quick.returncode == 0, quick.stderr[-2000:]
    assert "epsilon" in quick.stdout and "rounds=2" in quick.stdout, quick.stdout
