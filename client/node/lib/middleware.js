// Fencing middleware: refuse writes that carry a stale fencing token, with the refusals
// (application/problem+json, same types and statuses) of the Python FencingMiddleware:
//
//   no Fencing-Token                            428 /problems/fencing-token-required
//   malformed, 0, > 2**53-1, sent twice         400 /problems/fencing-token-malformed
//   lower than the highest accepted             409 /problems/stale-generation  (+ highest)
//   resource fenced by another lease            409 /problems/fence-lease-mismatch  (+ lease)
//   generation never handed out (remote store)  422 /problems/unknown-generation
//   store unreachable: refused, not let through 503 /problems/fence-store-unavailable
//
//   app.use(fencing({ store: new MemoryFenceStore() }));                 // node:http, Express
//   await app.register(fastifyFencing, { store: new RemoteFenceStore(tenure) });  // Fastify
//
// Requests that need a token (POST, PUT, PATCH and DELETE by default) are checked against the
// store before the handler runs; an accepted one runs holding the store's lock on its resource
// until its response is closed, so in one process a request with generation 7 that passed the
// check cannot write after one with generation 8. `req.fencing` is the accepted token. The
// resource key is the request path unless `resource(req)` says otherwise.

import { createHash } from "node:crypto";
import { TenureError } from "./errors.js";
import { FenceLeaseMismatch, MEDIA_TYPE, PROBLEMS, StaleGeneration, TYPE_PREFIX, UnknownGeneration } from "./problems.js";
import { FENCING_HEADER, parseToken } from "./tokens.js";

/** @typedef {import("node:http").IncomingMessage} IncomingMessage */
/** @typedef {import("node:http").ServerResponse} ServerResponse */

export const UNSAFE_METHODS = Object.freeze(["POST", "PUT", "PATCH", "DELETE"]);
export const DEFAULT_MISSING_STATUS = 428; // Precondition Required (RFC 6585)
// Seconds a client should wait before retrying when the store could not be asked.
const UNAVAILABLE_RETRY_AFTER = 1;

/** The fence refused a request, or could not decide (then it refuses too). */
export class FencingError extends Error {
  /**
   * @param {"fencing-token-required" | "fencing-token-malformed" | "stale-generation" | "fence-lease-mismatch" | "unknown-generation" | "fence-store-unavailable" | "fencing-refused"} slug
   *   the problem type it is answered with
   * @param {string} detail
   * @param {Record<string, unknown>} [facts] the problem's extension members (`highest`, …)
   */
  constructor(slug, detail, facts = {}) {
    super(detail);
    this.name = "FencingError";
    this.slug = slug;
    this.detail = detail;
    this.facts = facts;
  }
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
  /** @type {Map<string, Promise<void>>} */
  #tails = new Map();

  /** @param {string} resource @returns {Promise<() => void>} the release */
  async hold(resource) {
    const previous = this.#tails.get(resource) ?? Promise.resolve();
    /** @type {() => void} */
    let unlock = () => {};
    const done = new Promise((resolve) => {
      unlock = () => resolve(undefined);
    });
    const tail = previous.then(() => done);
    this.#tails.set(resource, tail);
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      unlock();
      if (this.#tails.get(resource) === tail) this.#tails.delete(resource);
    };
  }

  get size() {
    return this.#tails.size;
  }
}

/**
 * Fences in this process's memory: exact, but for ONE process only (tests, single-instance
 * services); a restart forgets every fence.
 * @implements {FenceStore}
 */
export class MemoryFenceStore {
  /** @type {Map<string, [string, number]>} */
  #fences = new Map();
  #locks = new ResourceLocks();

  /** @param {string} resource */
  guard(resource) {
    return this.#locks.hold(resource);
  }

  /** @param {string} resource @param {string} lease @param {number} generation */
  async advance(resource, lease, generation) {
    const [fencedBy, highest] = this.#fences.get(resource) ?? [lease, generation];
    if (fencedBy !== lease) {
      throw new FencingError(
        "fence-lease-mismatch",
        `resource ${resource} is fenced by lease ${fencedBy}, not ${lease}`,
        { lease: fencedBy },
      );
    }
    if (generation < highest) {
      throw new FencingError(
        "stale-generation",
        `resource ${resource} accepted generation ${highest} of ${lease}; ${generation} is stale`,
        { highest },
      );
    }
    this.#fences.set(resource, [lease, generation]);
    return generation;
  }

  /** The highest generation accepted for `resource`, if any. @param {string} resource */
  highest(resource) {
    return this.#fences.get(resource)?.[1] ?? null;
  }
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;

/**
 * A Tenure resource name for a resource key, as the Python client's: the key itself when valid,
 * else with its slashes turned into colons (`/payments/42` → `payments:42`), else `sha256:…`.
 * @param {string} key
 */
export function tenureResourceName(key) {
  if (NAME.test(key)) return key;
  const colons = key.replace(/^\/+|\/+$/g, "").replaceAll("/", ":");
  if (NAME.test(colons)) return colons;
  return `sha256:${createHash("sha256").update(key, "utf8").digest("hex")}`;
}

/**
 * Fences kept by the Tenure service (POST /v1/fences/{resource}/verify): the check is atomic
 * there and refuses generations never handed out, but check and write are not one step across
 * replicas of the resource (see docs/fencing.md). Tenure unreachable: refused (503), never let
 * through.
 * @implements {FenceStore}
 */
export class RemoteFenceStore {
  #locks = new ResourceLocks();

  /**
   * @param {{verifyFence(resource: string, lease: {name: string, generation: number}): Promise<{highest: number}>}} client a Tenure client
   * @param {{resourceName?: (key: string) => string}} [options]
   */
  constructor(client, options = {}) {
    this.client = client;
    this.resourceName = options.resourceName ?? tenureResourceName;
  }

  /** @param {string} resource */
  guard(resource) {
    return this.#locks.hold(resource);
  }

  /** @param {string} resource @param {string} lease @param {number} generation */
  async advance(resource, lease, generation) {
    try {
      const fence = await this.client.verifyFence(this.resourceName(resource), { name: lease, generation });
      return fence.highest;
    } catch (error) {
      if (error instanceof StaleGeneration) {
        throw new FencingError("stale-generation", error.detail, { highest: error.highest });
      }
      if (error instanceof FenceLeaseMismatch) {
        throw new FencingError("fence-lease-mismatch", error.detail, { lease: error.lease });
      }
      if (error instanceof UnknownGeneration) {
        const facts = { current_generation: error.currentGeneration };
        throw new FencingError("unknown-generation", error.detail, facts);
      }
      if (error instanceof TenureError) {
        throw new FencingError("fence-store-unavailable", `Tenure could not verify the fence: ${error}`);
      }
      throw error;
    }
  }
}

/**
 * The one Fencing-Token of a request as [lease, generation]. Sent more than once (even with
 * equal values) is malformed: two tokens cannot both be the request's.
 * @param {string[]} rawHeaders
 * @returns {[string, number]}
 */
export function tokenOf(rawHeaders) {
  const wanted = FENCING_HEADER.toLowerCase();
  const values = rawHeaders.flatMap((name, i) =>
    i % 2 === 0 && name.toLowerCase() === wanted ? [rawHeaders[i + 1]] : [],
  );
  if (values.length === 0) {
    throw new FencingError("fencing-token-required", "a Fencing-Token (<lease>/<generation>) is required");
  }
  if (values.length > 1) {
    throw new FencingError("fencing-token-malformed", `${FENCING_HEADER} was sent ${values.length} times`);
  }
  try {
    return parseToken(values[0]);
  } catch (error) {
    throw new FencingError("fencing-token-malformed", String(/** @type {Error} */ (error).message));
  }
}

/**
 * @typedef {object} FencingOptions
 * @property {FenceStore} store
 * @property {(req: IncomingMessage) => string} [resource] the resource key (default: the path)
 * @property {(req: IncomingMessage) => boolean} [require] whether a token is needed (default:
 *   POST, PUT, PATCH, DELETE)
 * @property {number} [missingStatus] the status of a request without a token (428)
 */

/** @param {IncomingMessage} req */
const pathOf = (req) => {
  const url = /** @type {{originalUrl?: string}} */ (req).originalUrl ?? req.url ?? "/";
  return url.split("?")[0];
};

/** @param {IncomingMessage} req */
const unsafe = (req) => UNSAFE_METHODS.includes(String(req.method).toUpperCase());

/**
 * @param {FencingOptions} options
 * @returns {(req: IncomingMessage) => Promise<{status: number, headers: Record<string, string>, body: string} | {release: () => void, accepted: {resource: string, lease: string, generation: number} | null}>}
 */
function checker(options) {
  const { store } = options;
  if (!store || typeof store.guard !== "function" || typeof store.advance !== "function") {
    throw new TypeError("store must be a fence store (guard() and advance())");
  }
  const resourceOf = options.resource ?? pathOf;
  const required = options.require ?? unsafe;
  const missingStatus = options.missingStatus ?? DEFAULT_MISSING_STATUS;
  if (!Number.isInteger(missingStatus) || missingStatus < 400 || missingStatus > 499) {
    throw new RangeError("missingStatus must be a 4xx status");
  }
  /** @param {FencingError} refused */
  const refusal = (refused) => {
    const kind = PROBLEMS[refused.slug] ?? PROBLEMS["fencing-refused"];
    const status = refused.slug === "fencing-token-required" ? missingStatus : kind.status;
    const problem = { type: TYPE_PREFIX + refused.slug, title: kind.title, status, detail: refused.detail, ...refused.facts };
    /** @type {Record<string, string>} */
    const headers = { "content-type": MEDIA_TYPE };
    if (refused.slug === "fence-store-unavailable") headers["retry-after"] = String(UNAVAILABLE_RETRY_AFTER);
    return { status, headers, body: JSON.stringify(problem) };
  };
  return async (req) => {
    if (!required(req)) return { release: () => {}, accepted: null };
    let lease;
    let generation;
    try {
      [lease, generation] = tokenOf(req.rawHeaders);
    } catch (error) {
      return refusal(/** @type {FencingError} */ (error));
    }
    const resource = resourceOf(req);
    if (typeof resource !== "string" || !resource) {
      throw new TypeError(`the resource function returned ${String(resource)}, not a key`);
    }
    const release = await store.guard(resource);
    try {
      const accepted = await store.advance(resource, lease, generation);
      return { release, accepted: { resource, lease, generation: accepted } };
    } catch (error) {
      release();
      if (error instanceof FencingError) return refusal(error);
      throw error;
    }
  };
}

/**
 * Middleware for node:http and Express: `(req, res, next)`. A refusal is answered here and
 * `next` is not called; an error of the store itself is passed to `next(error)`.
 * @param {FencingOptions} options
 * @returns {(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void}
 */
export function fencing(options) {
  const check = checker(options);
  return (req, res, next) => {
    check(req).then(
      (outcome) => {
        if ("status" in outcome) {
          res.writeHead(outcome.status, { ...outcome.headers, "content-length": Buffer.byteLength(outcome.body) });
          res.end(outcome.body);
          return;
        }
        res.once("close", outcome.release);
        /** @type {any} */ (req).fencing = outcome.accepted;
        next();
      },
      (error) => next(error),
    );
  };
}

/**
 * The Fastify form: an `onRequest` hook (Fastify does not run Express middleware by itself).
 * @param {FencingOptions} options
 * @returns {(request: {raw: IncomingMessage}, reply: any) => Promise<void>}
 */
export function fencingHook(options) {
  const check = checker(options);
  return async (request, reply) => {
    const outcome = await check(request.raw);
    if ("status" in outcome) {
      // A Buffer: Fastify would add "; charset=utf-8" to the media type of a string.
      await reply.code(outcome.status).headers(outcome.headers).send(Buffer.from(outcome.body));
      return;
    }
    reply.raw.once("close", outcome.release);
    /** @type {any} */ (request).fencing = outcome.accepted;
  };
}

/**
 * A Fastify plugin adding `fencingHook(options)` to the whole app (not encapsulated):
 * `await app.register(fastifyFencing, { store })`.
 * @param {{addHook(name: "onRequest", hook: (request: any, reply: any) => Promise<void>): unknown}} fastify
 * @param {FencingOptions} options
 */
export async function fastifyFencing(fastify, options) {
  fastify.addHook("onRequest", fencingHook(options));
}
// What fastify-plugin sets: the hook applies to routes outside the plugin's own scope too.
Object.assign(fastifyFencing, { [Symbol.for("skip-override")]: true });
