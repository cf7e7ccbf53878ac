# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The README's training-free `custom_generate=` recipe for a plain model, run exactly as written."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path


def test_readme_custom_generate_recipe_runs_as_written(tmp_path):
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    recipe = next(b for b in blocks if "custom_generate=hf_seqtemp.seqtemp_generate" in b)
    script = tmp_path / "recipe.py"
    script.write_text(recipe, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(script)]
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    answers = ast.literal_eval(result.stdout.strip().splitlines()[-1])  # the recipe prints the decoded answers
    assert isinstance(answers, list) and len(answers) == 1 and answers[0].strip()
