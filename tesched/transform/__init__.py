"""Loop-IR passes that prepare a lowered function for the machine: unrolling, explicit SIMD, and
promotion of small local buffers to registers. ``lower()`` output stays readable; these run in
:func:`tesched.lower.lower_for_target` just before C generation."""
