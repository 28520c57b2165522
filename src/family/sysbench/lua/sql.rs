//! `sysbench.sql`'s natives: a driver (pgsql or mysql, as `--db-driver` says) and its
//! connections (`connection.rs`) as Lua userdata, and the prepared-statement path the API's
//! Lua calls through LuaJIT's FFI: binding numbers and running the statement are plain C
//! functions (as sysbench's `sql_bind_param`/`sql_execute` are), so that an event loop of
//! prepared statements stays compiled — an mlua call per statement ended the JIT's traces
//! there, and the loop ran interpreted (0.62 µs an event against sysbench's 0.11 under
//! `--mysql-dry-run`). The C functions find the connection by its handle in a thread-local.

use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::{Rc, Weak};
use std::sync::atomic::Ordering;

use stampede_lua::mlua::{self, LightUserData, Lua, Table, UserData, UserDataMethods, Value};

use super::connection::Connection;
use super::context::ThreadContext;
use super::target::Target;
use stampede_script::Value as BoundValue;

fn context(lua: &Lua) -> Rc<ThreadContext> {
    lua.app_data_ref::<Rc<ThreadContext>>()
        .expect("every interpreter has its context")
        .clone()
}

/// `sysbench.sql.driver(name)`: nil (after sysbench's FATAL line) for an unknown name.
pub fn create_driver(lua: &Lua, name: Option<String>) -> mlua::Result<Value> {
    let shared = context(lua).shared.clone();
    let wanted = name.unwrap_or_else(|| shared.options().string("db_driver"));
    if wanted != "pgsql" && wanted != "mysql" {
        shared
            .log
            .fatal(&format!("invalid database driver name: '{wanted}'"));
        return Ok(Value::Nil);
    }
    let target = match shared.target() {
        Ok(target) if target.name() == wanted => target.clone(),
        Ok(_) => {
            let mut options = shared.options().clone();
            options.line.given.push(("db_driver".into(), Some(wanted)));
            match Target::from_options(&options) {
                Ok(target) => target,
                Err(message) => {
                    shared.log.fatal(&message);
                    return Ok(Value::Nil);
                }
            }
        }
        Err(message) => {
            shared.log.fatal(&message);
            return Ok(Value::Nil);
        }
    };
    shared.sql_used.store(true, Ordering::Relaxed);
    lua.create_userdata(Driver { target }).map(Value::UserData)
}

pub struct Driver {
    target: Target,
}

impl UserData for Driver {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("name", |_, this, ()| Ok(this.target.name()));
        methods.add_method("connect", |lua, this, ()| {
            match Connection::open(context(lua), &this.target) {
                Some(connection) => lua
                    .create_userdata(ConnectionRef::register(connection))
                    .map(Value::UserData),
                None => Ok(Value::Nil),
            }
        });
    }
}

/// A Lua value bound to a statement's parameter.
fn bound(value: Value) -> BoundValue {
    match value {
        Value::Nil => BoundValue::Null,
        Value::Boolean(b) => BoundValue::Int(b as i64),
        Value::Integer(i) => BoundValue::Int(i),
        Value::Number(n) => number(n),
        Value::String(s) => BoundValue::Text(std::sync::Arc::new(s.to_string_lossy())),
        other => BoundValue::Text(std::sync::Arc::new(format!("{other:?}"))),
    }
}

/// A Lua number as a parameter: an integer when it is one (and exact), else a double.
fn number(n: f64) -> BoundValue {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        BoundValue::Int(n as i64)
    } else {
        BoundValue::Double(n)
    }
}

thread_local! {
    /// The thread's connections, by handle (their place here), for the FFI's statement path.
    static OPEN: RefCell<Vec<Weak<RefCell<Connection>>>> = const { RefCell::new(Vec::new()) };
    /// The values bound for the thread's next prepared statement, by position.
    static BOUND: RefCell<Vec<BoundValue>> = const { RefCell::new(Vec::new()) };
}

/// A connection as Lua holds it: shared with the thread's table of handles.
pub struct ConnectionRef {
    connection: Rc<RefCell<Connection>>,
    handle: usize,
}

impl ConnectionRef {
    fn register(connection: Connection) -> ConnectionRef {
        let connection = Rc::new(RefCell::new(connection));
        let handle = OPEN.with(|open| {
            let mut open = open.borrow_mut();
            open.push(Rc::downgrade(&connection));
            open.len() - 1
        });
        ConnectionRef { connection, handle }
    }
}

impl UserData for ConnectionRef {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("handle", |_, this, ()| Ok(this.handle));
        methods.add_method("last_error", |_, this, ()| {
            Ok(this.connection.borrow().last_error())
        });
        methods.add_method("query", |_, this, sql: mlua::String| {
            let sql = sql.to_str()?.to_string();
            Ok(this.connection.borrow_mut().run(&sql))
        });
        methods.add_method("prepare", |_, this, sql: mlua::String| {
            let sql = sql.to_str()?.to_string();
            Ok(this.connection.borrow_mut().prepare(&sql))
        });
        // The legacy API's path (values read from a table at each execute).
        methods.add_method(
            "execute",
            |_, this, (slot, values, count): (usize, Table, usize)| {
                let values: Vec<BoundValue> = (1..=count)
                    .map(|i| values.raw_get::<Value>(i).map(bound))
                    .collect::<mlua::Result<_>>()?;
                Ok(this.connection.borrow_mut().run_prepared(slot, &values))
            },
        );
        methods.add_method("fetch_row", |lua, this, statement: u64| {
            let Some(row) = this.connection.borrow_mut().fetch_row(statement) else {
                return Ok(Value::Nil);
            };
            let table = lua.create_table_with_capacity(row.len(), 0)?;
            for (index, value) in row.into_iter().enumerate() {
                if let Some(value) = value {
                    table.raw_set(index + 1, value)?;
                }
            }
            Ok(Value::Table(table))
        });
        methods.add_method(
            "result_field",
            |_, this, (statement, field): (u64, String)| {
                Ok(this.connection.borrow_mut().result_field(statement, &field))
            },
        );
        methods.add_method("free_result", |_, this, statement: u64| {
            Ok(this.connection.borrow_mut().free_result(statement))
        });
        methods.add_method("close_statement", |_, this, slot: usize| {
            this.connection.borrow_mut().close_statement(slot);
            Ok(0)
        });
        methods.add_method("reconnect", |_, this, ()| {
            Ok(this.connection.borrow_mut().reconnect())
        });
        methods.add_method("disconnect", |_, this, ()| {
            Ok(this.connection.borrow_mut().disconnect())
        });
        methods.add_method("bulk_insert_init", |_, this, head: String| {
            Ok(this.connection.borrow_mut().bulk_init(head))
        });
        methods.add_method("bulk_insert_next", |_, this, value: String| {
            Ok(this.connection.borrow_mut().bulk_next(&value))
        });
        methods.add_method("bulk_insert_done", |_, this, ()| {
            Ok(this.connection.borrow_mut().bulk_done())
        });
    }
}

/// The statement path's C functions (cast by the API's Lua by these names), and the binding
/// of any other value (text), an mlua function.
pub fn add_functions(lua: &Lua, native: &Table) -> mlua::Result<()> {
    let fast = lua.create_table()?;
    let pointers: [(&str, *const ()); 3] = [
        ("bind_number", bind_number as *const ()),
        ("bind_null", bind_null as *const ()),
        ("execute", execute as *const ()),
    ];
    for (name, pointer) in pointers {
        fast.set(name, LightUserData(pointer as *mut c_void))?;
    }
    native.set("fast_sql", fast)?;
    native.set(
        "bind_value",
        lua.create_function(|_, (index, value): (usize, Value)| {
            bind(index, bound(value));
            Ok(())
        })?,
    )
}

fn bind(index: usize, value: BoundValue) {
    BOUND.with(|bound| {
        let mut bound = bound.borrow_mut();
        if bound.len() <= index {
            bound.resize(index + 1, BoundValue::Null);
        }
        bound[index] = value;
    })
}

extern "C" fn bind_number(index: u32, value: f64) {
    bind(index as usize, number(value));
}

extern "C" fn bind_null(index: u32) {
    bind(index as usize, BoundValue::Null);
}

/// Runs prepared statement `slot` of connection `handle` with the first `count` bound values:
/// the statement's number (its result the connection's), or -1 when it failed.
extern "C" fn execute(handle: u32, slot: u32, count: u32) -> f64 {
    let connection = OPEN.with(|open| open.borrow().get(handle as usize).and_then(Weak::upgrade));
    let Some(connection) = connection else {
        return -1.0;
    };
    let number = BOUND.with(|bound| {
        let bound = bound.borrow();
        let values = &bound[..(count as usize).min(bound.len())];
        connection.borrow_mut().run_prepared(slot as usize, values)
    });
    number.map_or(-1.0, |number| number as f64)
}
