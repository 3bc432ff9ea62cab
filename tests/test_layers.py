"""The package's layers import one way, and no module imports itself back through others.

Every module's imports are read with ``ast`` (imports inside functions and under ``TYPE_CHECKING``
included: a late import is still a dependency). A module may import from its own layer's package and from
lower layers; never from a higher layer, and never from a peer package of the same rank. The facade
``tesched`` (``import tesched as ts``) exposes the layers up to ``driver``, so only the layers above the
driver may use it. The layer table is the one drawn in CONTRIBUTING.md.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tesched"

# lowest first; packages on one line are peers and may not import each other
LAYERS: list[tuple[str, ...]] = [
    ("tesched.errors", "tesched.version"),
    ("tesched.config",),
    ("tesched.target",),
    ("tesched.tiling",),
    ("tesched.te",),
    ("tesched.ir",),
    ("tesched.arith", "tesched.schedule"),
    ("tesched.autodiff",),
    ("tesched.poly", "tesched.transform"),
    ("tesched.lower",),
    ("tesched.codegen",),
    ("tesched.driver",),
    ("tesched.recipes", "tesched.intrin"),
    ("tesched.nn",),
    ("tesched.graph", "tesched.autoschedule"),
    ("tesched.frontend", "tesched.viz"),
    ("tesched.tools",),
    ("tesched", "tesched.__main__", "tesched.bench"),
]
FACADE_USERS_FROM = [k for k, layer in enumerate(LAYERS) if "tesched.recipes" in layer][0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> tuple[int, str]:
    """(rank, owning layer package) of a module: the longest layer prefix that names it."""
    best: tuple[int, str] | None = None
    for rank, layer in enumerate(LAYERS):
        for pkg in layer:
            if (module == pkg or module.startswith(pkg + ".")) and pkg != "tesched":
                if best is None or len(pkg) > len(best[1]):
                    best = (rank, pkg)
    if best is None and module in LAYERS[-1]:
        return len(LAYERS) - 1, module
    assert best is not None, f"{module} belongs to no layer: add its package to LAYERS and CONTRIBUTING.md"
    return best


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every tesched import in ``path``."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "tesched"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "tesched":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                as_module = (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists() or \
                    (PACKAGE.parent / Path(*sub.split(".")) / "__init__.py").exists()
                found.append((node.lineno, sub if as_module else base))
    return found


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def test_every_module_belongs_to_a_layer():
    for module in all_modules():
        layer_of(module)


def test_imports_point_down():
    problems = []
    for module, path in sorted(all_modules().items()):
        rank, pkg = layer_of(module)
        for line, target in imports_of(path):
            if target == "tesched":
                if rank < FACADE_USERS_FROM and module != "tesched":
                    problems.append(f"{path.relative_to(ROOT)}:{line}: imports the facade `tesched` from layer "
                                    f"{pkg}; import the defining module instead")
                continue
            t_rank, t_pkg = layer_of(target)
            if t_rank > rank or (t_rank == rank and t_pkg != pkg):
                problems.append(f"{path.relative_to(ROOT)}:{line}: {pkg} (layer {rank}) imports {target} "
                                f"({t_pkg}, layer {t_rank})")
    assert not problems, "imports against the layering:\n" + "\n".join(problems)


def test_no_import_cycles():
    modules = all_modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for m, path in modules.items():
        for _, target in imports_of(path):
            while target and target not in modules:
                target = target.rsplit(".", 1)[0] if "." in target else ""
            if target and target != m and target != "tesched" and not m.startswith(target + "."):
                edges[m].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in modules:
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
