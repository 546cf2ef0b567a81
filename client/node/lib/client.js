// The client: its I/O (send, retry, wait) and one method per operation of the API, plus the
// two forms that hold a lease for a task: withLease and runOnce.

import os from "node:os";
import { performance } from "node:perf_hooks";
import { randomBytes } from "node:crypto";
import { TenureError, TransportError } from "./errors.js";
import { Lease } from "./lease.js";
import { LeaseHeld, LeaseLost, WindowCompleted, WindowNotDue } from "./problems.js";
import * as P from "./protocol.js";
import { DEFAULT_RETRY, retryDelay } from "./retry.js";
import { fencingHeaders, formatToken, idempotencyKey } from "./tokens.js";

export const DEFAULT_TIMEOUT = 10;
export const DEFAULT_TTL = 90;
export const DEFAULT_MAX_WAIT_PER_REQUEST = 30;
export const DEFAULT_EARLY_TOLERANCE = 2;
// After a waiting acquire is answered "held" well before its wait, ask again after this pause.
const EARLY_ANSWER_PAUSE = 0.1;
// How often an acquire looks again when this client holds the name already.
const LOCAL_POLL_SECONDS = 0.05;

/**
 * @typedef {object} TenureOptions
 * @property {string} [url] the service's base URL (default: $TENURE_URL, else http://127.0.0.1:8080)
 * @property {string | null} [token] bearer token (default: $TENURE_TOKEN)
 * @property {string} [holder] who holds the leases (default: `host:pid:random`, unique per client)
 * @property {number} [timeout] seconds per request (AbortSignal.timeout)
 * @property {import("./retry.js").RetryPolicy} [retry]
 * @property {number} [maxWaitPerRequest] seconds a waiting acquire asks the service to wait at once
 * @property {typeof fetch} [fetch] the fetch to send with (tests record requests with it)
 */

/**
 * @typedef {object} LeaseOptions
 * @property {number} [ttlSeconds] the lease's TTL (default 90)
 * @property {number} [waitSeconds] how long to wait for a held lease (default 0: LeaseHeld at once)
 */

/**
 * @typedef {object} RunContext what a runOnce task receives
 * @property {string} job
 * @property {string} window
 * @property {number} attempt 1, or more when an earlier attempt did not complete the window
 * @property {string} lease
 * @property {number} generation
 * @property {AbortSignal} signal aborted once the lease is lost
 * @property {() => void} check throws LeaseLost once the lease is, or may be, lost
 * @property {(...parts: Array<string | number | bigint>) => string} idempotencyKey `job/window/part/…`
 * @property {() => Record<string, string>} fencingHeaders `{"Fencing-Token": "<lease>/<generation>"}`
 * @property {string} fencingToken
 */

/**
 * @template T
 * @typedef {{status: "completed", value: T, window: string, attempt: number, generation: number}
 *   | {status: "skipped", reason: "held" | "completed" | "not_due", window: string}} RunResult
 */

/**
 * Which occurrence runOnce runs: a window key, or a schedule the service resolves to one.
 * @typedef {{window: string} | {cron: string, timezone: string, key?: "occurrence" | "date" | "previous_day", earlyToleranceSeconds?: number}} When
 */

function defaultHolder() {
  const host = [...os.hostname()].filter((c) => c >= " " && c !== "\x7f").join("").slice(0, 150);
  return `${host || "localhost"}:${process.pid}:${randomBytes(4).toString("hex")}`;
}

/** @param {number} seconds */
const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** @param {unknown} value @param {string} what */
function positive(value, what) {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${what} must be a positive number of seconds, got ${String(value)}`);
  }
  return value;
}

export class Tenure {
  /** @param {TenureOptions} [options] */
  constructor(options = {}) {
    const url = options.url ?? process.env.TENURE_URL ?? "http://127.0.0.1:8080";
    this.url = url.replace(/\/+$/, "");
    this.token = options.token === undefined ? process.env.TENURE_TOKEN ?? null : options.token;
    this.holder = options.holder ?? defaultHolder();
    this.timeout = positive(options.timeout ?? DEFAULT_TIMEOUT, "timeout");
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.maxWaitPerRequest = positive(
      options.maxWaitPerRequest ?? DEFAULT_MAX_WAIT_PER_REQUEST,
      "maxWaitPerRequest",
    );
    this.fetch = options.fetch ?? globalThis.fetch;
    this.warnedClock = false;
  }

  /** The names this client holds (or is acquiring) now. @type {Set<string>} */
  #held = new Set();

  // I/O --------------------------------------------------------------------------------------

  /**
   * Send a request, retrying what may be retried; the decoded answer.
   * @param {P.Request} request
   * @param {{retry?: import("./retry.js").RetryPolicy, timeout?: number}} [options]
   * @returns {Promise<any>}
   */
  async call(request, options = {}) {
    const policy = options.retry ?? this.retry;
    for (let failures = 1; ; failures += 1) {
      try {
        return await this.#send(request, options.timeout ?? this.timeout);
      } catch (error) {
        const delay = retryDelay(policy, failures, error);
        if (delay === null) throw error;
        await sleep(delay);
      }
    }
  }

  /** @param {P.Request} request @param {number} timeout */
  async #send(request, timeout) {
    /** @type {Record<string, string>} */
    const headers = { accept: "application/json" };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (request.body) headers["content-type"] = "application/json";
    const init = {
      method: request.method,
      headers,
      body: request.body ? JSON.stringify(request.body) : undefined,
      signal: AbortSignal.timeout(Math.ceil((timeout + (request.wait ?? 0)) * 1000)),
    };
    let response;
    let text;
    try {
      response = await this.fetch(this.url + request.path, init);
      text = await response.text();
    } catch (error) {
      throw new TransportError(`${request.method} ${request.path}: ${error}`, {
        status: null,
        cause: error,
      });
    }
    return P.decodeResponse(response.status, response.headers, text);
  }

  // Leases -----------------------------------------------------------------------------------

  /**
   * Take lease `name` (or extend it if this client holds it). With waitSeconds, keep asking
   * that long: the service answers as soon as it is free. Throws LeaseHeld when still held.
   * The lease is not renewed: its signal aborts at its local deadline unless released first
   * (withLease renews). A name this client holds is held for it too: one client is one holder.
   * @param {string} name
   * @param {LeaseOptions} [options]
   * @returns {Promise<Lease>}
   */
  async acquire(name, options = {}) {
    const ttl = positive(options.ttlSeconds ?? DEFAULT_TTL, "ttlSeconds");
    const wait = options.waitSeconds ?? 0;
    if (!Number.isFinite(wait) || wait < 0) throw new RangeError("waitSeconds must be >= 0");
    const deadline = performance.now() + wait * 1000;
    // One client is one holder: the service would hand a second acquire of a name this client
    // holds the same holding, so it waits here as it would for another holder.
    while (this.#held.has(name)) {
      if (performance.now() >= deadline) throw this.#localRefusal(name);
      await sleep(LOCAL_POLL_SECONDS);
    }
    this.#held.add(name);
    try {
      const lease = await this.#acquire(name, ttl, deadline);
      lease.signal.addEventListener("abort", () => this.#held.delete(name), { once: true });
      return lease;
    } catch (error) {
      this.#held.delete(name);
      throw error;
    }
  }

  /** @param {string} name */
  #localRefusal(name) {
    const detail =
      `lease ${name} is already held by this client (one client is one holder: use one client` +
      " per concurrent worker)";
    const problem = { holder: this.holder, expires_at: new Date().toISOString() };
    return new LeaseHeld(detail, { status: null, problem, retryAfter: LOCAL_POLL_SECONDS });
  }

  /** @param {string} name @param {number} ttl @param {number} deadline performance.now() */
  async #acquire(name, ttl, deadline) {
    for (;;) {
      const sentAt = performance.now();
      const asked = Math.round(Math.max(0, Math.min(this.maxWaitPerRequest * 1000, deadline - sentAt))) / 1000;
      try {
        const answer = await this.call(P.acquire(name, this.holder, ttl, asked));
        return new Lease(this, answer, sentAt, ttl);
      } catch (error) {
        const now = performance.now();
        if (!(error instanceof LeaseHeld) || asked <= 0 || now >= deadline) throw error;
        // Answered early (another waiter was woken first): ask again after a short pause.
        const early = now - sentAt < (asked * 1000) / 2;
        if (early) await sleep(Math.min(EARLY_ANSWER_PAUSE, (deadline - now) / 1000));
      }
    }
  }

  /**
   * Run `task(lease)` holding lease `name`: renewed every TTL/3, `lease.signal` aborted once
   * the lease is lost (then LeaseLost is thrown out of withLease), released when the task ends,
   * however it ends.
   * @template T
   * @param {string} name
   * @param {LeaseOptions} options
   * @param {(lease: Lease) => Promise<T>} task
   * @returns {Promise<T>}
   */
  async withLease(name, options, task) {
    const lease = await this.acquire(name, options);
    lease.startRenewing();
    let value;
    try {
      value = await task(lease);
    } catch (error) {
      throw lease.lostReason ?? error;
    } finally {
      await lease.release().catch(() => {}); // not released: it expires by itself
    }
    if (lease.lostReason) throw lease.lostReason;
    return value;
  }

  /**
   * Renew many of this client's holdings in one request: `{renewed, lost, undecided}`. A
   * Lease given (with this TTL) takes the renewal's grant and deadline.
   * @param {Array<Lease | [string, number]>} holdings
   * @param {number} ttlSeconds
   */
  async renewMany(holdings, ttlSeconds) {
    const pairs = holdings.map((item) =>
      Array.isArray(item) ? item : /** @type {[string, number]} */ ([item.name, item.generation]),
    );
    const sentAt = performance.now();
    const answer = await this.call(P.renewMany(this.holder, pairs, positive(ttlSeconds, "ttlSeconds")));
    for (const item of holdings) {
      if (!(item instanceof Lease) || item.ttl !== ttlSeconds) continue;
      const renewed = answer.renewed.find(
        (/** @type {any} */ r) => r.name === item.name && r.generation === item.generation,
      );
      if (renewed) item.renewedBy(renewed, sentAt); // its release names the newest grant
    }
    return answer;
  }

  /** @param {string} name */
  async getLease(name) {
    return this.call(P.getLease(name));
  }

  // Windows ----------------------------------------------------------------------------------

  /**
   * Start (or resume: attempt + 1) one occurrence of `job` under a held lease; WindowCompleted
   * when it already ran to completion.
   * @param {string} job @param {string} window @param {{name: string, generation: number}} lease
   */
  async claimWindow(job, window, lease) {
    return this.call(P.windowAction("claim", job, window, lease.name, this.holder, lease.generation));
  }

  /** @param {string} job @param {string} window @param {{name: string, generation: number}} lease */
  async completeWindow(job, window, lease) {
    return this.call(
      P.windowAction("complete", job, window, lease.name, this.holder, lease.generation),
    );
  }

  /** @param {string} job @param {string} window */
  async getWindow(job, window) {
    return this.call(P.getWindow(job, window));
  }

  /**
   * The window key of the occurrence of `cron` in `timezone` a scheduler firing now meant, by
   * the service's (the database's) clock: this host's clock decides nothing.
   * @param {string} cron
   * @param {string} timezone
   * @param {{key?: "occurrence" | "date" | "previous_day", earlyToleranceSeconds?: number}} [options]
   * @returns {Promise<string>}
   */
  async resolveWindow(cron, timezone, options = {}) {
    const tolerance = options.earlyToleranceSeconds ?? DEFAULT_EARLY_TOLERANCE;
    const sent = Date.now();
    const answer = await this.call(
      P.resolveWindow(cron, timezone, options.key ?? "occurrence", tolerance),
    );
    // Told, not used: a host clock off the service's is worth a warning.
    const skew = Math.abs((sent + Date.now()) / 2 - Date.parse(answer.now)) / 1000;
    if (skew > tolerance && !this.warnedClock) {
      this.warnedClock = true;
      process.emitWarning(`this host's clock is ${skew.toFixed(1)} s off the Tenure service's`);
    }
    return answer.window;
  }

  /**
   * Run `task(ctx)` once for this occurrence of `job`: the window named or resolved by the
   * service, the job's lease acquired (skipped "held" if another holds it), the window claimed
   * (skipped "completed" if done), the task run, the window completed, the lease released.
   * A task that throws leaves the window claimed, not completed: the next run resumes it.
   * @template T
   * @param {string} job
   * @param {When} when
   * @param {LeaseOptions & {lease?: string}} options
   * @param {(ctx: RunContext) => Promise<T>} task
   * @returns {Promise<RunResult<T>>}
   */
  async runOnce(job, when, options, task) {
    const window =
      "window" in when
        ? when.window
        : await this.resolveWindow(when.cron, when.timezone, {
            key: when.key,
            earlyToleranceSeconds: when.earlyToleranceSeconds,
          });
    try {
      return await this.withLease(options.lease ?? job, options, async (lease) => {
        let claimed;
        try {
          claimed = await this.claimWindow(job, window, lease);
        } catch (error) {
          if (error instanceof WindowCompleted) return skipped("completed", window);
          if (error instanceof WindowNotDue) return skipped("not_due", window);
          throw error;
        }
        const value = await task(context(job, window, claimed.attempt, lease));
        lease.check();
        await this.completeWindow(job, window, lease);
        return /** @type {RunResult<T>} */ ({
          status: "completed",
          value,
          window,
          attempt: claimed.attempt,
          generation: lease.generation,
        });
      });
    } catch (error) {
      if (error instanceof LeaseHeld) return skipped("held", window);
      throw error;
    }
  }

  // Fences -----------------------------------------------------------------------------------

  /**
   * Record that `resource` accepts this generation; StaleGeneration if it saw a higher one.
   * @param {string} resource @param {{name: string, generation: number}} lease
   */
  async verifyFence(resource, lease) {
    return this.call(P.verifyFence(resource, lease.name, lease.generation));
  }

  /**
   * verifyFence on many resources in one request: `{accepted, refused}`, each refusal with the
   * error a single verify would throw.
   * @param {string[]} resources @param {{name: string, generation: number}} lease
   */
  async verifyFences(resources, lease) {
    return P.verifications(await this.call(P.verifyFences(resources, lease.name, lease.generation)));
  }
}

/**
 * @param {"held" | "completed" | "not_due"} reason @param {string} window
 * @returns {{status: "skipped", reason: "held" | "completed" | "not_due", window: string}}
 */
function skipped(reason, window) {
  return { status: "skipped", reason, window };
}

/**
 * @param {string} job @param {string} window @param {number} attempt @param {Lease} lease
 * @returns {RunContext}
 */
function context(job, window, attempt, lease) {
  return {
    job,
    window,
    attempt,
    lease: lease.name,
    generation: lease.generation,
    signal: lease.signal,
    check: () => lease.check(),
    idempotencyKey: (...parts) => idempotencyKey(job, window, ...parts),
    fencingHeaders: () => fencingHeaders(lease.name, lease.generation),
    fencingToken: formatToken(lease.name, lease.generation),
  };
}

