"""The shared words of a message that compares tensors (hooked/checks/tensors.py): describe() shows
the first values of each, and first_difference() says where two tensors part when those look the same."""

import torch

from hooked.checks.tensors import describe, first_difference


def test_the_first_difference_is_named_when_the_values_shown_are_equal():
    expected = torch.arange(24.0).reshape(2, 3, 4)
    got = expected.clone()
    got[1, 2, 3] += 0.5
    got[1, 0, 1] += 2.0
    assert describe(got) == describe(expected)
    assert first_difference(got, expected) == " They first differ at index (1, 0, 1): got 15, expected 13."


def test_nothing_is_added_when_the_values_shown_already_differ_or_nothing_differs():
    expected = torch.arange(8.0)
    shown_apart = expected.clone()
    shown_apart[0] = 5.0
    assert first_difference(shown_apart, expected) == ""
    assert first_difference(expected.clone(), expected) == ""
    assert first_difference(expected[:7], expected) == ""  # the shapes already tell them apart
    assert first_difference(None, expected) == "" and first_difference([0.0] * 8, expected) == ""


def test_differences_within_the_tolerance_are_passed_over():
    expected = torch.zeros(10)
    got = expected.clone()
    got[7] = 1e-6  # within the comparison's tolerance
    got[8] = 0.1
    assert first_difference(got, expected, tolerance=1e-5) == " They first differ at index 8: got 0.1, expected 0."
    assert first_difference(got, expected, tolerance=1e-7).startswith(" They first differ at index 7:")


def test_numbers_get_the_digits_it_takes_to_tell_them_apart():
    expected = torch.full((2,), 1.00001, dtype=torch.float64)
    got = torch.tensor([1.00001, 1.00003], dtype=torch.float64)
    assert describe(got) == describe(expected)
    assert first_difference(got, expected, tolerance=1e-7) == \
        " They first differ at index 1: got 1.00003, expected 1.00001."
    zero_dim = first_difference(torch.tensor(2.00004, dtype=torch.float64), torch.tensor(2.0, dtype=torch.float64),
                                tolerance=1e-7)
    assert zero_dim == " They differ beyond the digits shown: got 2.00004, expected 2."


def test_nan_in_both_is_no_difference_and_dtypes_may_differ():
    expected = torch.tensor([float("nan")] * 7 + [1.0], dtype=torch.float64)
    got = torch.tensor([float("nan")] * 7 + [3.0])
    assert first_difference(got, expected) == " They first differ at index 7: got 3, expected 1."
    assert first_difference(torch.tensor([1, 2, 3, 4, 5, 6, 7]), torch.tensor([1, 2, 3, 4, 5, 6, 8])) == \
        " They first differ at index 6: got 7, expected 8."
