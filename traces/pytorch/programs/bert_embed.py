"""Sentence embeddings with a BERT encoder compiled under reduce-overhead,
as a retrieval service computes them: transformers' BertModel built from
a config (4 layers, width 256, random weights, nothing downloaded),
under torch.inference_mode(), batches of 16 requests whose lengths are
padded to a multiple of 16 (the batches cycle through 16, 32, 48 and 64:
Dynamo compiles again with the length dynamic, and the tree records a
graph for each padded length),
an attention mask beside the ids, the embedding the mask-weighted mean
of the last hidden state, copied to the host with .cpu() (where the
caller keeps it). mark_step each batch. Exits 0 with a message when
transformers is not installed.

    python3 -m cgtrace run -o bert_embed.cgt.jsonl bert_embed.py
"""
import sys

import torch

try:
    from transformers import BertConfig, BertModel
except ImportError:
    print("bert_embed: transformers is not installed; nothing to record")
    sys.exit(0)

BATCHES, BATCH, PAD = 12, 16, 16

torch.manual_seed(0)
cfg = BertConfig(vocab_size=1024, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                 intermediate_size=1024, max_position_embeddings=128)
model = BertModel(cfg).cuda().eval()
encode = torch.compile(model, mode="reduce-overhead")
gen = torch.Generator().manual_seed(1)
kept = []
with torch.inference_mode():
    for b in range(BATCHES):
        hi = (b % 4 + 1) * PAD  # (a request mix that cycles through the buckets)
        lengths = torch.randint(hi // 2, hi + 1, (BATCH,), generator=gen)
        width = int((lengths.max().item() + PAD - 1) // PAD * PAD)
        ids = torch.randint(1, cfg.vocab_size, (BATCH, width), generator=gen)
        mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
        ids, mask = ids.cuda(), mask.cuda()
        torch.compiler.cudagraph_mark_step_begin()
        hidden = encode(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(hidden.dtype)
        kept.append(((hidden * m).sum(1) / m.sum(1)).cpu())
        print("batch %d width %d norm %.3f" % (b, width, kept[-1].norm().item()))
print("embeddings: %s" % (tuple(torch.cat(kept).shape),))
