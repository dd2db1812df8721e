# Both targets build their own virtual environment from PyPI, so they work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test lit pytest lint clean

# setuptools warns, at length, that an editable install maps the package to this folder:
# that is the intent, and the banner would bury the demo's output.
$(BIN)/activate: pyproject.toml
	@echo "setting up $(VENV) (pip install -e '.[dev]') ..."
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install -q --upgrade pip
	@PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install -q -e '.[dev]'
	@touch $(BIN)/activate

demo: $(BIN)/activate
	@$(BIN)/tilesync demo

test: $(BIN)/activate lint lit pytest

lint: $(BIN)/activate
	$(BIN)/ruff check .

lit: $(BIN)/activate
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/lit -v test/filecheck

# one worker a core (at most 4); a test file stays on one worker, so its fixtures build once
pytest: $(BIN)/activate
	$(BIN)/pytest -q -n auto --maxprocesses 4 --dist loadfile test/python

clean:
	rm -rf $(VENV) build *.egg-info
