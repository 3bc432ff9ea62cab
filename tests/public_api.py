"""The public names of tesched, module by module, for the tests of docstrings and of the API reference."""
from __future__ import annotations

import importlib
import inspect

# every module a user imports by name; the ones with __all__ are covered name by name
PUBLIC_MODULES = ("tesched", "tesched.nn", "tesched.graph", "tesched.graph.nn", "tesched.graph.passes",
                  "tesched.frontend", "tesched.autoschedule", "tesched.intrin", "tesched.viz")
# public modules without __all__: their own functions and classes
PUBLIC_PLAIN_MODULES = ("tesched.te.boundary", "tesched.graph.annotation", "tesched.recipes.conv_chain",
                        "tesched.recipes.conv_chain_gpu", "tesched.recipes.gemm_gpu",
                        "tesched.errors")


def resolve(dotted: str) -> object:
    """The object ``dotted`` names (``tesched.Stage.split``): attributes from the top package down, importing
    a submodule only where no attribute has the name (``tesched.lower`` is the function, not the package)."""
    parts = dotted.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 2):
        obj = getattr(obj, part) if hasattr(obj, part) else importlib.import_module(".".join(parts[:i]))
    return obj


def public_names() -> dict[str, object]:
    """``{public dotted name: object}`` for the names of every public module."""
    names: dict[str, object] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        names.update({f"{module_name}.{n}": getattr(module, n) for n in module.__all__})
    for module_name in PUBLIC_PLAIN_MODULES:
        module = importlib.import_module(module_name)
        names.update({f"{module_name}.{n}": v for n, v in vars(module).items() if not n.startswith("_")
                      and (inspect.isfunction(v) or inspect.isclass(v)) and v.__module__ == module_name})
    return names


def public_members(cls: type):
    """The public methods and properties ``cls`` defines itself (inherited ones are checked where defined)."""
    for name, value in vars(cls).items():
        if not name.startswith("_") and (callable(value) or isinstance(value, (property, staticmethod, classmethod))):
            yield name, value
