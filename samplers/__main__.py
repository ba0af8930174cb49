import sys

from samplers.cli import main

sys.exit(main())
