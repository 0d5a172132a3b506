"""Model registry: names, errors, and parameter counts at the papers' default sizes."""

import jax
import pytest

from jaxfl import validate
from jaxfl.models import available, get_model
from jaxfl.tree import num_params
from tests.models import _tiny

# Parameter counts derived by hand from the architectures of the papers and the
# authors' code (layer by layer).
DEFAULT_PARAMS = {
    "logreg": 784 * 10 + 10,  # Koskela & Kulkarni 2025, App. F: d = 7850
    "binary_logreg": 13 + 1,  # FLamby heart baseline: 14
    "linear": 16 + 1,
    "mlp": (784 * 200 + 200) + (200 * 200 + 200) + (200 * 10 + 10),  # FedAvg 2NN: 199,210
    "fraud_net": 5 * (30 * 30 + 30 + 2 * 30) + 30 * 2 + 2,  # ULDP-FL code: 5,012 (the paper says ~4K)
    # FedAvg CNN: conv 5x5x1x32, conv 5x5x32x64, dense 3136x512, dense 512x10 (~1.66M).
    "fedavg_cnn": (25 * 32 + 32) + (25 * 32 * 64 + 64) + (3136 * 512 + 512) + (512 * 10 + 10),
    # LEAF's FEMNIST CNN: 832 + 51,264 + 6,424,576 + 127,038 = 6,603,710.
    "femnist_cnn": 832 + 51_264 + 6_424_576 + 127_038,
    "uldp_cnn": 21_840,  # ULDP-FL code (CNNMnist; the paper says ~20K)
    "cifar_cnn": (25 * 3 * 32 + 32) + (25 * 32 * 64 + 64) + (4096 * 384 + 384)
    + (384 * 192 + 192) + (192 * 10 + 10),
    "resnet18_gn": 11_173_962,  # CIFAR ResNet-18, GroupNorm
    # LEAF Shakespeare: embed 80x8, LSTM(8->256), LSTM(256->256) (one bias per gate), dense.
    "char_lstm": 80 * 8 + 4 * (8 * 256 + 256 * 256 + 256) + 4 * (2 * 256 * 256 + 256)
    + 256 * 80 + 80,
    "cox": 39 + 1,  # FLamby TCGA-BRCA baseline: 40
}


def test_registry_lists_every_model():
    assert set(available()) == set(DEFAULT_PARAMS)
    assert set(_tiny.TINY) == set(DEFAULT_PARAMS)


def test_unknown_model_is_a_clear_error():
    with pytest.raises(validate.JaxflValueError, match=r"Unknown model 'resnet50'.*logreg"):
        get_model("resnet50")


def test_unknown_keyword_is_a_clear_error():
    with pytest.raises(validate.JaxflValueError, match=r"'hidden_sizes'.*accepted.*'hidden'"):
        get_model("mlp", hidden_sizes=(3,))


@pytest.mark.parametrize("name", sorted(DEFAULT_PARAMS))
def test_parameter_count_at_default_size(name):
    model = get_model(name)
    assert model.name == name
    shapes = jax.eval_shape(model.init, jax.random.key(0))  # no compilation, no allocation
    assert num_params(shapes) == DEFAULT_PARAMS[name]


def test_logreg_with_one_class_is_binary():
    model = get_model("logreg", num_classes=1, input_shape=(13,))
    assert model.name == "binary_logreg"
    assert num_params(jax.eval_shape(model.init, jax.random.key(0))) == 14


def test_char_lstm_two_linear_layers_flag():
    model = get_model("char_lstm", head_hidden=(256,))
    extra = 256 * 256 + 256
    assert num_params(jax.eval_shape(model.init, jax.random.key(0))) == (
        DEFAULT_PARAMS["char_lstm"] + extra)
