"""Weights swapped under a compiled model, as evaluation with EMA weights
or a reloaded checkpoint does it (pytorch#129349, #127145): an MLP
compiled under reduce-overhead in eval mode, its weights replaced with
`load_state_dict(..., assign=True)`, which hands the module new tensors,
so the graph's static inputs (the parameters) move. mark_step a call.

1. Two weight sets, A and B, swapped in turn: the tree records a graph
   for A's addresses, re-records for B's, and from then on replays the
   one whose addresses match (PyTorch 2.11 on an H100, 12 calls: a
   warmup, 2 recordings, 9 replays).
2. A new copy of A's weights at each round (a checkpoint loaded again):
   each copy is made while the last one lives, so the copies take two
   blocks in turn, and the tree re-records twice and then replays.
   `cudagraph_unexpected_rerecord_limit` set to 3 changes nothing in
   2.11: with inline_inbuilt_nn_modules on, no re-record limit applies
   (the trace's rerecord_limit stays unbounded).

The new weights are made before the old ones die: the recorder writes a
new parameter before the deaths since the last call when a parameter
they delete was of its shape and none at its address
(Session._deaths_tail), or the
simulated allocator would hand it the dead one's memory and cgtviz would
replay where PyTorch re-recorded.

    python3 -m cgtrace run -o ema_swap.cgt.jsonl ema_swap.py
"""
import torch
import torch._inductor.config as inductor_config
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)).cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
weights_a = {k: v.detach().clone() for k, v in model.state_dict().items()}
weights_b = {k: v * 0.5 for k, v in weights_a.items()}
x = torch.randn(4, 32, device="cuda")


def evaluate(name):
    with torch.no_grad():
        for _ in range(2):
            torch.compiler.cudagraph_mark_step_begin()
            out = compiled(x)
        print("%s: %.4f" % (name, out.sum().item()))


for r in range(3):
    for name, w in (("A", weights_a), ("B", weights_b)):
        model.load_state_dict(w, assign=True)
        evaluate("round %d, weights %s" % (r, name))

inductor_config.triton.cudagraph_unexpected_rerecord_limit = 3
for r in range(5):
    model.load_state_dict({k: v.clone() for k, v in weights_a.items()}, assign=True)
    evaluate("reloaded %d" % r)
