export const RENEWALS_PER_TTL: 3;
/**
 * What a lease needs from its client.
 * @typedef {object} LeaseClient
 * @property {string} holder
 * @property {number} timeout
 * @property {import("./retry.js").RetryPolicy} retry
 * @property {(request: P.Request, options?: {retry?: import("./retry.js").RetryPolicy, timeout?: number}) => Promise<any>} call
 */
export class Lease {
    /**
     * @param {LeaseClient} client
     * @param {any} answer the acquire answer (camelCase)
     * @param {number} sentAt performance.now() when the acquire that answered was sent
     * @param {number} ttl seconds
     */
    constructor(client: LeaseClient, answer: any, sentAt: number, ttl: number);
    client: LeaseClient;
    /** @type {string} */
    name: string;
    /** @type {number} */
    generation: number;
    /** @type {string} */
    grant: string;
    /** The service's clock: for people and logs; never compare it with this host's clock.
     * @type {string} */
    expiresAt: string;
    ttl: number;
    interval: number;
    lastSent: number;
    deadline: number;
    controller: AbortController;
    /** Aborted (with a LeaseLost reason) once the lease is lost, or once it is released. */
    get signal(): AbortSignal;
    /** Seconds until the local deadline (performance.now()): the lease is surely held until then. */
    get expiresInSeconds(): number;
    /** Whether the lease is, or may be, lost. */
    get lost(): boolean;
    /** Why the lease was lost, once it was. */
    get lostReason(): Error | null;
    /** Throw LeaseLost if the lease is, or may be, lost: call it between units of work. */
    check(): void;
    /** `"<lease>/<generation>"`. */
    get fencingToken(): string;
    /** `{"Fencing-Token": "<lease>/<generation>"}` for requests to a fenced resource. */
    fencingHeaders(): Record<string, string>;
    /** Renew every TTL/3 (by the send time of the last successful renewal) until released. */
    startRenewing(): void;
    /**
     * End the holding now and abort the signal. Waits for a renewal on its way (its answer names
     * the grant to release). Throws what the service answered, unless the lease was lost.
     */
    release(): Promise<void>;
    /**
     * Count a renewal answer (of the renewal loop or of `tenure.renewMany`): the grant a release
     * must name, and the deadline moved to `sentAt + ttl`. False when it came too late to count.
     * @param {{grant: string, expiresAt: string}} renewed
     * @param {number} sentAt performance.now() when the renewal was sent
     */
    renewedBy(renewed: {
        grant: string;
        expiresAt: string;
    }, sentAt: number): boolean;
    #private;
}
/**
 * What a lease needs from its client.
 */
export type LeaseClient = {
    holder: string;
    timeout: number;
    retry: import("./retry.js").RetryPolicy;
    call: (request: P.Request, options?: {
        retry?: import("./retry.js").RetryPolicy;
        timeout?: number;
    }) => Promise<any>;
};
import * as P from "./protocol.js";
