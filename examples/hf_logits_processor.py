"""Plug a grammar into plain Hugging Face ``model.generate`` with ``GrammarLogitsProcessor``.

    python examples/hf_logits_processor.py

Works with greedy search, sampling and beam search; one processor per ``generate`` call
(it also resets itself when a new generation starts).
"""

import re
import sys
from pathlib import Path

try:
    import constrain  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

import constrain
from constrain.hf import GrammarLogitsProcessor
from tokenizer_index import TokenizerIndex

model, tokenizer = constrain.load_model()  # SmolLM2-135M-Instruct; or any transformers causal LM
# The index must cover the model's logits width (it may be larger than the tokenizer).
index = TokenizerIndex.from_hf(tokenizer, vocab_size=model.get_output_embeddings().weight.shape[0])

pattern = r"(Paris|London|Rome|Berlin|Madrid), (France|England|Italy|Germany|Spain)"
compiled = constrain.compile(constrain.Grammar.from_regex(pattern), index)

messages = [{"role": "user", "content": "Name a European capital and its country."}]
prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
prompt_len = inputs["input_ids"].shape[1]


def completion(ids) -> str:
    ids = [t for t in ids.tolist() if t not in index.eos_token_ids]  # EOS, and pads (= EOS here)
    return index.decode_bytes(ids).decode("utf-8", errors="replace")


with torch.no_grad():
    greedy = model.generate(**inputs, max_new_tokens=16, do_sample=False,
                            logits_processor=[GrammarLogitsProcessor(compiled)],
                            eos_token_id=list(index.eos_token_ids), pad_token_id=tokenizer.pad_token_id)
    text = completion(greedy[0, prompt_len:])
    print(f"greedy:  {text}")
    assert re.fullmatch(pattern, text)

    processor = GrammarLogitsProcessor(compiled)
    beams = model.generate(**inputs, max_new_tokens=16, num_beams=4, num_return_sequences=4, do_sample=False,
                           logits_processor=[processor],
                           eos_token_id=list(index.eos_token_ids), pad_token_id=tokenizer.pad_token_id)
    for i, row in enumerate(beams):
        text = completion(row[prompt_len:])
        print(f"beam {i}:  {text}")
        assert re.fullmatch(pattern, text)
    print(f"processor time: {1000 * processor.total_time:.1f} ms over {len(processor.call_times)} steps")
