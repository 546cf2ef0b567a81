// Which failures are retried, and after how long (as tenure._retry): a request that got no
// answer and a 502/503/504 are retried with jittered exponential backoff, raised to the
// service's Retry-After; any other answer, 4xx above all, is the service's and is never retried.

import { TenureError, TransportError } from "./errors.js";

/**
 * @typedef {object} RetryPolicy
 * @property {number} attempts tries in all (1: no retry)
 * @property {number} backoff seconds of the first delay's ceiling
 * @property {number} maxBackoff seconds no delay exceeds, Retry-After included
 */

/** @type {Readonly<RetryPolicy>} */
export const DEFAULT_RETRY = Object.freeze({ attempts: 4, backoff: 0.2, maxBackoff: 5 });
/** @type {Readonly<RetryPolicy>} */
export const NO_RETRY = Object.freeze({ attempts: 1, backoff: 0.2, maxBackoff: 5 });

export const RETRYABLE_STATUSES = Object.freeze([502, 503, 504]);

/**
 * Seconds to sleep after `failures` failed tries: drawn from [c/2, c] with
 * c = min(maxBackoff, backoff * 2**(failures-1)), raised to `retryAfter` (capped at maxBackoff).
 * @param {RetryPolicy} policy
 * @param {number} failures
 * @param {number | null} [retryAfter]
 * @param {() => number} [draw]
 */
export function backoffDelay(policy, failures, retryAfter = null, draw = Math.random) {
  const ceiling = Math.min(policy.maxBackoff, policy.backoff * 2 ** Math.max(0, failures - 1));
  const seconds = ceiling / 2 + (draw() * ceiling) / 2;
  if (retryAfter === null || !Number.isFinite(retryAfter)) return seconds;
  return Math.max(seconds, Math.min(Math.max(retryAfter, 0), policy.maxBackoff));
}

/**
 * Seconds to sleep before sending again after `error`, or null to throw it.
 * @param {RetryPolicy} policy
 * @param {number} failures
 * @param {unknown} error
 * @param {() => number} [draw]
 * @returns {number | null}
 */
export function retryDelay(policy, failures, error, draw = Math.random) {
  if (failures >= policy.attempts || !(error instanceof TenureError)) return null;
  if (error instanceof TransportError) return backoffDelay(policy, failures, null, draw);
  if (error.status === null || !RETRYABLE_STATUSES.includes(error.status)) return null;
  return backoffDelay(policy, failures, error.retryAfter, draw);
}
