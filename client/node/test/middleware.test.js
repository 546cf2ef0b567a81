// The fencing middleware on node:http, Express and Fastify answers the table of cases the
// Python FencingMiddleware is tested with (tests/shared/fencing_middleware_cases.json), and the
// remote store refuses as Tenure's fences do.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import { after, before, describe, it } from "node:test";
import express from "express";
import Fastify from "fastify";
import { MemoryFenceStore, RemoteFenceStore, Tenure, fastifyFencing, fencing } from "../index.js";
import { service } from "./support/service.js";
import { shared } from "./support/shared.js";

/** @typedef {import("../lib/middleware.js").FencingOptions} FencingOptions */

/**
 * Servers answering 200 with the accepted token behind the middleware, one per framework.
 * @type {Record<string, (options: FencingOptions) => Promise<{url: string, close: () => Promise<void>}>>}
 */
const FRAMEWORKS = {
  async "node:http"(options) {
    const guard = fencing(options);
    const server = http.createServer((req, res) =>
      guard(req, res, () => res.end(JSON.stringify(/** @type {any} */ (req).fencing ?? null))),
    );
    return listen(server);
  },
  async express(options) {
    const app = express();
    app.use(fencing(options));
    app.all(/.*/, (req, res) => {
      res.json(/** @type {any} */ (req).fencing ?? null);
    });
    return listen(http.createServer(app));
  },
  async fastify(options) {
    const app = Fastify();
    await app.register(fastifyFencing, options);
    app.all("/*", async (request) => /** @type {any} */ (request).fencing ?? null);
    const url = await app.listen({ port: 0, host: "127.0.0.1" });
    return { url, close: () => app.close() };
  },
};

/** @param {http.Server} server */
async function listen(server) {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve(undefined))),
  };
}

/**
 * One request with these Fencing-Token header lines (each its own line).
 * @param {string} url @param {string} method @param {string[]} tokens
 * @returns {Promise<{status: number, headers: http.IncomingHttpHeaders, body: any}>}
 */
function send(url, method, tokens) {
  return new Promise((resolve, reject) => {
    const headers = tokens.length ? { "Fencing-Token": tokens } : {};
    const request = http.request(url, { method, headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text ? JSON.parse(text) : null }),
      );
    });
    request.on("error", reject);
    request.end();
  });
}

for (const [framework, start] of Object.entries(FRAMEWORKS)) {
  describe(`${framework}: the shared cases`, () => {
    for (const c of shared("fencing_middleware_cases.json").cases) {
      it(c.name, async () => {
        const server = await start({ store: new MemoryFenceStore() });
        try {
          for (const step of c.requests) {
            const answer = await send(server.url + step.path, step.method, step.tokens);
            assert.equal(answer.status, step.status, JSON.stringify(step));
            if (step.status === 200) continue;
            assert.equal(answer.headers["content-type"], "application/problem+json");
            assert.equal(answer.body.type, `/problems/${step.type}`);
            assert.equal(answer.body.status, step.status);
            assert.ok(answer.body.title && answer.body.detail);
            for (const [key, value] of Object.entries(step.facts ?? {})) assert.equal(answer.body[key], value);
          }
        } finally {
          await server.close();
        }
      });
    }

    it("missingStatus changes the status of the missing-token problem, not its type", async () => {
      const server = await start({ store: new MemoryFenceStore(), missingStatus: 401 });
      try {
        const answer = await send(`${server.url}/p`, "POST", []);
        assert.deepEqual([answer.status, answer.body.type], [401, "/problems/fencing-token-required"]);
      } finally {
        await server.close();
      }
    });
  });
}

describe("options and locks", () => {
  it("require and resource decide what is fenced and how", async () => {
    const server = await FRAMEWORKS["node:http"]({
      store: new MemoryFenceStore(),
      require: (req) => String(req.url).startsWith("/payments"),
      resource: () => "payments",
    });
    try {
      assert.equal((await send(`${server.url}/health`, "POST", [])).status, 200);
      const first = await send(`${server.url}/payments/1`, "POST", ["job/5"]);
      assert.deepEqual(first.body, { resource: "payments", lease: "job", generation: 5 });
      assert.equal((await send(`${server.url}/payments/2`, "POST", ["job/4"])).status, 409);
    } finally {
      await server.close();
    }
  });

  it("a request holds its resource until its response is done", async () => {
    const store = new MemoryFenceStore();
    const guard = fencing({ store, resource: () => "r" });
    /** @type {string[]} */
    const order = [];
    const server = http.createServer((req, res) =>
      guard(req, res, () => {
        const generation = /** @type {any} */ (req).fencing.generation;
        order.push(`start ${generation}`);
        setTimeout(() => {
          order.push(`end ${generation}`);
          res.end("{}");
        }, generation === 7 ? 200 : 0);
      }),
    );
    const { url, close } = await listen(server);
    try {
      const slow = send(`${url}/r`, "POST", ["job/7"]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      await Promise.all([slow, send(`${url}/r`, "POST", ["job/8"])]);
      assert.deepEqual(order, ["start 7", "end 7", "start 8", "end 8"]);
    } finally {
      await close();
    }
  });
});

describe("remote store", () => {
  /** @type {Awaited<ReturnType<typeof service>>} */
  let live;
  before(async () => {
    live = await service();
  });
  after(async () => {
    await live?.stop();
  });

  it("refuses stale, other-lease and never-handed-out generations as Tenure's fences do", async () => {
    const tenure = new Tenure({ url: live.url });
    const name = `remote-${randomUUID().slice(0, 8)}`;
    const old = await tenure.acquire(name, { ttlSeconds: 30 });
    await old.release();
    const lease = await tenure.acquire(name, { ttlSeconds: 30 });
    const server = await FRAMEWORKS.express({ store: new RemoteFenceStore(tenure) });
    try {
      const path = `${server.url}/ledger/${name}`;
      assert.equal((await send(path, "POST", [lease.fencingToken])).status, 200);
      const stale = await send(path, "POST", [old.fencingToken]);
      assert.deepEqual([stale.status, stale.body.type, stale.body.highest], [409, "/problems/stale-generation", lease.generation]);
      const forged = await send(`${path}-2`, "POST", [`${name}/${lease.generation + 9}`]);
      assert.deepEqual([forged.status, forged.body.type], [422, "/problems/unknown-generation"]);
      assert.equal(forged.body.current_generation, lease.generation);
      const other = await send(path, "POST", ["other-lease/1"]);
      assert.equal(other.status, 409);
    } finally {
      await server.close();
      await lease.release();
    }
  });

  it("Tenure unreachable: 503 fence-store-unavailable with Retry-After, never let through", async () => {
    const down = new Tenure({ url: "http://127.0.0.1:9", retry: { attempts: 1, backoff: 0, maxBackoff: 0 } });
    const server = await FRAMEWORKS.fastify({ store: new RemoteFenceStore(down) });
    try {
      const answer = await send(`${server.url}/ledger`, "POST", ["job/1"]);
      assert.deepEqual([answer.status, answer.body.type], [503, "/problems/fence-store-unavailable"]);
      assert.equal(answer.headers["retry-after"], "1");
    } finally {
      await server.close();
    }
  });
});
