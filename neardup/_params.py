"""``get_params`` and ``repr`` for estimator-like objects (methods, embedders)."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["ParamsMixin"]


class ParamsMixin:
    """Constructor parameters, read back from attributes stored under the same names."""

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters by name; nested configs become dicts."""
        params = {}
        for pname in inspect.signature(type(self).__init__).parameters:
            if pname == "self":
                continue
            value = getattr(self, pname)
            params[pname] = value.get_params() if hasattr(value, "get_params") else value
        return params

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
