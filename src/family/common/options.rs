//! A lab workload's `options = { ... }`, read into the family's own serde struct: unknown keys
//! are refused with the keys the family takes, and every error names the key it is about, so
//! the spec can point at its line.

use serde::de::{self, DeserializeOwned, Visitor};
use serde::Deserialize;

/// A value an option does not take (`--mode "x"`, `rules = "x"`): the option as the user
/// wrote it, the value, and what it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue {
    pub option: String,
    pub value: String,
    pub takes: &'static str,
}

impl BadValue {
    pub fn new(option: &str, value: &str, takes: &'static str) -> BadValue {
        BadValue {
            option: option.into(),
            value: value.into(),
            takes,
        }
    }
}

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} \"{}\": {}", self.option, self.value, self.takes)
    }
}

impl From<BadValue> for stampede_base::error::Failure {
    /// The user's option to fix.
    fn from(error: BadValue) -> stampede_base::error::Failure {
        stampede_base::error::Failure::input(error.to_string())
    }
}

/// Why a workload's options were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionsError {
    /// The option the error is about, when it is about one.
    pub key: Option<String>,
    /// The whole message, `workload "NAME": options: ...`.
    pub message: String,
}

impl OptionsError {
    /// An error about one option of `workload`.
    pub fn at(workload: &str, key: &str, message: impl std::fmt::Display) -> OptionsError {
        OptionsError {
            key: Some(key.to_string()),
            message: format!("workload \"{workload}\": options: {message}"),
        }
    }

    /// An error about the options together.
    pub fn whole(workload: &str, message: impl std::fmt::Display) -> OptionsError {
        OptionsError {
            key: None,
            message: format!("workload \"{workload}\": options: {message}"),
        }
    }
}

impl std::fmt::Display for OptionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Reads `workload`'s options into `T`, a struct whose fields are the option names (with
/// `#[serde(deny_unknown_fields)]` and defaults for the options a spec leaves out).
pub fn parse<T: DeserializeOwned>(
    workload: &str,
    options: &toml::Table,
) -> Result<T, OptionsError> {
    let known = field_names::<T>();
    if let Some(unknown) = options.keys().find(|key| !known.contains(&key.as_str())) {
        let message = if known.is_empty() {
            format!("unknown option \"{unknown}\"; this workload takes none")
        } else {
            format!(
                "unknown option \"{unknown}\"; the options are: {}",
                known.join(", ")
            )
        };
        return Err(OptionsError::at(workload, unknown, message));
    }
    serde_path_to_error::deserialize(toml::Value::Table(options.clone())).map_err(|error| {
        let key = error
            .path()
            .iter()
            .next()
            .map(|segment| segment.to_string());
        // toml's own text adds "in `key`" on a line of its own; the key leads ours.
        let message = error.into_inner().message().to_string();
        match key {
            Some(key) => OptionsError::at(workload, &key, format!("{key}: {}", message.trim())),
            None => OptionsError::whole(workload, message.trim()),
        }
    })
}

/// A switch as the peers write it: `true`/`false` or sysbench's `on`/`off` (also `yes`/`no`, 1/0).
pub fn on_off<'de, D: de::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Switch {
        Bool(bool),
        Number(i64),
        Text(String),
    }
    match Switch::deserialize(deserializer)? {
        Switch::Bool(value) => Ok(value),
        Switch::Number(1) => Ok(true),
        Switch::Number(0) => Ok(false),
        Switch::Number(other) => Err(de::Error::custom(format!("{other} is not on or off"))),
        Switch::Text(text) => match text.as_str() {
            "on" | "true" | "yes" | "1" => Ok(true),
            "off" | "false" | "no" | "0" => Ok(false),
            other => Err(de::Error::custom(format!("\"{other}\" is not on or off"))),
        },
    }
}

/// The field names of a struct that derives `Deserialize`: serde hands them to the
/// deserializer, which this one records instead of reading anything.
fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut recorder = FieldRecorder { fields: &[] };
    let _ = T::deserialize(&mut recorder);
    recorder.fields
}

struct FieldRecorder {
    fields: &'static [&'static str],
}

#[derive(Debug)]
struct Recorded;

impl std::fmt::Display for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names recorded")
    }
}

impl std::error::Error for Recorded {}

impl de::Error for Recorded {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Recorded
    }
}

impl<'de> de::Deserializer<'de> for &mut FieldRecorder {
    type Error = Recorded;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Recorded> {
        Err(Recorded)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Recorded> {
        self.fields = fields;
        Err(Recorded)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Example {
        ratio: u32,
        #[serde(deserialize_with = "on_off")]
        flag: bool,
    }

    impl Default for Example {
        fn default() -> Self {
            Example {
                ratio: 1,
                flag: false,
            }
        }
    }

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn reads_options_with_defaults_and_switches() {
        let parsed: Example = parse("w", &table("flag = \"on\"")).unwrap();
        assert_eq!(
            parsed,
            Example {
                ratio: 1,
                flag: true
            }
        );
        let parsed: Example = parse("w", &table("ratio = 3\nflag = false")).unwrap();
        assert_eq!(parsed.ratio, 3);
    }

    #[test]
    fn refuses_unknown_options_naming_the_known_ones() {
        let error = parse::<Example>("w", &table("speed = 2")).unwrap_err();
        assert_eq!(error.key.as_deref(), Some("speed"));
        assert_eq!(
            error.message,
            "workload \"w\": options: unknown option \"speed\"; the options are: ratio, flag"
        );
    }

    #[test]
    fn type_errors_name_their_key() {
        let error = parse::<Example>("w", &table("ratio = \"x\"")).unwrap_err();
        assert_eq!(error.key.as_deref(), Some("ratio"));
        assert!(
            error
                .message
                .starts_with("workload \"w\": options: ratio: invalid type: string \"x\""),
            "{}",
            error.message
        );
        let error = parse::<Example>("w", &table("flag = \"maybe\"")).unwrap_err();
        assert_eq!(error.key.as_deref(), Some("flag"));
    }

    #[test]
    fn a_workload_without_options_says_so() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct NoOptions {}
        let error = parse::<NoOptions>("p", &table("x = 1")).unwrap_err();
        assert_eq!(
            error.message,
            "workload \"p\": options: unknown option \"x\"; this workload takes none"
        );
        assert!(parse::<NoOptions>("p", &table("")).is_ok());
    }
}
