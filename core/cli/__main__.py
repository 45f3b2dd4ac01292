import sys

from kandev_lsp.cli import main

sys.exit(main())
