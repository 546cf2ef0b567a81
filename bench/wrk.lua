-- wrk script for the single-request workloads of bench/run.py; the same bodies as loadgen.py.
--   wrk -t1 -c16 -d3s -s bench/wrk.lua http://127.0.0.1:8080 -- WORKLOAD PREFIX SEED [GRANT]
-- acquire: fresh random names; renew: random names of the held rn-0-<n> (n < 1000);
-- release: the held <prefix>0-<n> in order, naming GRANT (the prefill's);
-- verify: random resources fr-<n> against lease fl-0-0;
-- hot: one name, hot-<prefix>, re-acquired by its holder; constant: the naive app's endpoint
-- that answers without the database. done() prints one JSON line.
local workload, prefix, counter = "acquire", "w-", 0
local LEASE = '{"holder":"bench","ttl_seconds":60}'
local HELD = '{"holder":"bench","generation":1,"ttl_seconds":60}'
local RELEASE -- names the grant, given by init()
local VERIFY = '{"lease":"fl-0-0","generation":1}'

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function init(args)
  workload, prefix = args[1], args[2]
  math.randomseed(tonumber(args[3]))
  if workload == "release" then
    RELEASE = '{"holder":"bench","generation":1,"grant":"' .. assert(args[4], "GRANT") .. '"}'
  end
end

function request()
  if workload == "acquire" then
    local name = prefix .. math.random(0, 999999999)
    return wrk.format(nil, "/v1/leases/" .. name .. "/acquire", nil, LEASE)
  elseif workload == "renew" then
    return wrk.format(nil, "/v1/leases/rn-0-" .. math.random(0, 999) .. "/renew", nil, HELD)
  elseif workload == "release" then
    local name = prefix .. "0-" .. counter
    counter = counter + 1
    return wrk.format(nil, "/v1/leases/" .. name .. "/release", nil, RELEASE)
  elseif workload == "verify" then
    return wrk.format(nil, "/v1/fences/fr-" .. math.random(0, 999) .. "/verify", nil, VERIFY)
  elseif workload == "constant" then
    return wrk.format(nil, "/v1/constant/" .. prefix .. math.random(0, 999999999) .. "/acquire", nil, LEASE)
  elseif workload == "hot" then
    return wrk.format(nil, "/v1/leases/hot-" .. prefix .. "/acquire", nil, LEASE)
  end
  error("unknown workload " .. tostring(workload))
end

function done(summary, latency, requests)
  local e = summary.errors
  local failed = e.status + e.connect + e.read + e.write + e.timeout
  io.write(string.format(
    '{"ops":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests - failed, summary.duration, failed,
    latency:percentile(50), latency:percentile(99)))
end
