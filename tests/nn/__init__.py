"""Tests of the operator library tesched.nn."""
