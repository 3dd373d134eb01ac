"""One vocabulary per framework: raw keys -> canonical metrics (see ../model.py).

Each module defines VOCABULARY and, for concepts only that framework has,
an optional METRICS list of extra canonical metrics.
"""
