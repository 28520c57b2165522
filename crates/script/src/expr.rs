//! Lexer and Pratt parser for `\set` expressions, with pgbench's (SQL's) operator precedence:
//! `OR` < `AND` < `NOT` < comparisons < bitwise (`| # & << >>`) < `+ -` < `* / %` < unary.

use super::ast::VarTable;
use super::ast::{Arity, Expr, Function};
use super::value::Value;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    /// `9223372036854775808`, valid only right after a unary minus.
    IntMinPositive,
    Double(f64),
    Var(String),
    Ident(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    End,
}

/// A parse error with the 0-based byte column where it was found.
#[derive(Debug)]
pub struct ExprError {
    pub column: usize,
    pub message: String,
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

const OPERATORS: [&str; 18] = [
    "<=", ">=", "<>", "!=", "<<", ">>", "+", "-", "*", "/", "%", "=", "<", ">", "&", "|", "#", "~",
];

impl<'a> Lexer<'a> {
    fn skip_space(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn next(&mut self) -> Result<(usize, Token), ExprError> {
        self.skip_space();
        let start = self.pos;
        let rest = &self.text[self.pos..];
        let Some(c) = rest.chars().next() else {
            return Ok((start, Token::End));
        };
        let token = if c.is_ascii_digit()
            || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            self.number(rest)?
        } else if c == ':' {
            let name = take_name(&rest[1..]);
            if name.is_empty() {
                return Err(self.error(start, "unexpected character (:)"));
            }
            self.pos += 1 + name.len();
            Token::Var(name.to_string())
        } else if c.is_ascii_alphabetic() || c == '_' {
            let name = take_name(rest);
            self.pos += name.len();
            Token::Ident(name.to_string())
        } else if c == '(' || c == ')' || c == ',' {
            self.pos += 1;
            match c {
                '(' => Token::LParen,
                ')' => Token::RParen,
                _ => Token::Comma,
            }
        } else if let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) {
            self.pos += op.len();
            Token::Op(op)
        } else {
            return Err(self.error(start, &format!("unexpected character ({c})")));
        };
        Ok((start, token))
    }

    fn number(&mut self, rest: &str) -> Result<Token, ExprError> {
        let start = self.pos;
        let mut end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let mut is_double = false;
        if rest[end..].starts_with('.') {
            is_double = true;
            end += 1;
            end += rest[end..]
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len() - end);
        }
        if rest[end..].starts_with(['e', 'E']) {
            let after = &rest[end + 1..];
            let sign = usize::from(after.starts_with(['+', '-']));
            let digits = after[sign..]
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len() - sign);
            if digits > 0 {
                is_double = true;
                end += 1 + sign + digits;
            }
        }
        let literal = &rest[..end];
        self.pos += end;
        if is_double {
            return match literal.parse::<f64>() {
                Ok(value) if !out_of_range(value, literal) => Ok(Token::Double(value)),
                _ => Err(self.error(start, &format!("double constant overflow ({literal})"))),
            };
        }
        match literal.parse::<i64>() {
            Ok(i) => Ok(Token::Int(i)),
            Err(_) if literal.trim_start_matches('0') == "9223372036854775808" => {
                Ok(Token::IntMinPositive)
            }
            Err(_) => Err(self.error(start, &format!("bigint constant overflow ({literal})"))),
        }
    }

    fn error(&self, column: usize, message: &str) -> ExprError {
        ExprError {
            column,
            message: message.to_string(),
        }
    }
}

/// strtod's ERANGE, which pgbench reports as an overflow: an infinite result, or a nonzero
/// literal that comes out zero or subnormal.
fn out_of_range(value: f64, literal: &str) -> bool {
    let mantissa = literal.split(['e', 'E']).next().unwrap_or(literal);
    let nonzero = mantissa.contains(|c: char| ('1'..='9').contains(&c));
    value.is_infinite() || (nonzero && (value == 0.0 || value.is_subnormal()))
}

fn take_name(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii()))
        .unwrap_or(text.len());
    &text[..end]
}

pub struct ExprParser<'a, 'v> {
    lexer: Lexer<'a>,
    current: (usize, Token),
    vars: &'v mut VarTable,
}

impl<'a, 'v> ExprParser<'a, 'v> {
    /// Parses the whole of `text` as one expression.
    pub fn parse(text: &'a str, vars: &'v mut VarTable) -> Result<Expr, ExprError> {
        let mut lexer = Lexer { text, pos: 0 };
        let current = lexer.next()?;
        let mut parser = ExprParser {
            lexer,
            current,
            vars,
        };
        if parser.current.1 == Token::End {
            return Err(parser.error_here("syntax error"));
        }
        let expr = parser.expression(0)?;
        if parser.current.1 != Token::End {
            return Err(parser.error_here("syntax error"));
        }
        Ok(expr)
    }

    fn advance(&mut self) -> Result<Token, ExprError> {
        let next = self.lexer.next()?;
        Ok(std::mem::replace(&mut self.current, next).1)
    }

    fn error_here(&self, message: &str) -> ExprError {
        ExprError {
            column: self.current.0,
            message: message.to_string(),
        }
    }

    fn keyword(&self) -> Option<String> {
        match &self.current.1 {
            Token::Ident(name) => Some(name.to_ascii_uppercase()),
            _ => None,
        }
    }

    /// The binary operator at the current token, its binding power (higher binds tighter), and
    /// whether pgbench swaps its operands (`a > b` is `b < a`).
    fn binary_operator(&self) -> Option<(Function, u8, bool)> {
        if let Some(word) = self.keyword() {
            return match word.as_str() {
                "OR" => Some((Function::Or, 1, false)),
                "AND" => Some((Function::And, 2, false)),
                _ => None,
            };
        }
        let Token::Op(op) = self.current.1 else {
            return None;
        };
        Some(match op {
            "=" => (Function::Eq, 5, false),
            "<>" | "!=" => (Function::Ne, 5, false),
            "<" => (Function::Lt, 5, false),
            "<=" => (Function::Le, 5, false),
            ">" => (Function::Lt, 5, true),
            ">=" => (Function::Le, 5, true),
            "|" => (Function::BitOr, 6, false),
            "#" => (Function::BitXor, 6, false),
            "&" => (Function::BitAnd, 6, false),
            "<<" => (Function::ShiftLeft, 6, false),
            ">>" => (Function::ShiftRight, 6, false),
            "+" => (Function::Add, 7, false),
            "-" => (Function::Sub, 7, false),
            "*" => (Function::Mul, 8, false),
            "/" => (Function::Div, 8, false),
            "%" => (Function::Mod, 8, false),
            _ => return None,
        })
    }

    fn expression(&mut self, min_power: u8) -> Result<Expr, ExprError> {
        let mut left = self.prefix()?;
        loop {
            // IS / ISNULL / NOTNULL bind between NOT and the comparisons (power 4).
            if min_power < 4 {
                if let Some(test) = self.null_or_boolean_test(&left)? {
                    left = test;
                    continue;
                }
            }
            let Some((function, power, swapped)) = self.binary_operator() else {
                break;
            };
            if power <= min_power {
                break;
            }
            self.advance()?;
            let right = self.expression(power)?;
            left = if swapped {
                Expr::Call(function, vec![right, left])
            } else {
                Expr::Call(function, vec![left, right])
            };
            // Comparisons do not chain (nonassociative in pgbench's grammar).
            if power == 5 && matches!(self.binary_operator(), Some((_, 5, _))) {
                return Err(self.error_here("syntax error"));
            }
        }
        Ok(left)
    }

    /// `x IS [NOT] NULL|TRUE|FALSE`, `x ISNULL`, `x NOTNULL`.
    fn null_or_boolean_test(&mut self, operand: &Expr) -> Result<Option<Expr>, ExprError> {
        let is =
            |value: Value| Expr::Call(Function::Is, vec![operand.clone(), Expr::Constant(value)]);
        let negate = |e: Expr| Expr::Call(Function::Not, vec![e]);
        match self.keyword().as_deref() {
            Some("ISNULL") => {
                self.advance()?;
                Ok(Some(is(Value::Null)))
            }
            Some("NOTNULL") => {
                self.advance()?;
                Ok(Some(negate(is(Value::Null))))
            }
            Some("IS") => {
                self.advance()?;
                let negated = self.keyword().as_deref() == Some("NOT");
                if negated {
                    self.advance()?;
                }
                let value = match self.keyword().as_deref() {
                    Some("NULL") => Value::Null,
                    Some("TRUE") => Value::Bool(true),
                    Some("FALSE") => Value::Bool(false),
                    _ => return Err(self.error_here("syntax error")),
                };
                self.advance()?;
                let test = is(value);
                Ok(Some(if negated { negate(test) } else { test }))
            }
            _ => Ok(None),
        }
    }

    fn prefix(&mut self) -> Result<Expr, ExprError> {
        const UNARY_POWER: u8 = 9;
        if self.keyword().as_deref() == Some("NOT") {
            self.advance()?;
            let operand = self.expression(3)?;
            return Ok(Expr::Call(Function::Not, vec![operand]));
        }
        match self.current.1.clone() {
            Token::Op("-") => {
                self.advance()?;
                if self.current.1 == Token::IntMinPositive {
                    self.advance()?;
                    return Ok(Expr::Constant(Value::Int(i64::MIN)));
                }
                let operand = self.expression(UNARY_POWER)?;
                Ok(Expr::Call(
                    Function::Sub,
                    vec![Expr::Constant(Value::Int(0)), operand],
                ))
            }
            Token::Op("+") => {
                self.advance()?;
                self.expression(UNARY_POWER)
            }
            Token::Op("~") => {
                self.advance()?;
                let operand = self.expression(UNARY_POWER)?;
                Ok(Expr::Call(
                    Function::BitXor,
                    vec![Expr::Constant(Value::Int(-1)), operand],
                ))
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Expr, ExprError> {
        let column = self.current.0;
        match self.advance()? {
            Token::Int(i) => Ok(Expr::Constant(Value::Int(i))),
            Token::IntMinPositive => Err(ExprError {
                column,
                message: "bigint constant overflow (9223372036854775808)".into(),
            }),
            Token::Double(d) => Ok(Expr::Constant(Value::Double(d))),
            Token::Var(name) => Ok(Expr::Var(self.vars.slot(&name))),
            Token::LParen => {
                let inner = self.expression(0)?;
                if self.current.1 != Token::RParen {
                    return Err(self.error_here("syntax error"));
                }
                self.advance()?;
                Ok(inner)
            }
            Token::Ident(name) => self.identifier(column, &name),
            _ => Err(ExprError {
                column,
                message: "syntax error".into(),
            }),
        }
    }

    fn identifier(&mut self, column: usize, name: &str) -> Result<Expr, ExprError> {
        match name.to_ascii_uppercase().as_str() {
            "TRUE" => return Ok(Expr::Constant(Value::Bool(true))),
            "FALSE" => return Ok(Expr::Constant(Value::Bool(false))),
            "NULL" => return Ok(Expr::Constant(Value::Null)),
            "CASE" => return self.case_expression(),
            _ => {}
        }
        if self.current.1 != Token::LParen {
            return Err(ExprError {
                column,
                message: format!("unexpected keyword or identifier \"{name}\""),
            });
        }
        let (function, arity) = Function::by_name(name).ok_or_else(|| ExprError {
            column,
            message: format!("unexpected function name ({name})"),
        })?;
        self.advance()?;
        let mut args = self.arguments()?;
        let wrong = |what: &str| ExprError {
            column,
            message: format!("{what} ({})", name.to_ascii_lowercase()),
        };
        match arity {
            Arity::Exactly(n) if args.len() != n => {
                return Err(wrong("unexpected number of arguments"))
            }
            Arity::AtLeastOne if args.is_empty() => {
                return Err(wrong("at least one argument expected"))
            }
            Arity::Hash | Arity::Permute => {
                let (min, max) = if arity == Arity::Hash { (1, 2) } else { (2, 3) };
                if args.len() < min || args.len() > max {
                    return Err(wrong("unexpected number of arguments"));
                }
                if args.len() == min {
                    args.push(Expr::Var(self.vars.slot("default_seed")));
                }
            }
            _ => {}
        }
        Ok(Expr::Call(function, args))
    }

    /// `CASE WHEN c THEN r [WHEN ...] [ELSE e] END`, as `Case(c1, r1, ..., e)`; no ELSE is NULL.
    fn case_expression(&mut self) -> Result<Expr, ExprError> {
        let mut args = Vec::new();
        while self.keyword().as_deref() == Some("WHEN") {
            self.advance()?;
            args.push(self.expression(0)?);
            if self.keyword().as_deref() != Some("THEN") {
                return Err(self.error_here("syntax error"));
            }
            self.advance()?;
            args.push(self.expression(0)?);
        }
        if args.is_empty() {
            return Err(self.error_here("syntax error"));
        }
        let else_part = if self.keyword().as_deref() == Some("ELSE") {
            self.advance()?;
            self.expression(0)?
        } else {
            Expr::Constant(Value::Null)
        };
        if self.keyword().as_deref() != Some("END") {
            return Err(self.error_here("syntax error"));
        }
        self.advance()?;
        args.push(else_part);
        Ok(Expr::Call(Function::Case, args))
    }

    fn arguments(&mut self) -> Result<Vec<Expr>, ExprError> {
        let mut args = Vec::new();
        if self.current.1 == Token::RParen {
            self.advance()?;
            return Ok(args);
        }
        loop {
            args.push(self.expression(0)?);
            match self.advance()? {
                Token::Comma => continue,
                Token::RParen => return Ok(args),
                _ => return Err(self.error_here("syntax error")),
            }
        }
    }
}
