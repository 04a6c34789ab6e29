"""When to send a request again, and after how long. Shared by the sync and async clients.

Retried, as the service's error catalog says (docs/errors.md): 429 (rate_limited), the 503s it marks
retryable (queue_full, queue_timeout, service_warming, gateway_draining; any 503 carrying
Retry-After), 500 internal_error, 502 upstream_failed and 504 upstream_timeout ("with backoff"), and
connections that failed before the request was sent. Never a 4xx other than 429: a bad request stays
bad, and a retried 402 or 401 cannot succeed; nor 502 upstream_lost (the request may have been what
crashed the model server). The wait honours Retry-After (seconds or an HTTP date) and never goes below it;
without it, exponential backoff with jitter. A Retry-After longer than ``max_wait`` is not slept
through: the error is raised at once with its ``retry_after``.
"""
from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass
from typing import Mapping, Optional

RETRYABLE_503 = frozenset({"queue_full", "queue_timeout", "service_warming", "gateway_draining"})
# The catalog's "retry with backoff" server errors, by status.
RETRYABLE_5XX = {500: frozenset({"internal_error"}), 502: frozenset({"upstream_failed"}), 504: frozenset({"upstream_timeout"})}


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_wait: float = 60.0


def parse_retry_after(headers: Mapping[str, str]) -> Optional[float]:
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def is_retryable(status: int, code: str, retry_after: Optional[float]) -> bool:
    if status == 429:
        return True
    if status == 503:
        return code in RETRYABLE_503 or retry_after is not None
    return code in RETRYABLE_5XX.get(status, frozenset())


def backoff_delay(policy: RetryPolicy, attempt: int) -> float:
    """Exponential backoff with "equal jitter": half fixed, half random, so waits never collapse to 0."""
    base = min(policy.max_backoff, policy.backoff * 2.0**attempt)
    return base / 2 + random.uniform(0, base / 2)


def delay_for(policy: RetryPolicy, attempt: int, status: int, code: str, retry_after: Optional[float]) -> Optional[float]:
    """Seconds to wait before attempt ``attempt + 1``, or None to give up and raise."""
    if attempt >= policy.max_retries or not is_retryable(status, code, retry_after):
        return None
    if retry_after is not None:
        return retry_after if retry_after <= policy.max_wait else None
    return backoff_delay(policy, attempt)
