"""The log of one workflow job: everything a script prints or logs goes to its rule's log file.

Every script imports this first, so it stays light: a job that only reads and writes parquet
does not pay for torch or matplotlib.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from pathlib import Path

from threadpoolctl import threadpool_limits


@contextlib.contextmanager
def logged(log_path: str | None):
    """Send logging, stdout and stderr of a script to its rule's log file."""
    if not log_path:
        yield
        return
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        # Per-image work solves many tiny linear systems; multi-threaded BLAS is far slower on
        # those than one thread, and Snakemake already runs jobs in parallel.
        try:
            with threadpool_limits(limits=1, user_api="blas"):
                yield
        except BaseException:
            traceback.print_exc(file=fh)
            raise
        finally:
            root.removeHandler(handler)
            fh.flush()
