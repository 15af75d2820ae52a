# The README's two commands: `make demo` and `make test`. Each sets up what it needs first.
VENV := .venv
BENCHC := $(VENV)/bin/benchc
PYTEST := $(VENV)/bin/python -m pytest
DEMO_OUT := out/demo

.PHONY: setup demo test test-fast lock clean

setup:
	@scripts/setup.sh

# Compile + run + score + report MMCBench text2speech on a seeded subset of its bundled tables.
demo: setup
	$(BENCHC) eval specs/mmcbench/text2speech.toml --model espeak --set sample.n=2 --set sample.stratify=table --workers 2 --out $(DEMO_OUT)

# The whole suite, slow real-model tests included (CI runs exactly this).
test: setup
	$(PYTEST) -n 2 --dist loadgroup -q

test-fast: setup
	$(PYTEST) -n 2 -q -m "not slow"

lock: setup
	$(BENCHC) lock

clean:
	rm -rf out .benchc
