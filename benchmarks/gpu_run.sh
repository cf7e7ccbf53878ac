#!/usr/bin/env bash
# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
#
# Every GPU check of the package in one command on a bare lent GPU machine, each step under its own time budget.
#
# Here, once (a machine with the package registry and the embedded model):
#   bash benchmarks/gpu_run.sh download     # wheels of benchmarks/gpu_wheels.txt and of hf_seqtemp into .whl/,
#                                           # SmolLM2's config and tokenizer into .gpu_model/, sizes into
#                                           # benchmarks/gpu_carry.json
# Carry .whl and .gpu_model with the working tree (both git-ignored; tests/test_gpu_carry.py checks the whole carry
# fits 64 MiB), then on the GPU machine, from the repository root:
#   bash benchmarks/gpu_run.sh all       OUT   # versions check, then test, sampling, training, scoring (below)
# or one step at a time:
#   bash benchmarks/gpu_run.sh versions  OUT   # gpu_versions.py: the carried versions are the ones that import
#   bash benchmarks/gpu_run.sh test      OUT   # make test-gpu (HF_SEQTEMP_TEST_DEVICE=cuda)
#   bash benchmarks/gpu_run.sh sampling  OUT   # gpu_costs.py sampling: plain, SMC token/adapter N=8/64, MH, adapter
#   bash benchmarks/gpu_run.sh training  OUT   # gpu_costs.py training: online step / TRL GRPO step, bf16 both
#   bash benchmarks/gpu_run.sh scoring   OUT   # gpu_costs.py scoring: scorer / bare forward / TRL helpers
# `all` writes 6 files into OUT (default $OUT, else outputs/gpu): summary.json (device, each step's exit status,
# seconds and budget), run.log (the versions and every step's output), test_gpu.xml and
# gpu_{sampling,training,scoring}.json. A cost run writes its JSON after every route it finishes, so a run cut by
# its budget keeps the rows it finished. Budgets (seconds; `all` totals 450 with the versions check, plus
# installing the wheels, within 8 minutes on one H100): GPU_BUDGET_TEST=210, GPU_BUDGET_SAMPLING=100,
# GPU_BUDGET_TRAINING=65, GPU_BUDGET_SCORING=45.
set -uo pipefail

STEP=${1:-}
OUT_DIR=${2:-${OUT:-outputs/gpu}}
LIMIT=${GPU_STEP_LIMIT:-540}  # seconds per step, under the machine's 10 minutes per command
SITE=${GPU_SITE:-/tmp/hf_seqtemp_site}
PY=${PYTHON:-python3}
PLATFORMS="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"

install_carried_wheels() {
    if [ ! -d .whl ] || [ -z "$(ls .whl/*.whl 2>/dev/null)" ]; then
        echo "gpu_run.sh: no wheels in .whl/: run 'bash benchmarks/gpu_run.sh download' here and carry .whl" >&2
        exit 2
    fi
    if [ ! -f "$SITE/.installed" ]; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .whl/*.whl || exit 2
        touch "$SITE/.installed"
    fi
    # the working tree first (its hf_seqtemp is the one tested), then the carried wheels, then the image's packages
    export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
    export HF_HUB_OFFLINE=1
}

record_device() {
    mkdir -p "$OUT_DIR"
    "$PY" - > "$OUT_DIR/device.txt" 2>&1 <<'EOF'
import platform, torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda)
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, f"{p.total_memory / 2**30:.1f} GiB", "capability", f"{p.major}.{p.minor}")
else:
    print("device: no CUDA GPU")
EOF
    cat "$OUT_DIR/device.txt"
}

# run_step NAME BUDGET COMMAND...: runs under `timeout BUDGET`, appends its output to run.log, records the status
run_step() {
    local name=$1 budget=$2 start rc took
    shift 2
    echo "== $name: budget ${budget} s ($(date -u +%H:%M:%S))" | tee -a "$OUT_DIR/run.log"
    start=$(date +%s)
    timeout "$budget" "$@" >> "$OUT_DIR/run.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    [ "$rc" = 124 ] && echo "== $name: cut at its budget of ${budget} s" | tee -a "$OUT_DIR/run.log"
    echo "== $name: exit status $rc after ${took} s" | tee -a "$OUT_DIR/run.log"
    echo "{\"step\": \"$name\", \"status\": $rc, \"seconds\": $took, \"budget\": $budget}" >> "$OUT_DIR/.steps"
    return $rc
}

write_summary() {
    "$PY" - "$OUT_DIR" <<'EOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
steps = [json.loads(line) for line in (out / ".steps").read_text().splitlines()] if (out / ".steps").exists() else []
device = (out / "device.txt").read_text().splitlines() if (out / "device.txt").exists() else []
summary = {"device": device, "steps": steps, "total_seconds": sum(s["seconds"] for s in steps)}
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps(summary, indent=1))
EOF
    rm -f "$OUT_DIR/.steps" "$OUT_DIR/device.txt"
}

case "$STEP" in
    download)
        rm -rf .whl && mkdir -p .whl
        "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLATFORMS \
            -d .whl $(grep -v '^#' benchmarks/gpu_wheels.txt) || exit 1
        "$PY" -m pip wheel -q --no-deps --no-build-isolation -w .whl . || exit 1
        "$PY" benchmarks/gpu_costs.py prepare || exit 1
        "$PY" - <<'EOF'
import json, pathlib
sizes = {f".whl/{p.name}": p.stat().st_size for p in sorted(pathlib.Path(".whl").glob("*.whl"))}
sizes.update({str(p): p.stat().st_size for p in sorted(pathlib.Path(".gpu_model").rglob("*")) if p.is_file()})
pathlib.Path("benchmarks/gpu_carry.json").write_text(json.dumps(sizes, indent=1) + "\n")
print(f"carried beside the tree: {sum(sizes.values()) / 2**20:.1f} MiB in {len(sizes)} files")
EOF
        ;;
    versions)
        install_carried_wheels
        "$PY" benchmarks/gpu_versions.py
        ;;
    all)
        install_carried_wheels
        mkdir -p "$OUT_DIR" && rm -f "$OUT_DIR/.steps" "$OUT_DIR/run.log"
        record_device | tee -a "$OUT_DIR/run.log"
        if ! run_step versions 30 "$PY" benchmarks/gpu_versions.py; then
            tail -n 20 "$OUT_DIR/run.log"
            write_summary > /dev/null
            echo "gpu_run.sh: the versions that import are not the lock's (run.log); nothing else was run" >&2
            exit 2
        fi
        run_step test "${GPU_BUDGET_TEST:-210}" make test-gpu PYTHON="$PY" \
            PYTEST_ARGS="-q -p no:cacheprovider --junitxml=$OUT_DIR/test_gpu.xml"
        run_step sampling "${GPU_BUDGET_SAMPLING:-100}" \
            "$PY" benchmarks/gpu_costs.py sampling --output-dir "$OUT_DIR" ${GPU_COST_ARGS:-}
        run_step training "${GPU_BUDGET_TRAINING:-65}" \
            "$PY" benchmarks/gpu_costs.py training --output-dir "$OUT_DIR" ${GPU_COST_ARGS:-}
        run_step scoring "${GPU_BUDGET_SCORING:-45}" \
            "$PY" benchmarks/gpu_costs.py scoring --output-dir "$OUT_DIR" ${GPU_COST_ARGS:-}
        write_summary
        ;;
    test)
        install_carried_wheels
        record_device
        timeout "$LIMIT" make test-gpu PYTHON="$PY" \
            PYTEST_ARGS="-q -p no:cacheprovider --junitxml=$OUT_DIR/test_gpu.xml" > "$OUT_DIR/test_gpu.log" 2>&1
        rc=$?
        tail -n 40 "$OUT_DIR/test_gpu.log"
        echo "make test-gpu exit status: $rc" | tee -a "$OUT_DIR/test_gpu.log"
        exit $rc
        ;;
    sampling | training | scoring)
        install_carried_wheels
        record_device
        timeout "$LIMIT" "$PY" benchmarks/gpu_costs.py "$STEP" --output-dir "$OUT_DIR" ${GPU_COST_ARGS:-} \
            > "$OUT_DIR/gpu_$STEP.log" 2>&1
        rc=$?
        tail -n 30 "$OUT_DIR/gpu_$STEP.log"
        echo "gpu_costs.py $STEP exit status: $rc"
        exit $rc
        ;;
    *)
        echo "usage: bash benchmarks/gpu_run.sh download | all | versions | test | sampling | training | scoring [OUT]" >&2
        exit 2
        ;;
esac
