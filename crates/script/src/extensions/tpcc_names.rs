//! TPC-C's customer last names (clause 4.3.2.3): the loader writes them and the client-mode
//! scripts look customers up by them (`tpcc_last_name(n)`), so both draw from this one table.

use crate::error::EvalError;

/// The syllables, indexed by each digit of a three-digit number.
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// C_LAST for `number` in 0..=999: the syllables of its hundreds, tens and units digits.
pub fn last_name(number: i64) -> Result<String, EvalError> {
    if !(0..=999).contains(&number) {
        return Err(EvalError::Argument(format!(
            "tpcc_last_name: {number} is out of range 0..999"
        )));
    }
    let digits = [number / 100, (number / 10) % 10, number % 10];
    Ok(digits.iter().map(|d| SYLLABLES[*d as usize]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllables() {
        assert_eq!(last_name(371).unwrap(), "PRICALLYOUGHT");
        assert_eq!(last_name(0).unwrap(), "BARBARBAR");
        assert_eq!(last_name(999).unwrap(), "EINGEINGEING");
        assert!(last_name(1000).is_err());
    }
}
