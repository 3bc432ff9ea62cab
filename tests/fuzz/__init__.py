"""tesched's fuzzing campaign: random legal schedules, random kernel arguments, and API misuse.

Three fuzzers, each a list of numbered cases that a child process runs (so a crash or a hang is counted
against one case, not lost with the run):

- :mod:`.schedules`: random legal schedules of the pipelines in :mod:`.pipelines`, built and compared with
  NumPy, each with its lowering time;
- :mod:`.mutations`: random mutations of a kernel's arguments (dtype, shape, strides, alignment, aliasing,
  count, non-arrays, sizes); each call must either compute what NumPy computes or raise a tesched error
  naming the argument;
- :mod:`.misuse`: a table of API misuses (one row per error, in the style of Halide's ``test/error``), each
  of which must raise a tesched error whose message names what is wrong.

``python -m tests.fuzz`` runs the quick profile (the one the test suite runs); ``--long`` runs thousands
of cases and prints the figures. A failing case prints the command that replays it alone.
"""
