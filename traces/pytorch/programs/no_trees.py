"""A user's mistake: the model compiled without reduce-overhead (the default
mode), recorded in the hope of seeing its CUDA graphs. No call reaches
CUDAGraph Trees, so the trace holds no call; the recording says why
(a note in the trace and a warning at its end), and `cgtviz report`
judges nothing.

    python3 -m cgtrace run -o no_trees.cgt.jsonl no_trees.py
"""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
compiled = torch.compile(model)  # mode="reduce-overhead" forgotten
for _ in range(4):
    out = compiled(torch.randn(16, 64, device="cuda"))
print("out", tuple(out.shape), "%.4f" % out.float().sum().item())
