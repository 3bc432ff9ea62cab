"""One lock for all of isl's work in this process.

isl's contexts are not thread-safe, and tesched uses islpy's default context everywhere: a budget of
operations set by one thread (``set_max_operations`` in AST generation and box hulls) makes another
thread's calls fail with "maximal number of operations exceeded", and two threads inside one context may
corrupt it. Lowering and the autoscheduler's decisions hold :data:`ISL_LOCK` (re-entrant: a lowering may
check a schedule, which lowers), so threads that build kernels, such as ``tune``'s measuring workers
beside its search, take turns with isl. Compilation by gcc and running kernels are outside it.
"""
from __future__ import annotations

import threading

ISL_LOCK = threading.RLock()
