"""Context-free grammars: an IR of rules over regular-language terminals, an Earley parser with
hash-consed states, and a lexer/parser matcher behind the common ``Matcher`` contract."""
