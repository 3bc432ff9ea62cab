"""The polyhedral core: everything tesched computes with islpy.

- :mod:`.affine`  expressions to isl syntax (affine or quasi-affine), or ``NotAffine``.
- :mod:`.model`   statements with iteration domains, loop maps and accesses; footprints of
                   ``compute_at`` stages and their buffer boxes.
- :mod:`.tree`    the isl schedule tree: one band per loop, sequences for stage order, marks for loops,
                   productions and allocations.
- :mod:`.deps`    dependence analysis that checks a schedule's legality.
- :mod:`.astgen`  isl's AST generator, and the walk that turns its AST into tesched's loop IR.

No other package module imports islpy.
"""
