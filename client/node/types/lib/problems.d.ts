/** @typedef {import('./errors.js').ErrorOptions} ErrorOptions */
/** @typedef {{status: number, title: string, description: string}} Problem */
export const MEDIA_TYPE: "application/problem+json";
export const TYPE_PREFIX: "/problems/";
/**
 * Every problem type of Tenure by slug: its HTTP status, title and description.
 * @type {Readonly<Record<string, Problem>>}
 */
export const PROBLEMS: Readonly<Record<string, Problem>>;
/**
 * The request carries no valid bearer token. Send `Authorization: Bearer <token>` with a token
 * whose hash is in the service's tokens file (`tenure token new` makes both); in a browser, type
 * any user name and the token as the password.
 */
export class Unauthenticated extends TenureError {
}
/**
 * The token is valid, but its principal's role (reader, client, admin) or namespaces (name
 * prefixes) do not cover this action on this name. Use a token of a principal that may, or have
 * an operator widen this principal's entry in the tokens file.
 */
export class Forbidden extends TenureError {
}
/**
 * The holder and generation are right, but another principal acquired this holding: only the
 * principal that acquired it may renew, release, claim or complete with it. Use that principal's
 * token.
 */
export class HoldingOfAnotherPrincipal extends Forbidden {
}
/**
 * This principal sends more requests than the service allows it (TENURE_RATE_LIMIT_PER_SECOND,
 * per process). Wait `retry_after_seconds` (the Retry-After header), then send more slowly.
 */
export class RateLimited extends TenureError {
}
/**
 * Names under `tenure.` (`name`) belong to the service itself, such as its monitor's lease
 * `tenure.monitor`: no caller may acquire, renew, release, claim, complete or verify with one,
 * whatever its token. Rename the job, lease or resource.
 */
export class ReservedName extends Forbidden {
}
/**
 * The request does not match the API: a value is missing, of the wrong type or outside its
 * bounds. `errors` names each field and what is wrong with it; /docs has the contract.
 */
export class InvalidRequest extends TenureError {
    /** @type {Array<{field: string, message: string}> | null} */
    errors: Array<{
        field: string;
        message: string;
    }> | null;
}
/**
 * The request body is larger than the service accepts (TENURE_MAX_BODY_BYTES). Send less at
 * once: a smaller batch.
 */
export class PayloadTooLarge extends TenureError {
}
/**
 * Nothing answers at this path. Check the URL against /docs: the API's paths start with /v1/.
 */
export class NotFound extends TenureError {
}
/**
 * The path exists, but not for this method; the Allow header lists the methods it takes.
 */
export class MethodNotAllowed extends TenureError {
}
/**
 * The request could not be served as sent; its status and detail say why. Check it against
 * /docs.
 */
export class HttpError extends TenureError {
}
/**
 * Another holder (`holder`) holds the lease until `expires_at`, unless it renews. Skip this run;
 * or retry after `retry_after_seconds` (Retry-After); or acquire with `wait_seconds` to wait for
 * it.
 */
export class LeaseHeld extends TenureError {
    /** @type {string} */
    holder: string;
    /** @type {string} */
    expiresAt: string;
}
/**
 * This holder no longer holds the lease at `generation`: the holding expired, was released or
 * force-released, or another holder took the lease over. Stop the work done under it now;
 * acquire again for a new generation.
 */
export class LeaseLost extends TenureError {
    /** @type {number | null} */
    generation: number | null;
}
/**
 * No lease has this name: it has never been acquired (a lease is created by its first acquire).
 * Check the name, or acquire it.
 */
export class LeaseNotFound extends TenureError {
}
/**
 * This job has no record of this window: nobody has claimed it yet. A holder of the job's lease
 * claims it (POST /v1/jobs/{job}/windows/{window}/claim).
 */
export class WindowNotFound extends TenureError {
}
/**
 * No job is registered under this name. Register it (PUT /v1/jobs/{job}, or `tenure run
 * --register`) for the service to watch its schedule; leases and windows work without it.
 */
export class JobNotFound extends TenureError {
}
/**
 * This occurrence of the job was completed at `completed_at` and must not run again. Skip it:
 * this is how a late or repeated run learns that the work is done.
 */
export class WindowCompleted extends TenureError {
    /** @type {string} */
    completedAt: string;
}
/**
 * Only the holding (holder and generation) that claimed a window may complete it, and this one
 * did not claim it. Claim it with the current holding first.
 */
export class WindowNotClaimed extends TenureError {
}
/**
 * The window was claimed under another lease (`lease`), and a window keeps its lease. Claim and
 * complete it under that lease.
 */
export class WindowLeaseMismatch extends TenureError {
    /** @type {string} */
    lease: string;
}
/**
 * The lease's generation (`generation`), or the generation floor, has reached 2**53-1, the
 * largest every JSON reader holds exactly: no new holding can begin under this name. Use another
 * lease name; docs/operations.md says how the floor is checked.
 */
export class GenerationExhausted extends TenureError {
    /** @type {number | null} */
    generation: number | null;
}
/**
 * By the database's clock (`now`) this window's occurrence (`occurrence`) lies further ahead
 * than TENURE_MAX_EARLY_TOLERANCE_SECONDS: a host clock that runs ahead picked it. Skip this
 * run; resolve the window with POST /v1/windows/resolve instead.
 */
export class WindowNotDue extends TenureError {
    /** @type {string} */
    occurrence: string;
    /** @type {string} */
    now: string;
}
/**
 * A holder with a higher generation (`highest`) has written here, or been granted the lease,
 * since this generation was handed out: the caller lost its lease. Stop; do not retry with this
 * generation.
 */
export class StaleGeneration extends TenureError {
    /** @type {number} */
    highest: number;
}
/**
 * The resource is fenced by another lease (`lease`), and a resource keeps its lease. Send that
 * lease's token, or fence another resource.
 */
export class FenceLeaseMismatch extends TenureError {
    /** @type {string} */
    lease: string;
}
/**
 * The lease never handed out this generation to a holder (`current_generation` is its latest): a
 * made-up or mistyped token, one from another database, or the generation a force-release moved
 * to. Send the generation the acquire returned.
 */
export class UnknownGeneration extends TenureError {
    /** @type {number | null} */
    currentGeneration: number | null;
}
/**
 * This endpoint is fenced: send `Fencing-Token: <lease>/<generation>` of the lease the caller
 * holds (the client's fencing helpers add it).
 */
export class FencingTokenRequired extends TenureError {
}
/**
 * The Fencing-Token header is not one `<lease>/<generation>`, with a generation from 1 to
 * 2**53-1 without leading zeros. Send the token as the acquire returned it.
 */
export class FencingTokenMalformed extends TenureError {
}
/**
 * The store that keeps the fences could not be asked, so nothing was written. Retry after Retry-
 * After.
 */
export class FenceStoreUnavailable extends TenureError {
}
/**
 * The application's fence refused this token for a reason of its own; `detail` says which.
 */
export class FencingRefused extends TenureError {
}
/**
 * The service cannot reach its database now, or the database asked for a retry (a timeout, a
 * conflict). Nothing was decided: retry after `retry_after_seconds` (Retry-After); /readyz shows
 * when the database is back.
 */
export class StorageUnavailable extends ServiceUnavailable {
}
/**
 * This process of the service is stopping (a deploy, a scale-down) and decided nothing. Retry:
 * another replica answers, or this one once restarted.
 */
export class ShuttingDown extends ServiceUnavailable {
}
/**
 * This process serves as many event streams as it may (`per`: `process`,
 * TENURE_EVENTS_MAX_STREAMS), or as many as one principal may (`principal`,
 * TENURE_EVENTS_MAX_STREAMS_PER_PRINCIPAL). Retry after `retry_after_seconds`, on another
 * replica, or close streams no longer read.
 */
export class TooManyStreams extends ServiceUnavailable {
    /** @type {number | null} */
    limit: number | null;
    /** @type {string | null} */
    per: string | null;
}
/**
 * The caller stopped waiting for a lease and closed the request; nothing was acquired for it.
 * Seen in logs and metrics only.
 */
export class RequestAbandoned extends TenureError {
}
/**
 * The service failed to answer: a bug. Its log has the traceback; please report it. Retrying may
 * succeed.
 */
export class InternalError extends TenureError {
}
/**
 * The error class of each problem type, by slug.
 * @type {Readonly<Record<string, typeof TenureError>>}
 */
export const ERROR_CLASSES: Readonly<Record<string, typeof TenureError>>;
export type ErrorOptions = import("./errors.js").ErrorOptions;
export type Problem = {
    status: number;
    title: string;
    description: string;
};
import { TenureError } from "./errors.js";
import { ServiceUnavailable } from "./errors.js";
