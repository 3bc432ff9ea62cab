"""tesched.frontend: PyTorch models imported as :mod:`tesched.graph` functions.

``from_torch(model, example_inputs)`` traces a model with ``torch.export`` and decomposes it to core ATen;
``from_exported_program(program)`` converts an exported program. Either returns a graph ``Function`` that
``tesched.graph.build`` compiles like a hand-written one (batch norm folded, constant adds merged, ops
fused)::

    from tesched import frontend, graph as G
    fn = frontend.from_torch(model.eval(), (x,))
    print(fn)                               # the Relay-style text of the imported graph
    exe = G.build(fn)
    y = exe(x.numpy())

``supported_ops()`` lists the ATen ops the op table converts; any other op raises
:class:`UnsupportedOpError`, naming the op, the module it came from and the nearest supported alternative.
torch is an optional dependency (``pip install tesched[torch]``): importing this package does not import it.
"""
from tesched.frontend.errors import FrontendError, UnsupportedOpError
from tesched.frontend.exported_program import from_exported_program
from tesched.frontend.op_table import supported_ops
from tesched.frontend.torch_model import from_torch

__all__ = ["FrontendError", "UnsupportedOpError", "from_exported_program", "from_torch", "supported_ops"]
