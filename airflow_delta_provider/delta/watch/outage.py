"""A store outage as a poller sees it: one warning when it starts, one line when it ends.

A sensor or trigger polls a table's log every few seconds. When the store
fails for a while (throttling, a dropped network, a 5xx spell that outlasts
the store's own retries), each poll fails the same way: warning once per poll
would bury the one line that matters. :class:`Outage` keeps the state between
polls: the first failed poll of an outage logs a warning, the next ones are
counted silently, and the first poll that answers again logs how long it
lasted. A poll that failed moved no cursor (a watch advances only after a
whole poll), so no version is skipped; the poller simply polls again.

Only the failures a later poll may not meet are an outage
(:func:`is_transient_failure`): refused credentials and a missing bucket are
not, and fail the poller at once.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

from airflow_delta_provider.delta.errors import StorageAccessDeniedError, StorageError, StorageNotFoundError


def is_transient_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a store failure that a later poll may not meet: a
    store error other than refused credentials or a missing bucket, or a
    dropped connection or a timeout of a local file system."""
    if isinstance(exc, StorageError):
        return not isinstance(exc, (StorageAccessDeniedError, StorageNotFoundError))
    return isinstance(exc, (ConnectionError, TimeoutError))


class Outage:
    """The store failures of one poller, between its polls."""

    def __init__(self, log: logging.Logger | logging.LoggerAdapter[logging.Logger], table_path: str) -> None:
        self.log = log
        self.table_path = table_path
        #: Failed polls in the current outage (0: the store answers).
        self.failed_polls = 0
        #: Outages seen so far (a warning each).
        self.outages = 0
        self._since = 0.0

    @contextlib.contextmanager
    def polling(self) -> Iterator[None]:
        """Run one poll: a transient failure in it is counted (and warned
        about once per outage) instead of raised; any other error passes."""
        try:
            yield
        except Exception as exc:
            if not is_transient_failure(exc):
                raise
            self.failed(exc)
        else:
            self.answered()

    def failed(self, exc: BaseException) -> None:
        """A poll failed with a transient store error: warn if an outage starts."""
        if self.failed_polls == 0:
            self.outages += 1
            self._since = time.monotonic()
            self.log.warning(
                "Cannot read the log of %s, polling on until the store answers (warned once per outage): %s",
                self.table_path,
                exc,
            )
        self.failed_polls += 1

    def answered(self) -> None:
        """A poll went through: log the end of an outage, if there was one."""
        if self.failed_polls:
            self.log.info(
                "The store of %s answers again after %d failed polls (%.1f s)",
                self.table_path,
                self.failed_polls,
                time.monotonic() - self._since,
            )
            self.failed_polls = 0


__all__ = ["Outage", "is_transient_failure"]
