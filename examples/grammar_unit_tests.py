"""Unit-test a grammar against a real tokenizer, no model needed.

    python examples/grammar_unit_tests.py

``accepts_text`` checks strings, ``accepts_tokens`` checks token sequences the way a decoder
would produce them, and a matcher can be stepped token by token to see what is allowed.
"""

import sys
from pathlib import Path

try:
    import constrain  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import constrain
from tokenizer_index import TokenizerIndex
from tokenizer_index.fetch import hf_tokenizer_from_gguf, smollm2_gguf

tokenizer = hf_tokenizer_from_gguf(smollm2_gguf())  # SmolLM2's tokenizer (fetched and converted once)
index = TokenizerIndex.from_hf(tokenizer)
grammar = constrain.Grammar.from_regex(r"(yes|no)(, because [a-z ]{1,40})?")
compiled = constrain.compile(grammar, index)

# 1. strings
for text, expected in [("yes", True), ("no, because it rains", True), ("maybe", False), ("yes,", False)]:
    assert compiled.accepts_text(text) is expected, text
    print(f"accepts_text({text!r}) = {expected}")

# 2. token sequences (as the tokenizer would split them); a trailing EOS is allowed once complete
eos = index.eos_token_ids[0]
ids = tokenizer.encode("no, because it rains", add_special_tokens=False)
assert compiled.accepts_tokens(ids)
assert compiled.accepts_tokens(ids + [eos], require_eos=True)
no_comma = tokenizer.encode("no,", add_special_tokens=False)
assert compiled.accepts_tokens(no_comma[:-1] + [eos])  # "no" then EOS: complete
assert not compiled.accepts_tokens(no_comma + [eos])  # "no," then EOS: refused mid-sentence
print(f"accepts_tokens({ids}) = True")

# 3. stepping a matcher: what may come next, and when may it end?
matcher = compiled.matcher()
first = matcher.allowed_token_ids()
print(f"{len(first)} tokens may start the output, e.g. {[tokenizer.decode([t]) for t in first[:6]]}")
for token in tokenizer.encode("yes", add_special_tokens=False):
    matcher.advance(token)
print(f"after 'yes': accepting={matcher.is_accepting()}, finished={matcher.is_finished()}, "
      f"EOS allowed={matcher.is_token_allowed(eos)}")
assert matcher.is_accepting() and not matcher.is_finished()

try:
    matcher.advance(tokenizer.encode("!", add_special_tokens=False)[0])
except constrain.TokenNotAllowedError as e:
    print(f"refused: {e}")
matcher.rollback(matcher.num_tokens)
print("rolled back to the start:", matcher.num_tokens == 0)
print("all grammar checks passed")
