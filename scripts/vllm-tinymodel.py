"""vllm-tinymodel.py: a tiny random-weight Llama in Hugging Face format.

Writes config.json, model.safetensors, tokenizer.json and its companions to
OUT, for scripts/vllm-e2e.sh to serve with vLLM. Nothing is downloaded: the
tokenizer is a byte-level BPE (vocabulary 512) trained here on generated
words, and the weights are drawn from a seeded generator, so the same seed
gives the same model.

Usage: python vllm-tinymodel.py OUT [SEED]

The shape is the smallest vLLM's CPU backend serves: head_dim 64 (128 hidden
/ 2 heads; head_dim 16 fails with "Unsupported CPU attention configuration"),
2 layers, context 2048. Random weights produce random tokens, so most
requests run to max_tokens; the end-of-sequence token (id 2) can still come
up by chance.
"""

import os
import random
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

WORDS = (
    "alpha beta gamma delta load test burst queue token reply model surge "
    "hello world fast slow the a of and to in is it that for on with as"
).split()

# A chat template in the plain "role: content" form; vLLM applies it to
# /v1/chat/completions requests.
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) == 3 else 1
    os.makedirs(out, exist_ok=True)

    rng = random.Random(seed)
    text = [" ".join(rng.choice(WORDS) for _ in range(30)) for _ in range(2000)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(text, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)

    cfg = LlamaConfig(
        vocab_size=fast.vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(cfg).save_pretrained(out)


if __name__ == "__main__":
    main()
