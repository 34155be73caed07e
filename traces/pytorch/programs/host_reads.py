"""Host reads made from compiled code, each a `read` of a tree output:
`.item()` in forward breaks the graph (capture_scalar_outputs is off), so
the read runs between the graph before the break and the resume function;
`print()` of a slice in forward breaks it again (the slice an output of
the second graph, formatted on the host); `.tolist()` reads the result of
the third outside. No mark_step: each call is
one generation of three graphs. Recording leaves the program's graphs as
they are (tools/gpu/graphs-unchanged.py compares them)."""
import torch
import torch.nn as nn

ITERS, D = 5, 16


class Reader(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, D)
        self.fc2 = nn.Linear(D, D)

    def forward(self, x):
        h = self.fc1(x).relu()
        s = h.sum().item()  # the graph breaks: a read between two graphs
        if s > 0:
            h = self.fc2(h)
        print("inside:", h[0, :2])  # breaks again: the slice formatted on the host
        return h * 2


torch.manual_seed(0)
model = Reader().cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
x = torch.rand(4, D, device="cuda")
with torch.no_grad():
    for it in range(ITERS):
        y = compiled(x)
        print("iter %d y[0, :2] %s" % (it, y[0, :2].tolist()))
