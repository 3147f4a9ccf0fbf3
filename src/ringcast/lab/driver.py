"""The driver program to hand ``spark-submit``: ``ringcast lab`` under a submitted
master (the session keeps it, and ships ringcast to the executors)::

    spark-submit --master spark://HOST:7077 \
        "$(python -c 'import ringcast.lab.driver as d; print(d.__file__)')" \
        lab run --out lab-out

Its arguments are those of the ``ringcast`` command.
"""

from __future__ import annotations

import sys


def run() -> int:
    from ringcast.cli.main import main

    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(run())
