"""Five-dimensional tensors: a Conv3d over [batch, channels, depth, height,
width] volumes and an elementwise function of a [2, 3, 4, 5, 6] tensor, each
compiled with reduce-overhead (the trace keeps every dimension)."""
import torch
import torch.nn as nn

ITERS = 4


class Vol(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 4, kernel_size=3, padding=1)

    def forward(self, v):
        return torch.relu(self.conv(v))


@torch.compile(mode="reduce-overhead")
def scale(x):
    return x * 2 + 1, x.sum(dim=-1, keepdim=True)


torch.manual_seed(0)
vol = torch.compile(Vol().cuda().eval(), mode="reduce-overhead")
v = torch.rand(1, 2, 4, 8, 8, device="cuda")
x = torch.rand(2, 3, 4, 5, 6, device="cuda")
with torch.no_grad():
    for it in range(ITERS):
        torch.compiler.cudagraph_mark_step_begin()
        out = vol(v)
        y, s = scale(x)
        print("iter %d conv %s scale %s sum %s" % (it, tuple(out.shape), tuple(y.shape), tuple(s.shape)))
