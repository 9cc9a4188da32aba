"""Canaries of lesson 06 (a CNN's activations): the error text its cells assert. Its traps are pinned by the
canaries of lessons 01, 04 and 05, which name its sections."""

import torch
from torch import nn

from canary_pins import canary, described, error_of


@canary("a Conv2d(3, 16, ...) given a grey image raises RuntimeError with 'expected input[1, 1, 28, 28] to have 3 "
        "channels, but got 1 channels instead' in its text",
        ("06", "The network, and the shapes of its activations"))
def test_a_colour_convolution_refuses_a_grey_image(pin):
    error = error_of(lambda: nn.Conv2d(3, 16, kernel_size=3, padding=1)(torch.randn(1, 1, 28, 28)))
    pin.holds(isinstance(error, RuntimeError)
              and "expected input[1, 1, 28, 28] to have 3 channels, but got 1 channels instead" in str(error),
              described(error))
