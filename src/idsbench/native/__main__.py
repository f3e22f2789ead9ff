"""`python -m idsbench.native` (make native): build every shipped native program now."""

import sys

from idsbench.native import main

sys.exit(main())
