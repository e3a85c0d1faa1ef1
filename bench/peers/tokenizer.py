"""Build a tiny local Hugging Face tokenizer for the peers (bench/peers.sh).

AIPerf and GuideLLM need a tokenizer to make prompts and count tokens, and
nothing may be fetched from a model hub. This trains a byte-level BPE
(vocabulary 2,000) with the `tokenizers` package on text generated here from a
fixed seed, and saves tokenizer.json, tokenizer_config.json and
special_tokens_map.json in OUT, loadable with
transformers.AutoTokenizer.from_pretrained(OUT).

Usage: python tokenizer.py OUT
"""

import json
import os
import random
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

WORDS = (
    "the of and to in is was that for on as with by at from his her they which "
    "be this are or had not but an have were one their all there been has when "
    "who will more no if out so said what up its about into than them can only "
    "other new some could time these two may then do first any my now such like "
    "our over man me even most made after also did many before must through back "
    "years where much your way well down should because each just those people "
    "token stream server request latency model prompt output answer bench load "
    "rate send queue chunk event first last value number word line text sample"
).split()


def corpus(n_lines, seed=31):
    rnd = random.Random(seed)
    for _ in range(n_lines):
        words = [rnd.choice(WORDS) for _ in range(rnd.randint(5, 30))]
        line = " ".join(words)
        yield line[0].upper() + line[1:] + rnd.choice(".,;:?!") + " " + str(rnd.randint(0, 9999))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tokenizer.py OUT")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(20000), trainer=trainer)
    tok.save(os.path.join(out, "tokenizer.json"))
    special = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}
    config = dict(special, tokenizer_class="PreTrainedTokenizerFast", model_max_length=1 << 20,
                  clean_up_tokenization_spaces=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "special_tokens_map.json"), "w") as f:
        json.dump(special, f, indent=2)
    print(f"tokenizer: {tok.get_vocab_size()} tokens in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
