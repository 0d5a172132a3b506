"""Config files and ``key=value`` overrides (big_vision-style ``get_config(arg)``, no framework).

A config file ``experiments/configs/<paper>/<setting>.py`` defines ``get_config(arg: str | None)``
returning a frozen dataclass of its family (data only; every family extends
:class:`experiments.configs.base.RunConfig`, whose fields' checks run before any work), and
optionally ``get_sweep() -> list[dict]`` of overrides. ``arg`` is a comma-separated
``key=value`` list such as ``variant=smoke,dataset=fashion_mnist`` (see :func:`parse_arg`).

Command lines (``experiments/run.py``, ``experiments/sweep.py``) take overrides as
``--set a=1 b=2`` or repeated ``--set a=1 --set b=2``; an unknown key is an error that names the
nearest valid one; ``--help`` together with ``--config X`` lists X's fields (see
:func:`parse_args`, :func:`describe`).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import importlib.util
import sys
import types
import typing
from pathlib import Path


def key_values(items, *, what: str) -> dict[str, str]:
    """``"a=1,b=x"`` or ``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``: the one parser of
    ``key=value`` lists (config args, ``--set``, selections, meshes). Keys and values are
    stripped, empty items skipped, a later key wins.

    Raises:
      ValueError: for an item without ``=`` (the message names ``what``, e.g. ``--set``).
    """
    out = {}
    for item in items.split(",") if isinstance(items, str) else items:
        if not item.strip():
            continue
        if "=" not in item:
            raise ValueError(f"Expected key=value in {what}, got {item!r}.")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def check_variant(variant, known, *, config: str = "") -> str:
    """``variant`` if it is one of ``known`` (a tuple, or a dict keyed by variant name).

    The one refusal of an unknown variant shared by every config family, so a misspelt
    ``variant=smok`` cannot launch the full experiment.

    Raises:
      ValueError: naming the unknown variant and listing the known ones.
    """
    names = tuple(known)
    if variant not in names:
        where = f" of {config}" if config else ""
        raise ValueError(f"Unknown variant {variant!r}{where};{_nearest(str(variant), names)} "
                         f"known variants: {', '.join(map(str, names))}.")
    return variant


def parse_arg(arg: str | None, *, extra_keys=(), variants=None, **defaults) -> dict:
    """Parses ``"a=1,b=x"`` into a dict, converting values to the type of ``defaults``.

    Args:
      arg: the text after ``:`` in ``--config path.py:arg`` (or ``None``).
      extra_keys: further accepted keys without a default; their values stay strings (``none``
        becomes ``None``) for a later typed step such as :func:`apply_overrides`. A config that
        forwards its remaining keys to config fields passes the field names here.
      variants: the config's known variants (tuple or dict keyed by name): the ``variant``
        key's value must be one of them (:func:`check_variant`).
      **defaults: the accepted keys and their default values (which also fix their types).

    Returns:
      ``defaults`` updated with the keys given in ``arg`` (extra keys only when given).

    Raises:
      ValueError: for an item without ``=``, a key that is neither in ``defaults`` nor in
        ``extra_keys`` (a misspelt ``varient=smoke`` must not silently run the full config), a
        value that does not parse as its default's type, or an unknown variant.
    """
    out = dict(defaults)
    allowed = set(defaults) | set(extra_keys)
    for k, v in key_values(arg or "", what="config arg").items():
        if k not in allowed:
            raise ValueError(f"Unknown config arg key {k!r} in {arg!r};{_nearest(k, allowed)} "
                             f"allowed keys: {sorted(allowed)}.")
        out[k] = _convert(v, type(defaults[k]) if k in defaults else str, name=k)
    if variants is not None:
        check_variant(out.get("variant"), variants)
    return out


def _nearest(key: str, valid) -> str:
    """`` did you mean 'x'?`` for the closest valid key (difflib), or ``""``."""
    close = difflib.get_close_matches(key, sorted(valid), n=1, cutoff=0.5)
    return f" did you mean {close[0]!r}?" if close else ""


_TYPE_WORDS = {int: "an integer (e.g. 3)", float: "a number (e.g. 0.5 or 1e-5)", bool:
               "a bool (true/false, yes/no, 1/0)"}


def _convert(text: str, typ, *, name: str = "value"):
    """``text`` as a ``typ`` (``none`` -> None).

    Raises:
      ValueError: naming the field, the text and the expected type (``rounds=1.5`` is not an
        integer; ``noise_multiplier=abc`` is not a number).
    """
    if typ is bool:
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
        raise ValueError(f"Expected {name} to be {_TYPE_WORDS[bool]}, got {name}={text!r}.")
    if text.lower() == "none":
        return None
    if typ in (int, float):
        try:
            return typ(text)
        except ValueError:
            raise ValueError(
                f"Expected {name} to be {_TYPE_WORDS[typ]}, got {name}={text!r}.") from None
    if typ is str:
        return typ(text)
    if typ in (tuple, list):
        return typ(_auto(t) for t in text.split(":")) if text else typ()
    return _auto(text)


def _auto(text: str):
    for typ in (int, float):
        try:
            return typ(text)
        except ValueError:
            pass
    return text


def _field_type(config, name):
    hints = typing.get_type_hints(type(config))
    hint = hints.get(name)
    current = getattr(config, name)
    if current is not None:
        return type(current)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else str


def apply_overrides(config, overrides):
    """Returns a copy of ``config`` with ``overrides`` (dict or ``["a.b=v", ...]``) applied."""
    if isinstance(overrides, (list, tuple)):
        overrides = key_values(overrides, what="--set")
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        names = {f.name for f in dataclasses.fields(config)}
        if head not in names:
            raise ValueError(f"Unknown config field {head!r};{_nearest(head, names)} fields: "
                             f"{sorted(names)}.")
        if rest:
            value = apply_overrides(getattr(config, head), {rest: value})
        elif isinstance(value, str):
            value = _convert(value, _field_type(config, head), name=head)
        config = dataclasses.replace(config, **{head: value})
    return config


def load_module(path: str) -> types.ModuleType:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"Config file {path} does not exist.")
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    name = "_jaxfl_config_" + "_".join(path.with_suffix("").parts[-3:])
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_config(spec: str, overrides=()):
    """``spec`` is ``path.py`` or ``path.py:arg``; returns the config with overrides applied."""
    path, _, arg = spec.partition(":")
    module = load_module(path)
    config = module.get_config(arg or None)
    return apply_overrides(config, list(overrides))


def sweep_points(spec: str, overrides=()) -> list:
    """The points of the config file ``spec`` (``path.py:arg``): its ``get_config(arg)`` with
    ``overrides`` (``--set`` strings) expanded by ``get_sweep(arg)``, as ``python -m
    experiments.sweep --config SPEC --set ...`` runs them (same point ids)."""
    from jaxfl import sweep

    return sweep.expand(load_config(spec, overrides),
                        load_module(spec.partition(":")[0]).get_sweep(spec.partition(":")[2]))


def describe(config) -> str:
    """The config class's docstring and one line per field: name, type, value and default."""
    cls = type(config)
    lines = [f"config {cls.__module__}.{cls.__qualname__}:"]
    doc = (cls.__doc__ or "").strip()
    if doc and not doc.startswith(cls.__name__ + "("):  # not the dataclass-generated one
        lines += ["  " + line for line in doc.splitlines()]
    lines.append("fields (override with --set name=value; nested fields with a.b=value):")
    for f in dataclasses.fields(config):
        typ = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        value = getattr(config, f.name)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = "(required)"
        extra = "" if default == value else f"  (class default: {default!r})"
        lines.append(f"  {f.name}: {typ} = {value!r}{extra}")
    return "\n".join(lines)


def parse_args(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with ``--help --config X`` also listing X's fields.

    The config is loaded (``get_config(arg)``, without ``--set``) only when help is asked for,
    and its :func:`describe` text is appended to the parser's epilog.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help") for a in argv):
        spec = None
        for i, a in enumerate(argv):
            if a == "--config" and i + 1 < len(argv):
                spec = argv[i + 1]
            elif a.startswith("--config="):
                spec = a.split("=", 1)[1]
        if spec:
            path, _, arg = spec.partition(":")
            try:
                text = describe(load_module(path).get_config(arg or None))
            except (OSError, ValueError) as e:
                text = f"(could not load --config {spec}: {e})"
            parser.epilog = ((parser.epilog or "") + "\n\n" + text).strip()
            parser.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser.parse_args(argv)


def sweep_configs(path, variant: str, **overrides) -> list:
    """The configs of the sweep of the config file ``path`` at ``variant=<variant>``, fields of
    its base config replaced by ``overrides`` (:func:`sweep_points`: by ``--set`` strings)."""
    from jaxfl import sweep

    module = load_module(str(path))
    base = dataclasses.replace(module.get_config(f"variant={variant}"), **overrides)
    return [p.config for p in sweep.expand(base, module.get_sweep(f"variant={variant}"))]
