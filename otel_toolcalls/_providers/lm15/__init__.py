"""lm15 (``lm15`` on PyPI, and the copy DSPy bundles as ``dspy._vendor.lm15``, its default engine)."""
