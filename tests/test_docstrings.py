"""Every public name of the facade (``import tesched as ts``) has a docstring, and so do the public
methods and properties of its classes."""
import inspect

import tesched as ts


def _public_members(cls: type):
    for name, value in vars(cls).items():
        if not name.startswith("_") and (callable(value) or isinstance(value, property)):
            yield name, value


def test_every_public_name_has_a_docstring():
    missing = []
    for name in ts.__all__:
        obj = getattr(ts, name)
        if inspect.ismodule(obj) or not (callable(obj) or inspect.isclass(obj)):
            continue
        if len(inspect.getdoc(obj) or "") < 10:
            missing.append(f"ts.{name}")
        if inspect.isclass(obj):
            missing += [f"ts.{name}.{m}" for m, v in _public_members(obj) if len(inspect.getdoc(v) or "") < 10]
    assert not missing, f"public names without a docstring: {missing}"
