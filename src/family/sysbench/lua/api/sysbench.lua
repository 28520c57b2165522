-- The sysbench table's core: the event loop of a worker thread, hooks, error codes and the
-- report functions scripts pass as hooks. Written for stampede.

local native = ...

ffi = require("ffi")

print = native.print
io.write = native.write

-- sysbench.error, sysbench.hooks --------------------------------------------------------------

sysbench.error = { NONE = 0, RESTART_EVENT = 1 }
sysbench.hooks = {}

-- The event loop of a worker thread: sysbench's own scripts may replace it (thread_run).
function thread_run(thread_id)
  local fast = native.fast
  local more = ffi.cast("bool (*)(void)", fast.more_events)
  local start = ffi.cast("void (*)(void)", fast.event_start)
  local stop = ffi.cast("void (*)(void)", fast.event_stop)
  while more() do
    start()
    local ok, ret
    repeat
      ok, ret = pcall(event, thread_id)
      if not ok then
        if type(ret) == "table" and ret.errcode == sysbench.error.RESTART_EVENT then
          if sysbench.hooks.before_restart_event then
            sysbench.hooks.before_restart_event(ret)
          end
        else
          error(ret, 2)
        end
      end
    until ok
    if ret then
      break
    end
    stop()
  end
end

-- Reports (the functions scripts pass as hooks) -----------------------------------------------

function sysbench.report_default(stat)
  local seconds = stat.time_interval
  print(string.format("[ %.0fs ] thds: %u tps: %4.2f qps: %4.2f " ..
    "(r/w/o: %4.2f/%4.2f/%4.2f) lat (ms,%u%%): %4.2f err/s %4.2f reconn/s: %4.2f",
    stat.time_total, stat.threads_running, stat.events / seconds,
    (stat.reads + stat.writes + stat.other) / seconds,
    stat.reads / seconds, stat.writes / seconds, stat.other / seconds,
    sysbench.opt.percentile, stat.latency_pct * 1000,
    stat.errors / seconds, stat.reconnects / seconds))
end

function sysbench.report_csv(stat)
  local seconds = stat.time_interval
  print(string.format("%.0f,%u,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f",
    stat.time_total, stat.threads_running, stat.events / seconds,
    (stat.reads + stat.writes + stat.other) / seconds,
    stat.reads / seconds, stat.writes / seconds, stat.other / seconds,
    stat.latency_pct * 1000, stat.errors / seconds, stat.reconnects / seconds))
end

local json_started = false
function sysbench.report_json(stat)
  if json_started then
    io.write(",\n")
  else
    io.write("[\n")
    json_started = true
    native.at_exit("\n]\n")
  end
  local seconds = stat.time_interval
  io.write(string.format([[
  {
    "time": %4.0f,
    "threads": %u,
    "tps": %4.2f,
    "qps": {
      "total": %4.2f,
      "reads": %4.2f,
      "writes": %4.2f,
      "other": %4.2f
    },
    "latency": %4.2f,
    "errors": %4.2f,
    "reconnects": %4.2f
  }]], stat.time_total, stat.threads_running, stat.events / seconds,
    (stat.reads + stat.writes + stat.other) / seconds,
    stat.reads / seconds, stat.writes / seconds, stat.other / seconds,
    stat.latency_pct * 1000, stat.errors / seconds, stat.reconnects / seconds))
end

