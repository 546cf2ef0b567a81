/**
 * @param {string} name @param {string} holder @param {number} ttl @param {number} wait
 * @returns {Request}
 */
export function acquire(name: string, holder: string, ttl: number, wait: number): Request;
/**
 * @param {string} holder @param {Array<[string, number]>} holdings @param {number} ttl
 * @returns {Request}
 */
export function renewMany(holder: string, holdings: Array<[string, number]>, ttl: number): Request;
/**
 * @param {string} name @param {string} holder @param {number} generation @param {string} grant
 * @returns {Request}
 */
export function release(name: string, holder: string, generation: number, grant: string): Request;
/**
 * @param {"claim" | "complete"} action @param {string} job @param {string} window
 * @param {string} lease @param {string} holder @param {number} generation
 * @returns {Request}
 */
export function windowAction(action: "claim" | "complete", job: string, window: string, lease: string, holder: string, generation: number): Request;
/**
 * @param {string} cron @param {string} timezone @param {string} key @param {number} tolerance
 * @returns {Request}
 */
export function resolveWindow(cron: string, timezone: string, key: string, tolerance: number): Request;
/**
 * @param {string} resource @param {string} lease @param {number} generation
 * @returns {Request}
 */
export function verifyFence(resource: string, lease: string, generation: number): Request;
/**
 * @param {string[]} resources @param {string} lease @param {number} generation
 * @returns {Request}
 */
export function verifyFences(resources: string[], lease: string, generation: number): Request;
/** @param {string} name @returns {Request} */
export function getLease(name: string): Request;
/** @param {string} job @param {string} window @returns {Request} */
export function getWindow(job: string, window: string): Request;
/**
 * JSON with camelCase keys, refusing inexact integers where exactness matters.
 * @param {unknown} value
 * @param {string} [key]
 * @returns {any}
 */
export function readJson(value: unknown, key?: string): any;
/**
 * The `Retry-After` header in seconds, when it is one.
 * @param {Headers} headers
 */
export function retryAfterHeader(headers: Headers): number | null;
/**
 * The error a problem names (its class by `type`), as if it had been answered alone.
 * @param {number} status
 * @param {Record<string, unknown>} problem
 * @param {number | null} [retryAfter]
 * @returns {TenureError}
 */
export function problemError(status: number, problem: Record<string, unknown>, retryAfter?: number | null): TenureError;
/**
 * The decoded body of a 2xx answer (camelCase keys); otherwise throws the error it describes.
 * @param {number} status
 * @param {Headers} headers
 * @param {string} text
 * @returns {any}
 */
export function decodeResponse(status: number, headers: Headers, text: string): any;
/**
 * A batch verify's answer, each refusal's problem read into the error a single verify throws.
 * @param {any} answer
 * @returns {{accepted: any[], refused: Array<{resource: string, lease: string, generation: number, error: TenureError}>}}
 */
export function verifications(answer: any): {
    accepted: any[];
    refused: Array<{
        resource: string;
        lease: string;
        generation: number;
        error: TenureError;
    }>;
};
export type Request = {
    method: "GET" | "POST" | "PUT" | "DELETE";
    path: string;
    body?: Record<string, unknown> | undefined;
    /**
     * seconds the service may hold the request open (a waiting acquire)
     */
    wait?: number | undefined;
};
import { TenureError } from "./errors.js";
