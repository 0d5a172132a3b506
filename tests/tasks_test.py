"""jaxfl.tasks: the registry (names, options, typed errors) and the tasks' arrays, which must
equal, bit for bit, what the loaders in experiments/papers produced before they moved here.

The recorded digests were computed by the old loaders (commit 4b8826f: ``fedavg.task`` /
``load_classification``, ``lightdp.load_arrays`` / ``client_indices`` / ``test_indices``,
``gossip._mnist``, ``dp_ogl.load_partition``, ``subject_dp.load_data``, ``uldp._task``) with
the same options, over the training data as trained on and the test data as evaluated on.
The digits and synthetic ones need no files (they run in CI); the others read the real data
under ``JAXFL_DATA_DIR`` and skip without it.
"""

import dataclasses
import hashlib

import numpy as np
import pytest

from jaxfl import tasks, validate
from tests.conftest import require_data


def digest(*objs) -> str:
    """sha256 (16 hex digits) of every array's dtype, shape and bytes, in field order."""
    d = hashlib.sha256()

    def h(o):
        if isinstance(o, dict):
            for k in sorted(o):
                d.update(str(k).encode())
                h(o[k])
        elif dataclasses.is_dataclass(o):
            h({f.name: getattr(o, f.name) for f in dataclasses.fields(o)})
        elif hasattr(o, "_asdict"):
            h(o._asdict())
        elif isinstance(o, list | tuple):
            d.update(f"[{len(o)}]".encode())
            for v in o:
                h(v)
        elif o is None or isinstance(o, int | float | str):
            d.update(repr(o).encode())
        else:
            a = np.ascontiguousarray(np.asarray(o))
            d.update(f"{a.dtype}{a.shape}".encode())
            d.update(a.tobytes())

    for o in objs:
        h(o)
    return d.hexdigest()[:16]


# name -> (task, options, files needed under JAXFL_DATA_DIR, digest of the old loader's output)
OLD = {
    "classification_digits": ("classification", dict(
        dataset="digits", num_clients=20, seed=1, partition="dirichlet"), (), "c43feb12724510ff"),
    "subject_users_synthetic": ("subject_users", dict(
        dataset="synthetic", num_users=4, num_subjects=30, num_train=500, num_test=None,
        alpha=1.0, seed=5, model="mlp"), (), "cf0072b046f64def"),
    "classification_mnist": ("classification", dict(
        dataset="mnist", num_clients=100, seed=2, partition="shards", max_train_examples=6000),
        ("mnist",), "7c0af3b0349cb1a0"),
    "label_shards_mnist": ("label_shards", dict(
        dataset="mnist", image_pool=2, num_clients=10, examples_per_client=100,
        test_examples=500, seed=3, model="fedavg_cnn"), ("mnist",), "e15888408dc12fa4"),
    "worker_splits_mnist": ("worker_splits", dict(
        num_workers=20, partition_workers=25, data_seed=1, max_train_examples=5000),
        ("mnist",), "ab631917023f0861"),
    "subject_users_parkinsons": ("subject_users", dict(
        dataset="parkinsons", num_users=4, num_subjects=42, num_train=None, num_test=None,
        alpha=1.0, seed=6, model="linear"), ("parkinsons_telemonitoring",), "1e15f5977f0408f4"),
    "users_silos_heart": ("users_silos", dict(
        dataset="heart_disease", num_users=20, distribution="zipf", num_silos=4, seed=7),
        ("heart_disease",), "0ad9d8dcde4e7481"),
}


def _arrays(name: str, t: tasks.Task):
    """What the old loader returned, taken from the task."""
    if name == "worker_splits_mnist":
        return t.train, t.test, t.info["label_counts"]
    if name == "users_silos_heart":
        u = t.info["uldp"]
        return u.train, (u.test_x, u.test_y)
    return t.train, tuple(t.test)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.data, pytest.mark.slow] if OLD[n][2] else [])
    for n in OLD])
def test_task_arrays_equal_the_old_loaders_bitwise(name):
    task, options, files, old = OLD[name]
    if files:
        require_data(*files)
    assert digest(*_arrays(name, tasks.get(task, **options))) == old


@pytest.mark.data
@pytest.mark.slow
def test_node_shards_equal_the_old_gossip_loader_bitwise():
    require_data("mnist")
    t = tasks.get("node_shards", num_nodes=10, per_node=50, seed=4, val_size=100)
    assert digest(t.train) == "496b9039c48649bc"
    assert sorted(t.evaluate(t.model.init(None))) == [
        "test_accuracy", "test_loss", "val_accuracy", "val_loss"]


def test_a_task_is_a_pure_function_of_its_options():
    a = tasks.get("classification", dataset="digits", num_clients=20, seed=1)
    b = tasks.get("classification", dataset="digits", num_clients=20, seed=2)
    assert digest(a.train) == digest(
        tasks.get("classification", dataset="digits", num_clients=20, seed=1).train)
    assert digest(a.train) != digest(b.train)  # the seed reaches the partition
    assert a.options["partition"] == "dirichlet" and a.options["seed"] == 1
    assert a.name == "classification" and a.train.x.shape[0] == 20
    assert a.model.apply is not None and callable(a.evaluate)


def test_registry_lists_every_task_with_its_source_and_partition():
    assert tasks.names() == ("classification", "label_shards", "node_shards", "subject_users",
                             "users_silos", "worker_splits")
    for name in tasks.names():
        text = tasks.describe(name)
        assert text.startswith(f"{name}(") and "Partition" in text and "Model" in text, name
        assert "Source" in text or "source" in text.lower(), name
    assert tasks.options("node_shards") == dict(dataset="mnist", num_nodes=100, per_node=600,
                                               seed=0, val_size=0, data_dir=None)


def test_unknown_names_options_and_values_are_typed_errors_listing_the_valid_ones(tmp_path):
    with pytest.raises(validate.JaxflValueError,
                       match=r"Unknown task 'clasification'; did you mean 'classification'.*"
                             r"'label_shards'.*'worker_splits'"):
        tasks.get("clasification")
    with pytest.raises(validate.JaxflValueError,
                       match=r"Unknown option.*'num_client'.*did you mean 'num_clients'.*"
                             r"'alpha'.*'seed'"):
        tasks.get("classification", num_client=3)
    missing = str(tmp_path / "none")  # nothing loads: every check comes first
    with pytest.raises(validate.JaxflValueError, match=r"partition.*'dirichlet'.*'blocks'"):
        tasks.get("classification", partition="blocks", data_dir=missing)
    with pytest.raises(validate.JaxflValueError, match=r"dataset.*'mnist'.*'imagenet'"):
        tasks.get("classification", dataset="imagenet", data_dir=missing)
    with pytest.raises(validate.JaxflValueError,
                       match=r"Unknown model 'logregg'.*did you mean 'logreg'.*'mlp'.*option"):
        tasks.get("classification", model="logregg", data_dir=missing)
    with pytest.raises(validate.JaxflValueError, match=r"dataset.*'heart_disease'.*'cifar100'"):
        tasks.get("users_silos", dataset="cifar100")


def test_register_refuses_a_task_without_docstring_or_with_positional_options():
    with pytest.raises(TypeError, match="keyword-only"):
        @tasks.register("bad")
        def bad(x=1):
            """Doc."""
    with pytest.raises(TypeError, match="docstring"):
        @tasks.register("bad")
        def undocumented(*, x=1):
            pass
    assert "bad" not in tasks.names()
