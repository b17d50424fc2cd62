#!/bin/bash
# uv variants: bootstrap uv with pip into the fresh venv, then uv pip install; cold cache, then warm.
set -u
EXTRAS='.[test,bench,neural,train,ray,serve,llm,docs]'
SRC=/tmp/tt/inst/clone
cd $SRC
T() { /usr/bin/time -f "$1 user=%U sys=%S wall=%e" "${@:2}"; }
export UV_CACHE_DIR=/tmp/tt/inst/uvcache
rm -rf $UV_CACHE_DIR
for v in d-uv-cold e-uv-warm; do
  rm -rf .venv; python3 -m venv .venv
  echo "== $v"; date -u +%T
  T $v-bootstrap .venv/bin/python -m pip --disable-pip-version-check -q install uv
  T $v-install env UV_FIND_LINKS=${PIP_FIND_LINKS:-} .venv/bin/uv pip install -q --python .venv/bin/python -c constraints.txt -e "$EXTRAS"
  .venv/bin/python -c "import torch,numba,ray,neardup;print('torch',torch.__version__,'neardup',neardup.__file__)"
  .venv/bin/uv pip list --python .venv/bin/python 2>/dev/null | wc -l
  du -sh .venv | cut -f1
done
