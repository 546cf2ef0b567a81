// The client's errors: one class per problem type of the catalogue (generated into problems.js),
// under TenureError, and the few that no answer names.
//
// TenureError                  anything the service refused, or could not be asked
// ├── TransportError           no answer: connection refused or reset, timeout, DNS, TLS
// ├── UnexpectedResponse       an answer this client cannot read (not JSON, missing fields,
// │                            a generation outside Number.isSafeInteger)
// ├── ServiceUnavailable       a 502/503/504 without a problem; retried
// │   ├── StorageUnavailable   503 storage-unavailable
// │   ├── ShuttingDown         503 shutting-down
// │   └── TooManyStreams       503 too-many-streams
// └── one class per other problem type: LeaseHeld, LeaseLost, WindowCompleted, StaleGeneration, …
//
// A problem type this client does not know is thrown as TenureError itself, with `.problem` the
// decoded body and `.status` the HTTP status, so nothing the service said is lost.

/**
 * @typedef {object} ErrorOptions
 * @property {number | null} [status] the HTTP status; null when there was no answer
 * @property {Record<string, unknown>} [problem] the RFC 9457 body as decoded
 * @property {number | null} [retryAfter] seconds the service asked to wait (Retry-After)
 * @property {unknown} [cause]
 */

export class TenureError extends Error {
  /** The problem slug of the class (`lease-held`); "" for errors no problem type names. */
  static slug = "";
  /** The HTTP status the catalogue gives the type. */
  static status = 0;
  /** The catalogue's title of the type. */
  static title = "";

  /**
   * @param {string} detail
   * @param {ErrorOptions} [options]
   */
  constructor(detail, options = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.detail = detail;
    /** @type {number | null} */
    this.status = options.status === undefined ? new.target.status || null : options.status;
    /** @type {Record<string, unknown>} */
    this.problem = options.problem ?? {};
    /** @type {number | null} */
    this.retryAfter = options.retryAfter ?? null;
  }

  /** The problem `type` (`/problems/lease-held`), when the service sent one. */
  get type() {
    const kind = this.problem.type;
    return typeof kind === "string" ? kind : null;
  }
}

/** The request got no answer. It may or may not have reached the service. */
export class TransportError extends TenureError {}

/** The service answered something this client does not understand. */
export class UnexpectedResponse extends TenureError {}

/** The service (or a proxy in front of it) cannot answer now; retrying later may work. */
export class ServiceUnavailable extends TenureError {
  static status = 503;
}

/** The fact kinds problems.js declares, checked by `fact`. */
const KINDS = {
  string: (/** @type {unknown} */ value) => typeof value === "string",
  number: (/** @type {unknown} */ value) => typeof value === "number" && Number.isFinite(value),
  generation: (/** @type {unknown} */ value) =>
    typeof value === "number" && Number.isSafeInteger(value) && value >= 0,
  array: (/** @type {unknown} */ value) => Array.isArray(value),
};

/**
 * One extension member of a problem, checked: a generation is refused (never rounded) unless
 * it is a safe integer. A kind ending in "?" may be absent or null (read as null).
 *
 * @param {Record<string, unknown>} problem
 * @param {string} member
 * @param {string} kind
 * @returns {any}
 */
export function fact(problem, member, kind) {
  const optional = kind.endsWith("?");
  const check = KINDS[/** @type {keyof typeof KINDS} */ (optional ? kind.slice(0, -1) : kind)];
  const value = problem[member];
  if (value === undefined || value === null) {
    if (optional) return null;
    throw new TypeError(`field '${member}' is missing`);
  }
  if (!check(value)) throw new TypeError(`field '${member}' is not a ${kind}: ${String(value)}`);
  return value;
}
