# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A known break between transformers' own PEFT integration and the installed PEFT is one clear error naming both
versions and the fix, where hf_seqtemp would hand an adapter folder to transformers."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from hf_seqtemp import SeqTempTrainer, peft_compat
from hf_seqtemp.peft_compat import check_transformers_loads_adapter, transformers_peft_mismatch


def test_the_installed_pair_is_named_with_the_fix(monkeypatch, tmp_path):
    assert transformers_peft_mismatch() is None  # the locked versions load adapters through transformers
    monkeypatch.setattr(peft_compat, "_TRANSFORMERS_NEEDS_PEFT", (("5.0.0", "99.0.0"),))
    reason = transformers_peft_mismatch()
    assert f"transformers {version('transformers')} loads PEFT adapters only with peft>=99.0.0" in reason
    assert f"peft {version('peft')} is installed" in reason
    assert "pip install 'transformers<5.0.0'" in reason
    check_transformers_loads_adapter(str(tmp_path))  # not an adapter folder: nothing to refuse
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(ImportError, match="cannot load the adapter folder .* through transformers: transformers"):
        check_transformers_loads_adapter(str(tmp_path))
    with pytest.raises(ImportError, match="peft>=99.0.0"):  # the trainer given the folder as `model`
        SeqTempTrainer(str(tmp_path))
