"""A diffusion-style sampling loop, as image and audio generators run one: a
small denoiser (an MLP over a latent of 4x256, conditioned on a sinusoidal
embedding of the timestep) compiled under reduce-overhead and called with
the timestep as a plain Python int at each of 20 steps, the latent updated
eagerly from its output, under inference_mode and without
cudagraph_mark_step_begin() (sampling code rarely calls it); then a second
sample over the same 20 timesteps. Recorded on an H200 (2026-12-06, torch
2.11): Dynamo compiles the first call with t=19 as a constant, then one
graph with t dynamic; the tree keeps a function of its own for each value
of t (21: the constant one, and 20 values of the dynamic graph, 19 again
among them since Dynamo takes the newer graph for it), so each is warmed
up in the first sample and recorded in the second: 21 warmups, 19
recordings, no replay in 40 calls, the first replay coming only in a
third sample. Each call also starts a new generation (no mark_step, the
last output dead). The final latents' norms are read on the host.

--t-tensor passes the timestep as a 0-d CUDA tensor instead, what
`cgtviz run` suggests for such a trace: one graph, which the tree
records once and replays at every value of t (1 warmup, 1 recording, 38
replays on an H100; examples/recorded/diffusion_tensor_t.cgt.jsonl).

    python3 -m cgtrace run -o diffusion_sample.cgt.jsonl diffusion_sample.py
    python3 -m cgtrace run -o diffusion_tensor_t.cgt.jsonl diffusion_sample.py --t-tensor
"""
import argparse
import math

import torch
import torch.nn as nn

STEPS, SAMPLES, DIM = 20, 2, 256


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.time = nn.Linear(64, DIM)
        self.net = nn.Sequential(nn.Linear(DIM, 512), nn.SiLU(), nn.Linear(512, DIM))

    def forward(self, x, t):
        half = 32
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=x.device) / half)
        args = t * freqs
        emb = torch.cat([torch.sin(args), torch.cos(args)])
        return self.net(x + self.time(emb))


parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--t-tensor", action="store_true", help="the timestep as a 0-d CUDA tensor, not a Python int")
opts = parser.parse_args()
torch.manual_seed(0)
model = Denoiser().cuda().eval()
denoise = torch.compile(model, mode="reduce-overhead")
with torch.inference_mode():
    for s in range(SAMPLES):
        x = torch.randn(4, DIM, device="cuda")
        for t in reversed(range(STEPS)):
            eps = denoise(x, torch.tensor(t, device="cuda") if opts.t_tensor else t)
            x = x - 0.05 * eps
        print("sample %d: latent norm %.4f" % (s, x.norm().item()))
