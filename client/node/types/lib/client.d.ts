export const DEFAULT_TIMEOUT: 10;
export const DEFAULT_TTL: 90;
export const DEFAULT_MAX_WAIT_PER_REQUEST: 30;
export const DEFAULT_EARLY_TOLERANCE: 2;
export class Tenure {
    /** @param {TenureOptions} [options] */
    constructor(options?: TenureOptions);
    url: string;
    token: string | null;
    holder: string;
    timeout: number;
    retry: Readonly<import("./retry.js").RetryPolicy>;
    maxWaitPerRequest: number;
    fetch: typeof fetch;
    warnedClock: boolean;
    /**
     * Send a request, retrying what may be retried; the decoded answer.
     * @param {P.Request} request
     * @param {{retry?: import("./retry.js").RetryPolicy, timeout?: number}} [options]
     * @returns {Promise<any>}
     */
    call(request: P.Request, options?: {
        retry?: import("./retry.js").RetryPolicy;
        timeout?: number;
    }): Promise<any>;
    /**
     * Take lease `name` (or extend it if this client holds it). With waitSeconds, keep asking
     * that long: the service answers as soon as it is free. Throws LeaseHeld when still held.
     * The lease is not renewed: its signal aborts at its local deadline unless released first
     * (withLease renews). A name this client holds is held for it too: one client is one holder.
     * @param {string} name
     * @param {LeaseOptions} [options]
     * @returns {Promise<Lease>}
     */
    acquire(name: string, options?: LeaseOptions): Promise<Lease>;
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
    withLease<T>(name: string, options: LeaseOptions, task: (lease: Lease) => Promise<T>): Promise<T>;
    /**
     * Renew many of this client's holdings in one request: `{renewed, lost, undecided}`. A
     * Lease given (with this TTL) takes the renewal's grant and deadline.
     * @param {Array<Lease | [string, number]>} holdings
     * @param {number} ttlSeconds
     */
    renewMany(holdings: Array<Lease | [string, number]>, ttlSeconds: number): Promise<any>;
    /** @param {string} name */
    getLease(name: string): Promise<any>;
    /**
     * Start (or resume: attempt + 1) one occurrence of `job` under a held lease; WindowCompleted
     * when it already ran to completion.
     * @param {string} job @param {string} window @param {{name: string, generation: number}} lease
     */
    claimWindow(job: string, window: string, lease: {
        name: string;
        generation: number;
    }): Promise<any>;
    /** @param {string} job @param {string} window @param {{name: string, generation: number}} lease */
    completeWindow(job: string, window: string, lease: {
        name: string;
        generation: number;
    }): Promise<any>;
    /** @param {string} job @param {string} window */
    getWindow(job: string, window: string): Promise<any>;
    /**
     * The window key of the occurrence of `cron` in `timezone` a scheduler firing now meant, by
     * the service's (the database's) clock: this host's clock decides nothing.
     * @param {string} cron
     * @param {string} timezone
     * @param {{key?: "occurrence" | "date" | "previous_day", earlyToleranceSeconds?: number}} [options]
     * @returns {Promise<string>}
     */
    resolveWindow(cron: string, timezone: string, options?: {
        key?: "occurrence" | "date" | "previous_day";
        earlyToleranceSeconds?: number;
    }): Promise<string>;
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
    runOnce<T>(job: string, when: When, options: LeaseOptions & {
        lease?: string;
    }, task: (ctx: RunContext) => Promise<T>): Promise<RunResult<T>>;
    /**
     * Record that `resource` accepts this generation; StaleGeneration if it saw a higher one.
     * @param {string} resource @param {{name: string, generation: number}} lease
     */
    verifyFence(resource: string, lease: {
        name: string;
        generation: number;
    }): Promise<any>;
    /**
     * verifyFence on many resources in one request: `{accepted, refused}`, each refusal with the
     * error a single verify would throw.
     * @param {string[]} resources @param {{name: string, generation: number}} lease
     */
    verifyFences(resources: string[], lease: {
        name: string;
        generation: number;
    }): Promise<{
        accepted: any[];
        refused: Array<{
            resource: string;
            lease: string;
            generation: number;
            error: TenureError;
        }>;
    }>;
    #private;
}
export type TenureOptions = {
    /**
     * the service's base URL (default: $TENURE_URL, else http://127.0.0.1:8080)
     */
    url?: string | undefined;
    /**
     * bearer token (default: $TENURE_TOKEN)
     */
    token?: string | null | undefined;
    /**
     * who holds the leases (default: `host:pid:random`, unique per client)
     */
    holder?: string | undefined;
    /**
     * seconds per request (AbortSignal.timeout)
     */
    timeout?: number | undefined;
    retry?: import("./retry.js").RetryPolicy | undefined;
    /**
     * seconds a waiting acquire asks the service to wait at once
     */
    maxWaitPerRequest?: number | undefined;
    /**
     * the fetch to send with (tests record requests with it)
     */
    fetch?: typeof fetch | undefined;
};
export type LeaseOptions = {
    /**
     * the lease's TTL (default 90)
     */
    ttlSeconds?: number | undefined;
    /**
     * how long to wait for a held lease (default 0: LeaseHeld at once)
     */
    waitSeconds?: number | undefined;
};
/**
 * what a runOnce task receives
 */
export type RunContext = {
    job: string;
    window: string;
    /**
     * 1, or more when an earlier attempt did not complete the window
     */
    attempt: number;
    lease: string;
    generation: number;
    /**
     * aborted once the lease is lost
     */
    signal: AbortSignal;
    /**
     * throws LeaseLost once the lease is, or may be, lost
     */
    check: () => void;
    /**
     * `job/window/part/…`
     */
    idempotencyKey: (...parts: Array<string | number | bigint>) => string;
    /**
     * `{"Fencing-Token": "<lease>/<generation>"}`
     */
    fencingHeaders: () => Record<string, string>;
    fencingToken: string;
};
export type RunResult<T> = {
    status: "completed";
    value: T;
    window: string;
    attempt: number;
    generation: number;
} | {
    status: "skipped";
    reason: "held" | "completed" | "not_due";
    window: string;
};
/**
 * Which occurrence runOnce runs: a window key, or a schedule the service resolves to one.
 */
export type When = {
    window: string;
} | {
    cron: string;
    timezone: string;
    key?: "occurrence" | "date" | "previous_day";
    earlyToleranceSeconds?: number;
};
import * as P from "./protocol.js";
import { Lease } from "./lease.js";
import { TenureError } from "./errors.js";
