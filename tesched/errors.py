"""Exception classes users can catch. Each message names the stage, loop or argument at fault."""


class TeschedError(Exception):
    """Base class of tesched's own errors."""


class ScheduleError(TeschedError, ValueError):
    """A schedule primitive was misused, or the schedule would not compute what the program says."""


class LoweringError(TeschedError):
    """The program cannot be lowered as written (e.g. a non-affine size where an affine one is needed)."""


class BuildError(TeschedError):
    """The C compiler rejected generated code, or the compiled module could not be loaded."""


class TensorizeError(TeschedError):
    """The loop nest below a tensorized axis does not compute what the intrinsic computes; the message
    says what differs (expression, extent, or index map)."""


class ConfigError(TeschedError, ValueError):
    """An environment variable or a target description is malformed; the message names it."""


class BoundsError(TeschedError, IndexError):
    """A stage reads a tensor outside its shape for some iteration; the message names the tensor, the
    stage, the index expression and one offending iteration."""


class ModuleLoadError(TeschedError, RuntimeError):
    """An exported library cannot be used here: it is not a tesched module, it was exported by a tesched
    with another module ABI, this CPU lacks an instruction-set feature it was compiled for, or its
    constants file is missing or belongs to another library. The message names the file and the cause."""


class GradientError(TeschedError, ValueError):
    """``ts.gradient`` cannot differentiate a pipeline: an integer input, a ``head`` of the wrong shape, or a
    stage or function with no derivative; the message names it."""


class InternalError(TeschedError, RuntimeError):
    """A bug in tesched itself, not in the user's program: a lowering pass broke an invariant of the loop
    IR (see :mod:`tesched.ir.verify`; the message names the pass) or met a state it assumes impossible
    (an isl AST it cannot read). Please report it with the program."""
