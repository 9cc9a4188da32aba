"""The handwritten digits that lessons 06 and 11 train on, shipped with the course (no download,
no scikit-learn).

    from hooked.digits import load_digits
    digits = load_digits()
    digits.images   # (1797, 8, 8) float64, whole numbers from 0 to 16
    digits.data     # (1797, 64) float64, the same pixels, one row per image
    digits.target   # (1797,) int64, the digit each image shows, 0 to 9

The arrays are equal, value for value and dtype for dtype, to scikit-learn's
`sklearn.datasets.load_digits()` (`images`, `data`, `target`): data/digits.csv.gz is
scikit-learn's own file (sklearn/datasets/data/digits.csv.gz, scikit-learn 1.9.1), read the way
scikit-learn reads it. It is the test set (optdigits.tes) of the UCI Machine Learning Repository's
"Optical Recognition of Handwritten Digits": E. Alpaydin and C. Kaynak (1998),
https://doi.org/10.24432/C50P49, licensed CC BY 4.0. data/DIGITS-NOTICE.txt keeps the
attribution and scikit-learn's BSD-3-Clause licence. tests/course/test_digits_data.py checks
the arrays against figures measured with scikit-learn.
"""

import gzip
import pathlib
from typing import NamedTuple

import numpy as np

PATH = pathlib.Path(__file__).resolve().parent / "data" / "digits.csv.gz"


class Digits(NamedTuple):
    images: np.ndarray  # (1797, 8, 8) float64, 0 to 16
    data: np.ndarray    # (1797, 64) float64, images flattened
    target: np.ndarray  # (1797,) int64, 0 to 9


def load_digits():
    """The 1,797 digits as a Digits(images, data, target), new arrays on each call."""
    with gzip.open(PATH, "rt", encoding="ascii") as file:
        table = np.loadtxt(file, delimiter=",")  # 65 columns: 64 pixels, then the digit
    data = np.ascontiguousarray(table[:, :-1])
    return Digits(images=data.reshape(-1, 8, 8), data=data, target=table[:, -1].astype(np.int64))
