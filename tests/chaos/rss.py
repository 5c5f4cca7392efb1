"""Run the ``flower`` command in this process and write its peak RSS (KiB) to $FLOWER_RSS_OUT
when it exits — the flower process alone, not the CLI it spawns."""

import os
import resource
import sys

from flower.cli import main

try:
    main(sys.argv[1:], prog_name="flower")
finally:
    with open(os.environ["FLOWER_RSS_OUT"], "w") as f:
        f.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
