"""jaxfl.compilation_cache: on for the entry points, never from a library import, off by flag or
environment, and a second process loads what the first compiled."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax

from jaxfl import compilation_cache

ROOT = Path(__file__).resolve().parents[1]


def test_resolve_default_path_off_switches():
    env = {"XDG_CACHE_HOME": "/somewhere"}
    assert compilation_cache.resolve(environ=env) == Path("/somewhere/jaxfl/xla")
    assert compilation_cache.resolve(environ={**env, "JAXFL_COMPILATION_CACHE": "1"}) == \
        Path("/somewhere/jaxfl/xla")
    for off in ("0", "off", "false", "no"):
        assert compilation_cache.resolve(environ={"JAXFL_COMPILATION_CACHE": off}) is None
    assert compilation_cache.resolve(environ={"JAXFL_COMPILATION_CACHE": "/p/q"}) == Path("/p/q")
    assert compilation_cache.resolve(disabled=True, environ=env) is None


def test_setup_leaves_a_cache_jax_already_has():
    # The suite's conftest gave this process a temporary cache (unless a user turned it off).
    before = jax.config.jax_compilation_cache_dir
    if before:
        env = {"JAXFL_COMPILATION_CACHE": "/nonexistent/never/created"}
        assert compilation_cache.setup(environ=env) == before
        assert jax.config.jax_compilation_cache_dir == before
        assert not Path("/nonexistent/never").exists()


def _python(code: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


_PROGRAM = """
import json, sys
import jax, jax.numpy as jnp
from jax._src import monitoring
events = []
monitoring.register_event_listener(lambda name, **kw: events.append(name))
jnp.ones(3).block_until_ready()  # a compilation before the entry point's setup
from jaxfl import compilation_cache
path = compilation_cache.setup()
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # keep the toy program
f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())
f(jnp.ones((64, 64))).block_until_ready()
print(json.dumps({"dir": path, "hits": events.count("/jax/compilation_cache/cache_hits")}))
"""


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_COMPILATION_CACHE_DIR", "JAXFL_COMPILATION_CACHE")}
    # the repository first, then whatever the caller's path holds (wheels carried to a GPU
    # machine live there: dp-accounting, ...)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=path, **extra)
    return env


def test_a_second_process_loads_the_first_ones_program(tmp_path):
    env = _env(JAXFL_COMPILATION_CACHE=str(tmp_path / "xla"))
    first = _python(_PROGRAM, env)
    assert first == {"dir": str(tmp_path / "xla"), "hits": 0}
    assert any((tmp_path / "xla").iterdir())
    second = _python(_PROGRAM, env)
    assert second["hits"] >= 1


def test_never_on_from_a_library_import_and_off_by_environment(tmp_path):
    code = ("import json, jax, jaxfl, jaxfl.training, jaxfl.sweep, jaxfl.algorithms.uldp\n"
            "import jax.numpy as jnp\n"
            "from jaxfl import compilation_cache\n"
            "jax.jit(lambda x: x + 1)(jnp.ones(2)).block_until_ready()\n"
            "imported = jax.config.jax_compilation_cache_dir\n"
            "off = compilation_cache.setup(environ={'JAXFL_COMPILATION_CACHE': '0'})\n"
            "print(json.dumps({'imported': imported, 'off': off,\n"
            "                  'after': jax.config.jax_compilation_cache_dir}))")
    # No JAXFL_COMPILATION_CACHE at all: the entry points would use $XDG_CACHE_HOME/jaxfl/xla,
    # the library must not.
    got = _python(code, _env(XDG_CACHE_HOME=str(tmp_path)))
    assert got == {"imported": None, "off": None, "after": None}
    assert not (tmp_path / "jaxfl" / "xla").exists()


def test_entry_points_take_the_flag(capsys):
    import pytest

    from experiments import run, sweep

    for main in (run.main, sweep.main):
        with pytest.raises(SystemExit):
            main(["--help"])
        assert "--no-compilation-cache" in capsys.readouterr().out
