-- sysbench.rand: sysbench's random numbers and strings.
-- Part of the interpreter's set-up: lua/state.rs loads the API's chunks in order, each
-- given the native functions as `...`.

local native = ...

-- sysbench.rand -------------------------------------------------------------------------------

sysbench.rand = {
  default = native.rand_default,
  uniform = native.rand_uniform,
  gaussian = native.rand_gaussian,
  special = native.rand_special,
  pareto = native.rand_pareto,
  zipfian = native.rand_zipfian,
  unique = native.rand_unique,
  string = native.rand_string,
  uniform_double = native.rand_uniform_double,
}

function sysbench.rand.uniform_uint64()
  local high, low = native.rand_u32_pair()
  return ffi.cast("uint64_t", high) * 4294967296ULL + low
end

