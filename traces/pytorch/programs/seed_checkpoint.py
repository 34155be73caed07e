"""The forum thread's first example (shared/seed): foo and fee under
mark_step. Three steps drop foo's first output before fee runs, so fee
records as a child of foo that expects it dead; the fourth step keeps it
alive, which fails that child's liveness check: PyTorch checkpoints the
allocator and records a sibling."""
import torch


@torch.compile(mode="reduce-overhead")
def foo(x):
    return x + 1, x + 2


@torch.compile(mode="reduce-overhead")
def fee(y):
    return y * 4


for _ in range(3):
    torch.compiler.cudagraph_mark_step_begin()
    inp = torch.rand([4], device="cuda")
    a, b = foo(inp)
    del a
    # a's memory can be reused here
    fee(b)

torch.compiler.cudagraph_mark_step_begin()
inp = torch.rand([4], device="cuda")
a, b = foo(inp)
print("Should checkpoint now")
# a is still live: its memory cannot be reclaimed
fee(b)
