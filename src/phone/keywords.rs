//! What an inbound text asks for: the opt-out keywords carriers and the
//! CTIA handbook recognise (a message that is only the keyword, any case,
//! surrounding spaces and punctuation ignored), and the words that opt a
//! recipient back in. Anything else is an ordinary message.

/// The effect of an inbound message on the recipient's opt-out record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    OptOut,
    OptIn,
    None,
}

const OPT_OUT: &[&str] = &[
    "STOP",
    "STOPALL",
    "STOP ALL",
    "UNSUBSCRIBE",
    "CANCEL",
    "END",
    "QUIT",
    "REVOKE",
    "OPTOUT",
    "OPT OUT",
    "OPT-OUT",
];
const OPT_IN: &[&str] = &["START", "UNSTOP", "OPTIN", "OPT IN", "OPT-IN"];

/// Classifies an inbound message's text.
pub fn classify(text: &str) -> Keyword {
    let word = text
        .trim_matches(|c: char| c.is_whitespace() || c.is_ascii_punctuation() && c != '-')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase();
    if OPT_OUT.contains(&word.as_str()) {
        Keyword::OptOut
    } else if OPT_IN.contains(&word.as_str()) {
        Keyword::OptIn
    } else {
        Keyword::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyword_alone_in_any_case_counts_and_a_sentence_does_not() {
        for t in [
            "STOP",
            "stop",
            " Stop. ",
            "StopAll",
            "stop  all",
            "Unsubscribe!",
            "quit",
            "opt-out",
        ] {
            assert_eq!(classify(t), Keyword::OptOut, "{t}");
        }
        for t in ["START", "start", "Unstop", "opt in"] {
            assert_eq!(classify(t), Keyword::OptIn, "{t}");
        }
        for t in ["please stop", "stopped", "don't stop", "", "-", "STARTS"] {
            assert_eq!(classify(t), Keyword::None, "{t}");
        }
    }
}
