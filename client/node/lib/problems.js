// Generated from tenure.problems by scripts/generate_node_problems.py: do not edit.
import { TenureError, ServiceUnavailable, fact } from "./errors.js";

/** @typedef {import('./errors.js').ErrorOptions} ErrorOptions */
/** @typedef {{status: number, title: string, description: string}} Problem */

export const MEDIA_TYPE = "application/problem+json";
export const TYPE_PREFIX = "/problems/";

/**
 * Every problem type of Tenure by slug: its HTTP status, title and description.
 * @type {Readonly<Record<string, Problem>>}
 */
export const PROBLEMS = Object.freeze({
  "unauthenticated": {
    "status": 401,
    "title": "Authentication required",
    "description": "The request carries no valid bearer token. Send `Authorization: Bearer <token>` with a token whose hash is in the service's tokens file (`tenure token new` makes both); in a browser, type any user name and the token as the password."
  },
  "forbidden": {
    "status": 403,
    "title": "Not allowed for this principal",
    "description": "The token is valid, but its principal's role (reader, client, admin) or namespaces (name prefixes) do not cover this action on this name. Use a token of a principal that may, or have an operator widen this principal's entry in the tokens file."
  },
  "holding-of-another-principal": {
    "status": 403,
    "title": "The holding belongs to another principal",
    "description": "The holder and generation are right, but another principal acquired this holding: only the principal that acquired it may renew, release, claim or complete with it. Use that principal's token."
  },
  "rate-limited": {
    "status": 429,
    "title": "Too many requests",
    "description": "This principal sends more requests than the service allows it (TENURE_RATE_LIMIT_PER_SECOND, per process). Wait `retry_after_seconds` (the Retry-After header), then send more slowly."
  },
  "reserved-name": {
    "status": 403,
    "title": "Name reserved to the service itself",
    "description": "Names under `tenure.` (`name`) belong to the service itself, such as its monitor's lease `tenure.monitor`: no caller may acquire, renew, release, claim, complete or verify with one, whatever its token. Rename the job, lease or resource."
  },
  "validation-error": {
    "status": 422,
    "title": "Invalid request",
    "description": "The request does not match the API: a value is missing, of the wrong type or outside its bounds. `errors` names each field and what is wrong with it; /docs has the contract."
  },
  "payload-too-large": {
    "status": 413,
    "title": "Request body too large",
    "description": "The request body is larger than the service accepts (TENURE_MAX_BODY_BYTES). Send less at once: a smaller batch."
  },
  "not-found": {
    "status": 404,
    "title": "No such resource",
    "description": "Nothing answers at this path. Check the URL against /docs: the API's paths start with /v1/."
  },
  "method-not-allowed": {
    "status": 405,
    "title": "Method not allowed",
    "description": "The path exists, but not for this method; the Allow header lists the methods it takes."
  },
  "http-error": {
    "status": 400,
    "title": "Bad request",
    "description": "The request could not be served as sent; its status and detail say why. Check it against /docs."
  },
  "lease-held": {
    "status": 409,
    "title": "Lease is held by another holder",
    "description": "Another holder (`holder`) holds the lease until `expires_at`, unless it renews. Skip this run; or retry after `retry_after_seconds` (Retry-After); or acquire with `wait_seconds` to wait for it."
  },
  "lease-lost": {
    "status": 409,
    "title": "Lease is no longer held by this holder",
    "description": "This holder no longer holds the lease at `generation`: the holding expired, was released or force-released, or another holder took the lease over. Stop the work done under it now; acquire again for a new generation."
  },
  "lease-not-found": {
    "status": 404,
    "title": "Lease not found",
    "description": "No lease has this name: it has never been acquired (a lease is created by its first acquire). Check the name, or acquire it."
  },
  "window-not-found": {
    "status": 404,
    "title": "Window not found",
    "description": "This job has no record of this window: nobody has claimed it yet. A holder of the job's lease claims it (POST /v1/jobs/{job}/windows/{window}/claim)."
  },
  "job-not-found": {
    "status": 404,
    "title": "Job not found",
    "description": "No job is registered under this name. Register it (PUT /v1/jobs/{job}, or `tenure run --register`) for the service to watch its schedule; leases and windows work without it."
  },
  "window-completed": {
    "status": 409,
    "title": "Window already completed",
    "description": "This occurrence of the job was completed at `completed_at` and must not run again. Skip it: this is how a late or repeated run learns that the work is done."
  },
  "window-not-claimed": {
    "status": 409,
    "title": "Window not claimed by this holding",
    "description": "Only the holding (holder and generation) that claimed a window may complete it, and this one did not claim it. Claim it with the current holding first."
  },
  "window-lease-mismatch": {
    "status": 409,
    "title": "Window is bound to another lease",
    "description": "The window was claimed under another lease (`lease`), and a window keeps its lease. Claim and complete it under that lease."
  },
  "generation-exhausted": {
    "status": 409,
    "title": "No generation is left to hand out",
    "description": "The lease's generation (`generation`), or the generation floor, has reached 2**53-1, the largest every JSON reader holds exactly: no new holding can begin under this name. Use another lease name; docs/operations.md says how the floor is checked."
  },
  "window-not-due": {
    "status": 409,
    "title": "Window's occurrence is not due yet",
    "description": "By the database's clock (`now`) this window's occurrence (`occurrence`) lies further ahead than TENURE_MAX_EARLY_TOLERANCE_SECONDS: a host clock that runs ahead picked it. Skip this run; resolve the window with POST /v1/windows/resolve instead."
  },
  "stale-generation": {
    "status": 409,
    "title": "A higher generation has been seen",
    "description": "A holder with a higher generation (`highest`) has written here, or been granted the lease, since this generation was handed out: the caller lost its lease. Stop; do not retry with this generation."
  },
  "fence-lease-mismatch": {
    "status": 409,
    "title": "Resource is fenced by another lease",
    "description": "The resource is fenced by another lease (`lease`), and a resource keeps its lease. Send that lease's token, or fence another resource."
  },
  "unknown-generation": {
    "status": 422,
    "title": "Generation was never handed out",
    "description": "The lease never handed out this generation to a holder (`current_generation` is its latest): a made-up or mistyped token, one from another database, or the generation a force-release moved to. Send the generation the acquire returned."
  },
  "fencing-token-required": {
    "status": 428,
    "title": "Fencing token required",
    "description": "This endpoint is fenced: send `Fencing-Token: <lease>/<generation>` of the lease the caller holds (the client's fencing helpers add it)."
  },
  "fencing-token-malformed": {
    "status": 400,
    "title": "Malformed fencing token",
    "description": "The Fencing-Token header is not one `<lease>/<generation>`, with a generation from 1 to 2**53-1 without leading zeros. Send the token as the acquire returned it."
  },
  "fence-store-unavailable": {
    "status": 503,
    "title": "Fence store unavailable; retry later",
    "description": "The store that keeps the fences could not be asked, so nothing was written. Retry after Retry-After."
  },
  "fencing-refused": {
    "status": 403,
    "title": "Refused by the fence",
    "description": "The application's fence refused this token for a reason of its own; `detail` says which."
  },
  "storage-unavailable": {
    "status": 503,
    "title": "Database unavailable; retry later",
    "description": "The service cannot reach its database now, or the database asked for a retry (a timeout, a conflict). Nothing was decided: retry after `retry_after_seconds` (Retry-After); /readyz shows when the database is back."
  },
  "shutting-down": {
    "status": 503,
    "title": "Service process shutting down; retry",
    "description": "This process of the service is stopping (a deploy, a scale-down) and decided nothing. Retry: another replica answers, or this one once restarted."
  },
  "too-many-streams": {
    "status": 503,
    "title": "Too many event streams on this process; retry",
    "description": "This process serves as many event streams as it may (`per`: `process`, TENURE_EVENTS_MAX_STREAMS), or as many as one principal may (`principal`, TENURE_EVENTS_MAX_STREAMS_PER_PRINCIPAL). Retry after `retry_after_seconds`, on another replica, or close streams no longer read."
  },
  "request-abandoned": {
    "status": 499,
    "title": "Caller went away",
    "description": "The caller stopped waiting for a lease and closed the request; nothing was acquired for it. Seen in logs and metrics only."
  },
  "internal-error": {
    "status": 500,
    "title": "Internal error",
    "description": "The service failed to answer: a bug. Its log has the traceback; please report it. Retrying may succeed."
  }
});

/**
 * The request carries no valid bearer token. Send `Authorization: Bearer <token>` with a token
 * whose hash is in the service's tokens file (`tenure token new` makes both); in a browser, type
 * any user name and the token as the password.
 */
export class Unauthenticated extends TenureError {
  static slug = "unauthenticated";
  static status = 401;
  static title = "Authentication required";
}

/**
 * The token is valid, but its principal's role (reader, client, admin) or namespaces (name
 * prefixes) do not cover this action on this name. Use a token of a principal that may, or have
 * an operator widen this principal's entry in the tokens file.
 */
export class Forbidden extends TenureError {
  static slug = "forbidden";
  static status = 403;
  static title = "Not allowed for this principal";
}

/**
 * The holder and generation are right, but another principal acquired this holding: only the
 * principal that acquired it may renew, release, claim or complete with it. Use that principal's
 * token.
 */
export class HoldingOfAnotherPrincipal extends Forbidden {
  static slug = "holding-of-another-principal";
  static status = 403;
  static title = "The holding belongs to another principal";
}

/**
 * This principal sends more requests than the service allows it (TENURE_RATE_LIMIT_PER_SECOND,
 * per process). Wait `retry_after_seconds` (the Retry-After header), then send more slowly.
 */
export class RateLimited extends TenureError {
  static slug = "rate-limited";
  static status = 429;
  static title = "Too many requests";
}

/**
 * Names under `tenure.` (`name`) belong to the service itself, such as its monitor's lease
 * `tenure.monitor`: no caller may acquire, renew, release, claim, complete or verify with one,
 * whatever its token. Rename the job, lease or resource.
 */
export class ReservedName extends Forbidden {
  static slug = "reserved-name";
  static status = 403;
  static title = "Name reserved to the service itself";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {string | null} */
    this.name = fact(this.problem, "name", "string?");
  }
}

/**
 * The request does not match the API: a value is missing, of the wrong type or outside its
 * bounds. `errors` names each field and what is wrong with it; /docs has the contract.
 */
export class InvalidRequest extends TenureError {
  static slug = "validation-error";
  static status = 422;
  static title = "Invalid request";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {Array<{field: string, message: string}> | null} */
    this.errors = fact(this.problem, "errors", "array?");
  }
}

/**
 * The request body is larger than the service accepts (TENURE_MAX_BODY_BYTES). Send less at
 * once: a smaller batch.
 */
export class PayloadTooLarge extends TenureError {
  static slug = "payload-too-large";
  static status = 413;
  static title = "Request body too large";
}

/**
 * Nothing answers at this path. Check the URL against /docs: the API's paths start with /v1/.
 */
export class NotFound extends TenureError {
  static slug = "not-found";
  static status = 404;
  static title = "No such resource";
}

/**
 * The path exists, but not for this method; the Allow header lists the methods it takes.
 */
export class MethodNotAllowed extends TenureError {
  static slug = "method-not-allowed";
  static status = 405;
  static title = "Method not allowed";
}

/**
 * The request could not be served as sent; its status and detail say why. Check it against
 * /docs.
 */
export class HttpError extends TenureError {
  static slug = "http-error";
  static status = 400;
  static title = "Bad request";
}

/**
 * Another holder (`holder`) holds the lease until `expires_at`, unless it renews. Skip this run;
 * or retry after `retry_after_seconds` (Retry-After); or acquire with `wait_seconds` to wait for
 * it.
 */
export class LeaseHeld extends TenureError {
  static slug = "lease-held";
  static status = 409;
  static title = "Lease is held by another holder";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {string} */
    this.holder = fact(this.problem, "holder", "string");
    /** @type {string} */
    this.expiresAt = fact(this.problem, "expires_at", "string");
  }
}

/**
 * This holder no longer holds the lease at `generation`: the holding expired, was released or
 * force-released, or another holder took the lease over. Stop the work done under it now;
 * acquire again for a new generation.
 */
export class LeaseLost extends TenureError {
  static slug = "lease-lost";
  static status = 409;
  static title = "Lease is no longer held by this holder";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {number | null} */
    this.generation = fact(this.problem, "generation", "generation?");
  }
}

/**
 * No lease has this name: it has never been acquired (a lease is created by its first acquire).
 * Check the name, or acquire it.
 */
export class LeaseNotFound extends TenureError {
  static slug = "lease-not-found";
  static status = 404;
  static title = "Lease not found";
}

/**
 * This job has no record of this window: nobody has claimed it yet. A holder of the job's lease
 * claims it (POST /v1/jobs/{job}/windows/{window}/claim).
 */
export class WindowNotFound extends TenureError {
  static slug = "window-not-found";
  static status = 404;
  static title = "Window not found";
}

/**
 * No job is registered under this name. Register it (PUT /v1/jobs/{job}, or `tenure run
 * --register`) for the service to watch its schedule; leases and windows work without it.
 */
export class JobNotFound extends TenureError {
  static slug = "job-not-found";
  static status = 404;
  static title = "Job not found";
}

/**
 * This occurrence of the job was completed at `completed_at` and must not run again. Skip it:
 * this is how a late or repeated run learns that the work is done.
 */
export class WindowCompleted extends TenureError {
  static slug = "window-completed";
  static status = 409;
  static title = "Window already completed";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {string} */
    this.completedAt = fact(this.problem, "completed_at", "string");
  }
}

/**
 * Only the holding (holder and generation) that claimed a window may complete it, and this one
 * did not claim it. Claim it with the current holding first.
 */
export class WindowNotClaimed extends TenureError {
  static slug = "window-not-claimed";
  static status = 409;
  static title = "Window not claimed by this holding";
}

/**
 * The window was claimed under another lease (`lease`), and a window keeps its lease. Claim and
 * complete it under that lease.
 */
export class WindowLeaseMismatch extends TenureError {
  static slug = "window-lease-mismatch";
  static status = 409;
  static title = "Window is bound to another lease";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {string} */
    this.lease = fact(this.problem, "lease", "string");
  }
}

/**
 * The lease's generation (`generation`), or the generation floor, has reached 2**53-1, the
 * largest every JSON reader holds exactly: no new holding can begin under this name. Use another
 * lease name; docs/operations.md says how the floor is checked.
 */
export class GenerationExhausted extends TenureError {
  static slug = "generation-exhausted";
  static status = 409;
  static title = "No generation is left to hand out";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {number | null} */
    this.generation = fact(this.problem, "generation", "generation?");
  }
}

/**
 * By the database's clock (`now`) this window's occurrence (`occurrence`) lies further ahead
 * than TENURE_MAX_EARLY_TOLERANCE_SECONDS: a host clock that runs ahead picked it. Skip this
 * run; resolve the window with POST /v1/windows/resolve instead.
 */
export class WindowNotDue extends TenureError {
  static slug = "window-not-due";
  static status = 409;
  static title = "Window's occurrence is not due yet";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {string} */
    this.occurrence = fact(this.problem, "occurrence", "string");
    /** @type {string} */
    this.now = fact(this.problem, "now", "string");
  }
}

/**
 * A holder with a higher generation (`highest`) has written here, or been granted the lease,
 * since this generation was handed out: the caller lost its lease. Stop; do not retry with this
 * generation.
 */
export class StaleGeneration extends TenureError {
  static slug = "stale-generation";
  static status = 409;
  static title = "A higher generation has been seen";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {number} */
    this.highest = fact(this.problem, "highest", "generation");
  }
}

/**
 * The resource is fenced by another lease (`lease`), and a resource keeps its lease. Send that
 * lease's token, or fence another resource.
 */
export class FenceLeaseMismatch extends TenureError {
  static slug = "fence-lease-mismatch";
  static status = 409;
  static title = "Resource is fenced by another lease";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {string} */
    this.lease = fact(this.problem, "lease", "string");
  }
}

/**
 * The lease never handed out this generation to a holder (`current_generation` is its latest): a
 * made-up or mistyped token, one from another database, or the generation a force-release moved
 * to. Send the generation the acquire returned.
 */
export class UnknownGeneration extends TenureError {
  static slug = "unknown-generation";
  static status = 422;
  static title = "Generation was never handed out";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {number | null} */
    this.currentGeneration = fact(this.problem, "current_generation", "generation?");
  }
}

/**
 * This endpoint is fenced: send `Fencing-Token: <lease>/<generation>` of the lease the caller
 * holds (the client's fencing helpers add it).
 */
export class FencingTokenRequired extends TenureError {
  static slug = "fencing-token-required";
  static status = 428;
  static title = "Fencing token required";
}

/**
 * The Fencing-Token header is not one `<lease>/<generation>`, with a generation from 1 to
 * 2**53-1 without leading zeros. Send the token as the acquire returned it.
 */
export class FencingTokenMalformed extends TenureError {
  static slug = "fencing-token-malformed";
  static status = 400;
  static title = "Malformed fencing token";
}

/**
 * The store that keeps the fences could not be asked, so nothing was written. Retry after Retry-
 * After.
 */
export class FenceStoreUnavailable extends TenureError {
  static slug = "fence-store-unavailable";
  static status = 503;
  static title = "Fence store unavailable; retry later";
}

/**
 * The application's fence refused this token for a reason of its own; `detail` says which.
 */
export class FencingRefused extends TenureError {
  static slug = "fencing-refused";
  static status = 403;
  static title = "Refused by the fence";
}

/**
 * The service cannot reach its database now, or the database asked for a retry (a timeout, a
 * conflict). Nothing was decided: retry after `retry_after_seconds` (Retry-After); /readyz shows
 * when the database is back.
 */
export class StorageUnavailable extends ServiceUnavailable {
  static slug = "storage-unavailable";
  static status = 503;
  static title = "Database unavailable; retry later";
}

/**
 * This process of the service is stopping (a deploy, a scale-down) and decided nothing. Retry:
 * another replica answers, or this one once restarted.
 */
export class ShuttingDown extends ServiceUnavailable {
  static slug = "shutting-down";
  static status = 503;
  static title = "Service process shutting down; retry";
}

/**
 * This process serves as many event streams as it may (`per`: `process`,
 * TENURE_EVENTS_MAX_STREAMS), or as many as one principal may (`principal`,
 * TENURE_EVENTS_MAX_STREAMS_PER_PRINCIPAL). Retry after `retry_after_seconds`, on another
 * replica, or close streams no longer read.
 */
export class TooManyStreams extends ServiceUnavailable {
  static slug = "too-many-streams";
  static status = 503;
  static title = "Too many event streams on this process; retry";
  /** @param {string} detail @param {ErrorOptions} [options] */
  constructor(detail, options) {
    super(detail, options);
    /** @type {number | null} */
    this.limit = fact(this.problem, "limit", "number?");
    /** @type {string | null} */
    this.per = fact(this.problem, "per", "string?");
  }
}

/**
 * The caller stopped waiting for a lease and closed the request; nothing was acquired for it.
 * Seen in logs and metrics only.
 */
export class RequestAbandoned extends TenureError {
  static slug = "request-abandoned";
  static status = 499;
  static title = "Caller went away";
}

/**
 * The service failed to answer: a bug. Its log has the traceback; please report it. Retrying may
 * succeed.
 */
export class InternalError extends TenureError {
  static slug = "internal-error";
  static status = 500;
  static title = "Internal error";
}

/**
 * The error class of each problem type, by slug.
 * @type {Readonly<Record<string, typeof TenureError>>}
 */
export const ERROR_CLASSES = Object.freeze({
  "unauthenticated": Unauthenticated,
  "forbidden": Forbidden,
  "holding-of-another-principal": HoldingOfAnotherPrincipal,
  "rate-limited": RateLimited,
  "reserved-name": ReservedName,
  "validation-error": InvalidRequest,
  "payload-too-large": PayloadTooLarge,
  "not-found": NotFound,
  "method-not-allowed": MethodNotAllowed,
  "http-error": HttpError,
  "lease-held": LeaseHeld,
  "lease-lost": LeaseLost,
  "lease-not-found": LeaseNotFound,
  "window-not-found": WindowNotFound,
  "job-not-found": JobNotFound,
  "window-completed": WindowCompleted,
  "window-not-claimed": WindowNotClaimed,
  "window-lease-mismatch": WindowLeaseMismatch,
  "generation-exhausted": GenerationExhausted,
  "window-not-due": WindowNotDue,
  "stale-generation": StaleGeneration,
  "fence-lease-mismatch": FenceLeaseMismatch,
  "unknown-generation": UnknownGeneration,
  "fencing-token-required": FencingTokenRequired,
  "fencing-token-malformed": FencingTokenMalformed,
  "fence-store-unavailable": FenceStoreUnavailable,
  "fencing-refused": FencingRefused,
  "storage-unavailable": StorageUnavailable,
  "shutting-down": ShuttingDown,
  "too-many-streams": TooManyStreams,
  "request-abandoned": RequestAbandoned,
  "internal-error": InternalError,
});
