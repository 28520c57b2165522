-- sysbench.rand: sysbench's random numbers and strings.
-- Part of the interpreter's set-up: lua/state.rs loads the API's chunks in order, each
-- given the native functions as `...`.

local native = ...

-- sysbench.rand -------------------------------------------------------------------------------

-- The draws are C functions called through the FFI (lua/fast.rs), wrapped as sysbench wraps
-- its own: sysbench.rand.uniform is a Lua function, and the JIT compiles through the call.
local fast = native.fast
local function c_draw(name)
  local draw = ffi.cast("double (*)(double, double)", fast[name])
  return function(a, b) return draw(a, b) end
end
local c_uniform_double = ffi.cast("double (*)(void)", fast.rand_uniform_double)

sysbench.rand = {
  default = c_draw("rand_default"),
  uniform = c_draw("rand_uniform"),
  gaussian = c_draw("rand_gaussian"),
  special = c_draw("rand_special"),
  pareto = c_draw("rand_pareto"),
  zipfian = c_draw("rand_zipfian"),
  unique = native.rand_unique,
  string = native.rand_string,
  uniform_double = function() return c_uniform_double() end,
}

function sysbench.rand.uniform_uint64()
  local high, low = native.rand_u32_pair()
  return ffi.cast("uint64_t", high) * 4294967296ULL + low
end

