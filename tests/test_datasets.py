"""Dataset loading: bundled digits, IDX directories, .npz and Parquet files, OpenML MNIST, the error messages, and
hostile files (FIFOs and devices, decompression bombs, headers declaring more than the file or the limit)."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import tracemalloc
import urllib.error
import warnings
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sklearn.datasets
import yaml
from sklearn.utils import Bunch

from sweeper.config.grid import Dataset
from sweeper.errors import UserError
from sweeper.workload import bounded_files, user_files
from sweeper.workload import data as datasets
from sweeper.workload.data import FASHION_MNIST_DIR, IDX_FILES, Data, check_available, load, read_idx
from tests.conftest import REPO, minimal_grid, run_cli

N_CLASSES = 10
IDX_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C, np.dtype(np.float64): 0x0E}


def write_idx(path: Path, array: np.ndarray[Any, Any], *, gz: bool = False) -> Path:
    """Write ``array`` as an IDX file (big-endian header and data), gzipped if ``gz``."""
    header = bytes([0, 0, IDX_CODES[array.dtype], array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    raw = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)
    return path


def synthetic_split(
    n_train: int = 200, n_test: int = 50, side: int = 4, seed: int = 1
) -> dict[str, np.ndarray[Any, Any]]:
    """Small uint8 images with balanced labels 0..9, shaped like MNIST's four arrays."""
    rng = np.random.default_rng(seed)
    return {
        "X_train": rng.integers(0, 256, size=(n_train, side, side), dtype=np.uint8),
        "y_train": (np.arange(n_train) % N_CLASSES).astype(np.uint8),
        "X_test": rng.integers(0, 256, size=(n_test, side, side), dtype=np.uint8),
        "y_test": (np.arange(n_test) % N_CLASSES).astype(np.uint8),
    }


def write_idx_dir(directory: Path, *, gz: bool = False, dotted: bool = False) -> dict[str, np.ndarray[Any, Any]]:
    """Write the four MNIST-named IDX files into ``directory`` and return the arrays written."""
    directory.mkdir(parents=True, exist_ok=True)
    arrays = synthetic_split()
    for key, stem in IDX_FILES.items():
        name = stem.replace("-idx", ".idx") if dotted else stem
        write_idx(directory / name, arrays[key], gz=gz)
    return arrays


def assert_well_formed(data: Data) -> None:
    """The contract of every loader: float32 in [0, 1], int64 labels, 2-D features, matching lengths."""
    for X, y in ((data.X_train, data.y_train), (data.X_test, data.y_test)):
        assert X.dtype == np.float32 and y.dtype == np.int64
        assert X.ndim == 2 and y.ndim == 1 and X.shape[0] == y.shape[0]
        assert X.shape[1] == data.n_features
        assert X.min() >= 0.0 and X.max() <= 1.0


def assert_matches_idx(data: Data, arrays: dict[str, np.ndarray[Any, Any]]) -> None:
    """``data`` holds exactly ``arrays`` (uint8 images scaled by 1/255)."""
    n_train, n_test = len(arrays["y_train"]), len(arrays["y_test"])
    assert (data.n_train, data.n_test, data.n_features) == (n_train, n_test, 16)
    np.testing.assert_allclose(data.X_train, arrays["X_train"].reshape(n_train, -1) / 255, rtol=1e-6)
    np.testing.assert_allclose(data.X_test, arrays["X_test"].reshape(n_test, -1) / 255, rtol=1e-6)
    np.testing.assert_array_equal(data.y_train, arrays["y_train"])
    np.testing.assert_array_equal(data.y_test, arrays["y_test"])


# --- digits, fraction, determinism ----------------------------------------------------------------------------------


def test_digits_shapes_ranges_and_dtypes() -> None:
    data = load(Dataset("digits"))
    assert_well_formed(data)
    assert (data.name, data.source) == ("digits", "sklearn bundled digits")
    assert (data.n_train, data.n_test, data.n_features) == (1347, 450, 64)
    assert data.X_train.max() == 1.0  # 16/16: scaled, not clipped
    assert set(np.unique(data.y_test)) == set(range(N_CLASSES))
    assert "n_train=1347" in repr(data)


@pytest.mark.parametrize(
    ("fraction", "max_train_rows", "n_train"),
    [
        pytest.param(0.1, None, 135, id="fraction-0.1"),
        pytest.param(0.5, None, 674, id="fraction-0.5"),
        pytest.param(1.0, 50, 50, id="cap-50"),
        pytest.param(0.5, 10, 10, id="cap-below-fraction"),
        pytest.param(0.2, 5000, 269, id="cap-above-fraction"),
    ],
)
def test_fraction_and_cap_subsample_training_stratified(
    fraction: float, max_train_rows: int | None, n_train: int
) -> None:
    full = load(Dataset("digits"))
    data = load(Dataset("digits"), fraction=fraction, max_train_rows=max_train_rows)
    assert_well_formed(data)
    assert data.n_train == n_train
    assert set(np.unique(data.y_train)) == set(range(N_CLASSES))
    # proportions follow the full training set to within one row per class
    expected = np.bincount(full.y_train) * n_train / full.n_train
    assert np.all(np.abs(np.bincount(data.y_train) - expected) < 1 + 1e-9)
    # the test set is kept whole
    np.testing.assert_array_equal(data.X_test, full.X_test)
    np.testing.assert_array_equal(data.y_test, full.y_test)
    # the subsample is made of training rows
    full_rows = {row.tobytes() for row in full.X_train}
    assert all(row.tobytes() in full_rows for row in data.X_train)


def test_same_seed_same_arrays_other_seed_other_arrays() -> None:
    first = load(Dataset("digits"), fraction=0.3, seed=7)
    again = load(Dataset("digits"), fraction=0.3, seed=7)
    other = load(Dataset("digits"), fraction=0.3, seed=8)
    for name in ("X_train", "y_train", "X_test", "y_test"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    assert not np.array_equal(first.X_test, other.X_test)
    assert not np.array_equal(first.X_train, other.X_train)


def test_subsample_of_an_own_split_is_seeded(tmp_path: Path) -> None:
    write_idx_dir(tmp_path)
    a = load(Dataset("mnist", str(tmp_path)), max_train_rows=30, seed=1)
    b = load(Dataset("mnist", str(tmp_path)), max_train_rows=30, seed=1)
    c = load(Dataset("mnist", str(tmp_path)), max_train_rows=30, seed=2)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.X_train, c.X_train)
    assert np.bincount(a.y_train).tolist() == [3] * N_CLASSES


# --- IDX ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gz", "dotted"),
    [
        pytest.param(False, False, id="raw"),
        pytest.param(True, False, id="gzip"),
        pytest.param(True, True, id="gzip-dotted-names"),
    ],
)
def test_idx_directory_round_trip(tmp_path: Path, gz: bool, dotted: bool) -> None:
    arrays = write_idx_dir(tmp_path / "idx", gz=gz, dotted=dotted)
    dataset = Dataset("path", str(tmp_path / "idx"))
    check_available(dataset)
    data = load(dataset)
    assert_well_formed(data)
    assert_matches_idx(data, arrays)
    assert (data.name, data.source) == ("idx", str(tmp_path / "idx"))


@pytest.mark.parametrize(
    "array",
    [
        pytest.param(np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 5, id="int32-3d"),
        pytest.param(np.linspace(0, 1, 7), id="float64-1d"),
    ],
)
def test_read_idx_other_type_codes(tmp_path: Path, array: np.ndarray[Any, Any]) -> None:
    np.testing.assert_array_equal(read_idx(write_idx(tmp_path / "a-idx", array)), array)


def idx_header(code: int, shape: tuple[int, ...]) -> bytes:
    """An IDX header: magic, type code, dimension count, big-endian dimensions."""
    return bytes([0, 0, code, len(shape)]) + struct.pack(f">{len(shape)}I", *shape)


def refused(call: Callable[[], object], match: str, *, timeout_s: float = 10.0, max_traced_mib: int = 32) -> str:
    """``call()`` raises a UserError matching ``match``, in time and without a large allocation; returns its text.

    The call runs in a daemon thread so that a hang (a FIFO opened for reading) fails the test instead
    of blocking the suite; tracemalloc counts numpy's buffers too, so allocating a size that a header
    claims fails the memory bound even if the memory is never touched.
    """
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:  # handed to the test thread
            outcome.append(error)

    tracemalloc.start()
    try:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(timeout_s)
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not thread.is_alive(), f"still running after {timeout_s} s"
    error = outcome[0]
    assert isinstance(error, UserError), f"expected a UserError, got {error!r}"
    assert re.search(match, str(error)), f"{match!r} not in {error}"
    assert peak_bytes < max_traced_mib << 20, f"allocated {peak_bytes:,} bytes"
    return str(error)


def _truncate_data(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-7])


def _extra_data(path: Path) -> None:
    path.write_bytes(path.read_bytes() + bytes(5))


def _truncate_header(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:6])


def _bad_magic(path: Path) -> None:
    path.write_bytes(b"\x50\x4b\x03\x04" + path.read_bytes()[4:])


def _bad_type_code(path: Path) -> None:
    path.write_bytes(b"\0\0\x07" + path.read_bytes()[3:])


def _no_dimensions(path: Path) -> None:
    path.write_bytes(idx_header(0x08, ()) + bytes(16))


def _wrapping_dimensions(path: Path) -> None:
    """Four dimensions of 2**31: their product wraps to 0 in int64 (2**124 bytes)."""
    path.write_bytes(idx_header(0x08, (1 << 31,) * 4) + bytes(16))


def _claim_beyond_file(path: Path) -> None:
    """900 MB announced (under the limit), 10 bytes present."""
    path.write_bytes(idx_header(0x08, (1000, 1000, 900)) + bytes(10))


def _gzip(path: Path, raw: bytes) -> None:
    path.unlink()
    path.with_name(path.name + ".gz").write_bytes(raw)


def _truncate_gzip(path: Path) -> None:
    raw = gzip.compress(path.read_bytes())
    _gzip(path, raw[: len(raw) // 2])


def _gzip_claim_beyond_ratio(path: Path) -> None:
    """900 MB announced by a gzip of a few dozen bytes: deflate cannot inflate that much."""
    _gzip(path, gzip.compress(idx_header(0x08, (1000, 1000, 900)) + bytes(10)))


def _gzip_short(path: Path) -> None:
    _gzip(path, gzip.compress(idx_header(0x08, (200, 4, 4)) + bytes(100)))


def _gzip_long(path: Path) -> None:
    _gzip(path, gzip.compress(path.read_bytes() + bytes(1 << 20)))


def _gzip_bad_crc(path: Path) -> None:
    raw = bytearray(gzip.compress(path.read_bytes()))
    raw[-8] ^= 0xFF
    _gzip(path, bytes(raw))


def _gzip_trailing_garbage(path: Path) -> None:
    _gzip(path, gzip.compress(path.read_bytes()) + b"not gzip")


def _empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        pytest.param(
            _truncate_data, r"corrupt or truncated: the shape \(200, 4, 4\).*holds 3,209", id="truncated-data"
        ),
        pytest.param(_extra_data, r"corrupt or truncated: .* needs 3,216 bytes .* holds 3,221", id="extra-data"),
        pytest.param(_truncate_header, "corrupt or truncated.*header is incomplete", id="truncated-header"),
        pytest.param(_bad_magic, "not an IDX file.*504b0304", id="bad-magic"),
        pytest.param(_bad_type_code, "not an IDX file.*00000703.*type code among 08 09 0b", id="bad-type-code"),
        pytest.param(_no_dimensions, "not an IDX file.*00000800", id="no-dimensions"),
        pytest.param(_wrapping_dimensions, r"needs 21,267,647,932,\S+ bytes, more than the limit", id="wrapping"),
        pytest.param(_claim_beyond_file, r"needs 900,000,016 bytes .* the file holds 26", id="claim-beyond-file"),
        pytest.param(_truncate_gzip, "could not be read as an IDX file", id="truncated-gzip"),
        pytest.param(_gzip_claim_beyond_ratio, r"900,000,016 bytes .* gzipped bytes inflate to at most", id="gz-ratio"),
        pytest.param(_gzip_short, r"needs 3,200 bytes of data but it holds only 100", id="gzip-short"),
        pytest.param(_gzip_long, r"holds more data than the 3,200 bytes", id="gzip-long"),
        pytest.param(_gzip_bad_crc, "could not be read as an IDX file: CRC check failed", id="gzip-crc"),
        pytest.param(_gzip_trailing_garbage, "could not be read as an IDX file", id="gzip-trailing-garbage"),
        pytest.param(_empty, "not an IDX file", id="empty"),
    ],
)
def test_damaged_idx_file_is_a_user_error_naming_the_file(tmp_path: Path, damage: Any, match: str) -> None:
    """From both the check before the first launch and the loader, without allocating what a header claims."""
    write_idx_dir(tmp_path)
    damage(tmp_path / IDX_FILES["X_train"])
    dataset = Dataset("mnist", str(tmp_path))
    assert "train-images-idx3-ubyte" in refused(lambda: check_available(dataset), match)
    assert "train-images-idx3-ubyte" in refused(lambda: load(dataset), match)


def test_an_idx_directory_without_training_images_is_a_user_error(tmp_path: Path) -> None:
    write_idx_dir(tmp_path)
    write_idx(tmp_path / IDX_FILES["X_train"], np.zeros((0, 4, 4), dtype=np.uint8))
    write_idx(tmp_path / IDX_FILES["y_train"], np.zeros(0, dtype=np.uint8))
    refused(
        lambda: load(Dataset("mnist", str(tmp_path))),
        r"train-images-idx3-ubyte: no feature values \(shape \(0, 4, 4\)\)",
    )


def test_read_idx_takes_an_array_of_exactly_the_limit_and_refuses_one_byte_more(tmp_path: Path) -> None:
    path = write_idx(tmp_path / "a-idx", np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    np.testing.assert_array_equal(read_idx(path, max_bytes=96), np.arange(24).reshape(2, 3, 4))
    refused(
        lambda: read_idx(path, max_bytes=95),
        r"a-idx: the shape \(2, 3, 4\) of int32 .* needs 96 bytes, more than the limit of 95",
    )


def test_idx_images_and_labels_must_agree(tmp_path: Path) -> None:
    write_idx_dir(tmp_path)
    write_idx(tmp_path / IDX_FILES["y_test"], np.zeros(7, dtype=np.uint8))
    with pytest.raises(UserError, match=r"t10k-images.*\(50, 4, 4\) images but .*t10k-labels.*\(7,\) labels"):
        load(Dataset("mnist", str(tmp_path)))


# --- MNIST and Fashion-MNIST ----------------------------------------------------------------------------------------


def test_mnist_from_an_idx_directory(tmp_path: Path) -> None:
    arrays = write_idx_dir(tmp_path, gz=True)
    dataset = Dataset("mnist", str(tmp_path))
    check_available(dataset)
    data = load(dataset)
    assert (data.name, data.source) == ("mnist", str(tmp_path))
    assert_matches_idx(data, arrays)


def test_mnist_from_openml_uses_the_cache_dir_and_its_own_split(tmp_path: Path, monkeypatch: Any) -> None:
    """A stand-in for ``fetch_openml`` returns a 70000-row MNIST-shaped bunch (4 features keep it small)."""
    calls: list[dict[str, Any]] = []
    X = np.tile(np.array([0.0, 51.0, 127.5, 255.0]), (70_000, 1))
    X[60_000:, 0] = 255.0  # marks the test rows
    y = np.array([str(i % N_CLASSES) for i in range(70_000)], dtype=object)

    def fake_fetch_openml(name: str, **kwargs: Any) -> Bunch:
        calls.append({"name": name, **kwargs})
        return Bunch(data=X, target=y)

    monkeypatch.setenv("SWEEPER_DATA_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(sklearn.datasets, "fetch_openml", fake_fetch_openml)
    data = load(Dataset("mnist"))
    assert_well_formed(data)
    assert (calls[0]["name"], calls[0]["version"], calls[0]["as_frame"]) == ("mnist_784", 1, False)
    assert calls[0]["data_home"] == str(tmp_path / "cache")
    assert (data.n_train, data.n_test, data.n_features) == (60_000, 10_000, 4)
    assert data.X_train[:, 0].max() == 0.0 and data.X_test[:, 0].min() == 1.0
    np.testing.assert_allclose(data.X_train[0], [0.0, 0.2, 0.5, 1.0], rtol=1e-6)
    assert data.y_test[:3].tolist() == [0, 1, 2]
    assert data.source == f"OpenML mnist_784 (cache dir {tmp_path / 'cache'})"


def test_mnist_from_openml_offline_is_a_user_error_naming_the_idx_option(tmp_path: Path, monkeypatch: Any) -> None:
    """``urllib.error.URLError`` stands in for the network, which this machine lacks."""

    def offline(*args: Any, **kwargs: Any) -> Bunch:
        # what sklearn does before each retry (an error under the suite's filterwarnings=error)
        warnings.warn("A network error occurred while downloading https://www.openml.org/... Retrying...", stacklevel=1)
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setenv("SWEEPER_DATA_HOME", str(tmp_path))
    monkeypatch.setattr(sklearn.datasets, "fetch_openml", offline)
    with pytest.raises(UserError, match="MNIST could not be fetched from OpenML") as caught:
        load(Dataset("mnist"))
    message = str(caught.value)
    assert "`dataset: {name: mnist, path: DIR}`" in message
    assert "name resolution" in message and str(tmp_path) in message


def test_check_available_never_downloads(tmp_path: Path, monkeypatch: Any) -> None:
    def no_download(*args: Any, **kwargs: Any) -> Bunch:
        raise AssertionError("check_available must not download")

    monkeypatch.setenv("SWEEPER_DATA_HOME", str(tmp_path / "not-yet"))
    monkeypatch.setattr(sklearn.datasets, "fetch_openml", no_download)
    check_available(Dataset("mnist"))
    check_available(Dataset("digits"))
    assert not (tmp_path / "not-yet").exists()


def test_data_home_default_and_override(monkeypatch: Any) -> None:
    monkeypatch.delenv("SWEEPER_DATA_HOME", raising=False)
    assert datasets.data_home() == Path.home() / ".cache" / "sweeper"
    monkeypatch.setenv("SWEEPER_DATA_HOME", "/srv/data")
    assert datasets.data_home() == Path("/srv/data")


def test_fashion_mnist_default_directory_is_debians() -> None:
    assert FASHION_MNIST_DIR == "/usr/share/datasets/fashion-mnist"


def test_fashion_mnist_from_the_default_directory(tmp_path: Path, monkeypatch: Any) -> None:
    """Reads Debian's ``dataset-fashion-mnist`` files when installed; otherwise a synthetic IDX directory
    stands in for them as the default, so the test always runs."""
    real = all(
        any((Path(FASHION_MNIST_DIR) / f"{stem}{ext}").is_file() for ext in ("", ".gz")) for stem in IDX_FILES.values()
    )
    arrays = None
    if not real:
        arrays = write_idx_dir(tmp_path, gz=True)
        monkeypatch.setattr(datasets, "FASHION_MNIST_DIR", str(tmp_path))
    dataset = Dataset("fashion-mnist")
    check_available(dataset)
    data = load(dataset)
    assert_well_formed(data)
    assert data.name == "fashion-mnist"
    if arrays is not None:
        assert data.source == str(tmp_path)
        assert_matches_idx(data, arrays)
        return
    assert data.source == FASHION_MNIST_DIR
    assert (data.n_train, data.n_test, data.n_features) == (60_000, 10_000, 784)
    assert data.y_train[:5].tolist() == [9, 0, 0, 3, 0]  # ankle boot, T-shirt, T-shirt, dress, T-shirt
    assert np.bincount(data.y_test).tolist() == [1000] * N_CLASSES


# --- .npz and Parquet -----------------------------------------------------------------------------------------------


def test_npz_with_its_own_split(tmp_path: Path) -> None:
    arrays = synthetic_split()
    path = tmp_path / "images.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **kwds as allow_pickle
    check_available(Dataset("path", str(path)))
    data = load(Dataset("path", str(path)))
    assert (data.name, data.source) == ("images.npz", str(path))
    assert_matches_idx(data, arrays)


def test_npz_with_x_and_y_gets_a_stratified_holdout(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.random((100, 5))
    y = np.arange(100) % 4
    path = tmp_path / "xy.npz"
    np.savez_compressed(path, X=X, y=y)
    data = load(Dataset("path", str(path)), test_size=0.2, seed=3)
    assert_well_formed(data)
    assert (data.n_train, data.n_test) == (80, 20)
    assert np.bincount(data.y_test).tolist() == [5, 5, 5, 5]
    np.testing.assert_allclose(
        np.sort(np.concatenate([data.X_train, data.X_test]), axis=0), np.sort(X, axis=0), rtol=1e-6
    )


def _parquet(path: Path, *, split: bool) -> dict[str, np.ndarray[Any, Any]]:
    arrays = synthetic_split()
    X = np.concatenate([arrays["X_train"], arrays["X_test"]]).reshape(250, -1)
    columns: dict[str, Any] = {f"p{i}": X[:, i] for i in range(X.shape[1])}
    columns["label"] = np.concatenate([arrays["y_train"], arrays["y_test"]]).astype(np.int64)
    if split:
        columns["split"] = ["train"] * 200 + ["test"] * 50
    pq.write_table(pa.table(columns), path)
    return arrays


def test_parquet_with_a_split_column(tmp_path: Path) -> None:
    arrays = _parquet(tmp_path / "d.parquet", split=True)
    dataset = Dataset("path", str(tmp_path / "d.parquet"))
    check_available(dataset)
    data = load(dataset)
    assert data.name == "d.parquet"
    assert_matches_idx(data, arrays)


def test_parquet_without_a_split_column_gets_a_stratified_holdout(tmp_path: Path) -> None:
    _parquet(tmp_path / "d.pq", split=False)
    data = load(Dataset("path", str(tmp_path / "d.pq")), test_size=0.2)
    assert_well_formed(data)
    assert (data.n_train, data.n_test, data.n_features) == (200, 50, 16)
    assert np.bincount(data.y_test).tolist() == [5] * N_CLASSES


# --- errors ---------------------------------------------------------------------------------------------------------


def _npz_missing_keys(path: Path) -> Path:
    np.savez(path / "bad.npz", X_train=np.zeros((4, 2)), y_train=np.zeros(4))
    return path / "bad.npz"


def _npz_not_a_zip(path: Path) -> Path:
    (path / "fake.npz").write_text("not a zip")
    return path / "fake.npz"


def _unknown_extension(path: Path) -> Path:
    (path / "data.csv").write_text("label,p0\n1,0\n")
    return path / "data.csv"


def _parquet_without_label(path: Path) -> Path:
    pq.write_table(pa.table({"p0": [0.1, 0.2], "class": [0, 1]}), path / "nolabel.parquet")
    return path / "nolabel.parquet"


def _parquet_garbage(path: Path) -> Path:
    (path / "garbage.parquet").write_bytes(b"PAR1 but no footer")
    return path / "garbage.parquet"


def _empty_dir(path: Path) -> Path:
    (path / "empty").mkdir()
    return path / "empty"


def _missing(path: Path) -> Path:
    return path / "nowhere.npz"


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(
            _npz_missing_keys, r"bad\.npz holds the arrays \['X_train', 'y_train'\]; expected X_train", id="npz-keys"
        ),
        pytest.param(_npz_not_a_zip, r"fake\.npz could not be read as a NumPy \.npz file", id="npz-not-zip"),
        pytest.param(
            _unknown_extension, r"data\.csv: unknown dataset file type '\.csv'; expected a \.npz", id="extension"
        ),
        pytest.param(_parquet_without_label, r"nolabel\.parquet has no 'label' column", id="parquet-label"),
        pytest.param(_parquet_garbage, r"garbage\.parquet could not be read as Parquet", id="parquet-garbage"),
        pytest.param(_empty_dir, r"empty lacks the IDX files train-images-idx3-ubyte\[\.gz\], ", id="empty-dir"),
        pytest.param(_missing, r"nowhere\.npz does not exist", id="missing-file"),
    ],
)
def test_bad_user_files_are_user_errors_from_both_check_and_load(tmp_path: Path, make: Any, match: str) -> None:
    dataset = Dataset("path", str(make(tmp_path)))
    with pytest.raises(UserError, match=match):
        check_available(dataset)
    with pytest.raises(UserError, match=match):
        load(dataset)


@pytest.mark.parametrize(
    ("dataset", "match"),
    [
        pytest.param(
            Dataset("mnist", "/nonexistent/mnist"), r"/nonexistent/mnist is not a directory of IDX", id="mnist-dir"
        ),
        pytest.param(
            Dataset("fashion-mnist", "/nonexistent/fm"),
            r"/nonexistent/fm is not a directory.*apt-get install dataset-fashion-mnist",
            id="fashion-dir",
        ),
        pytest.param(Dataset("path"), r"dataset 'path' needs a path", id="path-none"),
        pytest.param(Dataset("cifar"), r"unknown dataset 'cifar'; expected digits, mnist", id="unknown-name"),
    ],
)
def test_missing_data_is_a_user_error(dataset: Dataset, match: str) -> None:
    with pytest.raises(UserError, match=match):
        check_available(dataset)
    with pytest.raises(UserError, match=match):
        load(dataset)


def test_fashion_mnist_directory_missing_some_files_names_them(tmp_path: Path) -> None:
    write_idx_dir(tmp_path, gz=True)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    dataset = Dataset("fashion-mnist", str(tmp_path))
    pattern = rf"{tmp_path} lacks the IDX files t10k-labels-idx1-ubyte\[\.gz\]; install them with `apt-get install"
    with pytest.raises(UserError, match=pattern):
        check_available(dataset)


@pytest.mark.parametrize(
    ("arrays", "match"),
    [
        pytest.param(
            {"X": np.full((20, 2), 2.5), "y": np.arange(20) % 2}, r"float features range 2\.5\.\.2\.5", id="float>1"
        ),
        pytest.param(
            {"X": np.full((20, 2), 300), "y": np.arange(20) % 2}, r"integer features range 300\.\.300", id="int>255"
        ),
        pytest.param({"X": np.full((20, 2), np.nan), "y": np.arange(20) % 2}, r"NaN", id="nan"),
        pytest.param({"X": np.zeros((20, 2)), "y": np.arange(20) * 0.5}, r"labels must be integers", id="float-labels"),
        pytest.param(
            {"X": np.zeros((20, 2)), "y": np.array(["cat"] * 20)}, r"labels must be integers", id="str-labels"
        ),
        pytest.param({"X": np.zeros(20), "y": np.arange(20) % 2}, r"features have shape \(20,\)", id="1d-X"),
        pytest.param(
            {"X": np.zeros((20, 2)), "y": np.arange(20)},
            r"cannot make a stratified 0\.25 test holdout",
            id="singletons",
        ),
    ],
)
def test_malformed_arrays_are_user_errors(tmp_path: Path, arrays: dict[str, Any], match: str) -> None:
    path = tmp_path / "m.npz"
    np.savez(path, **arrays)
    with pytest.raises(UserError, match=match) as caught:
        load(Dataset("path", str(path)))
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param({"fraction": 0.0}, r"fraction must be in \(0, 1\], got 0\.0", id="fraction-0"),
        pytest.param({"fraction": 1.5}, r"fraction must be in \(0, 1\]", id="fraction>1"),
        pytest.param({"test_size": 1.0}, r"test_size must be in \(0, 1\)", id="test-size"),
        pytest.param({"max_train_rows": 0}, r"max_train_rows must be at least 1", id="cap-0"),
    ],
)
def test_arguments_out_of_range_are_user_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(UserError, match=match):
        load(Dataset("digits"), **kwargs)


# --- hostile files: not regular files, decompression bombs, huge declared shapes ------------------------------------


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _socket(path: Path) -> Path:
    with contextlib.chdir(path.parent), socket.socket(socket.AF_UNIX) as server:
        server.bind(path.name)  # relative: socket paths are limited to 107 bytes; the file stays after close
    return path


def _link(path: Path, target: str) -> Path:
    path.symlink_to(target)
    return path


def _idx_dir_with(tmp: Path, make_member: Callable[[Path], object]) -> Path:
    """An IDX directory whose training images are replaced by what ``make_member`` puts at their (gzip) path."""
    write_idx_dir(tmp / "idx", gz=True)
    member = tmp / "idx" / f"{IDX_FILES['X_train']}.gz"
    member.unlink()
    make_member(member)
    return tmp / "idx"


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(
            lambda tmp: Dataset("path", str(_fifo(tmp / "d.npz"))),
            r"d\.npz is a FIFO \(named pipe\); expected a \.npz file, a Parquet file or a directory of IDX",
            id="fifo-npz",
        ),
        pytest.param(lambda tmp: Dataset("path", str(_fifo(tmp / "d.parquet"))), r"d\.parquet is a FIFO", id="fifo-pq"),
        pytest.param(lambda tmp: Dataset("path", str(_fifo(tmp / "data"))), r"data is a FIFO", id="fifo-no-suffix"),
        pytest.param(lambda tmp: Dataset("path", "/dev/zero"), r"/dev/zero is a character device", id="dev-zero"),
        pytest.param(
            lambda tmp: Dataset("path", str(_link(tmp / "zero.npz", "/dev/zero"))),
            r"zero\.npz is a character device",
            id="dev-zero-as-npz",
        ),
        pytest.param(
            lambda tmp: Dataset("path", str(_link(tmp / "r.parquet", "/dev/urandom"))),
            r"r\.parquet is a character device",
            id="dev-urandom-as-parquet",
        ),
        pytest.param(lambda tmp: Dataset("path", str(_socket(tmp / "s.npz"))), r"s\.npz is a socket", id="socket"),
        pytest.param(
            lambda tmp: Dataset("mnist", str(_fifo(tmp / "m"))),
            r"m \(a FIFO \(named pipe\)\) is not a directory of IDX files",
            id="fifo-as-mnist-dir",
        ),
        pytest.param(
            lambda tmp: Dataset("fashion-mnist", "/dev/zero"),
            r"/dev/zero \(a character device\) is not a directory of IDX files",
            id="device-as-fashion-dir",
        ),
        pytest.param(
            lambda tmp: Dataset("path", str(_idx_dir_with(tmp, _fifo))),
            r"train-images-idx3-ubyte\.gz is a FIFO \(named pipe\), not a regular file; download",
            id="fifo-idx-member",
        ),
        pytest.param(
            lambda tmp: Dataset("mnist", str(_idx_dir_with(tmp, lambda p: _link(p, "/dev/urandom")))),
            r"train-images-idx3-ubyte\.gz is a character device, not a regular file",
            id="device-idx-member",
        ),
        pytest.param(
            lambda tmp: Dataset("mnist", str(_idx_dir_with(tmp, Path.mkdir))),
            r"train-images-idx3-ubyte\.gz is a directory, not a regular file",
            id="directory-idx-member",
        ),
    ],
)
def test_a_dataset_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, make: Any, match: str) -> None:
    """FIFOs (opening one for reading blocks), devices (never end), sockets, directories where a file belongs."""
    dataset = make(tmp_path)
    refused(lambda: check_available(dataset), match)
    refused(lambda: load(dataset), match)


def test_read_idx_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "t10k-labels-idx1-ubyte")
    refused(lambda: read_idx(fifo), r"t10k-labels-idx1-ubyte is a FIFO \(named pipe\), not a regular file")


def test_a_fifo_swapped_in_after_the_check_is_refused_on_the_open_descriptor(tmp_path: Path, monkeypatch: Any) -> None:
    """The path is examined before it is opened, then opened non-blocking and examined again: a FIFO put there
    between the two (simulated: the first looks, user_path's and open_regular's, see a regular file) neither
    blocks nor is read."""
    fifo = _fifo(tmp_path / "d.npz")
    regular = os.stat(__file__)
    real_stat = bounded_files.stat_or_none
    looked: list[Path] = []

    def first_look(path: Path) -> os.stat_result | None:
        looked.append(path)
        return regular if path == fifo else real_stat(path)

    for module in (user_files, bounded_files):  # user_files imported its own name for it
        monkeypatch.setattr(module, "stat_or_none", first_look)
    refused(lambda: load(Dataset("path", str(fifo))), r"d\.npz is a FIFO \(named pipe\), not a regular file")
    assert looked == [fifo, fifo]  # both looks were fooled: the opened descriptor's check refused it


MNIST_IMAGES = (60_000, 28, 28)


def write_gzip_bomb(path: Path, header: bytes, zeros_gib: int) -> None:
    """``header`` then ``zeros_gib`` GiB of zeros, gzipped as 1 MiB members (gzip allows several; each is ~1 KiB):
    a file of a few MB written without holding more than 1 MiB."""
    member = gzip.compress(bytes(1 << 20), compresslevel=9)
    with path.open("wb") as out:
        out.write(gzip.compress(header))
        for _ in range(zeros_gib << 10):
            out.write(member)


BOMB_SCRIPT = """
import sys
from sweeper.workload.data import check_available, load
from sweeper.errors import UserError
from sweeper.config.grid import Dataset
for call in (check_available, load):
    try:
        call(Dataset("mnist", sys.argv[1]))
    except UserError as error:
        print(call.__name__, "refused:", error)
print(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")), end="")
"""


def test_a_gzip_bomb_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    """2 GiB of zeros after a header announcing MNIST's 47 MB of images: the check and the loader stop once past
    the header's promise. Run in a process of its own to measure its peak memory (inflating it all: > 2 GiB)."""
    write_idx_dir(tmp_path)
    (tmp_path / IDX_FILES["X_train"]).unlink()
    bomb = tmp_path / f"{IDX_FILES['X_train']}.gz"
    write_gzip_bomb(bomb, idx_header(0x08, MNIST_IMAGES), zeros_gib=2)
    assert bomb.stat().st_size < 5 << 20
    result = subprocess.run(
        [sys.executable, "-c", BOMB_SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3, result.stdout
    for call, line in zip(("check_available", "load"), lines[:2], strict=True):
        assert line.startswith(f"{call} refused: {bomb} is corrupt: it holds more data than the 47,040,000 bytes")
    peak_rss_mib = int(lines[2].split()[1]) >> 10  # VmHWM, in kB: this process's own peak (ru_maxrss counts its parent)
    assert peak_rss_mib < 300, result.stdout


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param((1 << 31,) * 4, id="wrapping-dimensions"),
        pytest.param((1 << 31,), id="2GiB"),
        pytest.param(((1 << 30) + 1,), id="1GiB-and-a-byte"),
    ],
)
def test_a_gzip_whose_header_claims_more_than_the_limit_is_not_inflated(tmp_path: Path, shape: tuple[int, ...]) -> None:
    path = tmp_path / "bomb-idx1-ubyte.gz"
    write_gzip_bomb(path, idx_header(0x08, shape), zeros_gib=2)
    refused(lambda: read_idx(path), r"bomb-idx1-ubyte\.gz: the shape .* more than the limit of 1,073,741,824 bytes")


def test_a_single_stream_gzip_bomb_stops_past_its_header(tmp_path: Path) -> None:
    """One deflate stream (256 MiB of zeros after a 16-byte header), written in 1 MiB pieces."""
    path = tmp_path / "bomb-idx1-ubyte.gz"
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: gzip framing
    with path.open("wb") as out:
        out.write(compressor.compress(idx_header(0x08, (16,))))
        for _ in range(256):
            out.write(compressor.compress(bytes(1 << 20)))
        out.write(compressor.flush())
    refused(
        lambda: read_idx(path),
        r"bomb-idx1-ubyte\.gz is corrupt: it holds more data than the 16 bytes",
        max_traced_mib=8,
    )


# .npz: each .npy header is checked before its data is read


def npy(shape: tuple[int, ...], descr: str = "|u1", data: bytes = b"") -> bytes:
    """A .npy file with the given header (whatever its data)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": descr, "fortran_order": False, "shape": shape})
    return header.getvalue() + data


def write_npz(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, content in members.items():
            archive.writestr(f"{name}.npy", content)
    return path


def _npz_huge_shape(tmp: Path) -> Path:
    return write_npz(tmp / "h.npz", {"X": npy((1 << 31, 1 << 31), "<f8"), "y": npy((2,), "<i8", bytes(16))})


def _npz_shape_beyond_member(tmp: Path) -> Path:
    return write_npz(tmp / "b.npz", {"X": npy((1000, 1000)) + bytes(10), "y": npy((2,), "<i8", bytes(16))})


def _npz_deflated_bomb(tmp: Path) -> Path:
    """X announces 16 bytes; its deflated member holds 64 MiB of zeros more (written in 1 MiB pieces)."""
    path = tmp / "z.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("X.npy", "w") as member:
            member.write(npy((4, 4), data=bytes(16)))
            for _ in range(64):
                member.write(bytes(1 << 20))
        archive.writestr("y.npy", npy((4,), "<i8", bytes(32)))
    return path


def _npz_bzip2(tmp: Path) -> Path:
    members = {"X": npy((4, 4), data=bytes(16)), "y": npy((4,), "<i8", bytes(32))}
    return write_npz(tmp / "bz.npz", members, zipfile.ZIP_BZIP2)


def _npz_member_not_npy(tmp: Path) -> Path:
    return write_npz(tmp / "n.npz", {"X": b"just some bytes", "y": npy((2,), "<i8", bytes(16))})


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(
            _npz_huge_shape,
            r"h\.npz \(member X\.npy\): the shape \(2147483648, 2147483648\) of float64 .* more than the limit",
            id="huge-shape",
        ),
        pytest.param(
            _npz_shape_beyond_member,
            r"b\.npz \(member X\.npy\) is corrupt or truncated: .* needs 1,000,000 bytes of data "
            r"but the member holds 10$",
            id="shape-beyond-data",
        ),
        pytest.param(
            _npz_deflated_bomb, r"z\.npz \(member X\.npy\) is corrupt .* needs 16 bytes .* holds 67,108,880", id="bomb"
        ),
        pytest.param(_npz_bzip2, r"bz\.npz \(member X\.npy\) is compressed with zip method 12", id="bzip2"),
        pytest.param(_npz_member_not_npy, r"n\.npz could not be read as a NumPy \.npz file: .*magic", id="not-npy"),
    ],
)
def test_npz_headers_are_checked_before_reading(tmp_path: Path, make: Any, match: str) -> None:
    dataset = Dataset("path", str(make(tmp_path)))
    refused(lambda: check_available(dataset), match)
    refused(lambda: load(dataset), match)


class _Touch:
    """Unpickling one creates ``path``: proof of whether a pickle in a dataset ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.path,))


def test_a_pickle_in_an_npz_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pickle-ran"
    path = tmp_path / "p.npz"
    np.savez(path, X=np.array([[_Touch(marker)]] * 4, dtype=object), y=np.arange(4))
    dataset = Dataset("path", str(path))
    refused(lambda: check_available(dataset), r"p\.npz \(member X\.npy\) holds Python objects .* pickles are refused")
    refused(lambda: load(dataset), r"holds Python objects")
    assert not marker.exists()


def _npz_of(tmp: Path, arrays: dict[str, np.ndarray[Any, Any]]) -> Path:
    np.savez_compressed(tmp / "images.npz", **arrays)  # type: ignore[arg-type]  # the stub reads **kwds as allow_pickle
    return tmp / "images.npz"


def _parquet_of(tmp: Path, arrays: dict[str, np.ndarray[Any, Any]]) -> Path:
    """``arrays`` as Parquet (``_parquet`` writes the same seeded arrays)."""
    _parquet(tmp / "d.parquet", split=True)
    return tmp / "d.parquet"


@pytest.mark.parametrize(
    ("write", "limit", "match"),
    [
        pytest.param(
            _npz_of, 200 * 4 * 4, r"\(member X_train\.npy\): the shape \(200, 4, 4\) of uint8 .* 3,200 bytes", id="npz"
        ),
        pytest.param(
            _parquet_of,
            250 * 16 * 8,
            r"d\.parquet: the 250 rows x 16 feature columns its footer declares .* 32,000 bytes",
            id="parquet",
        ),
    ],
)
def test_the_array_limit_applies_to_npz_and_parquet(
    tmp_path: Path, monkeypatch: Any, write: Any, limit: int, match: str
) -> None:
    """At the limit (the largest array; Parquet's feature matrix as float64) a file loads; one byte less, refused."""
    arrays = synthetic_split()
    dataset = Dataset("path", str(write(tmp_path, arrays)))
    monkeypatch.setattr(datasets, "MAX_ARRAY_BYTES", limit)
    check_available(dataset)
    assert_matches_idx(load(dataset), arrays)
    monkeypatch.setattr(datasets, "MAX_ARRAY_BYTES", limit - 1)
    refused(lambda: check_available(dataset), match + ", more than the limit of")
    refused(lambda: load(dataset), match)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda tmp: str(_idx_dir_with(tmp, _fifo)), id="fifo-idx-member"),
        pytest.param(lambda tmp: str(_idx_dir_with(tmp, _wrapping_dimensions)), id="wrapping-idx-header"),
        pytest.param(lambda tmp: str(_npz_huge_shape(tmp)), id="npz-huge-shape"),
    ],
)
def test_the_cli_refuses_a_hostile_dataset_before_any_launch(tmp_path: Path, make: Any) -> None:
    """``sweeper run``: an ``error:`` line naming the dataset, exit 2, no traceback, no row."""
    dataset = make(tmp_path)
    grid = minimal_grid(store=str(tmp_path / "store"))
    grid["workload"]["dataset"] = dataset
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    result = run_cli("run", str(tmp_path / "grid.yaml"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert any(line.startswith("error: ") and dataset in line for line in result.stderr.splitlines()), result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("store/**/*.parquet"))
