-- wrk script for the two-request workloads of bench/run.py, with one latency per operation as
-- loadgen.py measures them, so that the load client costs the shared cores as little as for the
-- single-request workloads:
--   wrk -t1 -c16 -d3s -s bench/wrk_steps.lua http://127.0.0.1:8080 -- WORKLOAD PREFIX SEED
-- cycle: acquire a fresh random name, then release it with the generation and grant answered;
-- claim_complete: claim window <prefix><n> of job cwjob-<w> under the held lease cw-0-<w>, then
-- complete it; n counts operations, w = n mod 64 (the held leases; loadgen.py and raw_asyncpg.py
-- give each connection its own w, which wrk cannot tell apart; claims of one job's windows may
-- overlap freely).
-- wrk asks for a connection's next request after its answer, so an answered first step queues
-- its second, which the next request takes: each connection keeps one request in flight.
-- wrk may also call request() for a request it never sends (65 calls for 64 connections at the
-- start); an operation begun or continued there is never counted, which can only lower a figure.
-- done() prints one JSON line; ops and latencies count whole operations.
local ffi = require("ffi")
ffi.cdef([[
  typedef struct { long tv_sec; long tv_nsec; } timespec;
  int clock_gettime(int clock, timespec *now);
]])
local CLOCK_MONOTONIC = 1
local clock = ffi.new("timespec")

local function now_us()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, clock)
  return tonumber(clock.tv_sec) * 1000000 + tonumber(clock.tv_nsec) / 1000
end

local LEASE = '{"holder":"bench","ttl_seconds":60}'
local workload, prefix, counter = "cycle", "w-", 0
-- second steps waiting for a connection, and operations in flight by name (or window key)
local queued, started = {}, {}
local WINDOW_LEASES = 64
-- read by done() through thread:get
ops, failed, latencies = 0, 0, {}

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function init(args)
  workload, prefix = args[1], args[2]
  math.randomseed(tonumber(args[3]))
end

local function window_body(w)
  return '{"holder":"bench","lease":"cw-0-' .. w .. '","generation":1}'
end

function request()
  local second = table.remove(queued, 1)
  if second ~= nil then
    return second
  end
  if workload == "cycle" then
    local name = prefix .. math.random(0, 999999999)
    started[name] = now_us()
    return wrk.format(nil, "/v1/leases/" .. name .. "/acquire", nil, LEASE)
  elseif workload == "claim_complete" then
    local w, key = counter % WINDOW_LEASES, prefix .. counter
    counter = counter + 1
    started[key] = { now_us(), w }
    local path = "/v1/jobs/cwjob-" .. w .. "/windows/" .. key .. "/claim"
    return wrk.format(nil, path, nil, window_body(w))
  end
  error("unknown workload " .. tostring(workload))
end

local function finished(began)
  ops = ops + 1
  latencies[#latencies + 1] = now_us() - began
end

function response(status, headers, body)
  if status ~= 200 then
    failed = failed + 1
    return
  end
  if workload == "cycle" then
    local name = body:match('"name":"([^"]*)"')
    local began = name and started[name]
    if not began then
      failed = failed + 1
    elseif type(began) == "number" then
      local generation = body:match('"generation":(%d+)')
      local grant = body:match('"grant":"(%d+)"')
      queued[#queued + 1] = wrk.format(nil, "/v1/leases/" .. name .. "/release", nil,
        '{"holder":"bench","generation":' .. generation .. ',"grant":"' .. grant .. '"}')
      started[name] = { began }
    else
      finished(began[1])
      started[name] = nil
    end
  else
    local key = body:match('"window":"([^"]*)"')
    local state = key and started[key]
    if not state then
      failed = failed + 1
    elseif body:find('"status":"running"', 1, true) then
      local path = "/v1/jobs/cwjob-" .. state[2] .. "/windows/" .. key .. "/complete"
      queued[#queued + 1] = wrk.format(nil, path, nil, window_body(state[2]))
    else
      finished(state[1])
      started[key] = nil
    end
  end
end

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
end

function done(summary, latency, requests)
  local all, count, errors = {}, 0, summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout
  for _, thread in ipairs(threads) do
    count = count + thread:get("ops")
    errors = errors + thread:get("failed")
    for _, value in ipairs(thread:get("latencies")) do
      all[#all + 1] = value
    end
  end
  table.sort(all)
  local function percentile(p)
    if #all == 0 then
      return 0
    end
    return all[math.max(1, math.ceil(#all * p / 100))]
  end
  io.write(string.format(
    '{"ops":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    count, summary.duration, errors, percentile(50), percentile(99)))
end
