#!/usr/bin/env python3
"""GPT-2 small inference for bench/infer: transformers' GPT2LMHeadModel
with the default GPT2Config (124M parameters) seeded, or where transformers
is missing the same architecture written below in plain torch.nn (same
parameter names and layouts, so either loads the other's file).  Each step
runs a batch of token sequences made on the CPU from the seed and copies
back the logits of each sequence's last token (the head runs on that token
only, as when generating).

    gpt2.py [-D] [-b batch] [-d device] [-I salt] [-n steps] [-q seqlen] [-S seed] [-w warmup] model.pt
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

VOCAB, POSITIONS, EMBD, LAYERS, HEADS = 50257, 1024, 768, 12, 12


class Conv1D(nn.Module):
    """transformers' Conv1D: a linear layer whose weight is (in, out)."""

    def __init__(self, nout, nin):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nin, nout))
        self.bias = nn.Parameter(torch.zeros(nout))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        shape = x.shape[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]),
                           self.weight).view(shape)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = Conv1D(3 * EMBD, EMBD)
        self.c_proj = Conv1D(EMBD, EMBD)
        # GPT-2's scaled initialisation of the residual projections.
        nn.init.normal_(self.c_proj.weight, std=0.02 / math.sqrt(2 * LAYERS))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(EMBD, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2)
                   for z in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:   # PyTorch before 2.0
            a = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
            mask = torch.ones(t, t, dtype=torch.bool,
                              device=x.device).triu(1)
            y = a.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = Conv1D(4 * EMBD, EMBD)
        self.c_proj = Conv1D(EMBD, 4 * EMBD)
        nn.init.normal_(self.c_proj.weight, std=0.02 / math.sqrt(2 * LAYERS))

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(EMBD, eps=1e-5)
        self.attn = Attention()
        self.ln_2 = nn.LayerNorm(EMBD, eps=1e-5)
        self.mlp = MLP()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, EMBD)
        self.wpe = nn.Embedding(POSITIONS, EMBD)
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(EMBD, eps=1e-5)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)


class GPT2(nn.Module):
    """GPT-2 small with the language-model head tied to the embedding."""

    def __init__(self):
        super().__init__()
        self.transformer = Transformer()
        self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def hidden(self, ids):
        """The final hidden states, as transformers' GPT2Model gives."""
        tr = self.transformer
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = tr.wte(ids) + tr.wpe(pos)
        for blk in tr.h:
            x = blk(x)
        return tr.ln_f(x)


class LastLogits(nn.Module):
    """The logits of each sequence's last token, whichever model: the head
    runs on that token only, as when generating the next one."""

    def __init__(self, model, hf):
        super().__init__()
        self.model = model
        self.hf = hf

    def forward(self, ids):
        if self.hf:
            h = self.model.transformer(input_ids=ids,
                                       use_cache=False).last_hidden_state
        else:
            h = self.model.hidden(ids)
        return self.model.lm_head(h[:, -1, :])

    # The state dict is the model's own, without the wrapper's prefix.
    def state_dict(self, *a, **kw):
        return self.model.state_dict(*a, **kw)

    def load_state_dict(self, sd, strict=True):
        return self.model.load_state_dict(sd, strict=strict)


def main():
    args = common.parse_args("gpt2", batch=8, seq=128)
    if args.q > POSITIONS:
        sys.exit("gpt2: -q: at most %d" % POSITIONS)
    try:
        from transformers import GPT2Config, GPT2LMHeadModel

        def build():
            return LastLogits(GPT2LMHeadModel(GPT2Config()), True)
        variant = "transformers"
    except ImportError:
        def build():
            return LastLogits(GPT2(), False)
        variant = "builtin"

    def make_input(gen):
        return torch.randint(0, VOCAB, (args.b, args.q), generator=gen)

    common.run("gpt2", variant, build, make_input, args, "sequence")


if __name__ == "__main__":
    main()
