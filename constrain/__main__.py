import sys

from constrain.cli import main

sys.exit(main())
