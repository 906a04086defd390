//! Where a reconnecting client resumes a sequenced stream: the
//! `Last-Event-ID` header (what a reconnecting `EventSource` sends) over
//! the `after` query parameter, each a non-negative sequence, and never
//! beyond the newest one.

use actix_web::HttpRequest;

use crate::error::ApiError;

pub struct Resume {
    /// The sequence to resume after, when the client named one.
    pub after: Option<i64>,
    field: &'static str,
}

fn cursor(raw: &str, field: &str) -> Result<i64, ApiError> {
    raw.trim()
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| ApiError::invalid(field, "must be a non-negative integer sequence"))
}

impl Resume {
    pub fn read(req: &HttpRequest, after: Option<&str>) -> Result<Resume, ApiError> {
        const HEADER: &str = "Last-Event-ID";
        if let Some(v) = req.headers().get("last-event-id") {
            let v = v
                .to_str()
                .map_err(|_| ApiError::invalid(HEADER, "must be a sequence"))?;
            // Both are checked, so a bad `after` is refused even beside a header.
            if let Some(q) = after {
                cursor(q, "after")?;
            }
            return Ok(Resume {
                after: Some(cursor(v, HEADER)?),
                field: HEADER,
            });
        }
        Ok(Resume {
            after: after.map(|v| cursor(v, "after")).transpose()?,
            field: "after",
        })
    }

    /// Refuses a cursor beyond `newest`, the stream's last sequence (`what`
    /// names it: "message", "notification").
    pub fn within(&self, newest: i64, what: &str) -> Result<(), ApiError> {
        match self.after {
            Some(after) if after > newest => Err(ApiError::invalid(
                self.field,
                format!("is beyond the newest {what} ({newest})"),
            )),
            _ => Ok(()),
        }
    }
}
