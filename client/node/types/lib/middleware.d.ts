/**
 * A Tenure resource name for a resource key, as the Python client's: the key itself when valid,
 * else with its slashes turned into colons (`/payments/42` → `payments:42`), else `sha256:…`.
 * @param {string} key
 */
export function tenureResourceName(key: string): string;
/**
 * The one Fencing-Token of a request as [lease, generation]. Sent more than once (even with
 * equal values) is malformed: two tokens cannot both be the request's.
 * @param {string[]} rawHeaders
 * @returns {[string, number]}
 */
export function tokenOf(rawHeaders: string[]): [string, number];
/**
 * Middleware for node:http and Express: `(req, res, next)`. A refusal is answered here and
 * `next` is not called; an error of the store itself is passed to `next(error)`.
 * @param {FencingOptions} options
 * @returns {(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void}
 */
export function fencing(options: FencingOptions): (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;
/**
 * The Fastify form: an `onRequest` hook (Fastify does not run Express middleware by itself).
 * @param {FencingOptions} options
 * @returns {(request: {raw: IncomingMessage}, reply: any) => Promise<void>}
 */
export function fencingHook(options: FencingOptions): (request: {
    raw: IncomingMessage;
}, reply: any) => Promise<void>;
/**
 * A Fastify plugin adding `fencingHook(options)` to the whole app (not encapsulated):
 * `await app.register(fastifyFencing, { store })`.
 * @param {{addHook(name: "onRequest", hook: (request: any, reply: any) => Promise<void>): unknown}} fastify
 * @param {FencingOptions} options
 */
export function fastifyFencing(fastify: {
    addHook(name: "onRequest", hook: (request: any, reply: any) => Promise<void>): unknown;
}, options: FencingOptions): Promise<void>;
/** @typedef {import("node:http").IncomingMessage} IncomingMessage */
/** @typedef {import("node:http").ServerResponse} ServerResponse */
export const UNSAFE_METHODS: readonly string[];
export const DEFAULT_MISSING_STATUS: 428;
/** The fence refused a request, or could not decide (then it refuses too). */
export class FencingError extends Error {
    /**
     * @param {"fencing-token-required" | "fencing-token-malformed" | "stale-generation" | "fence-lease-mismatch" | "unknown-generation" | "fence-store-unavailable" | "fencing-refused"} slug
     *   the problem type it is answered with
     * @param {string} detail
     * @param {Record<string, unknown>} [facts] the problem's extension members (`highest`, …)
     */
    constructor(slug: "fencing-token-required" | "fencing-token-malformed" | "stale-generation" | "fence-lease-mismatch" | "unknown-generation" | "fence-store-unavailable" | "fencing-refused", detail: string, facts?: Record<string, unknown>);
    slug: "stale-generation" | "fence-lease-mismatch" | "unknown-generation" | "fencing-token-required" | "fencing-token-malformed" | "fence-store-unavailable" | "fencing-refused";
    detail: string;
    facts: Record<string, unknown>;
}
/**
 * @typedef {object} FenceStore where a resource keeps its fences (share one per process)
 * @property {(resource: string) => Promise<() => void>} guard hold off this process's other
 *   users of `resource` until the returned function is called
 * @property {(resource: string, lease: string, generation: number) => Promise<number>} advance
 *   accept `generation` of `lease` (raising the highest to it), or throw a FencingError
 */
/** One lock per resource key, dropped when nobody holds or waits for it. */
export class ResourceLocks {
    /** @param {string} resource @returns {Promise<() => void>} the release */
    hold(resource: string): Promise<() => void>;
    get size(): number;
    #private;
}
/**
 * Fences in this process's memory: exact, but for ONE process only (tests, single-instance
 * services); a restart forgets every fence.
 * @implements {FenceStore}
 */
export class MemoryFenceStore implements FenceStore {
    /** @param {string} resource */
    guard(resource: string): Promise<() => void>;
    /** @param {string} resource @param {string} lease @param {number} generation */
    advance(resource: string, lease: string, generation: number): Promise<number>;
    /** The highest generation accepted for `resource`, if any. @param {string} resource */
    highest(resource: string): number | null;
    #private;
}
/**
 * Fences kept by the Tenure service (POST /v1/fences/{resource}/verify): the check is atomic
 * there and refuses generations never handed out, but check and write are not one step across
 * replicas of the resource (see docs/fencing.md). Tenure unreachable: refused (503), never let
 * through.
 * @implements {FenceStore}
 */
export class RemoteFenceStore implements FenceStore {
    /**
     * @param {{verifyFence(resource: string, lease: {name: string, generation: number}): Promise<{highest: number}>}} client a Tenure client
     * @param {{resourceName?: (key: string) => string}} [options]
     */
    constructor(client: {
        verifyFence(resource: string, lease: {
            name: string;
            generation: number;
        }): Promise<{
            highest: number;
        }>;
    }, options?: {
        resourceName?: (key: string) => string;
    });
    client: {
        verifyFence(resource: string, lease: {
            name: string;
            generation: number;
        }): Promise<{
            highest: number;
        }>;
    };
    resourceName: (key: string) => string;
    /** @param {string} resource */
    guard(resource: string): Promise<() => void>;
    /** @param {string} resource @param {string} lease @param {number} generation */
    advance(resource: string, lease: string, generation: number): Promise<number>;
    #private;
}
export type IncomingMessage = import("node:http").IncomingMessage;
export type ServerResponse = import("node:http").ServerResponse;
/**
 * where a resource keeps its fences (share one per process)
 */
export type FenceStore = {
    /**
     * hold off this process's other
     * users of `resource` until the returned function is called
     */
    guard: (resource: string) => Promise<() => void>;
    /**
     *   accept `generation` of `lease` (raising the highest to it), or throw a FencingError
     */
    advance: (resource: string, lease: string, generation: number) => Promise<number>;
};
export type FencingOptions = {
    store: FenceStore;
    /**
     * the resource key (default: the path)
     */
    resource?: ((req: IncomingMessage) => string) | undefined;
    /**
     * whether a token is needed (default:
     * POST, PUT, PATCH, DELETE)
     */
    require?: ((req: IncomingMessage) => boolean) | undefined;
    /**
     * the status of a request without a token (428)
     */
    missingStatus?: number | undefined;
};
