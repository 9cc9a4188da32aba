import sys

from hooked.cli import main

sys.exit(main())
