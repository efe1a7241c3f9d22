//! Filling WGSL templates. A kernel family's shader marks what its
//! launcher generates with `{{NAME}}` slots (upper case and `_`); [`fill`] fills them all at
//! once and refuses a slot the template has but the launcher does not give,
//! or one given that the template lacks, so a renamed or forgotten slot is
//! an error (every generated kernel is built in the naga tests), never a
//! shader with `{{...}}` left in it.

use crate::error::{Error, Result};

/// `template` with every `{{NAME}}` replaced by the value of `NAME` in
/// `slots` (a slot may occur more than once).
///
/// # Errors
/// `Error::Internal` naming `what` for a slot of the template missing from
/// `slots`, or a slot in `slots` the template does not have.
pub(crate) fn fill(what: &'static str, template: &str, slots: &[(&str, &str)]) -> Result<String> {
    let mut out =
        String::with_capacity(template.len() + slots.iter().map(|s| s.1.len()).sum::<usize>());
    let mut used = vec![false; slots.len()];
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open..].find("}}") else {
            return Err(Error::internal(what, "a template slot is not closed"));
        };
        let name = &rest[open + 2..open + close];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
            // Not a slot (the shaders' comments speak of `{{...}}`).
            out.push_str(&rest[..open + 2]);
            rest = &rest[open + 2..];
            continue;
        }
        let Some(k) = slots.iter().position(|(n, _)| *n == name) else {
            return Err(Error::internal(
                what,
                format!("template slot {{{{{name}}}}} is not filled"),
            ));
        };
        used[k] = true;
        out.push_str(&rest[..open]);
        out.push_str(slots[k].1);
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(Error::internal(
            what,
            format!("the template has no slot {{{{{}}}}}", slots[k].0),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_filled_once_given() {
        let t = "a {{X}} b {{Y}} {{X}}";
        assert_eq!(
            fill("t", t, &[("X", "1"), ("Y", "2")]).unwrap(),
            "a 1 b 2 1"
        );
        let missing = fill("t", t, &[("X", "1")]).unwrap_err();
        assert!(
            missing.to_string().contains("{{Y}} is not filled"),
            "{missing}"
        );
        let unknown = fill("t", t, &[("X", "1"), ("Y", "2"), ("Z", "3")]).unwrap_err();
        assert!(unknown.to_string().contains("no slot {{Z}}"), "{unknown}");
        assert!(fill("t", "a {{X", &[]).is_err());
        // Values are not scanned for slots, nor is text that is no slot.
        assert_eq!(fill("t", "{{X}}", &[("X", "{{Y}}")]).unwrap(), "{{Y}}");
        assert_eq!(
            fill("t", "// {{...}} {{X}}", &[("X", "1")]).unwrap(),
            "// {{...}} 1"
        );
    }
}
