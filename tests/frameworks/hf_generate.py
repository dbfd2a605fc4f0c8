#!/usr/bin/env python3
"""Hugging Face transformers: a small Llama built from a config with seeded
weights (no download), greedy generate (the decode loop), and a BERT
forward."""
import torch  # noqa: E402
from transformers import (BertConfig, BertModel, LlamaConfig,  # noqa: E402
                          LlamaForCausalLM)

from fwcommon import done, part  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"


def llama():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=512,
                      num_hidden_layers=4, num_attention_heads=8,
                      num_key_value_heads=4, max_position_embeddings=256)
    m = LlamaForCausalLM(cfg).to(dev).eval()
    ids = torch.randint(0, 1024, (2, 12), generator=torch.Generator()
                        .manual_seed(1)).to(dev)
    with torch.no_grad():
        out = m.generate(ids, max_new_tokens=24, do_sample=False,
                         pad_token_id=0)
    return [out]


def bert():
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=2000, hidden_size=128, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=256)
    m = BertModel(cfg).to(dev).eval()
    ids = torch.randint(0, 2000, (4, 32), generator=torch.Generator()
                        .manual_seed(2)).to(dev)
    with torch.no_grad():
        return [m(ids).last_hidden_state]


part("hf.llama_generate", llama)
part("hf.bert_forward", bert)
done("hf_generate")
