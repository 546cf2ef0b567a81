/**
 * One extension member of a problem, checked: a generation is refused (never rounded) unless
 * it is a safe integer. A kind ending in "?" may be absent or null (read as null).
 *
 * @param {Record<string, unknown>} problem
 * @param {string} member
 * @param {string} kind
 * @returns {any}
 */
export function fact(problem: Record<string, unknown>, member: string, kind: string): any;
/**
 * @typedef {object} ErrorOptions
 * @property {number | null} [status] the HTTP status; null when there was no answer
 * @property {Record<string, unknown>} [problem] the RFC 9457 body as decoded
 * @property {number | null} [retryAfter] seconds the service asked to wait (Retry-After)
 * @property {unknown} [cause]
 */
export class TenureError extends Error {
    /** The problem slug of the class (`lease-held`); "" for errors no problem type names. */
    static slug: string;
    /** The HTTP status the catalogue gives the type. */
    static status: number;
    /** The catalogue's title of the type. */
    static title: string;
    /**
     * @param {string} detail
     * @param {ErrorOptions} [options]
     */
    constructor(detail: string, options?: ErrorOptions);
    detail: string;
    /** @type {number | null} */
    status: number | null;
    /** @type {Record<string, unknown>} */
    problem: Record<string, unknown>;
    /** @type {number | null} */
    retryAfter: number | null;
    /** The problem `type` (`/problems/lease-held`), when the service sent one. */
    get type(): string | null;
}
/** The request got no answer. It may or may not have reached the service. */
export class TransportError extends TenureError {
}
/** The service answered something this client does not understand. */
export class UnexpectedResponse extends TenureError {
}
/** The service (or a proxy in front of it) cannot answer now; retrying later may work. */
export class ServiceUnavailable extends TenureError {
}
export type ErrorOptions = {
    /**
     * the HTTP status; null when there was no answer
     */
    status?: number | null | undefined;
    /**
     * the RFC 9457 body as decoded
     */
    problem?: Record<string, unknown> | undefined;
    /**
     * seconds the service asked to wait (Retry-After)
     */
    retryAfter?: number | null | undefined;
    cause?: unknown;
};
