/**
 * The generation if it is an exact one (an integer from 1 to MAX_GENERATION); throws
 * otherwise: a generation is never rounded.
 * @param {unknown} generation
 * @returns {number}
 */
export function checkGeneration(generation: unknown): number;
/**
 * `"close-day/7"`.
 * @param {string} lease
 * @param {number} generation
 */
export function formatToken(lease: string, generation: number): string;
/**
 * `"close-day/7"` → `["close-day", 7]`; throws RangeError for anything else.
 * @param {string} value
 * @returns {[string, number]}
 */
export function parseToken(value: string): [string, number];
/**
 * `{"Fencing-Token": "<lease>/<generation>"}`, to merge into a request's headers.
 * @param {string} lease
 * @param {number} generation
 * @returns {Record<string, string>}
 */
export function fencingHeaders(lease: string, generation: number): Record<string, string>;
/**
 * `idempotencyKey("close-day", "2026-09-25", "store", 42)` is `"close-day/2026-09-25/store/42"`,
 * byte for byte what the Python client's `tenure.idempotency_key` gives for strings and integers
 * (safe integers or bigints); any other part is refused (its text would differ between the two).
 * @param {string} job
 * @param {string} window
 * @param {...(string | number | bigint)} parts
 */
export function idempotencyKey(job: string, window: string, ...parts: (string | number | bigint)[]): string;
export const FENCING_HEADER: "Fencing-Token";
/** The largest generation Tenure hands out, 2**53 - 1: the largest integer JSON readers
 * holding numbers as doubles (JavaScript) read exactly. */
export const MAX_GENERATION: number;
