"""What the recorder takes from Python that the oldest Python torch 2.11
runs on (3.10) lacks, in one place: a recording must start there too.

op_call(f) is f(): operator.call from 3.11 on, operator.methodcaller's
C call of __call__ before it (the lean paths map it over weak references
and probes at every call, so it stays a C function either way)."""

import operator

op_call = getattr(operator, "call", None) or operator.methodcaller("__call__")
