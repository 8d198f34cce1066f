"""`tvm.transform.PassContext`: pass configs for the compiles inside a `with` block
(explicit `pass_configs=` of a compile win over them)."""
from __future__ import annotations

from tilelang.transform import pass_manager


class PassContext:
    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None, config=None):
        self.opt_level = opt_level
        self.config = {getattr(k, "value", k): v for k, v in (config or {}).items()}

    def __enter__(self):
        from tilelang.transform.pass_keys import check_pass_configs
        check_pass_configs(self.config)
        pass_manager.push_pass_configs(self.config)
        return self

    def __exit__(self, *exc):
        pass_manager.pop_pass_configs()
        return False

    @staticmethod
    def current():
        return PassContext(config=pass_manager.current_pass_configs())
