"""Build the polyhedral model of a schedule the way the lowering does (every model phase)."""
import tesched as ts
from tesched.lower.pipeline import Request, passes_until, run_passes
from tesched.poly.model import PolyModel


def model_of(sch: ts.Schedule, args) -> PolyModel:
    """The model after every model phase of the pipeline (up to tensorize matching)."""
    return run_passes(Request(sch, tuple(args), "test"), passes_until("tensorize matching"), ts.Target()).model
