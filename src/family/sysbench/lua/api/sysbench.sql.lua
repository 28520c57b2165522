-- sysbench.sql over stampede's connections, and sysbench 0.5's db_* functions: part of the
-- interpreter's set-up (lua/state.rs loads these chunks in order, each given the native
-- functions as `...`).

local native = ...

-- sysbench.sql --------------------------------------------------------------------------------

local sql = {}
sysbench.sql = sql
sql.type = {
  NONE = 0, TINYINT = 1, SMALLINT = 2, INT = 3, BIGINT = 4, FLOAT = 5, DOUBLE = 6,
  TIME = 7, DATE = 8, DATETIME = 9, TIMESTAMP = 10, CHAR = 11, VARCHAR = 12,
}
sql.error = { NONE = 0, IGNORABLE = 1, FATAL = 2 }

-- sysbench's drivers, connections, statements and result sets are C data that tostring (and
-- inspect) show as "<sql_connection>" and the like. Here each is a small cdata of its class
-- holding a slot number; the object's state (the native handle, a statement's parameters) is
-- kept in `states` until the cdata is collected.
local states, last_slot = {}, 0

local function class(name, ctype, methods, field)
  ffi.cdef("typedef struct { double slot; } " .. ctype .. ";")
  return ffi.metatype(ctype, {
    __index = function(self, key)
      local method = methods[key]
      if method ~= nil or field == nil then
        return method
      end
      return field(states[self.slot], key)
    end,
    __tostring = function() return name end,
    __gc = function(self) states[self.slot] = nil end,
  })
end

local function new(ctype, state)
  last_slot = last_slot + 1
  states[last_slot] = state
  return ctype(last_slot)
end

local function state_of(object)
  return states[object.slot]
end

local driver_methods, connection_methods, statement_methods, param_methods = {}, {}, {}, {}
local result_methods = {}

local driver_t = class("<sql_driver>", "stampede_sql_driver", driver_methods)
-- The error fields sysbench's connection structure shows.
local error_fields = { error = 1, sql_errno = 2, sql_state = 3, sql_errmsg = 4 }
local connection_t = class("<sql_connection>", "stampede_sql_connection", connection_methods,
  function(handle, key)
    local at = error_fields[key]
    if at ~= nil then
      return (select(at, handle:last_error()))
    end
  end)
local statement_t = class("<sql_statement>", "stampede_sql_statement", statement_methods)
-- A result set is its connection's (the slot) current result, by the number of the statement
-- that made it: a connection holds one result set, which its next statement frees (as
-- sysbench's do), so a result carries no state of its own.
ffi.cdef("typedef struct { double slot; double statement; } stampede_sql_result;")
local result_t = ffi.metatype("stampede_sql_result", {
  __index = function(self, key)
    local method = result_methods[key]
    if method ~= nil then
      return method
    end
    if key == "nrows" or key == "nfields" then
      return states[self.slot]:result_field(self.statement, key)
    end
  end,
  __tostring = function() return "<sql_result>" end,
})
local param_mt = { __index = param_methods, __tostring = function() return "<sql_param>" end }

function sql.driver(name)
  local handle = native.driver(name)
  if handle == nil then
    error("failed to initialize the DB driver", 2)
  end
  return new(driver_t, handle)
end

function driver_methods.name(self)
  return state_of(self):name()
end

function driver_methods.connect(self)
  local handle = state_of(self):connect()
  if handle == nil then
    error("connection creation failed", 2)
  end
  return new(connection_t, handle)
end

-- The result of `connection`'s last statement, numbered `statement` (nil: it failed).
local function result(connection, statement)
  if statement == nil then
    return nil
  end
  return result_t(connection.slot, statement)
end

function result_methods.fetch_row(self)
  return states[self.slot]:fetch_row(self.statement)
end

function result_methods.free(self)
  local connection = type(self) == "cdata" and states[self.slot]
  if not connection or not connection:free_result(self.statement) then
    native.alert("attempt to free an invalid result set")
    error("db_free_results() failed", 0)
  end
  return true
end

-- What a failed call means, as sysbench decides it: an error the driver or the script's
-- sql_error_ignorable hook calls ignorable restarts the event; any other is fatal.
local function check_error(self, rs, query)
  if rs ~= nil then
    return rs
  end
  local kind, errno, state, message = state_of(self):last_error()
  if kind == sql.error.NONE then
    return rs
  end
  if state == nil or message == nil then
    error("SQL API error", 3)
  end
  local errdesc = {
    connection = self,
    query = query,
    sql_errno = errno,
    sql_state = state,
    sql_errmsg = message,
  }
  if (kind == sql.error.FATAL and type(sysbench.hooks.sql_error_ignorable) == "function"
      and sysbench.hooks.sql_error_ignorable(errdesc)) or kind == sql.error.IGNORABLE then
    errdesc.errcode = sysbench.error.RESTART_EVENT
    error(errdesc, 3)
  end
  error(string.format("SQL error, errno = %d, state = '%s': %s", errno, state, message), 2)
end
connection_methods.check_error = check_error

function connection_methods.query(self, query)
  return check_error(self, result(self, state_of(self):query(query)), query)
end

function connection_methods.query_row(self, query)
  local rs = self:query(query)
  if rs == nil or rs.nrows == 0 then
    return nil
  end
  return unpack(rs:fetch_row(), 1, rs.nfields)
end

function connection_methods.disconnect(self)
  return assert(state_of(self):disconnect())
end

function connection_methods.reconnect(self)
  return assert(state_of(self):reconnect())
end

function connection_methods.bulk_insert_init(self, query)
  return assert(state_of(self):bulk_insert_init(query), "db_bulk_insert_init() failed")
end

function connection_methods.bulk_insert_next(self, value)
  return assert(state_of(self):bulk_insert_next(value), "db_bulk_insert_next() failed")
end

function connection_methods.bulk_insert_done(self)
  return assert(state_of(self):bulk_insert_done(), "db_bulk_insert_done() failed")
end

function connection_methods.prepare(self, query)
  local id = state_of(self):prepare(query)
  if id == nil then
    check_error(self, nil, query)
  end
  return new(statement_t, {
    id = id, connection = self, handle = state_of(self):handle(), params = {},
  })
end

local integer_types = { [1] = true, [2] = true, [3] = true, [4] = true }
local double_types = { [5] = true, [6] = true }
local text_types = { [11] = true, [12] = true }

function statement_methods.bind_create(self, btype, max_len)
  local param = setmetatable({}, param_mt)
  if integer_types[btype] then
    param.type, param.max_len = sql.type.BIGINT, 8
  elseif double_types[btype] then
    param.type, param.max_len = sql.type.DOUBLE, 8
  elseif text_types[btype] then
    param.type, param.max_len = sql.type.VARCHAR, max_len
  else
    error("Unsupported argument type: " .. tostring(btype), 2)
  end
  return param
end

function statement_methods.bind_param(self, ...)
  local count = select("#", ...)
  if count < 1 then
    return nil
  end
  state_of(self).params = { ... }
  return 0
end

-- Binding numbers and running the statement are C functions called through the FFI
-- (lua/sql.rs), as sysbench's own execute is: the JIT compiles the event loop through them.
local fast_sql = native.fast_sql
local c_bind_number = ffi.cast("void (*)(uint32_t, double)", fast_sql.bind_number)
local c_bind_null = ffi.cast("void (*)(uint32_t)", fast_sql.bind_null)
local c_execute = ffi.cast("double (*)(uint32_t, uint32_t, uint32_t)", fast_sql.execute)
local bind_value = native.bind_value

function statement_methods.execute(self)
  local statement = state_of(self)
  local params = statement.params
  local count = #params
  for i = 1, count do
    local value = params[i].value
    if type(value) == "number" then
      c_bind_number(i - 1, value)
    elseif value == nil then
      c_bind_null(i - 1)
    else
      bind_value(i - 1, value)
    end
  end
  local connection = statement.connection
  local number = c_execute(statement.handle, statement.id, count)
  local rs = nil
  if number >= 0 then
    rs = result_t(connection.slot, number)
  end
  return check_error(connection, rs, "<prepared statement>")
end

function statement_methods.close(self)
  local statement = state_of(self)
  return state_of(statement.connection):close_statement(statement.id)
end

function param_methods.set(self, value)
  if value == nil then
    self.value = nil
    return
  end
  local btype = self.type
  if btype == sql.type.BIGINT then
    self.value = math.floor(tonumber(value))
  elseif btype == sql.type.DOUBLE then
    self.value = tonumber(value) + 0.0
  elseif btype == sql.type.VARCHAR then
    value = tostring(value)
    if #value > self.max_len then
      value = value:sub(1, self.max_len)
    end
    self.value = value
  else
    error("Unsupported argument type: " .. btype, 2)
  end
end

function param_methods.set_rand_str(self, fmt)
  if self.type ~= sql.type.VARCHAR then
    error("Unsupported argument type: " .. self.type, 2)
  end
  self:set(native.rand_string(fmt))
end

-- The legacy API (sysbench 0.5's db_* functions over the thread's one connection) -----------

local legacy = {
  DB_ERROR_NONE = 0,
  DB_ERROR_RESTART_TRANSACTION = 1,
  DB_ERROR_FAILED = 2,
}
sysbench.db = legacy
local legacy_connection

-- An ignorable error restarts the event; a fatal one stops the thread with `what` failed.
local function legacy_check(connection, rs, what)
  if rs ~= nil then
    return rs
  end
  local kind = state_of(connection):last_error()
  if kind == sql.error.IGNORABLE then
    error({ errcode = sysbench.error.RESTART_EVENT })
  elseif kind == sql.error.FATAL then
    error(what .. " failed", 3)
  end
end

function legacy.connect()
  local handle = native.driver(nil)
  if handle == nil then
    error("DB initialization failed", 2)
  end
  db_driver = handle:name()
  if legacy_connection == nil then
    local connection = handle:connect()
    if connection == nil then
      error("Failed to connect to the database", 2)
    end
    legacy_connection = new(connection_t, connection)
  end
end

local function legacy_open()
  if legacy_connection == nil then
    legacy.connect()
  end
  return legacy_connection
end

function legacy.disconnect()
  if legacy_connection ~= nil then
    state_of(legacy_connection):disconnect()
    legacy_connection = nil
  end
end

function legacy.query(query)
  local connection = legacy_open()
  legacy_check(connection, state_of(connection):query(query), "db_query()")
end

function legacy.bulk_insert_init(query)
  if not state_of(legacy_open()):bulk_insert_init(query) then
    error("db_bulk_insert_init() failed", 2)
  end
end

function legacy.bulk_insert_next(value)
  if legacy_connection == nil or not state_of(legacy_connection):bulk_insert_next(value) then
    error("db_bulk_insert_next() failed", 2)
  end
end

function legacy.bulk_insert_done()
  if legacy_connection ~= nil then
    state_of(legacy_connection):bulk_insert_done()
  end
end

function legacy.prepare(query)
  local connection = legacy_open()
  local id = state_of(connection):prepare(query)
  legacy_check(connection, id, "db_prepare()")
  return { id = id, connection = connection, values = {} }
end

-- The values are read from the bound table at each execute, as sysbench 0.5 reads them.
function legacy.bind_param(statement, values)
  statement.values = values
end

function legacy.bind_result(statement, results)
  statement.results = results
end

function legacy.execute(statement)
  local values = statement.values
  local connection = statement.connection
  local rs = state_of(connection):execute(statement.id, values, #values)
  return legacy_check(connection, result(connection, rs), "db_execute()")
end

function legacy.close(statement)
  state_of(statement.connection):close_statement(statement.id)
end

function legacy.store_results(rs)
end

function legacy.free_results(rs)
end

for name, fn in pairs(legacy) do
  if type(fn) == "function" then
    _G["db_" .. name] = fn
  end
end
DB_ERROR_NONE = legacy.DB_ERROR_NONE
DB_ERROR_RESTART_TRANSACTION = legacy.DB_ERROR_RESTART_TRANSACTION
DB_ERROR_FAILED = legacy.DB_ERROR_FAILED

