// The real Tenure service for the tests: the one at $TENURE_TEST_URL (started by test/run.js or
// by the pytest test that runs these suites), else `tenure serve` started here on a free port,
// on $TENURE_DATABASE_URL or an embedded PostgreSQL in a fresh folder.

import { spawn, execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const REPOSITORY = path.resolve(fileURLToPath(import.meta.url), "../../../../..");
export const TENURE = process.env.TENURE_BIN ?? path.join(REPOSITORY, ".venv/bin/tenure");
const READY_TIMEOUT_MS = 90_000;

/** The environment without this process's TENURE_* settings, plus `settings`.
 * @param {Record<string, string>} settings */
export function serviceEnvironment(settings) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith("TENURE_")),
  );
  return { ...env, TENURE_LOG_LEVEL: "warning", ...settings };
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const address = server.address();
  await new Promise((resolve) => server.close(() => resolve(undefined)));
  return typeof address === "object" && address ? address.port : 0;
}

/** @param {string} url @param {import("node:child_process").ChildProcess} child */
async function waitReady(url, child) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`tenure serve exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} not ready after ${READY_TIMEOUT_MS} ms`);
}

/**
 * `tenure serve` on a free port; `database` is where it keeps its data.
 * @returns {Promise<{url: string, settings: Record<string, string>, stop: () => Promise<void>}>}
 */
export async function startService() {
  const port = await freePort();
  const folder = mkdtempSync(path.join(tmpdir(), "tenure-node-"));
  const settings = process.env.TENURE_DATABASE_URL
    ? { TENURE_DATABASE_URL: process.env.TENURE_DATABASE_URL }
    : { TENURE_DATA_DIR: folder };
  const child = spawn(TENURE, ["serve", "--port", String(port)], {
    env: serviceEnvironment(settings),
    stdio: ["ignore", "inherit", "inherit"],
    detached: true,
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(folder, { recursive: true, force: true });
  };
  try {
    await waitReady(url, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, settings, stop };
}

/**
 * The service the suites share: $TENURE_TEST_URL (its database in $TENURE_TEST_SETTINGS, JSON)
 * or one started for this file, stopped by `stop`.
 */
export async function service() {
  if (process.env.TENURE_TEST_URL) {
    const settings = JSON.parse(process.env.TENURE_TEST_SETTINGS ?? "{}");
    return { url: process.env.TENURE_TEST_URL, settings, stop: async () => {} };
  }
  return startService();
}

/**
 * `tenure admin bump-generations --by amount` on the service's database.
 * @param {Record<string, string>} settings @param {number} amount
 */
export async function bumpGenerations(settings, amount) {
  const args = ["admin", "bump-generations", "--by", String(amount)];
  return promisify(execFile)(TENURE, args, { env: serviceEnvironment(settings) });
}
