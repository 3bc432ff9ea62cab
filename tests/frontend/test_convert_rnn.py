"""Recurrent models against PyTorch: single- and multi-layer LSTM, GRU and Elman RNNs over sequences and
their cells, both as core ATen (unrolled by PyTorch's decompositions) and as the undecomposed ops
``aten.lstm.input``, ``aten.lstm_cell`` ... that the frontend unrolls itself."""
import pytest

from tesched.frontend import UnsupportedOpError, from_exported_program

from .helpers import Case, Lambda, check_case, exported, ops_of, rand, torch

nn = torch.nn


def with_state(cell, hidden, batch=2, lstm=False):
    """``cell(x, hx)`` with an explicit initial state, so the state is an input."""
    if lstm:
        return Lambda(lambda x, h, c: cell(x, (h, c))), lambda: (rand(batch, 4), rand(batch, hidden), rand(batch, hidden))
    return Lambda(lambda x, h: cell(x, h)), lambda: (rand(batch, 4), rand(batch, hidden))


class WithInitialState(nn.Module):
    """A sequence model run from an initial state given as an input."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, h):
        return self.rnn(x, h)


def case_with_state(name, make_cell, hidden, lstm=False, raw=False):
    return Case(name, lambda: with_state(make_cell(), hidden, lstm=lstm)[0],
                lambda: with_state(make_cell(), hidden, lstm=lstm)[1](), raw=raw)


CASES = [
    Case("lstm", lambda: nn.LSTM(4, 5), lambda: (rand(3, 2, 4),)),
    Case("lstm_raw", lambda: nn.LSTM(4, 5, num_layers=2, batch_first=True), lambda: (rand(2, 3, 4),), raw=True),
    Case("lstm_unbatched_raw", lambda: nn.LSTM(4, 5, bias=False), lambda: (rand(3, 4),), raw=True),
    Case("gru", lambda: nn.GRU(4, 5), lambda: (rand(3, 1, 4),)),
    Case("gru_raw", lambda: nn.GRU(4, 5, batch_first=True), lambda: (rand(2, 3, 4),), raw=True),
    Case("rnn_raw", lambda: nn.RNN(4, 5, num_layers=2), lambda: (rand(3, 2, 4),), raw=True),
    Case("rnn_relu_raw", lambda: nn.RNN(4, 5, nonlinearity="relu"), lambda: (rand(3, 2, 4),), raw=True),
    case_with_state("lstm_cell", lambda: nn.LSTMCell(4, 5), 5, lstm=True),
    case_with_state("lstm_cell_raw", lambda: nn.LSTMCell(4, 5), 5, lstm=True, raw=True),
    case_with_state("gru_cell_raw", lambda: nn.GRUCell(4, 5), 5, raw=True),
    case_with_state("rnn_cell_raw", lambda: nn.RNNCell(4, 5), 5, raw=True),
    case_with_state("rnn_relu_cell_raw", lambda: nn.RNNCell(4, 5, nonlinearity="relu"), 5, raw=True),
    Case("unbatched_cell_raw", lambda: nn.LSTMCell(4, 5), lambda: (rand(4),), raw=True),
    Case("bidirectional", lambda: WithInitialState(nn.GRU(4, 5, bidirectional=True)),
         lambda: (rand(3, 2, 4), rand(2, 2, 5))),
    Case("bidirectional_lstm", lambda: nn.LSTM(4, 5, bidirectional=True, batch_first=True), lambda: (rand(2, 3, 4),)),
    Case("bidirectional_2_layers_raw", lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True),
         lambda: (rand(3, 2, 4),), raw=True),
    Case("bidirectional_gru_raw", lambda: nn.GRU(4, 3, num_layers=2, bidirectional=True, batch_first=True,
                                                 bias=False), lambda: (rand(2, 3, 4),), raw=True),
    Case("bidirectional_unbatched_raw", lambda: nn.RNN(4, 5, bidirectional=True), lambda: (rand(3, 4),), raw=True),
    Case("stacked_2_layers", lambda: nn.GRU(4, 5, num_layers=2, batch_first=True), lambda: (rand(1, 3, 4),)),
    Case("stacked_bidirectional", lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True), lambda: (rand(3, 1, 4),)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


@pytest.mark.parametrize("name", ["lstm_unbatched_raw", "lstm_cell_raw", "bidirectional_lstm"])
def test_compiled(name):
    check_case(next(case for case in CASES if case.name == name), build=True)


def test_raw_programs_keep_the_recurrent_ops():
    assert "aten.lstm.input" in ops_of(exported(CASES[1])[1])
    assert "aten.lstm_cell.default" in ops_of(exported(CASES[8])[1])


@pytest.mark.parametrize("model, inputs, message", [
    (nn.LSTM(4, 5, proj_size=3), (rand(3, 1, 4),), "an LSTM with proj_size"),
    (nn.LSTM(4, 5, num_layers=2, dropout=0.5).train(), (rand(3, 1, 4),), "dropout between layers in training mode"),
])
def test_unsupported_recurrent_models(model, inputs, message):
    program = torch.export.export(model, inputs)
    with pytest.raises(UnsupportedOpError, match=f"aten.lstm.input in the model's own forward .*{message}"):
        from_exported_program(program)
