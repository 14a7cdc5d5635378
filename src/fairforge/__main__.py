import sys

from fairforge.cli import main

sys.exit(main())
