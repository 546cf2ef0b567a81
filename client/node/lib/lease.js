// A lease held by one client: its generation, grant and local deadline, the AbortSignal aborted
// when it is lost or released, and (under withLease) the renewal loop.
//
// When is the lease lost? When a renewal is answered lost or refused, or when no renewal has
// succeeded for so long that the lease may have expired. The last is decided on the monotonic
// clock (performance.now()), never on wall-clock time: the lease counts as held until
// `sent + ttl`, where `sent` is when the last successful acquire or renew request was *sent* —
// the service set the expiry no earlier than that, so the local deadline never falls after the
// real one. A renewal answered after that deadline does not revive the lease.

import { performance } from "node:perf_hooks";
import { TenureError } from "./errors.js";
import { LeaseLost, RateLimited } from "./problems.js";
import * as P from "./protocol.js";
import { NO_RETRY, backoffDelay } from "./retry.js";
import { fencingHeaders, formatToken } from "./tokens.js";

// Renewals per TTL: a lease survives two failed renewals in a row.
export const RENEWALS_PER_TTL = 3;
// A renewal waits for its answer at least this long, even right before the deadline.
const MIN_REQUEST_TIMEOUT = 0.2;

/**
 * What a lease needs from its client.
 * @typedef {object} LeaseClient
 * @property {string} holder
 * @property {number} timeout
 * @property {import("./retry.js").RetryPolicy} retry
 * @property {(request: P.Request, options?: {retry?: import("./retry.js").RetryPolicy, timeout?: number}) => Promise<any>} call
 */

export class Lease {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #renewTimer;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #deadlineTimer;
  /** @type {Promise<void> | null} */
  #renewing = null;
  #failures = 0;
  #ended = false;
  /** @type {Error | null} */
  #lost = null;

  /**
   * @param {LeaseClient} client
   * @param {any} answer the acquire answer (camelCase)
   * @param {number} sentAt performance.now() when the acquire that answered was sent
   * @param {number} ttl seconds
   */
  constructor(client, answer, sentAt, ttl) {
    this.client = client;
    /** @type {string} */
    this.name = answer.name;
    /** @type {number} */
    this.generation = answer.generation;
    /** @type {string} */
    this.grant = answer.grant;
    /** The service's clock: for people and logs; never compare it with this host's clock.
     * @type {string} */
    this.expiresAt = answer.expiresAt;
    this.ttl = ttl;
    this.interval = ttl / RENEWALS_PER_TTL;
    this.lastSent = sentAt;
    this.deadline = sentAt + ttl * 1000;
    this.controller = new AbortController();
    this.#armDeadline(false);
  }

  /** Aborted (with a LeaseLost reason) once the lease is lost, or once it is released. */
  get signal() {
    return this.controller.signal;
  }

  /** Seconds until the local deadline (performance.now()): the lease is surely held until then. */
  get expiresInSeconds() {
    return Math.max(0, (this.deadline - performance.now()) / 1000);
  }

  /** Whether the lease is, or may be, lost. */
  get lost() {
    return this.#lost !== null || performance.now() >= this.deadline;
  }

  /** Why the lease was lost, once it was. */
  get lostReason() {
    return this.#lost;
  }

  /** Throw LeaseLost if the lease is, or may be, lost: call it between units of work. */
  check() {
    if (performance.now() >= this.deadline) this.#lose(this.#expired());
    if (this.#lost) throw this.#lost;
  }

  /** `"<lease>/<generation>"`. */
  get fencingToken() {
    return formatToken(this.name, this.generation);
  }

  /** `{"Fencing-Token": "<lease>/<generation>"}` for requests to a fenced resource. */
  fencingHeaders() {
    return fencingHeaders(this.name, this.generation);
  }

  /** Renew every TTL/3 (by the send time of the last successful renewal) until released. */
  startRenewing() {
    this.#armDeadline(true);
    this.#schedule(this.lastSent + this.interval * 1000);
  }

  /**
   * End the holding now and abort the signal. Waits for a renewal on its way (its answer names
   * the grant to release). Throws what the service answered, unless the lease was lost.
   */
  async release() {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#renewTimer);
    await this.#renewing;
    clearTimeout(this.#deadlineTimer);
    const request = P.release(this.name, this.client.holder, this.generation, this.grant);
    const lost = this.#lost;
    try {
      // Sent when lost too: a deadline passed here may leave the service holding it longer.
      await this.client.call(request, {
        timeout: Math.max(1, Math.min(this.client.timeout, this.ttl)),
        ...(lost ? { retry: NO_RETRY } : {}),
      });
    } catch (error) {
      if (!lost) throw error;
    } finally {
      this.controller.abort(this.#lost ?? new Error(`lease ${this.name} released`));
    }
  }

  /**
   * Count a renewal answer (of the renewal loop or of `tenure.renewMany`): the grant a release
   * must name, and the deadline moved to `sentAt + ttl`. False when it came too late to count.
   * @param {{grant: string, expiresAt: string}} renewed
   * @param {number} sentAt performance.now() when the renewal was sent
   */
  renewedBy(renewed, sentAt) {
    if (performance.now() >= this.deadline) return false;
    this.lastSent = Math.max(this.lastSent, sentAt);
    this.deadline = Math.max(this.deadline, sentAt + this.ttl * 1000);
    this.grant = renewed.grant;
    this.expiresAt = renewed.expiresAt;
    return true;
  }

  /** @param {boolean} ref whether the timer keeps the process alive (a running withLease) */
  #armDeadline(ref) {
    clearTimeout(this.#deadlineTimer);
    const timer = setTimeout(
      () => this.#lose(this.#expired()),
      Math.max(0, this.deadline - performance.now()),
    );
    if (!ref) timer.unref();
    this.#deadlineTimer = timer;
  }

  #expired() {
    const message = `lease ${this.name}: no renewal succeeded within the TTL (${this.ttl} s)`;
    return new LeaseLost(message, { status: null, problem: { generation: this.generation } });
  }

  /** @param {Error} reason */
  #lose(reason) {
    if (this.#lost || this.controller.signal.aborted) return;
    this.#lost = reason;
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#deadlineTimer);
    this.controller.abort(reason);
  }

  /** @param {number} at performance.now() time */
  #schedule(at) {
    clearTimeout(this.#renewTimer);
    if (this.#ended || this.#lost) return;
    this.#renewTimer = setTimeout(() => {
      this.#renewing = this.#renew().finally(() => {
        this.#renewing = null;
      });
    }, Math.max(0, at - performance.now()));
  }

  async #renew() {
    const sentAt = performance.now();
    if (sentAt >= this.deadline) return this.#lose(this.#expired());
    const timeout = Math.max(MIN_REQUEST_TIMEOUT, Math.min(this.client.timeout, (this.deadline - sentAt) / 1000));
    const request = P.renewMany(this.client.holder, [[this.name, this.generation]], this.ttl);
    try {
      const answer = await this.client.call(request, { retry: NO_RETRY, timeout });
      if (this.#lost) return;
      this.#renewed(answer, sentAt);
    } catch (error) {
      this.#failed(error);
    }
  }

  /** @param {any} answer @param {number} sentAt */
  #renewed(answer, sentAt) {
    const mine = (/** @type {any} */ item) =>
      item.name === this.name && item.generation === this.generation;
    const renewed = answer.renewed.find(mine);
    if (answer.lost.some(mine)) {
      return this.#lose(new LeaseLost(`lease ${this.name}: lost (the service answered)`, {
        problem: { generation: this.generation },
      }));
    }
    if (!renewed) return this.#retry(null); // undecided: retried until the deadline
    if (!this.renewedBy(renewed, sentAt)) return this.#lose(this.#expired()); // too late
    this.#failures = 0;
    if (this.#ended) return;
    this.#armDeadline(true);
    this.#schedule(this.lastSent + this.interval * 1000);
  }

  /** @param {unknown} error */
  #failed(error) {
    const retry =
      error instanceof TenureError &&
      (error.status === null || error.status >= 500 || error instanceof RateLimited);
    if (!retry) {
      const reason =
        error instanceof LeaseLost
          ? error
          : new LeaseLost(`lease ${this.name}: renewal refused: ${error}`, { cause: error });
      return this.#lose(reason);
    }
    this.#retry(error.retryAfter);
  }

  /** @param {number | null} retryAfter */
  #retry(retryAfter) {
    this.#failures += 1;
    const delay = Math.min(backoffDelay(this.client.retry, this.#failures, retryAfter), this.interval);
    this.#schedule(performance.now() + delay * 1000);
  }
}
