"""A training loop as `torchrun --nproc_per_node=1` runs it: the process
group made by hand (NCCL, world size 1, on a free local port), an MLP
wrapped in DistributedDataParallel with two gradient buckets, the
wrapper compiled under reduce-overhead (Dynamo's DDPOptimizer splits the
graph at the buckets' boundaries, so the forward is several compiled
graphs, each a tree function, and their backwards), a new batch at each
step with cudagraph_mark_step_begin() before it, AdamW stepped eagerly.
DDP's gradient hooks run in the backward, outside the graphs, on the
gradients the backward graphs hand out. Exits 0 with a message where
NCCL is not available."""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

if not dist.is_available() or not dist.is_nccl_available():
    print("ddp_train: torch.distributed with NCCL is not available; nothing to record")
    sys.exit(0)

STEPS, BATCH, DIM = 8, 64, 512

with socket.socket() as s:  # a free port for the rendezvous
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=0, world_size=1)
torch.cuda.set_device(0)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM), nn.GELU(),
                      nn.Linear(DIM, 10)).cuda()
# 4 MB buckets: the 8.4 MB of parameters in about three, so DDPOptimizer splits the graph
ddp = nn.parallel.DistributedDataParallel(model, device_ids=[0], bucket_cap_mb=4)
compiled = torch.compile(ddp, mode="reduce-overhead")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
target = torch.randint(0, 10, (BATCH,), device="cuda")
for step in range(STEPS):
    torch.compiler.cudagraph_mark_step_begin()
    x = torch.randn(BATCH, DIM, device="cuda")
    loss = F.cross_entropy(compiled(x), target)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    print("step %d loss %.4f" % (step, loss.item()))
dist.destroy_process_group()
