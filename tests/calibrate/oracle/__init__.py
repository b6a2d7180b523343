"""Pure-Python pricing: the parity tests' oracle for the C++ cost model (see profile.py)."""
