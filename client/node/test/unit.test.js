// What needs no service: tokens, idempotency keys, retries, answers read into errors.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ERROR_CLASSES,
  LeaseHeld,
  LeaseLost,
  MAX_GENERATION,
  PROBLEMS,
  ServiceUnavailable,
  StaleGeneration,
  StorageUnavailable,
  TenureError,
  TransportError,
  UnexpectedResponse,
  checkGeneration,
  formatToken,
  idempotencyKey,
  parseToken,
} from "../index.js";
import { decodeResponse } from "../lib/protocol.js";
import { DEFAULT_RETRY, backoffDelay, retryDelay } from "../lib/retry.js";
import { shared } from "./support/shared.js";

/** @param {number} status @param {unknown} body @param {Record<string, string>} [headers] */
function answer(status, body, headers = {}) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return () => decodeResponse(status, new Headers(headers), text);
}

describe("idempotency keys", () => {
  for (const c of shared("idempotency_keys.json").cases) {
    it(`${JSON.stringify(c.parts)} → ${c.key} as tenure.idempotency_key`, () => {
      assert.equal(idempotencyKey(c.job, c.window, ...c.parts), c.key);
    });
  }
  it("takes bigints, refuses other part types", () => {
    assert.equal(idempotencyKey("j", "w", 2n ** 70n), "j/w/1180591620717411303424");
    for (const part of [true, null, undefined, 1.5, 2 ** 53, {}, []]) {
      assert.throws(() => idempotencyKey("j", "w", /** @type {any} */ (part)), TypeError);
    }
  });
});

describe("fencing tokens", () => {
  it("formats and parses exact generations only", () => {
    assert.equal(formatToken("close-day", MAX_GENERATION), "close-day/9007199254740991");
    assert.deepEqual(parseToken("close-day/9007199254740991"), ["close-day", MAX_GENERATION]);
    assert.throws(() => parseToken("close-day/9007199254740992"), RangeError);
    assert.throws(() => formatToken("close-day", 2 ** 53), RangeError);
    assert.throws(() => formatToken("close-day", 0), RangeError);
    assert.throws(() => checkGeneration(1.5), RangeError);
  });
});

describe("retries", () => {
  const half = () => 0.5;
  it("retries transport errors and 502/503/504, honouring Retry-After", () => {
    assert.ok(Math.abs(Number(retryDelay(DEFAULT_RETRY, 1, new TransportError("x", { status: null }), half)) - 0.15) < 1e-9);
    const busy = new ServiceUnavailable("x", { status: 503, retryAfter: 3 });
    assert.equal(retryDelay(DEFAULT_RETRY, 1, busy, half), 3);
    assert.equal(retryDelay(DEFAULT_RETRY, 4, busy, half), null);
    assert.equal(backoffDelay(DEFAULT_RETRY, 10, 60, half), 5);
  });
  it("never retries a 4xx", () => {
    for (const status of [400, 401, 403, 404, 409, 422, 429]) {
      assert.equal(retryDelay(DEFAULT_RETRY, 1, new TenureError("x", { status })), null);
    }
  });
});

describe("answers", () => {
  it("reads each problem type into its class, with its facts", () => {
    const problem = {
      type: "/problems/lease-held",
      title: "t",
      status: 409,
      detail: "held",
      holder: "h",
      expires_at: "2026-01-01T00:00:00Z",
    };
    const error = /** @type {LeaseHeld} */ (captured(answer(409, problem, { "retry-after": "4" })));
    assert.ok(error instanceof LeaseHeld);
    assert.deepEqual([error.holder, error.expiresAt, error.retryAfter, error.status], ["h", problem.expires_at, 4, 409]);
    assert.equal(error.type, "/problems/lease-held");
  });
  it("has one class per catalogue type, storage-unavailable a ServiceUnavailable", () => {
    assert.deepEqual(Object.keys(ERROR_CLASSES).sort(), Object.keys(PROBLEMS).sort());
    for (const [slug, ErrorClass] of Object.entries(ERROR_CLASSES)) {
      assert.equal(ErrorClass.slug, slug);
      assert.equal(ErrorClass.status, PROBLEMS[slug].status);
    }
    assert.ok(new StorageUnavailable("x") instanceof ServiceUnavailable);
  });
  it("keeps an unknown type as TenureError, a plain 502 as ServiceUnavailable", () => {
    const unknown = captured(answer(418, { type: "/problems/teapot", title: "t", status: 418, detail: "d" }));
    assert.equal(unknown.constructor, TenureError);
    assert.equal(unknown.status, 418);
    assert.ok(captured(answer(502, "Bad gateway")) instanceof ServiceUnavailable);
  });
  it("refuses, never rounds, a generation above 2**53 - 1", () => {
    const lease = { name: "x", generation: 9007199254740993 };
    assert.throws(answer(200, `{"name": "x", "generation": 9007199254740993}`), UnexpectedResponse);
    assert.throws(answer(200, lease), UnexpectedResponse);
    assert.equal(answer(200, { name: "x", generation: MAX_GENERATION })().generation, MAX_GENERATION);
    const stale = { type: "/problems/stale-generation", title: "t", status: 409, detail: "d" };
    assert.ok(captured(answer(409, { ...stale, highest: 2 ** 53 })) instanceof UnexpectedResponse);
    assert.ok(captured(answer(409, { ...stale, highest: 7 })) instanceof StaleGeneration);
    const lost = { type: "/problems/lease-lost", title: "t", status: 409, detail: "d", generation: null };
    assert.equal(/** @type {LeaseLost} */ (captured(answer(409, lost))).generation, null);
  });
});

/** @param {() => unknown} f @returns {TenureError} */
function captured(f) {
  try {
    f();
  } catch (error) {
    return /** @type {TenureError} */ (error);
  }
  throw new Error("nothing thrown");
}
