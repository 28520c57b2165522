-- sysbench.histogram: histograms a script fills and prints.
-- Part of the interpreter's set-up: lua/state.rs loads the API's chunks in order, each
-- given the native functions as `...`.

local native = ...

-- sysbench.histogram --------------------------------------------------------------------------

sysbench.histogram = {}
local histogram_mt = {
  __index = {
    update = function(self, value) self.h:update(value) end,
    print = function(self) self.h:print() end,
  },
  __tostring = function() return "<sb_histogram>" end,
}
function sysbench.histogram.new(size, range_min, range_max)
  return setmetatable({ h = native.histogram(size, range_min, range_max) }, histogram_mt)
end

