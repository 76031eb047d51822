"""Retries of store calls that obstore gives up on at once.

obstore (the Rust ``object_store``) retries a request itself, with
exponential back-off and jitter, on 5xx and 429 answers, on connections
that fail before the request is sent, and on timeouts and resets of the
requests it knows to be idempotent (GET, HEAD, a plain PUT). It surfaces at
once, without retrying, a timeout or reset of a request it takes for not
idempotent (a bulk delete is a POST) and an answer whose body was cut off
(a listing page, a delete's result). Those calls are idempotent for us, so
:class:`RetryPolicy` retries them here, with the same settings: bounded by
``max_retries`` and ``retry_timeout``, backing off as obstore does, one
warning line per retry (no secret: URL queries are cut from store messages).
The loop is tenacity's (one policy for calls and coroutines alike).

The conditional create of a commit is never retried here: a create whose
answer was lost is settled by reading the object back
(:meth:`ObjectStorage.put_if_absent
<airflow_delta_provider.delta.storage.store.ObjectStorage.put_if_absent>`).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import tenacity

log = logging.getLogger(__name__)

T = TypeVar("T")

#: obstore's defaults (``RetryConfig``, ``BackoffConfig``).
DEFAULT_MAX_RETRIES = 10
DEFAULT_RETRY_TIMEOUT = 180.0
DEFAULT_INIT_BACKOFF = 0.1
DEFAULT_MAX_BACKOFF = 15.0
DEFAULT_BACKOFF_BASE = 2.0


def is_transient(message: str) -> bool:
    """Whether obstore's error (its first line) is a transport or body error
    it gave up on without retrying: it names an HTTP error and no retry budget
    spent (a request it retried says ``after N retries, max_retries: M``)."""
    return "HTTP error" in message and "max_retries" not in message


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry, as obstore's ``RetryConfig`` says."""

    max_retries: int = DEFAULT_MAX_RETRIES
    retry_timeout: float = DEFAULT_RETRY_TIMEOUT
    init_backoff: float = DEFAULT_INIT_BACKOFF
    max_backoff: float = DEFAULT_MAX_BACKOFF
    base: float = DEFAULT_BACKOFF_BASE

    @classmethod
    def of(cls, retry_config: Mapping[str, Any]) -> RetryPolicy:
        """The policy of an obstore ``retry_config`` (timedeltas in it)."""
        backoff = retry_config.get("backoff") or {}
        return cls(
            max_retries=int(retry_config.get("max_retries", DEFAULT_MAX_RETRIES)),
            retry_timeout=_seconds(retry_config.get("retry_timeout"), DEFAULT_RETRY_TIMEOUT),
            init_backoff=_seconds(backoff.get("init_backoff"), DEFAULT_INIT_BACKOFF),
            max_backoff=_seconds(backoff.get("max_backoff"), DEFAULT_MAX_BACKOFF),
            base=float(backoff.get("base", DEFAULT_BACKOFF_BASE)),
        )

    def backoff(self, retry: int) -> float:
        """The pause before retry ``retry`` (1-based): full jitter below the
        exponential bound, as obstore backs off."""
        bound = min(self.max_backoff, self.init_backoff * self.base ** (retry - 1))
        return random.uniform(0, bound)

    def _retrying(self, what: str, transient: Callable[[BaseException], str | None]) -> dict[str, Any]:
        """tenacity's settings for this policy, the same for a call and a
        coroutine: retry while ``transient(error)`` names the error, at most
        ``max_retries`` times within ``retry_timeout``, one warning a retry;
        when the budget is spent, the last error is raised as it was."""

        def pause(state: tenacity.RetryCallState) -> float:
            return self.backoff(state.attempt_number)

        def warn(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            message = transient(error) if error is not None else ""
            log.warning(
                "%s: retry %d of %d in %.2f s after: %s",
                what,
                state.attempt_number,
                self.max_retries,
                state.upcoming_sleep,
                message,
            )

        return {
            "retry": tenacity.retry_if_exception(lambda exc: transient(exc) is not None),
            "stop": tenacity.stop_after_attempt(self.max_retries + 1) | tenacity.stop_after_delay(self.retry_timeout),
            "wait": pause,
            "before_sleep": warn,
            "reraise": True,
        }

    def call(self, what: str, fn: Callable[[], T], transient: Callable[[BaseException], str | None]) -> T:
        """``fn()``, retried while ``transient(error)`` names a retryable error."""
        return tenacity.Retrying(**self._retrying(what, transient))(fn)

    async def call_async(
        self, what: str, fn: Callable[[], Awaitable[T]], transient: Callable[[BaseException], str | None]
    ) -> T:
        """:meth:`call` for a coroutine: the pauses never block the event loop."""
        return await tenacity.AsyncRetrying(**self._retrying(what, transient))(fn)


def _seconds(value: Any, default: float) -> float:
    return value.total_seconds() if value is not None else default


__all__ = ["RetryPolicy", "is_transient"]
