"""A training loop that the OOM killer ends (issue 33 item 1): an MLP of
12 layers of width 2048 (50M parameters) trained on a new batch at each
step, its forward and backward compiled under reduce-overhead and AdamW
eager, the loss read on the host only every --log-every steps (as a real
loop logs it), so between two reads the recorder holds calls not yet
written to its journal. After step --die-at the process kills itself
with SIGKILL, which is what the OOM killer sends: no handler runs and
nothing is flushed. Each step prints its number once it has returned
(flushed), so the last number printed is the last step that ended; its
forward and backward are 2 compiled calls, so a trace that lost nothing
holds 2 x --die-at calls. --load-ms pauses before each step, standing in
for a data loader's wait, and the kill comes in the wait of the step
after --die-at (where the OOM killer finds a loader's batch): the
recorder writes the calls it holds at most its JOURNAL_MS (20 ms) after
they return, by the next call or, in a wait with none, by its journal's
clock, so with --load-ms 30 every call is kept.

    python3 tools/gpu/crash-trace.py killed_train -- --die-at 50 --load-ms 30
"""
import argparse
import os
import signal
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--die-at", type=int, default=50, help="the step after which SIGKILL ends the process (50)")
parser.add_argument("--load-ms", type=float, default=0, help="ms slept before each step (a data loader's wait; 0)")
parser.add_argument("--log-every", type=int, default=1000, help="read the loss on the host every N steps (1000)")
parser.add_argument("--width", type=int, default=2048)
parser.add_argument("--layers", type=int, default=12)
parser.add_argument("--batch", type=int, default=64)
opts = parser.parse_args()

torch.manual_seed(0)
body = []
for _ in range(opts.layers):
    body += [nn.Linear(opts.width, opts.width), nn.GELU()]
model = nn.Sequential(*body, nn.Linear(opts.width, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
compiled = torch.compile(model, mode="reduce-overhead")

for step in range(1, opts.die_at + 1):
    if opts.load_ms:
        time.sleep(opts.load_ms / 1000)
    x = torch.randn(opts.batch, opts.width, device="cuda")
    y = torch.randint(0, 10, (opts.batch,), device="cuda")
    loss = F.cross_entropy(compiled(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step % opts.log_every == 0:
        print("step %d loss %.4f" % (step, loss.item()))
    print("step %d returned" % step, flush=True)
if opts.load_ms:
    time.sleep(opts.load_ms / 1000)  # (the next step's load, in which it is killed)
os.kill(os.getpid(), signal.SIGKILL)
