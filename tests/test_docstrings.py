"""Every public name of every public module (``import tesched as ts``, ``tesched.nn``, ``tesched.graph``,
the frontend, autoscheduling, intrinsics, pages) has a docstring, and so do the public methods and
properties of its classes: the API reference is built from them (``tests/test_docs.py``)."""
import inspect

from tests.public_api import public_members, public_names


def test_every_public_name_has_a_docstring():
    missing = []
    for dotted, obj in public_names().items():
        if inspect.ismodule(obj):
            if len(inspect.getdoc(obj) or "") < 10:
                missing.append(dotted)
            continue
        if not (callable(obj) or inspect.isclass(obj)):
            continue
        if len(inspect.getdoc(obj) or "") < 10:
            missing.append(dotted)
        if inspect.isclass(obj):
            missing += [f"{dotted}.{m}" for m, v in public_members(obj) if len(inspect.getdoc(v) or "") < 10]
    assert not missing, f"public names without a docstring: {missing}"
