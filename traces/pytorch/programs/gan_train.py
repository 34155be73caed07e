"""A small GAN trained on 2-d points (a ring), generator and
discriminator two modules compiled apart under reduce-overhead, each step
begun with cudagraph_mark_step_begin(): the discriminator's loss on real
points and on the generator's detached samples (its forward called twice
a step, on two batches), its Adam step, then the generator's loss
through the discriminator (gradients through both trees' functions), its
Adam step. The losses read on the host every 10th step."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS, BATCH, Z = 30, 64, 8

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(Z, 64), nn.ReLU(), nn.Linear(64, 2)).cuda()
D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).cuda()
g, d = torch.compile(G, mode="reduce-overhead"), torch.compile(D, mode="reduce-overhead")
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
ones, zeros = torch.ones(BATCH, 1, device="cuda"), torch.zeros(BATCH, 1, device="cuda")


def ring(n):
    a = torch.rand(n, device="cuda") * 2 * math.pi
    return torch.stack([a.cos(), a.sin()], dim=1) + 0.05 * torch.randn(n, 2, device="cuda")


for step in range(STEPS):
    torch.compiler.cudagraph_mark_step_begin()
    fake = g(torch.randn(BATCH, Z, device="cuda"))
    loss_d = (F.binary_cross_entropy_with_logits(d(ring(BATCH)), ones)
              + F.binary_cross_entropy_with_logits(d(fake.detach()), zeros))
    opt_d.zero_grad(set_to_none=True)
    loss_d.backward()
    opt_d.step()
    loss_g = F.binary_cross_entropy_with_logits(d(fake), ones)
    opt_g.zero_grad(set_to_none=True)
    loss_g.backward()
    opt_g.step()
    if step % 10 == 9:
        print("step %d loss_d %.4f loss_g %.4f" % (step, loss_d.item(), loss_g.item()))
