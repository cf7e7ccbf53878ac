# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Run under `torchrun --nproc_per_node 2`: rank 1 hangs forever, as a rank stuck at interpreter exit would.

Each rank writes its pid into `rank<r>.pid` of the output folder, so the test can check that none survives."""

import os
import sys
import time


def main(output_dir: str) -> None:
    rank = int(os.environ["RANK"])
    with open(os.path.join(output_dir, f"rank{rank}.pid"), "w") as handle:
        handle.write(str(os.getpid()))
    print(f"rank {rank} started", flush=True)
    if rank == 1:
        print("rank 1 hangs now", flush=True)
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1])
