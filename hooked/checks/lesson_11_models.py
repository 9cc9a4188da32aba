"""The models of lesson 11's checks: small seeded modules whose outputs are tensors, tuples (nn.LSTM's),
lists, dicts, None or a number, shared modules and tied weights, frozen parameters, a branch that does not
always run, and layers that overflow; each builder takes a random.Random and gives a fresh model."""

import math

import torch
from torch import nn


# ---------------------------------------------------------------- record_activation_stats

class _TwoNames(nn.Module):
    """A ReLU held under two names and called twice per forward pass."""

    def __init__(self, width, out):
        super().__init__()
        self.act = nn.ReLU()
        self.linear = nn.Linear(width, width)
        self.again = self.act
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.again(self.linear(self.act(x))))


class _Recurrent(nn.Module):
    """An LSTM, which returns (output, (h_n, c_n)), and a linear head on its last step."""

    def __init__(self, width, hidden, out):
        super().__init__()
        self.lstm = nn.LSTM(width, hidden, batch_first=True)
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        sequence, _ = self.lstm(x)
        return self.head(sequence[:, -1])


class _PackedReader(_Recurrent):
    """_Recurrent's layers, its LSTM fed a packed batch of sequences of lengths 4, 3 and 2: it returns
    (PackedSequence, (h_n, c_n)), and a PackedSequence is a tuple whose first item is data."""

    def forward(self, x):
        packed = nn.utils.rnn.pack_padded_sequence(x, torch.tensor([4, 3, 2]), batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return self.head(h_n[-1])


class _LinearInto(nn.Module):
    """A Linear whose output h the subclass's `pack(h)` returns in a container of its kind."""

    def __init__(self, width, hidden):
        super().__init__()
        self.linear = nn.Linear(width, hidden)

    def forward(self, x):
        return self.pack(self.linear(x))


class ListPair(_LinearInto):
    """Returns a list: [linear(x), tanh(linear(x))]."""

    def pack(self, h):
        return [h, torch.tanh(h)]


class _Paired(nn.Module):
    def __init__(self, width, hidden, out):
        super().__init__()
        self.pair = ListPair(width, hidden)
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        h, gate = self.pair(x)
        return self.head(h * gate)


class Table(_LinearInto):
    """Returns a dict: {"out": linear(x), "gate": sigmoid(linear(x))}."""

    def pack(self, h):
        return {"out": h, "gate": torch.sigmoid(h)}


class Probe(nn.Module):
    """Looks at its input and returns None."""

    def forward(self, x):
        self.last_mean = float(x.detach().mean())


class _Tabled(nn.Module):
    def __init__(self, width, hidden, out):
        super().__init__()
        self.table = Table(width, hidden)
        self.probe = Probe()
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        parts = self.table(x)
        self.probe(parts["out"])
        return self.head(parts["out"] * parts["gate"])


class NestedTuple(_LinearInto):
    """Returns a tuple whose first item is a tuple: ((h, tanh(h)), h)."""

    def pack(self, h):
        return (h, torch.tanh(h)), h


class Found(nn.Module):
    """Returns the list of its input's rows whose mean is above 10: an empty list here."""

    def forward(self, x):
        return [row for row in x if row.mean() > 10]


class _Odd(nn.Module):
    def __init__(self, width, hidden, out):
        super().__init__()
        self.nest = NestedTuple(width, hidden)
        self.found = Found()
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        (h, gate), _ = self.nest(x)
        self.found(h)
        return self.head(h * gate)


def _case(model, shape, layer_types, duplicates=None, note=""):
    return dict(model=model, shape=shape, layer_types=layer_types, duplicates=duplicates or {}, note=note)


def _sizes(rng):
    return rng.randint(3, 5), rng.randint(4, 6), rng.randint(2, 4)


def _two_relus(rng):
    width, hidden, out = _sizes(rng)
    model = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, out))
    return _case(model, (3, width), (nn.ReLU,))


def _nested(rng):
    width, hidden, out = _sizes(rng)
    # The last layer is a subclass of Linear (the one nn.MultiheadAttention uses for its out_proj).
    model = nn.Sequential(nn.Sequential(nn.Linear(width, hidden), nn.Tanh()),
                          nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()),
                          nn.modules.linear.NonDynamicallyQuantizableLinear(hidden, out))
    return _case(model, (3, width), (nn.Linear, nn.Tanh))


def _rooted(rng):
    width, hidden, out = _sizes(rng)
    model = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Sequential(nn.Linear(hidden, out), nn.Tanh()))
    return _case(model, (3, width), (nn.Sequential,))


def _shared(rng):
    width, hidden, out = _sizes(rng)
    return _case(_TwoNames(width, out), (3, width), (nn.ReLU, nn.Linear), {"again": "act"})


TUPLE_RULE = "An output that is a tuple or list is described by its first item"
FIRST_OF_FIRST = ("a first item that is a tuple or list is described by its own first item, and so on (nn.LSTM "
                   "on a packed batch returns (PackedSequence(data, ...), (h_n, c_n)), and a PackedSequence is a "
                   "tuple: its entry describes data)")
OTHER_RULE = ("a call whose output leads so to no tensor (a dict, None, an empty list) adds no entry: the hook "
               "returns without recording")


def _recurrent(rng):
    width, hidden, out = _sizes(rng)
    return _case(_Recurrent(width, hidden, out), (3, 4, width), (nn.LSTM, nn.Linear),
                 note=f"Module 'lstm' is an nn.LSTM: it returns a tuple, (output, (h_n, c_n)), not a tensor. "
                      f"{TUPLE_RULE}: the LSTM's entry describes its output sequence.")


def _packed(rng):
    width, hidden, out = _sizes(rng)
    return _case(_PackedReader(width, hidden, out), (3, 4, width), (nn.LSTM, nn.Linear),
                 note=f"Module 'lstm' is an nn.LSTM fed a packed batch: it returns (PackedSequence(data, ...), "
                      f"(h_n, c_n)). {TUPLE_RULE}, and {FIRST_OF_FIRST}.")


def _paired(rng):
    width, hidden, out = _sizes(rng)
    return _case(_Paired(width, hidden, out), (3, width), (ListPair, nn.Linear),
                 note=f"Module 'pair' returns a list, [h, tanh(h)], not a tensor. {TUPLE_RULE} (a list as well "
                      "as a tuple): its entry describes h.")


def _tabled(rng):
    width, hidden, out = _sizes(rng)
    return _case(_Tabled(width, hidden, out), (3, width), (Table, Probe, nn.Linear),
                 note=f"Module 'table' returns a dict and module 'probe' returns None: {OTHER_RULE}.")


def _odd(rng):
    width, hidden, out = _sizes(rng)
    return _case(_Odd(width, hidden, out), (3, width), (NestedTuple, Found, nn.Linear),
                 note=f"Module 'nest' returns a tuple whose first item is a tuple, ((h, tanh(h)), h): "
                      f"{FIRST_OF_FIRST}, h here. Module 'found' returns an empty list: {OTHER_RULE}.")


STATS_CASES = ((111, _two_relus), (112, _nested), (113, _shared), (114, _recurrent), (119, _packed),
                (115, _paired), (116, _tabled), (117, _rooted), (118, _odd))


# ---------------------------------------------------------------- track_grad_norms

class _TiedPair(nn.Module):
    """Two linear layers that share one weight (tied weights); `b.weight` is `a.weight`."""

    def __init__(self, width, out):
        super().__init__()
        self.a = nn.Linear(width, width)
        self.b = nn.Linear(width, width)
        self.b.weight = self.a.weight
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.b(torch.tanh(self.a(x))))


class _Gated(nn.Module):
    """`extra` runs only when `use_extra` is set (the check clears it for backward pass 2); `spare` never runs."""

    def __init__(self, width, out):
        super().__init__()
        self.a = nn.Linear(width, width)
        self.extra = nn.Linear(width, width)
        self.spare = nn.Linear(width, 1)
        self.head = nn.Linear(width, out)
        self.use_extra = True

    def forward(self, x):
        h = torch.tanh(self.a(x))
        if self.use_extra:
            h = h + self.extra(h)
        return self.head(h)


def _mlp_frozen(rng):
    width, hidden, out = rng.randint(3, 5), rng.randint(4, 6), rng.randint(2, 4)
    model = nn.Sequential(nn.Linear(width, hidden), nn.Tanh(), nn.Linear(hidden, out))
    model[0].bias.requires_grad_(False)
    return model, width, {}


def _tied(rng):
    width, out = rng.randint(3, 5), rng.randint(2, 4)
    return _TiedPair(width, out), width, {"b.weight": "a.weight"}


def _gated(rng):
    width, out = rng.randint(3, 5), rng.randint(2, 4)
    return _Gated(width, out), width, {}


NORM_CASES = ((121, _mlp_frozen), (122, _tied), (123, _gated))
# (what the pass is, what follows it): "accumulate", "step", "clip" or "create_graph".
NORM_PLAN = (("backward pass 1 of 2 accumulated", "accumulate"),
              ("backward pass 2 of 2 accumulated, then a step", "step"),
              ("backward pass 3, of a loss 1000 times larger, then clip_grad_norm_", "clip"),
              ("backward pass 4, run as backward(create_graph=True)", "create_graph"),
              ("backward pass 5, of a loss whose gradient holds inf, so that the parameters' gradients hold inf "
               "and NaN", "nonfinite"))


def set_pass(model, step):
    if isinstance(model, _Gated):
        model.use_extra = step != 2


# ---------------------------------------------------------------- TrainingMonitor

def mlp(rng):
    """Nested layers, and one frozen parameter (a tensor hook cannot be registered on it)."""
    width, hidden, out = rng.randint(3, 5), rng.randint(4, 6), rng.randint(2, 4)
    model = nn.Sequential(nn.Sequential(nn.Linear(width, hidden), nn.ReLU()),
                          nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()), nn.Linear(hidden, out))
    model[0][0].bias.requires_grad_(False)
    return model, width


def overflow(model):
    """Two biases of the second Linear set to +inf: its output has +inf there and no NaN (its inputs are
    finite), and the next Linear's output mixes +inf and -inf into NaN."""
    with torch.no_grad():
        model[1][0].bias[:2] = math.inf


class ScaledOutput(nn.Module):
    """A model whose own forward (not a submodule) multiplies the output into overflow."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return self.body(x) * 1e38 * 1e38


class _Nested(nn.Module):
    """Returns a list [h, [h * scale]]: the inner item is used nowhere else."""

    def __init__(self, width, hidden):
        super().__init__()
        self.linear = nn.Linear(width, hidden)
        self.register_buffer("scale", torch.ones(()))

    def forward(self, x):
        h = self.linear(x)
        return [h, [h * self.scale]]


class _Keyed(nn.Module):
    """Returns a dict {"out": h, "extra": {"scale": h * scale}}: the inner item is used nowhere else."""

    def __init__(self, hidden):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)
        self.register_buffer("scale", torch.ones(()))

    def forward(self, h):
        h = self.linear(h)
        return {"out": h, "extra": {"scale": h * self.scale}}


class Peak(nn.Module):
    """Returns a Python number, not a tensor: its input's largest magnitude times inf, so inf."""

    def forward(self, h):
        return float(h.detach().abs().max()) * math.inf


class _Structured(nn.Module):
    """An LSTM (a tuple output), a module returning a nested list, one returning a nested dict, and (with `probe`)
    one returning None and one returning a Python number (inf); every tensor is finite unless the check sets a
    `scale` buffer to inf."""

    def __init__(self, width, hidden, out, probe):
        super().__init__()
        self.lstm = nn.LSTM(width, hidden, batch_first=True)
        self.split = _Nested(hidden, hidden)
        self.keyed = _Keyed(hidden)
        self.probe = Probe() if probe else None
        self.peak = Peak() if probe else None
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        sequence, _ = self.lstm(x)
        h, _ = self.split(sequence[:, -1])
        h = self.keyed(h)["out"]
        if self.probe is not None:
            self.probe(h)
            self.peak(h)
        return self.head(h)


def structured_model(rng, probe):
    width, hidden, out = rng.randint(3, 5), rng.randint(4, 6), rng.randint(2, 4)
    return _Structured(width, hidden, out, probe), width


STRUCTURED = ("Its modules return a tuple ('lstm', an nn.LSTM: (output, (h_n, c_n))), a list holding a list "
               "('split'), a dict holding a dict ('keyed')")
