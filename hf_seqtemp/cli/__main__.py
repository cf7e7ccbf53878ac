# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`python -m hf_seqtemp.cli` runs the `hf-seqtemp` console script."""

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
