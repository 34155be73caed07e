"""Slices as outputs and as inputs: `enc` returns its result, the result's
last column (y[:, -1]) and its two halves (chunk), which alias the first
output's storage at offsets; `dec` is fed a slice of a tree output (a
cudagraph-managed input that is a view) and a narrow() of an eager tensor.
The kept slices keep their base alive after the base's own name is gone."""
import torch

ITERS, N, D = 5, 8, 16


@torch.compile(mode="reduce-overhead")
def enc(x, w):
    y = x @ w
    a, b = y.chunk(2, dim=0)
    return y, y[:, -1], a, b


@torch.compile(mode="reduce-overhead")
def dec(col, part):
    return col * 3 + part.sum()


torch.manual_seed(0)
w = torch.rand(D, D, device="cuda")
x = torch.rand(N, D, device="cuda")
big = torch.rand(4, 32, device="cuda")
for it in range(ITERS):
    torch.compiler.cudagraph_mark_step_begin()
    y, last, a, b = enc(x, w)
    del y  # `last`, `a` and `b` still view its storage
    z = dec(a[:, 0], big.narrow(1, 8, 16))
    print("iter %d last %s a %s z %.4f" % (it, tuple(last.shape), tuple(a.shape), z.sum().item()))
