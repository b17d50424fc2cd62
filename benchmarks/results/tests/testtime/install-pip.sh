#!/bin/bash
# Install variants in fresh venvs from a fresh clone; each timed whole.
set -u
EXTRAS='.[test,bench,neural,train,ray,serve,llm,docs]'
SRC=/tmp/tt/inst/clone
rm -rf $SRC; git clone -q /work/wt-testtime $SRC
cd $SRC
T() { /usr/bin/time -f "$1 user=%U sys=%S wall=%e" "${@:2}"; }
variant() {
  name=$1; shift
  rm -rf .venv; python3 -m venv .venv
  echo "== $name"; date -u +%T
  "$@"
  .venv/bin/python -c "import torch,numba,ray,neardup;print('torch',torch.__version__,'neardup',neardup.__file__)"
  du -sh .venv | cut -f1
}
PIP=".venv/bin/python -m pip --disable-pip-version-check -q"
a() { T a-step1 $PIP install -c constraints.txt -e . && T a-step2 $PIP install -c constraints.txt -e "$EXTRAS"; }
b() { T b-one $PIP install -c constraints.txt -e "$EXTRAS"; }
c() { T c-one-nocompile $PIP install --no-compile -c constraints.txt -e "$EXTRAS"; }
for v in ${VARIANTS:-a b c}; do variant $v $v; done
