"""``python -m vllm_cpp``: the ``vllm-cpp`` command line."""

import sys

from .cli.main import main

sys.exit(main())
