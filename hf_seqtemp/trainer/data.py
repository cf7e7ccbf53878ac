# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Former home of the data preparation, kept so that old imports work; it lives in [`hf_seqtemp.data`] now."""

from ..data import EXAMPLE_ID, GROUP_ID, RAGGED_COLUMNS, SeqTempCollator, prepare_dataset, sample_dataset

__all__ = ["EXAMPLE_ID", "GROUP_ID", "RAGGED_COLUMNS", "SeqTempCollator", "prepare_dataset", "sample_dataset"]
