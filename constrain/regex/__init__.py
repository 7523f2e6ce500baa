"""Regular expressions (Python ``re`` syntax) compiled to byte-level DFAs over UTF-8."""
