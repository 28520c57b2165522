//! Values of pgbench's expression language and their text forms.

use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// A variable that was never set (distinct from SQL NULL, which scripts can assign).
    #[default]
    Unset,
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    /// Text kept as text until read as a value: from `-D` and `\gset`/`\aset`.
    Text(Arc<String>),
}

impl Value {
    /// Appends the text pgbench substitutes for this value in SQL (NULL becomes the word NULL).
    pub fn write_text(&self, out: &mut String) {
        match self {
            Value::Unset => {}
            Value::Null => out.push_str("NULL"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            // itoa, not `write!`: text(:id) runs per statement in dbSTRESS, and the
            // formatting machinery cost some 400 instructions a number.
            Value::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
            Value::Double(d) => out.push_str(&format_g15(*d)),
            Value::Text(t) => out.push_str(t),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Unset => "unset",
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
            Value::Text(_) => "text",
        }
    }
}

/// C's `printf("%.15g")`, which pgbench uses to turn doubles into text.
pub fn format_g15(value: f64) -> String {
    const PRECISION: i32 = 15;
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, value);
    let (mantissa, exponent) = scientific.split_once('e').expect("{:e} always writes an e");
    let exponent: i32 = exponent
        .parse()
        .expect("{:e} writes the exponent as an integer");
    if !(-4..PRECISION).contains(&exponent) {
        let mantissa = strip_fraction_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (PRECISION - 1 - exponent).max(0) as usize;
        strip_fraction_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

fn strip_fraction_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g15_matches_c_printf() {
        assert_eq!(format_g15(1.5), "1.5");
        assert_eq!(format_g15(100.0), "100");
        assert_eq!(format_g15(0.0001), "0.0001");
        assert_eq!(format_g15(0.00001), "1e-05");
        assert_eq!(format_g15(1e15), "1e+15");
        assert_eq!(format_g15(123456789012345.0), "123456789012345");
        assert_eq!(format_g15(std::f64::consts::PI), "3.14159265358979");
        assert_eq!(format_g15(-2.5e-7), "-2.5e-07");
    }
}
