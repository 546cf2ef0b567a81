/**
 * Seconds to sleep after `failures` failed tries: drawn from [c/2, c] with
 * c = min(maxBackoff, backoff * 2**(failures-1)), raised to `retryAfter` (capped at maxBackoff).
 * @param {RetryPolicy} policy
 * @param {number} failures
 * @param {number | null} [retryAfter]
 * @param {() => number} [draw]
 */
export function backoffDelay(policy: RetryPolicy, failures: number, retryAfter?: number | null, draw?: () => number): number;
/**
 * Seconds to sleep before sending again after `error`, or null to throw it.
 * @param {RetryPolicy} policy
 * @param {number} failures
 * @param {unknown} error
 * @param {() => number} [draw]
 * @returns {number | null}
 */
export function retryDelay(policy: RetryPolicy, failures: number, error: unknown, draw?: () => number): number | null;
/**
 * @typedef {object} RetryPolicy
 * @property {number} attempts tries in all (1: no retry)
 * @property {number} backoff seconds of the first delay's ceiling
 * @property {number} maxBackoff seconds no delay exceeds, Retry-After included
 */
/** @type {Readonly<RetryPolicy>} */
export const DEFAULT_RETRY: Readonly<RetryPolicy>;
/** @type {Readonly<RetryPolicy>} */
export const NO_RETRY: Readonly<RetryPolicy>;
export const RETRYABLE_STATUSES: readonly number[];
export type RetryPolicy = {
    /**
     * tries in all (1: no retry)
     */
    attempts: number;
    /**
     * seconds of the first delay's ceiling
     */
    backoff: number;
    /**
     * seconds no delay exceeds, Retry-After included
     */
    maxBackoff: number;
};
