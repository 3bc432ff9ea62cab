"""Schedules as data: stages, their loops and placement, and the dataflow primitives.

Primitives record and validate; they never build loops (the polyhedral layer does, when lowering).
"""
