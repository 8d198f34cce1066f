"""Tile schedulers for persistent kernels (`T.PersistentTileScheduler`): a block (a
"worker") walks the tiles w, w + num_workers, ... of a 2-D tile grid, in column- or
row-major order, optionally in L2-friendly panels of `swizzle_size` tiles and at the
granularity of clusters of `cluster_size` rows.

State lives in four `T.alloc_var` scalars (current m and n tile, the worker's linear
cursor, the iteration count); methods that change it emit stores where they are
called, the others only build expressions. Every decision that is known while
tracing (order, clustering) is taken in Python, so the emitted code is the plain
index arithmetic."""
from __future__ import annotations

from tilelang.language.math import max as tmax, min as tmin


def meta_class(cls):
    """The published decorator that inlines a scheduler's methods into the kernel. Our
    frontend runs helper methods while tracing, which already emits their statements
    where they are called, so classes are used as they are."""
    return cls


class BaseTileScheduler:
    """The state and the walk; subclasses decode a linear tile index into (m, n) in
    `update_current_idx` and set `_total_tiles`."""

    def __init__(self, stateful: bool = True, name: str | None = None):
        from tilelang.language.alloc import alloc_var
        self._stateful = stateful
        self._total_tiles = 0
        if stateful:
            self._m_idx, self._n_idx, self._linear_idx, self._current_iter = (
                alloc_var("int32") for _ in range(4))
            if name:
                for part, buf in (("m_idx", self._m_idx), ("n_idx", self._n_idx),
                                  ("linear_idx", self._linear_idx), ("current_iter", self._current_iter)):
                    buf.name = f"{name}_{part}"

    def _state(self):
        if not self._stateful:
            from tilelang.ir.errors import TileLangError
            raise TileLangError(f"{type(self).__name__}(stateful=False) has no state: use coord(tile_id)")

    @property
    def m_idx(self):
        self._state()
        return self._m_idx[0]

    @property
    def n_idx(self):
        self._state()
        return self._n_idx[0]

    @property
    def linear_idx(self):
        self._state()
        return self._linear_idx[0]

    @property
    def current_iter(self):
        self._state()
        return self._current_iter[0]

    def update_current_idx(self, linear_idx):
        raise NotImplementedError(f"{type(self).__name__} must decode linear tile indices")

    def init(self, linear_init):
        self._state()
        self._current_iter[0] = 0
        self._linear_idx[0] = linear_init
        self.update_current_idx(self._linear_idx[0])

    def next_tile(self, step):
        self._state()
        self._current_iter[0] = self._current_iter[0] + 1
        self._linear_idx[0] = self._linear_idx[0] + step
        self.update_current_idx(self._linear_idx[0])

    def valid(self):
        self._state()
        return self._linear_idx[0] < self._total_tiles


class PersistentTileScheduler(BaseTileScheduler):
    """Grid-strided tile walk over `num_m_tiles` x `num_n_tiles` tiles.

    `column_major` (default): m varies fastest. `swizzle_size` > 1: the fast axis is
    swept for a panel of that many slow-axis tiles before the next panel (the last panel
    may be narrower). `cluster_size` > 1: m counts clusters of that many tile rows (the
    caller adds the block's rank in its cluster). `num_workers` defaults to one block
    per SM (per cluster). `stateful=False`: only `coord(tile_id)` is available."""

    def __init__(self, num_m_tiles, num_n_tiles, num_workers=None, swizzle_size: int = 1,
                 column_major: bool = True, cluster_size: int = 1, stateful: bool = True, name=None):
        super().__init__(stateful=stateful, name=name)
        from tilelang.language.math import ceildiv
        if num_workers is None:
            from tilelang.device import get_num_sms
            num_workers = get_num_sms() // cluster_size
        self.num_workers, self.swizzle_size, self.cluster_size = num_workers, swizzle_size, cluster_size
        self._column_major = column_major
        rows = ceildiv(num_m_tiles, cluster_size) if cluster_size != 1 else num_m_tiles
        self._total_tiles = rows * num_n_tiles
        self._fast, self._slow = (rows, num_n_tiles) if column_major else (num_n_tiles, rows)

    def coord(self, tile_id):
        """(m, n) of linear tile `tile_id` (expressions; no state involved)."""
        panel = self._fast * self.swizzle_size
        group = tile_id // panel
        first = group * self.swizzle_size
        # a narrower last panel; at least 1 so that indices past the end never divide by 0
        width = tmax(1, tmin(self.swizzle_size, self._slow - first))
        offset = tile_id - group * panel
        fast, slow = offset // width, first + offset % width
        return (fast, slow) if self._column_major else (slow, fast)

    def update_current_idx(self, linear_idx):
        m, n = self.coord(linear_idx)
        self._m_idx[0] = m
        self._n_idx[0] = n

    def init(self, worker_id):
        super().init(worker_id)

    def next_tile(self):
        super().next_tile(self.num_workers)
