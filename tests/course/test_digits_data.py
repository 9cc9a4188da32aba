"""The digits shipped in hooked/data/digits.csv.gz are scikit-learn's `load_digits()`, value for
value. The figures below were measured with scikit-learn 1.9.1 (`sklearn.datasets.load_digits()`)
on the day the file was copied; scikit-learn is no longer installed, so they stand in for it."""

import hashlib

import numpy as np

from hooked import digits

# sha256 of the file, and of np.ascontiguousarray(sklearn_digits.images).tobytes() (float64) and
# sklearn_digits.target.tobytes() (int64), little-endian.
FILE_SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"
IMAGES_SHA256 = "20def7f70a702f0af9732fbba4375e147a7d54fe70d8c45569b8e7c1c7010c10"
TARGET_SHA256 = "a3c91c262eddcf7ba8f0e37507c30284493c9b20412ffe4af30d536401f7ba21"


def test_the_file_is_scikit_learns_byte_for_byte():
    assert hashlib.sha256(digits.PATH.read_bytes()).hexdigest() == FILE_SHA256
    assert digits.PATH.stat().st_size == 57_523


def test_images_data_and_target_have_scikit_learns_shapes_and_dtypes():
    loaded = digits.load_digits()
    assert loaded.images.shape == (1797, 8, 8) and loaded.images.dtype == np.float64
    assert loaded.data.shape == (1797, 64) and loaded.data.dtype == np.float64
    assert loaded.target.shape == (1797,) and loaded.target.dtype == np.int64
    assert np.array_equal(loaded.data, loaded.images.reshape(1797, 64))


def test_values_are_scikit_learns():
    loaded = digits.load_digits()
    assert np.unique(loaded.images).tolist() == list(range(17))  # whole numbers 0..16, each present
    assert loaded.images.sum() == 561718.0 and loaded.target.sum() == 8070
    assert np.bincount(loaded.target).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    assert loaded.images[0, 1].tolist() == [0, 0, 13, 15, 10, 15, 5, 0]
    assert loaded.target[:10].tolist() == list(range(10))
    little = "<"  # the hashes were taken on a little-endian machine
    assert hashlib.sha256(loaded.images.astype(little + "f8").tobytes()).hexdigest() == IMAGES_SHA256
    assert hashlib.sha256(loaded.target.astype(little + "i8").tobytes()).hexdigest() == TARGET_SHA256


def test_each_call_gives_new_arrays():
    first, second = digits.load_digits(), digits.load_digits()
    first.images[0, 0, 0] = 99
    assert second.images[0, 0, 0] == 0 and digits.load_digits().images[0, 0, 0] == 0


def test_the_notice_keeps_the_attribution_and_scikit_learns_licence():
    notice = (digits.PATH.parent / "DIGITS-NOTICE.txt").read_text(encoding="utf-8")
    for words in ("E. Alpaydin and C. Kaynak (1998)", "https://doi.org/10.24432/C50P49", "CC BY 4.0",
                  "BSD 3-Clause License", "Copyright (c) 2007-2026 The scikit-learn developers.", FILE_SHA256):
        assert words in notice
